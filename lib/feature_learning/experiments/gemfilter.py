"""Sizes and recipes of the chapter "Early layers find the gems (GemFilter)" (dissertation ch. 9, appendix G)."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.book.profiles import by_profile
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder
from feature_learning.training.needle import NeedleTraining


@dataclasses.dataclass(frozen=True)
class GemFilterSizes:
    model: DecoderConfig
    training: NeedleTraining
    lengths: tuple[int, ...]  # haystack lengths n of the accuracy heatmaps (training used n <= training.n_max)
    depths: int  # needle depths, evenly spaced in [0, 1] (the source: 10)
    prompts: int  # prompts per (length, depth) cell
    probe_length: int  # haystack length of the layer-by-layer and ablation experiments
    probe_prompts: int  # prompts per depth in those experiments
    k: int  # tokens kept by GemFilter, SnapKV, One-Run
    k_sweep: tuple[int, ...]
    snapkv_window: int  # SnapKV's observation window (the source: 32 of 1024)
    timing_lengths: tuple[int, ...]  # prompt lengths of the time and memory measurement
    timing_repeats: int


SIZES = {
    "ci": GemFilterSizes(
        model=DecoderConfig(), training=NeedleTraining(steps=600), lengths=(16, 32, 64, 128), depths=5, prompts=8,
        probe_length=64, probe_prompts=24, k=16, k_sweep=(4, 8, 16, 32), snapkv_window=4,
        timing_lengths=(128, 1024, 4096), timing_repeats=3),
    "book": GemFilterSizes(
        model=DecoderConfig(), training=NeedleTraining(steps=1500), lengths=(16, 32, 48, 64, 96, 128), depths=10,
        prompts=16, probe_length=64, probe_prompts=32, k=16, k_sweep=(4, 8, 16, 24, 32), snapkv_window=4,
        timing_lengths=(128, 512, 1024, 2048, 4096, 8192), timing_repeats=3),
    "full": GemFilterSizes(
        model=DecoderConfig(n_layers=6, d_model=128, n_heads=8),
        training=NeedleTraining(steps=4000, n_max=128), lengths=(16, 32, 64, 96, 128, 192, 256), depths=10,
        prompts=32, probe_length=128, probe_prompts=32, k=32, k_sweep=(8, 16, 32, 48, 64),
        snapkv_window=8, timing_lengths=(128, 512, 2048, 8192, 16384, 32768), timing_repeats=3),
}


def sizes(profile: str) -> GemFilterSizes:
    return by_profile(profile, SIZES)


def new_model(config: DecoderConfig, seed: int, device: torch.device | str = "cpu") -> RopeDecoder:
    """A freshly initialised decoder; the initialisation draws from its own seeded stream, not the global one."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return RopeDecoder(config).to(device)

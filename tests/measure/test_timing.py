"""measure/timing.py: best-of-repeats timing and the prompt-phase profile."""

import time

import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.measure.timing import best_time, peak_cuda_memory, prompt_phase_profile
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder


def test_best_time_is_the_minimum_and_repeats_short_calls():
    calls = []
    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 23.0])  # a fake clock: calls of 5, 2 and 3 seconds
    assert best_time(lambda: calls.append(1), repeats=3, clock=lambda: next(ticks)) == 2.0
    assert len(calls) == 4  # one warm-up call, then the repeats
    calls.clear()
    best_time(lambda: calls.append(1), repeats=2, min_total=1e-3, clock=time.perf_counter)
    assert len(calls) > 3  # nothing takes a millisecond: called on until the calls add up


def test_peak_cuda_memory_is_none_on_cpu():
    assert peak_cuda_memory(lambda: torch.zeros(3), "cpu") is None


def test_prompt_phase_profile_rows():
    torch.manual_seed(0)
    model = RopeDecoder(DecoderConfig(n_layers=2, d_model=16, n_heads=2)).eval()
    prompts = [needle_prompts(NeedleVocab(), 1, n, torch.Generator().manual_seed(n)).tokens for n in (8, 16)]
    threads = torch.get_num_threads()
    rows = prompt_phase_profile(model, prompts, layer=1, k=4, repeats=1, min_total=0.0)
    assert torch.get_num_threads() == threads  # restored
    assert [row.length for row in rows] == [11, 19]
    assert all(row.full_seconds > 0 and row.select_seconds > 0 and row.full_peak_bytes is None for row in rows)
    assert rows[0].speedup == rows[0].full_seconds / rows[0].select_seconds

"""measure/timing.py: best-of-repeats timing and the prompt-phase profile."""

import time

import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.measure.timing import best_time, best_times, peak_cuda_memory, prompt_phase_profile, torch_threads
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder


def test_best_time_is_the_minimum_and_repeats_short_calls():
    calls = []
    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 23.0])  # a fake clock: calls of 5, 2 and 3 seconds
    assert best_time(lambda: calls.append(1), repeats=3, clock=lambda: next(ticks)) == 2.0
    assert len(calls) == 4  # one warm-up call, then the repeats
    calls.clear()
    best_time(lambda: calls.append(1), repeats=2, min_total=1e-3, clock=time.perf_counter)
    assert len(calls) > 3  # nothing takes a millisecond: called on until the calls add up


def test_best_times_calls_in_turn_and_keeps_each_minimum():
    calls = []
    now = [0.0]
    cost = {"a": iter([9.0, 4.0, 6.0, 5.0]), "b": iter([9.0, 1.0, 3.0, 2.0])}  # warm-up first, then the rounds

    def phase(name):
        def call():
            calls.append(name)
            now[0] += next(cost[name])
        return call

    best = best_times([phase("a"), phase("b")], repeats=3, clock=lambda: now[0])
    assert best == [4.0, 1.0]
    assert calls == ["a", "b"] * 4  # one warm-up call each, then three rounds, the phases alternating
    calls.clear()
    cost = {"a": iter([1.0] * 7), "b": iter([10.0] * 7)}
    best_times([phase("a"), phase("b")], repeats=1, min_total=5.0, clock=lambda: now[0])
    assert calls == ["a", "b"] * 6  # on until the cheap phase's calls add up to min_total too: five rounds


def test_torch_threads_sets_and_restores():
    threads = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == threads
    with torch_threads(None):
        assert torch.get_num_threads() == threads


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

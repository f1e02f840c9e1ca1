"""Timing of inference phases: the minimum over repeats of the CPU time (on a CPU) or of the synchronised wall
clock (on CUDA)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Sequence

import torch

from feature_learning.inference.token_selection import gemfilter_select
from feature_learning.models.rope_decoder import CausalLM


def best_times(fns: Sequence[Callable[[], object]], repeats: int = 3, device: torch.device | str = "cpu",
               clock: Callable[[], float] | None = None, min_total: float = 0.0) -> list[float]:
    """Seconds of the fastest call of each of ``fns``, called in turn (round robin) after one warm-up call each: at
    least ``repeats`` rounds, and on until every one of them has taken ``min_total`` seconds (so that short calls
    are repeated more often).

    On a CPU the clock is the process's CPU time (``time.process_time``): the work done, which other processes on a
    shared machine inflate only through the caches and memory they share (with one torch thread it equals the
    undisturbed wall time). On CUDA it is the wall clock, read after the device is synchronised. The minimum is the
    least disturbed of the repeats. Taking the calls in turn makes the phases share whatever else the machine does
    meanwhile, so that a change of load between them does not skew their ratio."""
    cuda = torch.device(device).type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    clock = clock or (time.perf_counter if cuda else time.process_time)
    best, total = [float("inf")] * len(fns), [0.0] * len(fns)
    with torch.no_grad():
        for fn in fns:
            fn()
        sync()
        rounds = 0
        while rounds < repeats or min(total) < min_total:
            for i, fn in enumerate(fns):
                start = clock()
                fn()
                sync()
                elapsed = clock() - start
                best[i], total[i] = min(best[i], elapsed), total[i] + elapsed
            rounds += 1
    return best


def best_time(fn: Callable[[], object], repeats: int = 3, device: torch.device | str = "cpu",
              clock: Callable[[], float] | None = None, min_total: float = 0.0) -> float:
    """Seconds of the fastest of at least ``repeats`` calls of ``fn`` after one warm-up call, calling on until the
    calls have taken ``min_total`` seconds: :func:`best_times` of the one function."""
    return best_times([fn], repeats, device, clock, min_total)[0]


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """Run the block on ``threads`` torch threads (one is the least disturbed on a shared machine); ``None`` keeps
    the current number."""
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def peak_cuda_memory(fn: Callable[[], object], device: torch.device | str) -> int | None:
    """Peak bytes allocated on the CUDA device while ``fn`` runs (above what was allocated before); ``None`` on a
    CPU, where PyTorch keeps no such counter."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    with torch.no_grad():
        fn()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


@dataclasses.dataclass(frozen=True)
class TimingRow:
    """One prompt length of :func:`prompt_phase_profile`."""

    length: int  # prompt tokens T
    full_seconds: float  # the full prefill: all m layers, building the KV cache
    select_seconds: float  # GemFilter's selection: layers 1..r-1, the Q, K projections of layer r, the top-k
    full_peak_bytes: int | None  # peak CUDA memory of each phase (None on a CPU)
    select_peak_bytes: int | None

    @property
    def speedup(self) -> float:
        return self.full_seconds / self.select_seconds


def prompt_phase_profile(model: CausalLM, prompts: Sequence[torch.Tensor], layer: int, k: int, repeats: int = 3,
                         device: torch.device | str = "cpu", threads: int | None = 1,
                         min_total: float = 0.2) -> list[TimingRow]:
    """The prompt phase of standard attention (``model.prefill``) against GemFilter's selection at filter layer
    ``layer`` keeping ``k`` tokens (Theorem 9.3's prompt-computation row), timed by :func:`best_time` on each prompt
    (1, T), at least ``repeats`` times and for ``min_total`` seconds; with ``threads`` set, on that many CPU threads
    (one thread is the least disturbed on a shared machine)."""
    with torch_threads(threads):
        rows = []
        for tokens in prompts:
            phases = (functools.partial(model.prefill, tokens),
                      functools.partial(gemfilter_select, model, tokens, layer, k))
            seconds = [best_time(fn, repeats, device, min_total=min_total) for fn in phases]
            peaks = [peak_cuda_memory(fn, device) for fn in phases]
            rows.append(TimingRow(tokens.shape[1], *seconds, *peaks))
        return rows

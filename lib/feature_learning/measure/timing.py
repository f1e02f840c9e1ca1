"""Wall-clock timing of inference phases: the minimum over repeats, with the device synchronised."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch


def best_time(fn: Callable[[], object], repeats: int = 3, device: torch.device | str = "cpu") -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn`` after one warm-up call. The minimum is the least
    disturbed by other work on a shared machine; CUDA work is synchronised before the clock is read."""
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    with torch.no_grad():
        fn()
        sync()
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            sync()
            best = min(best, time.perf_counter() - start)
    return best


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

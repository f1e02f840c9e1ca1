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

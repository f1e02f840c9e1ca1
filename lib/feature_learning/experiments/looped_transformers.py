"""Sizes of the chapter "Looped transformers run multi-step gradient descent" (dissertation ch. 8)."""

from __future__ import annotations

import dataclasses

from feature_learning.book.profiles import by_profile


@dataclasses.dataclass(frozen=True)
class LoopedSizes:
    d: int  # dimension (section 8.6: 4)
    ns: tuple[int, ...]  # context sizes of Figure 8.1
    T: int  # loops / GD steps of Figure 8.1 (200)
    trials: int  # prompts per n for the curves of Figure 8.1 (10 in the source)
    kappa_trials: int  # prompts per n for the mean condition number
    n_grid: tuple[int, ...]  # context sizes for error against n
    train_n: int  # context size of the trained looped transformer
    train_loops: tuple[int, ...]  # loop counts trained from scratch
    train_steps: int
    train_batch: int
    train_restarts: int


SIZES = {
    "ci": LoopedSizes(d=4, ns=(16, 32, 64, 128), T=200, trials=10, kappa_trials=4000,
                      n_grid=(6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256), train_n=32, train_loops=(2, 4),
                      train_steps=400, train_batch=64, train_restarts=2),
    "book": LoopedSizes(d=4, ns=(16, 32, 64, 128), T=200, trials=10, kappa_trials=20000,
                        n_grid=(6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512), train_n=32,
                        train_loops=(2, 4), train_steps=600, train_batch=64, train_restarts=2),
    "full": LoopedSizes(d=4, ns=(16, 32, 64, 128), T=200, trials=10, kappa_trials=100000,
                        n_grid=(6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024), train_n=32,
                        train_loops=(2, 4, 8), train_steps=5000, train_batch=1024, train_restarts=8),
}


def sizes(profile: str) -> LoopedSizes:
    return by_profile(profile, SIZES)

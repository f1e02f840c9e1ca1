"""Sizes of the chapter "Model scale and in-context learning" (dissertation ch. 5, appendix D).

The source has no synthetic experiments for sections 5.4-5.5; the configuration (d = 8, N = 64, the spectrum below,
(nu1, nu2) = (1, 3), gamma = 0.2) is the one of the chapter notes and is stated in the chapter.
"""

from __future__ import annotations

import dataclasses

from feature_learning.book.profiles import by_profile


@dataclasses.dataclass(frozen=True)
class ICLSizes:
    d: int
    N: int  # pretraining context length
    spectrum: tuple[float, ...]  # eigenvalues of Lambda, descending and distinct
    ranks: tuple[int, ...]  # ranks trained by gradient descent
    train_steps: int
    eval_ranks: tuple[int, ...]
    sigmas: tuple[float, ...]
    Ms: tuple[int, ...]  # evaluation context lengths
    mc_prompts: int
    flips: tuple[float, ...]
    parity_nu1: int
    parity_nu2: int
    parity_gamma: float
    parity_Ms: tuple[int, ...]
    parity_prompts: int
    min_norm_steps: int


SPECTRUM = (2.0, 1.5, 1.0, 0.5, 0.25, 0.15, 0.1, 0.05)

SIZES = {
    "ci": ICLSizes(d=8, N=64, spectrum=SPECTRUM, ranks=(1, 2, 4, 8), train_steps=2000, eval_ranks=(1, 2, 4, 8),
                   sigmas=(0.0, 1.0, 2.0, 4.0), Ms=(16, 64), mc_prompts=20000, flips=(0.0, 0.25, 0.5, 0.75, 1.0),
                   parity_nu1=1, parity_nu2=3, parity_gamma=0.2, parity_Ms=(16, 64, 256, 1024), parity_prompts=4000,
                   min_norm_steps=1500),
    "book": ICLSizes(d=8, N=64, spectrum=SPECTRUM, ranks=(1, 2, 3, 4, 5, 6, 7, 8), train_steps=3000,
                     eval_ranks=(1, 2, 3, 4, 5, 6, 7, 8), sigmas=(0.0, 0.5, 1.0, 2.0, 4.0), Ms=(16, 64),
                     mc_prompts=60000, flips=(0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0), parity_nu1=1, parity_nu2=3,
                     parity_gamma=0.2, parity_Ms=(16, 32, 64, 128, 256, 1024), parity_prompts=20000,
                     min_norm_steps=3000),
    "full": ICLSizes(d=8, N=64, spectrum=SPECTRUM, ranks=(1, 2, 3, 4, 5, 6, 7, 8), train_steps=20000,
                     eval_ranks=(1, 2, 3, 4, 5, 6, 7, 8), sigmas=(0.0, 0.5, 1.0, 2.0, 4.0), Ms=(16, 64),
                     mc_prompts=1000000, flips=(0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0), parity_nu1=1,
                     parity_nu2=3, parity_gamma=0.2, parity_Ms=(16, 32, 64, 128, 256, 1024), parity_prompts=100000,
                     min_norm_steps=10000),
}


def sizes(profile: str) -> ICLSizes:
    return by_profile(profile, SIZES)

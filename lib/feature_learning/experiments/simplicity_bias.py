"""Sizes and recipes of the chapter "Simplicity bias of two-layer networks beyond linearly separable data"
(Tsoy & Konstantinov, ICML 2024).

Recipes follow the source's Sec. 5.4.2 (four neurons, adaptive step size), Sec. 6 (wide network on skewed XOR,
PyTorch default init times 2^-7, GD with step 2^-4 for 2^13 epochs, flow time 512) and Sec. 7 (probes of
mid-training features, here on a synthetic "simple plus complex" domino instead of MNIST-CIFAR images).
The ci and book profiles keep the flow time of Sec. 6 (T = 512) with a larger step and fewer epochs.
"""

from __future__ import annotations

import dataclasses
import math

from feature_learning.book.profiles import by_profile


@dataclasses.dataclass(frozen=True)
class SimplicityBiasSizes:
    # E1 (Sec. 5.4.2, Fig. 1, 5-7): four aligned neurons and a small-init network of width lemma_width (Lemma 5.5)
    four_epochs: int
    lemma_width: int
    lemma_seeds: int
    # E2 (Sec. 6, Fig. 2): skewed XOR, points per cluster, two widths, epochs and step (flow time = epochs * lr)
    skew_base: int
    skew_widths: tuple[int, int]
    skew_epochs: int
    skew_lr: float
    # Lemma 5.3: Monte Carlo of capturing all four extrema, Phase 1 only
    capture_widths: tuple[int, ...]
    capture_seeds: int
    capture_steps: int
    # Sec. 7 analogue: synthetic dominoes
    domino_width: int
    domino_seeds: int
    domino_epochs: int
    domino_lr: float
    domino_n_train: int
    domino_n_ood: int
    domino_checkpoints: tuple[int, ...]


SIZES = {
    "ci": SimplicityBiasSizes(
        four_epochs=2**15, lemma_width=24, lemma_seeds=1,
        skew_base=64, skew_widths=(32, 128), skew_epochs=4096, skew_lr=2**-3,
        capture_widths=(4, 8), capture_seeds=300, capture_steps=200,
        domino_width=64, domino_seeds=6, domino_epochs=4096, domino_lr=2**-3, domino_n_train=512, domino_n_ood=1333,
        domino_checkpoints=(0, 128, 256, 512, 768, 1024, 2048, 4096),
    ),
    "book": SimplicityBiasSizes(
        four_epochs=2**15, lemma_width=32, lemma_seeds=3,
        skew_base=128, skew_widths=(64, 256), skew_epochs=4096, skew_lr=2**-3,
        capture_widths=(4, 8, 12), capture_seeds=400, capture_steps=200,
        domino_width=64, domino_seeds=8, domino_epochs=4096, domino_lr=2**-3, domino_n_train=512,
        domino_n_ood=1333, domino_checkpoints=(0, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096),
    ),
    "full": SimplicityBiasSizes(
        four_epochs=2**15, lemma_width=64, lemma_seeds=6,
        skew_base=128, skew_widths=(512, 4096), skew_epochs=2**13, skew_lr=2**-4,
        capture_widths=(4, 8, 12, 16, 24), capture_seeds=2000, capture_steps=200,
        domino_width=256, domino_seeds=6, domino_epochs=8192, domino_lr=2**-4, domino_n_train=512,
        domino_n_ood=2000, domino_checkpoints=(0, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192),
    ),
}

# Sec. 5.4.2: initial output weights of the four aligned neurons (Fig. 1/5, Fig. 6, Fig. 7); neurons 1, 3 sit on
# +-e_1 with u > 0, neurons 2, 4 on +-e_2 with u < 0.
FOUR_NEURON_INITS = {
    "Fig. 1": (1e-4, -1e-5, 1e-7, -1e-6),
    "Fig. 6": (1e-4, -1e-5, 1e-6, -1e-7),
    "Fig. 7": (1e-4, -1e-6, 1e-5, -1e-7),
}
FOUR_NEURON_DIRECTIONS = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))
XOR_DELTA, XOR_SIGMA, XOR_BASE = 0.01, 0.005, 16  # Assumption 5.1 data of Sec. 5.4.2 (256 points in R^2)
LEMMA_INIT_SCALE = 1e-4  # balanced isotropic init of the Lemma 5.5 run
SKEW_ANGLES = (math.pi / 2, math.pi / 3)
SKEW_INIT_SCALE = 2.0**-7  # "sigma = 2^-7" of Sec. 6: PyTorch default init times 2^-7
CAPTURE_INIT_SCALE, CAPTURE_LR = 1e-8, 0.5
# the domino analogue: simple feature +-MU_SIMPLE (G-rate mu/4, vs 1/8 for the XOR feature), XOR noise, noise dims
DOMINO = dict(mu_simple=0.45, sigma_simple=0.05, sigma_complex=0.35, d_noise=20)
DOMINO_SMALL_INIT, DOMINO_STANDARD_INIT = 2.0**-7, 1.0
PROBE_C = 1000.0  # the source's regularised probe
PROBE_FIT_SHARE = 0.75  # 75/25 split of the OOD set into probe-fit and probe-score


def sizes(profile: str) -> SimplicityBiasSizes:
    return by_profile(profile, SIZES)

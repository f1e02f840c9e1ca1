"""Sizes of the chapter "Model scale and in-context learning": the notes' configuration, ``BOOK``, ``CI``, ``FULL``."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.book.profiles import override
from feature_learning.measure.statistics import Null

DTYPE = torch.float64  # closed forms and Monte Carlo in float64; the transformers train in float32
SPECTRUM = (2.0, 1.5, 1.0, 0.5, 0.25, 0.15, 0.1, 0.05)  # eigenvalues of Lambda (the notes' configuration)
EVAL_TASK = (1.0, -0.8, 0.5, 0.3, 0.4, -0.2, 0.3, 0.1)  # c = Q^T w of the evaluation task (the notes' F4)
SPECIAL_TASK = (1.0, -0.7)  # s of Theorem 5.4.3's special case, in the top-2 eigen-directions (the notes' F6)
ENERGY_M = 16  # context length of the projection energies (the notes' F13)
ALL_RANKS = (1, 2, 3, 4, 5, 6, 7, 8)
# trivial models of the LLM analogue's claims
PRIOR_RULE = r"the prior rule $\mathrm{sign}\langle\mathbf e_1, \mathbf x_q\rangle$ (ignores the context)"
SIZE_BLIND = Null(0.0, "size-blind: the smallest model at every size")


# -- sizes ----------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RegressionSizes:
    d: int = 8
    N: int = 64  # pretraining context length
    spectrum: tuple[float, ...] = SPECTRUM  # descending and distinct, so the optimum is unique up to c


@dataclasses.dataclass(frozen=True)
class ExactSizes:
    """Experiment 1a: the rank-r attention trained on Lemma 5.1's exact population loss (L-BFGS)."""

    ranks: tuple[int, ...] = ALL_RANKS
    max_iter: int = 4000  # L-BFGS iterations; it stops once the summed loss changes by less than 1e-12
    init_scale: float = 0.01  # small random factors, not diagonal in the eigenbasis


@dataclasses.dataclass(frozen=True)
class SGDSizes:
    """Experiment 1b: the rank-r attention trained by online SGD on fresh sampled prompts (the notes' R1b)."""

    ranks: tuple[int, ...] = ALL_RANKS
    steps: int = 1500
    batch: int = 256  # fresh prompts per step and replica
    replicas: int = 8  # independent runs (own initialisation and prompts), for the standard error; the spread of
    # the diagonal's error is between runs (no test sample enters it), so more runs are what narrows it
    lr: float = 0.5  # first half of the steps
    tail_lr: float = 0.1  # second half, whose iterates (the factors) are averaged (Polyak-Ruppert)
    init_scale: float = 0.1
    loss_prompts: int = 100_000  # Monte Carlo prompts for the pretraining loss at U* (notes' target 2)


@dataclasses.dataclass(frozen=True)
class RiskSizes:
    ranks: tuple[int, ...] = ALL_RANKS  # optimal rank-r models evaluated by Monte Carlo
    sigmas: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0)  # label-noise levels
    Ms: tuple[int, ...] = (16, 64)  # evaluation context lengths (16 as in section 5.6)
    prompts: int = 60_000  # Monte Carlo prompts per point
    best_rank_sigmas: tuple[float, ...] = (0.0, 2.0, 4.0)  # noise levels of the best-rank trade-off


@dataclasses.dataclass(frozen=True)
class ParitySizes:
    nu1: int = 1  # the small model has 2 (nu1 + 1) heads, k = 2^nu1 important features
    nu2: int = 3  # the large model has 2 (nu2 + 1) heads, d = 2^nu2 features
    gamma: float = 0.2
    Ms: tuple[int, ...] = (16, 32, 64, 128, 256, 1024)  # evaluation context lengths
    prompts: int = 20_000  # Monte Carlo prompts per M and per flip fraction
    energy_prompts: int = 20_000  # prompts for the projection energies of Theorem 5.5.2


@dataclasses.dataclass(frozen=True)
class TransformerSizes:
    """The LLM analogue (not in the source): binary ICL with a prior direction, w = e_1 + tau g / sqrt(d), M = 16
    in-context examples as in section 5.6, transformers whose width, heads and depth grow together."""

    shapes: tuple[tuple[int, int, int], ...] = ((8, 1, 1), (16, 2, 2), (32, 4, 2))  # (d_model, heads, blocks)
    d: int = 8
    M: int = 16
    tau: float = 1.0
    lr: float = 3e-3
    steps: int = 1000
    batch: int = 64
    seeds: int = 4  # independent replicas (initialisation and batches) trained as one batched program
    eval_prompts: int = 8000  # shared by every replica and size: at 2000 their sampling spread of the clean
    # accuracy gain (sd 0.006) was larger than the standard error over replicas (0.003-0.005), which omits it


@dataclasses.dataclass(frozen=True)
class ICLSizes:
    regression: RegressionSizes = RegressionSizes()
    exact: ExactSizes = ExactSizes()
    sgd: SGDSizes = SGDSizes()
    risk: RiskSizes = RiskSizes()
    flips: tuple[float, ...] = (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0)  # flipped fractions of context labels
    parity: ParitySizes = ParitySizes()
    transformer: TransformerSizes = TransformerSizes()


BOOK = ICLSizes()
CI = override(
    BOOK,
    sgd={"steps": 1000, "loss_prompts": 40_000},  # CI time; the errors stay well inside the bounds
    risk={"ranks": (1, 2, 4, 8), "sigmas": (0.0, 1.0, 2.0, 4.0), "prompts": 20_000},  # CI time
    flips=(0.0, 0.25, 0.5, 0.75, 1.0),
    parity={"Ms": (16, 64, 256, 1024)},
)
FULL = override(
    BOOK,
    sgd={"steps": 5000, "batch": 1024},
    risk={"prompts": 1_000_000},
    parity={"prompts": 100_000},
    transformer={"shapes": (*BOOK.transformer.shapes, (64, 8, 2)), "steps": 5000, "batch": 256, "seeds": 5,
                 "eval_prompts": 5000},  # the notes' full-size T1
)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}

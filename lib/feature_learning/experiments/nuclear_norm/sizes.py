"""The sizes of the chapter "Rank regularisation for domain generalisation" per profile."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.book.profiles import override

DTYPE = torch.float64  # the population solver and the linear model: float64 (identities must hold exactly)


# -- sizes -----------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PopulationSizes:
    r: int = 64  # invariant features (3/sqrt(r) = 0.375 < gamma, d > r/gamma^2 + r = 380)
    d: int = 400
    gamma: float = 0.45
    samples: int = 200_000  # Monte-Carlo draws of (S_R, S_U), shared by every lambda
    lambdas: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 3.0)
    full_samples: int = 40_000  # draws of the full z for the d-dimensional optimum
    full_lambda: float = 0.1
    sweep_r: int = 49  # OOD accuracy against d - r
    sweep_gaps: tuple[int, ...] = (10, 25, 40, 50, 55, 60, 65, 75, 100, 251, 300, 400)  # r/gamma^2 = 242
    sweep_lambda: float = 0.01
    support_r: int = 3  # exhaustive search over supports (Lemma 6.2)
    support_d: int = 6
    support_lambda: float = 0.01
    support_samples: int = 200_000
    rank_steps: int = 200  # IHT steps (||w||_0 <= r, step 0.5) for the ERM-rank optimum of the large model


@dataclasses.dataclass(frozen=True)
class FiniteSampleSizes:
    r: int = 49
    d: int = 300
    gamma: float = 0.45
    n: int = 4000  # training samples
    test: int = 20_000  # ID and OOD test samples each
    lr: float = 0.5
    steps: int = 600
    init: float = 1e-3
    l2_lambda: float = 0.01
    l1_lambdas: tuple[float, ...] = (1e-3, 3e-3)
    iht_budgets: tuple[int, ...] = (20, 49)
    nu_batch: int = 512  # > d
    nu_small_batch: int = 256  # < d
    nu_lambdas: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3)
    nu_small_lambdas: tuple[float, ...] = (0.01, 0.03)
    nu_steps: int = 400
    nu_schedule: str = "cosine"  # the step decays to 0, so that every lambda settles (at a constant 0.5 the SGD on
    # lambda = 0.3 oscillates: its objective never falls below its starting value)
    rank_batch: int = 2000  # OOD batch on which the stable rank of the features is measured


@dataclasses.dataclass(frozen=True)
class ToySizes:
    n: int = 1000  # the notes' literal reproduction
    test: int = 200_000
    lr: float = 0.5
    steps: int = 2000
    nu_lambda: float = 0.1
    weight_decay: float = 0.1
    seeds: int = 4


@dataclasses.dataclass(frozen=True)
class AnalogueSizes:
    classes: int = 5  # D = r + u = 64, 5 classes
    r: int = 16
    u: int = 48
    train_gammas: tuple[float, ...] = (0.35, 0.25)  # two training domains
    id_gamma: float = 0.3
    ood_gammas: tuple[float, ...] = (0.0, -0.3)  # the first is the headline test domain
    n_per_domain: int = 2000
    n_test: int = 4000
    digits_train: tuple[int, int] = (600, 600)  # two training domains of digits, the rest is the OOD test
    digits_u: int = 32
    width: int = 128
    features: int = 32
    batch: int = 128  # > features: the penalty sees a full-rank batch
    lr: float = 1e-3
    steps: int = 1000
    lambdas: tuple[float, ...] = (0.0, 0.003, 0.01, 0.03, 0.06, 0.3)
    seeds: int = 6
    mixup_alpha: float = 0.2  # DomainBed's default; Mixup and Mixup-NU run on the synthetic task at lambda 0, 0.01
    class_counts: tuple[int, ...] = (3, 5, 10)  # the synthetic task's classes for Fig. 6.5 (3), ERM (lambda = 0)
    source_largest_lambda: float = 10**-1.5  # the top of the source's search range 10^U(-2.5, -1.5)


@dataclasses.dataclass(frozen=True)
class NuclearSizes:
    population: PopulationSizes = PopulationSizes()
    finite: FiniteSampleSizes = FiniteSampleSizes()
    toy: ToySizes = ToySizes()
    analogue: AnalogueSizes = AnalogueSizes()


BOOK = NuclearSizes()
CI = override(
    BOOK,
    population={"samples": 100_000,  # every accuracy is 0 or 1 far from its bound; alpha/beta move in the 4th digit
                "full_samples": 20_000, "support_samples": 100_000,
                "sweep_gaps": (10, 25, 50, 60, 75, 100, 251, 300, 400)},  # the notes' table; three past 242
    finite={"d": 200, "n": 2000, "test": 10_000,  # d - r = 151 is still 2.5x the critical 61; SVDs 3x cheaper
            "nu_batch": 256, "nu_small_batch": 128,  # still one batch above d and one below
            "nu_lambdas": (0.01, 0.03, 0.3), "nu_small_lambdas": (0.03,), "steps": 400, "nu_steps": 300,
            "iht_budgets": (20,), "l1_lambdas": (3e-3,)},
    toy={"test": 100_000, "steps": 1000, "seeds": 3},
    analogue={"steps": 600, "lambdas": (0.0, 0.003, 0.01, 0.03, 0.3),  # the claims use 0, 0.01 and 0.3
              "n_per_domain": 1500, "n_test": 2000},
)
FULL = override(
    BOOK,
    population={"samples": 2_000_000, "full_samples": 100_000,
                "sweep_gaps": (10, 25, 40, 50, 55, 60, 65, 75, 100, 150, 251, 300, 400)},
    finite={"n": 8000, "nu_batch": 1024, "nu_steps": 1500, "steps": 1500,  # the notes' B = 1024 > d
            "nu_lambdas": (0.003, 0.01, 0.03, 0.1, 0.3)},
    analogue={"steps": 3000, "seeds": 12, "lambdas": (0.0, 0.001, 0.003, 0.01, 0.02, 0.03, 0.04, 0.06, 0.1, 0.3)},
)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}

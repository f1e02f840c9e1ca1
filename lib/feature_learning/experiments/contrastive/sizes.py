"""The sizes of the chapter "Contrastive learning between universality and label efficiency" per profile."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.book.profiles import override

DTYPE = torch.float64  # the notes: the linear model's weights must be read to 3 decimals
TARGET_GAP = 0.1  # training target of every contrastive run of the linear model, fixed before any run: its final
# loss closes at least 90% of the gap from its starting loss to the loss of the closed-form optimum of the same
# problem (Props. 7.3, 7.4, F.8, F.9), on the same fresh examples
ROUNDING = 1e-12  # float64 slack of that comparison (a run that starts at its optimum, gamma = 0, must count)
CHANCE_FRACTION = 0.5  # training target of the supervised fine-tuning (Experiment 5) and of the nonlinear encoders
# (Experiment 6), whose optimum has no closed form: a final training loss below half of a constant predictor's
# (ln 2 for the zero head, ln(batch) for InfoNCE with a constant encoder)


@dataclasses.dataclass(frozen=True)
class ModelSizes:
    s: int = 5  # shared features (the notes: larger s, r saturate the loss and stall the reallocation)
    r: int = 10  # invariant features per task (r = 2s, the illustration of Prop. F.8)
    T: int = 4  # tasks
    u: int = 10  # spurious coordinates (redrawn by the augmentation)


@dataclasses.dataclass(frozen=True)
class AllocationSizes:
    pairs: tuple[tuple[int, int], ...] = ((5, 10), (10, 20), (10, 30), (20, 30))  # (s, r)
    Ts: tuple[int, ...] = (1, 2, 4, 8, 16)
    n: int = 100_000  # Monte-Carlo samples of (Z, Z_1)
    grid_points: int = 501  # alpha grid on [0, 1]


@dataclasses.dataclass(frozen=True)
class PretrainSizes:
    steps: int = 300
    batch: int = 1024  # fresh examples per step and replica
    lr: float = 1.0
    init_scale: float = 0.01
    replicas: int = 4
    cka_samples: int = 40_000  # target-task inputs on which representations are compared: the sample CKA of one
    # pair of learned representations varies by 0.003 to 0.008 (sd) over sets of 5000 inputs, while the population CKA
    # of the four replicas spans 0.7072 to 0.7078; 8x the inputs cut that noise by 2.8
    unbudgeted_lr: float = 10.0  # the null without the Frobenius budget: the saturated loss makes its private
    # weights' gradient small, and at step 1 they reach only 0.62 of 1 in 300 steps (0.97 at step 10)


@dataclasses.dataclass(frozen=True)
class TradeoffSizes:
    ms: tuple[int, ...] = (10, 20, 50, 200)  # labelled target samples
    draws: int = 10  # labelled sets (with their own u*) per replica
    n_test: int = 2000
    C: float = 1.0  # scikit-learn's default, as in the notes' prototype
    large_T: int = 16
    large_prefixes: tuple[int, ...] = (1, 2, 4, 8, 16)  # tasks in pre-training for the T = 16 curve
    closed_replicas: int = 16  # replicas of the closed-form curves (cheap: the probe sees r numbers)
    advantage_chunks: int = 6  # Tables F.2/F.3's reading: 6 x ``draws`` further labelled sets per replica for the
    # specific pre-training's advantage at m = 20 against m = 200 (its paired difference has sd 0.032 over labelled
    # sets, 0.028 of it from the labelled points themselves: only more sets reduce it)
    advantage_n_test: int = 2000  # test points of that reading (the cheapest variance per second: 0.0010 at 2000)
    # The same number of further sets carries the m = 20 drops of Figs. 7.1/7.3 (each target alone minus all tasks)
    # and fine-tuning's probe gain (Table F.9): their spread is between labelled sets, not between trained models
    # (over 240 sets, the variance of the four replica means is 0.2 to 1.3 times what the sets alone predict, seeds
    # 0-1; the fine-tuned private weights are 0.9999 in every replica), and 40 sets left them 1.8 to 2.6 seed-level
    # sd from failing


@dataclasses.dataclass(frozen=True)
class FinetuneSizes:
    gammas: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 1.5)
    steps: int = 300
    lr: float = 1.0
    dykstra_iterations: int = 20
    ms: tuple[int, ...] = (10, 20, 50)
    trend_Ts: tuple[int, ...] = (2, 4, 8, 16)  # Table F.9's trend: fine-tuning from the universal W* of each T
    trend_gamma: float = 2.0  # saturates Prop. F.9's private weight for every T <= 16 (sqrt(5) (1 - 1/4) = 1.68)


@dataclasses.dataclass(frozen=True)
class RegularisationSizes:
    Ts: tuple[int, ...] = (4, 16)
    ms: tuple[int, ...] = (10, 20, 50)
    augmentations: int = 10  # fixed augmentations per labelled point (Table 7.2: 10)
    steps: int = 300
    lr: float = 0.1  # representation
    head_lr: float = 1.0
    head_penalty: float = 1e-3  # 1e-3 ||u||^2
    lam: float = 1.0  # weight of the contrastive term (eq. 7.9; lambda = 1 for the foundation models)
    pairs: int = 256  # contrastive pairs per step
    replicas: int = 48  # FT - LP at T = 4 is ~0.047 with a replica sd ~0.039 (over labelled sets, not test points):
    # 24 replicas left it 2 se from failing on average over six seeds, 48 put it about 4.5
    n_test: int = 2000


@dataclasses.dataclass(frozen=True)
class EncodingSizes:
    """Thm 7.2 (2) on a finite Z: unit-norm tables scaled to radius B_r, optimised from random restarts."""
    probs: tuple[float, ...] = (0.5, 0.3, 0.1)  # P[z_i = 1]: three features of decreasing spread
    dim: int = 2  # the smallest output dimension in which the 8 values can all differ
    radii: tuple[float, ...] = (0.05, 0.2, 0.5, 1.0, 2.0, 3.0)  # the notes' first sweep (0.2 to 3) and 0.05
    restarts: int = 32
    steps: int = 1000
    lr: float = 0.05


@dataclasses.dataclass(frozen=True)
class NonlinearSizes:
    """The source notes' nonlinear prototype: an MLP encoder trained by InfoNCE on a random nonlinear mixing."""
    ns: tuple[int, ...] = (1, 2, 3, 4)  # pre-training on the first n tasks
    mixing_width: int = 128
    inputs: int = 64
    hidden: int = 256
    k_out: int = 16  # the notes' wide encoder
    tau: float = 0.2
    lr: float = 1e-3  # Adam
    batch: int = 256
    steps: int = 1500
    replicas: int = 5  # the notes' five seeds
    m: int = 20
    C: float = 10.0  # the notes' probe
    draws: int = 10
    n_test: int = 1000


@dataclasses.dataclass(frozen=True)
class ContrastiveSizes:
    model: ModelSizes = ModelSizes()
    allocation: AllocationSizes = AllocationSizes()
    pretrain: PretrainSizes = PretrainSizes()
    tradeoff: TradeoffSizes = TradeoffSizes()
    finetune: FinetuneSizes = FinetuneSizes()
    regularisation: RegularisationSizes = RegularisationSizes()
    nonlinear: NonlinearSizes = NonlinearSizes()
    encoding: EncodingSizes = EncodingSizes()


BOOK = ContrastiveSizes()
CI = override(
    BOOK,
    allocation={"n": 40_000, "grid_points": 201},  # alpha = 1 sits on the boundary: a coarse grid finds it
    tradeoff={"n_test": 1000, "ms": (20, 200)},  # half the test points: the paired differences stay beyond 2 se;
    # the two label budgets the claims read (10 and 50 are shown in the book)
    finetune={"ms": (20,), "trend_Ts": (2, 16)},  # the label budget and the two ends of the trend the claims read
    regularisation={"ms": (20,)},  # one label budget: the table's middle column
    nonlinear={"ns": (1, 4), "replicas": 2},  # the ends of the curve, two seeds: the notes' steps and widths kept
    encoding={"steps": 600},
)
FULL = override(
    BOOK,
    allocation={"n": 400_000, "grid_points": 2001},  # the notes' N = 4e5
    pretrain={"steps": 1000, "replicas": 16},  # the notes' full size: longer training, more seeds
    tradeoff={"draws": 40, "n_test": 5000, "closed_replicas": 64},
    finetune={"steps": 600},
    regularisation={"replicas": 64, "steps": 600},
    nonlinear={"replicas": 16, "draws": 40, "n_test": 5000},
    encoding={"restarts": 128, "steps": 2000},
)  # FULL: the paper-scale counterpart of every experiment (runs unchanged on CUDA)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}

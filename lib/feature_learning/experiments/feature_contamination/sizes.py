"""The sizes of the chapter "Feature contamination" per profile, and the source's numbers (appendix F.1)."""

from __future__ import annotations

import dataclasses

from feature_learning.book.profiles import override

SOURCE_LR = 1e-3  # appendix F.1
WEIGHT_DECAY = 1e-3  # appendix F.1
EXTENSION_ACTIVATIONS = ("relu", "gelu", "sigmoid", "tanh")
SOURCE_TIME = "source SGD steps (eta = 0.001)"


# ---- sizes -----------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ClassificationSizes:
    """Appendix F.1 (a), the theory's setting."""

    d_core: int = 32
    d_bg: int = 32
    d: int = 256  # ambient dimension: enters only through the initialisation variance 1/d
    width: int = 256
    batch: int = 1000  # N, the fresh batch of each online-SGD step
    lr: float = 0.4
    steps: int = 500  # eta t = 200, the source's 2 * 10^5 steps
    seeds: int = 3
    log_every: int = 25
    n_test: int = 4000

    @property
    def d0(self) -> int:
        return self.d_core + self.d_bg

    def source_steps(self, steps):
        """The number of the source's steps (eta = 0.001) with the same eta * t."""
        return steps * self.lr / SOURCE_LR


@dataclasses.dataclass(frozen=True)
class RegressionSizes:
    """Appendix F.1 (b), "representation distillation", at (d_core = d_bg, width, batch) = (d_half, width, batch)."""

    d_half: int = 16
    d: int = 128  # 4 d0, as in F.1
    width: int = 128
    batch: int = 256
    lr: float = 0.2
    steps: int = 1500  # eta t = 300, the notes' calibration (eta = 0.1, T = 3000)
    seeds: int = 8  # one replica in a few fits the ID target a little worse: the mean needs several


@dataclasses.dataclass(frozen=True)
class ExtensionSizes:
    """Fig. 3d / 10: other activations, biases, AdamW, concentric balls, at the dimensions of F.1 (the source names
    no step size, decay or width: the step size is the chapter notes' CI calibration)."""

    d_core: int = 32  # the core lives in the balls of R^{d_core}
    d_bg: int = 32
    width: int = 128
    batch: int = 512  # fresh samples per AdamW step
    steps: int = 1000
    lr: float = 1e-2  # AdamW, betas (0.9, 0.999)
    weight_decay: float = 1e-2  # decoupled, on every parameter
    seeds: int = 8  # the worst activation's mean over replicas: one slow replica in four moved it by a third


@dataclasses.dataclass(frozen=True)
class DigitsSizes:
    """The bundled-data analogue of Sec. 2 (chapter notes, section 4.7)."""

    width: int = 256  # student 100 -> width -> teacher_dim
    steps: int = 2000
    seeds: int = 2
    n_train: int = 1200  # of the 1797 digits; the rest is the test set
    teacher_dim: int = 32  # principal components of the digit pixels
    batch: int = 128
    lr: float = 1e-3  # AdamW, betas (0.9, 0.999)
    weight_decay: float = 1e-4


@dataclasses.dataclass(frozen=True)
class AuthorsRecipe:
    """The recipe of the authors' public toy script (``toy.py`` of trzhang0116/feature-contamination) with its linear
    task, hinge loss and SGD options, the setting of the theorems: one fixed training set used whole at every
    iteration, PyTorch's default initialisation, trained hidden biases, output weights frozen at +-1/m (first half +)
    and the output bias frozen at its default (non-zero) initial value, SGD with momentum and coupled weight decay.
    ``time_scale`` k > 1 runs k times the step size for 1/k of the iterations (the same eta t / (1 - momentum))."""

    n: int = 1000  # training points, half of each class, all used at every iteration
    d_core: int = 32
    d_bg: int = 32
    d: int = 256  # inputs x = z V with V a random 64 x 256 matrix with orthonormal rows
    width: int = 256
    iterations: int = 20000
    lr: float = 1e-3
    momentum: float = 0.9
    weight_decay: float = 1e-3  # coupled (torch.optim.SGD): on W and the hidden biases
    time_scale: int = 1
    seeds: int = 8  # replicas, each with its own training set, transform and network
    n_test: int = 4000

    @property
    def d0(self) -> int:
        return self.d_core + self.d_bg

    @property
    def steps(self) -> int:
        return self.iterations // self.time_scale

    @property
    def step_size(self) -> float:
        return self.lr * self.time_scale

    @property
    def effective_time(self) -> float:
        """eta t / (1 - momentum): the time of the rescaled dynamics."""
        return self.step_size * self.steps / (1 - self.momentum)


@dataclasses.dataclass(frozen=True)
class CheckSizes:
    """Sample sizes of the measurements that test the theory on the trained networks."""

    gradient_samples: int = 16000  # fresh inputs for the population gradients of Experiment 2
    init_neurons: int = 200000  # fresh initial neurons for the both-positive fraction at initialisation
    estimate_samples: int = 50000  # fresh ID and OOD inputs for the OOD-risk estimate of Step 5
    drift_samples: int = 4000  # fresh inputs for the population drift of Lemma B.6
    gap_batches: int = 20  # fresh batches for Lemma A.2's gradient gap


@dataclasses.dataclass(frozen=True)
class ContaminationSizes:
    classification: ClassificationSizes = ClassificationSizes()
    regression: RegressionSizes = RegressionSizes()
    extension: ExtensionSizes = ExtensionSizes()
    digits: DigitsSizes = DigitsSizes()
    checks: CheckSizes = CheckSizes()
    authors: AuthorsRecipe = AuthorsRecipe()


BOOK = override(ContaminationSizes(), authors={"time_scale": 10})
CI = override(
    BOOK,
    # a quarter of the batch and 400 steps (eta t = 160, where the OOD risk has reached its plateau); four seeds,
    # since the class-averaged activation rates move with the few neurons that never learn (about one in ten)
    classification={"batch": 256, "steps": 400, "log_every": 20, "seeds": 4},
    regression={"steps": 1000},  # eta t = 200: the ID error is at its floor
    # two narrower students (batched): the claims' standard errors need two, and the drop's rate counts them
    digits={"width": 128, "steps": 1500, "seeds": 2},
    # the authors' recipe at 20 times their step size for 1/20 of their iterations (the same eta t / (1 - momentum))
    authors={"time_scale": 20, "seeds": 6},
)
FULL = override(
    BOOK,
    classification={"lr": 0.1, "steps": 4000, "seeds": 5, "log_every": 50, "n_test": 20000},  # the notes' full run
    regression={"d_half": 32, "d": 256, "width": 256, "batch": 1000, "lr": 0.1, "steps": 3000},  # the notes' run
    extension={"width": 256, "batch": 1000, "steps": 2000},  # the notes' sizes
    digits={"steps": 4000, "seeds": 3},
    checks={"gradient_samples": 80000, "drift_samples": 16000},
    authors={"time_scale": 1, "seeds": 16},  # the script's own step size and iteration count
)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}

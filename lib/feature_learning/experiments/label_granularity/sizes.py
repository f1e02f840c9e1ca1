"""The sizes of the chapter "Pretraining label granularity" (ci, book, full), the model knobs
(:class:`~.sizes.PatchModel`) and the source's printed tables (Sec. 4, appendix A), kept as data."""

from __future__ import annotations

import dataclasses
import math

from feature_learning.book.profiles import override
from feature_learning.data.multiview_patches import MultiViewPatches
from feature_learning.models.patch_conv import width_for_lucky

LABELS = ("coarse", "fine")


# ---- sizes --------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PatchModel:
    """The scaled-down theory setting (seed notes, section 4.9). d = max(d_min, 2 + 2k + d_spare)."""

    P: int = 24
    s_star: int = 5
    noise: float = 0.05  # sigma_zeta sqrt(d), the per-patch noise norm (theory ln^-10 d; notes' recommendation)
    gamma: float = 0.05
    s_f: int = 2
    iota: float = 0.05
    d_min: int = 32
    d_spare: int = 14
    sigma0: float = 1e-3
    lr: float = 0.05
    tau: float = 3.0  # init bias -tau sigma0, coarse and fine alike
    lam: float = 20.0  # the bias divisor of eqs. (7), (93)
    n_lucky: float = 3.0  # width per output m = n_lucky / Q(tau) (2222)
    prune_margin: float = 0.4  # drop neurons below (tau - 0.4) sigma0 on every feature (safe: notes' rule gives 0.34)
    batch: int = 64  # N; n_per_subclass = max(2, N / 2k)

    def d(self, k: int) -> int:
        return max(self.d_min, 2 + 2 * k + self.d_spare)

    @property
    def width(self) -> int:
        return width_for_lucky(self.n_lucky, self.tau)

    def n_per_subclass(self, k: int) -> int:
        return max(2, self.batch // (2 * k))

    def data(self, k: int, counts: str = "exact") -> MultiViewPatches:
        d = self.d(k)
        return MultiViewPatches(d=d, P=self.P, k=k, s_star=self.s_star, sigma_zeta=self.noise / math.sqrt(d),
                                gamma=self.gamma, s_f=self.s_f, iota=self.iota, counts=counts)

    def safe_margin(self, steps: int, neurons: int = 1) -> float:
        """The notes' pruning rule: delta >= sqrt(2 ln(T N P n)) sigma_zeta sqrt(d) + tau (1 - sqrt(1 - iota)) (a
        pruned neuron never fires over T N P patch draws; n neurons for a union over them)."""
        draws = steps * self.batch * self.P * neurons
        return math.sqrt(2 * math.log(draws)) * self.noise + self.tau * (1 - math.sqrt(1 - self.iota))


@dataclasses.dataclass(frozen=True)
class SweepSizes:
    """Coarse against fine training over k (Simulations A, C, D)."""

    coarse_ks: tuple[int, ...] = (4, 8, 16)
    fine_ks: tuple[int, ...] = (4, 8, 16)
    steps: int = 600
    fine_steps_per_k: int = 40  # fine runs take this many steps times k: a head sees N/(2k) of its samples per step
    coarse_replicas: int = 12  # the margin slope over k carries the Poisson noise of the lucky-neuron counts; 8 until
    #                            a seed outside 0-5 sat within noise of its bound at ci (-0.77 ± 0.074); 12,
    #                            not 16: 16 made the ci chapter about 35% slower
    slope_replicas: int = 96  # coarse replicas at the smallest k: the slope's noisiest end (fewest subclasses to
    #                           average the lucky-neuron counts over) and, with the largest k, its only lever arm
    lever_replicas: int = 16  # coarse replicas at the largest k, the slope's other lever arm: per-replica sd of
    #                           ln(hard margin) 0.19-0.27 at k = 4 and 0.19-0.25 at k = 16 (a ci run's 96 and 12
    #                           replicas; the stored slope se with 8 and with 96/12 replicas), and a k = 16 replica
    #                           costs about five at k = 4: with 96 at k = 4 the k = 16 end carried most of the variance
    fine_replicas: int = 3
    n_test: int = 20  # test samples per subclass, normal and hard
    rhos: tuple[float, ...] = tuple(round(0.025 * i, 3) for i in range(17))  # distractor grid 0 .. 0.4
    early: int = 4  # the Phase-I window t = 0 .. early for the growth-rate ratios
    n_log: int = 40  # log-spaced logging times


@dataclasses.dataclass(frozen=True)
class LogTimeSizes:
    """The log-time growth of F_+ (Theorem E.1): coarse labels at k, exact against Bernoulli patch counts."""

    k: int = 8
    steps: int = 1200
    replicas: int = 6  # log_constant's mean over replicas and classes: its se, from 6 values at 3 replicas, ranged
    #                    0.002-0.024 over the seeds and its distance from failing was under 2 seed-level sd


@dataclasses.dataclass(frozen=True)
class PruningSizes:
    """Pruned against unpruned initialisation on the same data stream."""

    k: int = 4
    steps: int = 300
    replicas: int = 1


@dataclasses.dataclass(frozen=True)
class LuckySizes:
    """Monte Carlo of the lucky-set sizes (Proposition 1)."""

    d: int = 32
    n_features: int = 18
    taus: tuple[float, ...] = (2.5, 3.0, 3.5)
    trials: int = 200


@dataclasses.dataclass(frozen=True)
class HierarchySizes:
    """Pretraining label functions on a finite sample of a label tree, transferred to the superclasses by merging
    heads. The learner is the theory's (one neuron group per pretraining class, thresholding bias)."""

    branching: tuple[int, ...] = (2, 4)  # two superclasses (the binary target), four leaves each
    n_nuisance: int = 8  # label-independent nuisance types (one per image)
    s_nuisance: int = 8  # its patches per image, amplitude 1: it dominates the bag-of-patches embedding
    per_leaf: int = 32  # training images per leaf
    few_per_leaf: int = 2  # the few-samples regime (the paper's ImageNet-1k case)
    oversplit: int = 4  # over-split factor of the leaves
    lr: float = 0.1  # twice the theory runs' step size for half the steps (the dynamics depend on eta t)
    steps: int = 150
    replicas: int = 6  # at three the manual-vs-baseline gap sat within 2 se of 0 at a seed (ci)
    embed_noise: float = 0.02
    n_test: int = 40  # hard test images per leaf and distractor strength
    rhos: tuple[float, ...] = tuple(round(0.025 * i, 3) for i in range(17))
    checkpoints: tuple[float, ...] = (5 / 9, 7 / 9)  # Table 6: the 50- and 70-epoch checkpoints of 90 epochs
    wide: float = 2.0  # the wider network (ResNet-50's analogue): twice the neurons per output
    probe_per_leaf: int = 32  # cross-data-set probe: labelled target images per leaf (as many as pretraining had)
    probe_test: int = 50  # ... and test images per leaf
    probe_ridge: float = 1e-2  # its ridge penalty on unit-norm representations (fixed before the first run)


@dataclasses.dataclass(frozen=True)
class SourceConstantsSizes:
    """Coarse against fine training at one k with the source's threshold sqrt((4 + 2 c0) ln d) (coarse) or
    sqrt((2 + 2 c0) ln d) (fine) at c0 = 0.1 and its bias divisor ln^5 d; the width keeps n_lucky neurons above the
    threshold per feature (the Theta's constant), steps as in the sweep."""

    k: int = 8
    coarse_replicas: int = 12
    fine_replicas: int = 3


@dataclasses.dataclass(frozen=True)
class GranularitySizes:
    model: PatchModel = PatchModel()
    sweep: SweepSizes = SweepSizes()
    logtime: LogTimeSizes = LogTimeSizes()
    pruning: PruningSizes = PruningSizes()
    lucky: LuckySizes = LuckySizes()
    hierarchy: HierarchySizes = HierarchySizes()
    source: SourceConstantsSizes = SourceConstantsSizes()


BOOK = GranularitySizes()
CI = override(
    BOOK,
    sweep={"fine_ks": (4, 8)},  # fine k = 16 has 32 heads of ~350 neurons at d = 48 for 640 steps: minutes
    logtime={"steps": 600},  # the slope is fitted on [T/4, T]: 600 steps already reach F ~ 4.5
    pruning={"steps": 100},  # the unpruned network has 2 x 2222 neurons in float64
    hierarchy={"steps": 100,  # fewer steps: the eight label functions cost as much as the sweep otherwise
               "oversplit": 2,  # G = 16 instead of 32 heads
               "n_test": 20, "rhos": tuple(round(0.05 * i, 2) for i in range(13))},  # a coarser distractor grid
    lucky={"trials": 50},  # a 10% tolerance needs about 50 initialisations for a clear verdict
    source={"coarse_replicas": 6, "fine_replicas": 2},  # a second k = 8 pair costs as much as the sweep's
)
FULL = override(
    BOOK,
    sweep={"coarse_ks": (4, 8, 16, 32), "fine_ks": (4, 8, 16, 32), "steps": 2000, "fine_steps_per_k": 100,
           "coarse_replicas": 16, "slope_replicas": 128,
           "fine_replicas": 8},  # the notes' full size: k up to 32 (d = 80), more steps, seeds
    logtime={"steps": 5000, "replicas": 8},
    pruning={"k": 8, "steps": 600, "replicas": 2},  # a longer exactness check
    lucky={"trials": 2000},  # a tighter Monte Carlo
)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}


# ---- the empirical record (Sec. 4, appendix A): the source's tables, kept as data -------------------------------
# iNaturalist 2021 (mini), 11 superclasses, ResNet-34 fine-tuned validation error (%), mean and sd over >= 6 runs
# (Table 5; Table 1 prints the means). G = number of pretraining classes.
INAT_RESNET34 = {
    "manual hierarchy": [(11, 5.25, 0.051), (13, 5.40, 0.075), (51, 5.10, 0.038), (273, 4.83, 0.041),
                         (1103, 4.79, 0.045), (4884, 4.82, 0.056), (6485, 4.84, 0.033)],
    "random class ID": [(22, 6.61, 0.215), (88, 6.30, 0.070), (352, 6.12, 0.77), (1408, 6.10, 0.053),
                        (5632, 6.12, 0.042), (11264, 6.10, 0.057), (500000, 6.54, 0.758)],
    "CLIP+kMeans per superclass": [(22, 5.14, 0.049), (88, 5.16, 0.033), (352, 5.17, 0.027), (1408, 5.24, 0.029),
                                   (2816, 5.30, 0.029), (5632, 5.31, 0.077), (22528, 5.37, 0.032)],
    "per superclass, rebalanced": [(88, 5.18, 0.054), (218, 5.17, 0.038), (320, 5.23, 0.052), (608, 5.28, 0.045),
                                   (1040, 5.26, 0.035), (1984, 5.21, 0.040)],
    "CLIP+kMeans whole dataset": [(22, 5.52, 0.015), (44, 5.42, 0.047), (88, 5.45, 0.049), (352, 5.46, 0.019),
                                  (1408, 5.60, 0.029), (2816, 5.50, 0.029), (5632, 5.47, 0.029)],
}
# Table 6: the manual hierarchy from the 70- and 50-epoch backbone checkpoints (G = 13 ... 6485; the 90-epoch row
# is Table 5's)
TABLE6 = {"G": (13, 51, 273, 1103, 4884, 6485), "70": (5.43, 5.08, 4.86, 4.82, 4.83, 4.85),
          "50": (5.53, 5.2, 4.90, 4.9, 4.91, 4.95)}
TABLE1_MANUAL = [5.25, 5.40, 5.10, 4.83, 4.79, 4.82, 4.84]  # Table 1 (main text), manual hierarchy row
TABLE1_RELATIVE_GAIN = 8.76  # "[best improvement over baseline]/[baseline error rate] = 8.76%" (Table 1 caption)
INAT_RESNET50 = {  # Table 7
    "manual hierarchy": [(11, 4.43, 0.029), (13, 4.44, 0.063), (51, 4.36, 0.062), (273, 4.22, 0.021),
                         (1103, 4.20, 0.035), (4884, 4.23, 0.054), (6485, 4.33, 0.037)],
    "random class ID": [(22, 5.36, 0.111), (88, 5.31, 0.079), (352, 5.24, 0.093), (1408, 5.38, 0.052),
                        (5632, 5.37, 0.033), (11264, 5.40, 0.033), (500000, 5.13, 0.072)],
}
# ImageNet-21k, binary "living thing", ViT-B/16 validation error (%), one seed (Table 2): (level, G, error)
IN21K_BINARY = [("baseline", 2, 7.90), ("0 (leaf)", 21843, 6.56), ("1", 5995, 6.76), ("2", 2281, 6.70),
                ("4", 519, 6.97), ("6", 160, 7.31), ("9", 38, 7.55)]
# Table 8 (labelled "validation error", but accuracies): leaf-pretrained and baseline, per strategy
IN21K_TABLE8 = {
    "90-ep finetune (4096, 1e-3)": (92.782, 92.102), "90-ep finetune (1024, 2.5e-4)": (93.177, 91.971),
    "90-ep finetune (512, 1.25e-4)": (93.295, 91.939), "linear probe (4096, 1e-3)": (87.497, 91.703),
    "linear probe (512, 1.25e-4)": (87.493, 91.719), "10-ep finetune (4096, 1e-3)": (92.294, 92.002),
    "10-ep finetune (512, 1.25e-4)": (93.439, 91.856),
}
IN21K_TRAIN_SPLIT = {"appendix": (5_448_549, 7_294_772), "main text": (5_448_549, 7_294_862), "total": 12_743_321}
# ImageNet-1k, ResNet-50 fine-tuned validation error (%) on the 1000 classes (Table 9) and the baselines (A.1.3)
IN1K = {
    "ResNet-50 CLIP + kMeans": [(2000, 23.40, 0.13), (4000, 23.48, 0.098), (8000, 23.49, 0.204)],
    "ViT-L/14 CLIP + kMeans": [(2000, 23.40, 0.127), (4000, 23.47, 0.074), (8000, 23.78, 0.048)],
    "random sub-ID": [(2000, 23.40, 0.068), (4000, 23.40, 0.070), (8000, 23.65, 0.071)],
}
IN1K_BASELINE = (23.28, 0.103)  # retraining baseline (pretrain and finetune on the 1000 classes)
IN1K_NAIVE = (24.04, 0.057)  # one-pass 90 epochs
# Cross-dataset ImageNet-21k -> ImageNet-1k, ViT-B/16 validation accuracy (%): (level, G) and
# Table 10's fine-tuning grid over base learning rates (3e-3, 3e-2, 6e-2, 3e-1); Table 3 prints its row maxima;
# Table 4/11 the linear probe (mean, sd).
CROSS_LEVELS = [("0 (leaf)", 21843), ("1", 5995), ("2", 2281), ("4", 519), ("6", 160), ("9", 38)]
CROSS_FINETUNE_GRID = [(80.87, 82.48, 82.51, 81.40), (77.38, 81.03, 81.28, 80.40), (74.91, 79.76, 80.26, 79.70),
                       (63.65, 76.43, 77.32, 77.53), (62.17, 73.65, 73.92, 75.53), (53.68, 69.33, 71.08, 72.75)]
CROSS_TABLE3 = [82.51, 81.28, 80.26, 77.53, 75.53, 72.75]
CROSS_PROBE = [(81.45, 0.021), (78.33, 0.018), (75.66, 0.005), (68.95, 0.051), (63.65, 0.035), (57.35, 0.016)]
CROSS_BASELINES = {"IM1k, 90 epochs (the source)": 73.99, "IM1k, 300 epochs (ViT paper)": 77.91}


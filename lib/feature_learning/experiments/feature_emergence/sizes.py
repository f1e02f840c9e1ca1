"""Sizes of the chapter "Feature learning emerges from the input structure" (Shi, Wei and Liang, ICLR 2022 =
dissertation ch. 2), its fixed step sizes and the source's numbers (Appendix E = A.7).

The source's main run (E.1.1) has d = 500, D = 100, k = 5, p_o = 1/2, parity labels, m = 300 (2m = 600 units),
50,000 training samples, T = 600, batch 1000 after two full-batch steps. ``FULL`` is that run; ``BOOK`` keeps d, D,
k, m and shrinks n and T; ``CI`` overrides a few sizes (each with its reason). Where the source is silent (step sizes
after step 2, the baselines' optimiser, the probes) the choice is named here and stated in the chapter."""

from __future__ import annotations

import dataclasses

from feature_learning.book.profiles import override


# -- sizes ----------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ParitySizes:
    """E.1.1 (Figures 1 and 2, Table 1) and the variants of E.2.1-E.2.2, one batched program."""

    d: int = 500
    D: int = 100
    k: int = 5
    p_o: float = 0.5
    m: int = 300  # half-width: the network has 2m units
    n: int = 20_000  # training samples (the source: 50,000): (D - k)/n is 2.4 times the source's
    n_test: int = 4000
    steps: int = 300  # T, including the two full-batch steps (the source: 600)
    batch: int = 500  # mini-batch of the classifier stage and the baselines (the source: 1000)
    log_every: int = 20
    seeds: int = 5  # the source averages five seeds
    prototype_seeds: int = 4  # the main group again with the notes' prototype stage (its first seeds are main's)
    init_replicas: int = 64  # initialisations for the random features' cosine (no training)
    probe_replicas: int = 6  # replicas of step 1 for the probe on the step-one features (their own streams)
    probe_test: int = 10_000  # fresh test samples of each of those probes


@dataclasses.dataclass(frozen=True)
class VariantSizes:
    """E.2.1 (input dimension, Table 3) and E.2.2 (class imbalance, Table 4), with the sizes of ``parity``."""

    seeds: int = 2
    dims: tuple[int, int] = (100, 2000)  # d = D and d = 20 D (the source: 100 and 2000 at D = 100)
    ratios: tuple[float, float] = (0.8, 0.9)  # share of class -1 (the source: 0.8 and 0.9)


@dataclasses.dataclass(frozen=True)
class SampleSizes:
    """E.2.3 (Table 5): the source's n = 25,000 (m = 300) and 10,000 (m = 50, to stop its network overfitting), run
    at the source's background-to-sample ratio (D - k)/n: n = source n (D - k)/95 with ``parity``'s D and k."""

    source_ns: tuple[int, int] = (25_000, 10_000)
    widths: tuple[int, int] = (300, 50)  # m
    seeds: int = 2


@dataclasses.dataclass(frozen=True)
class IntervalSizes:
    """E.1.2 (Table 2): y = +1 iff sum_A phi~ in [20, 30], k = 30, Pr[phi~_j = 1] = 2/3 on A and 1/2 elsewhere."""

    D: int = 100
    k: int = 30
    low: int = 20
    p_in: float = 2 / 3
    m: int = 100
    n: int = 50_000  # the source's sample (two full-batch steps only: cheap in pattern coordinates)
    n_test: int = 20_000  # the fixed-feature models' accuracies sit near their bounds: a small binomial se
    n_probe: int = 5000  # samples the probes are fitted on
    steps: int = 200  # T of the fixed-feature models (the source's T = 200 for E.1.2)
    batch: int = 1000  # their mini-batch (E.1.1's)


@dataclasses.dataclass(frozen=True)
class HiddenSizes:
    """E.3.1 (Figure 15): labels from 50 random codes per label; the source's d, D, k."""

    d: int = 500
    D: int = 250
    k: int = 50
    per_label: int = 50
    n: int = 5000
    m: int = 300


@dataclasses.dataclass(frozen=True)
class MixtureSizes:
    """E.3.2 (Table 6, Figure 16): (d, k, sigma_r, epochs) per experiment; "typical practice" training."""

    experiments: tuple[tuple[int, int, float, int], ...] = ((100, 4, 1.0, 80), (25, 4, 0.7, 50), (100, 5, 1.0, 80))
    width: int = 800
    seeds: int = 2
    n: int = 4000
    n_test: int = 4000
    batch: int = 100
    lr: float = 1e-3


@dataclasses.dataclass(frozen=True)
class DigitsClusterSizes:
    """E.4 on the bundled digits 0/1 (360 images): the source's m = 50, SGD with momentum 0.95, no regulariser."""

    width: int = 50
    n_train: int = 250  # of the 360 images of 0 and 1; the other 110 are the test set
    replicas: int = 8  # networks trained on the labels (and as many on a shuffle of them), a batch axis
    lr: float = 0.1
    momentum: float = 0.95
    batch: int = 25
    epochs: int = 20  # the source's 20 epochs of E.4.1 (Figs. 20-21: epochs 0, 3 and 20)
    early_epochs: int = 3  # the source's "epoch 3" (E.4.1): the movement before and after it
    log_epochs: tuple[int, ...] = (1, 10)  # the pictures' intermediate steps (besides 0, early_epochs and the end)
    chunk: int = 10  # Table 7: three blocks of 10 steps


@dataclasses.dataclass(frozen=True)
class InjectionSizes:
    """E.5 (Algorithm 1) on the bundled digits with Gaussian injected inputs."""

    teacher_width: int = 16
    student_width: int = 50
    teacher_steps: int = 500
    student_steps: int = 400
    n_student: int = 1200
    alphas: tuple[float, ...] = (0.25, 0.75)  # Fig. 24: the other shares of Gaussian inputs (besides 1/2)
    narrow_width: int = 9  # Fig. 25: the source's m = 9 students, against m = 50 (E.5.3)
    extra_teachers: int = 4  # teachers whose labels the students of Figs. 23-24 learn (one initialisation each)
    n_extra_test: int = 1000  # fresh Gaussian inputs those students and the narrow ones are tested on
    n_permuted_reg: int = 200  # permuted digits the teachers' regulariser sees (R1 + R2 is a mean: a sample suffices)
    lr: float = 1e-2
    reg: float = 1.0  # weight of R1 + R2 on the injected inputs while training the teacher
    teachers: int = 8  # teachers' initialisations, a batch axis (the labels differ between teachers)
    seeds: int = 2  # students' initialisations per teacher, a batch axis
    n_injected_test: int = 5000  # fresh Gaussian inputs the students are tested on (the digits' test set is fixed)



@dataclasses.dataclass(frozen=True)
class SelectionSizes:
    """E.5.1 and E.5.4 (Algorithm 1, Fig. 26) on the bundled digits with Gaussian unlabelled inputs: the teachers'
    width sweep and the students' sweeps on the inputs labelled by the chosen teacher and by a wider one (the
    source: FC(9), chosen on MNIST, then FC(50) and FC(500)). Steps, step size and regulariser are the injection
    protocol's."""

    n_train: int = 600  # digits each replica's teachers train on (the other 1197 are their test set); also |U|
    n_gauss_test: int = 2000  # fresh Gaussian inputs the students are tested on
    widths: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # the teachers' m
    replicas: int = 6  # splits of the digits, a batch axis: the first half choose the widths, the second measure
    teacher_factors: tuple[float, ...] = (1.0, 50 / 9)  # the chosen width times these label the Gaussian inputs
    student_widths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    student_replicas: int = 3  # splits whose teachers and students train (the first ones), a batch axis
    teacher_steps: int = 500
    student_steps: int = 400
    lr: float = 1e-2
    reg: float = 1.0

@dataclasses.dataclass(frozen=True)
class Theorem2Sizes:
    """Theorem 2 at a k where its floor is not vacuous: D_A^mix with parity labels, odd k, D = 16 k (the theorem's
    k <= D/16), p_o = 1/2; the random-feature model of the network (2m features in [0, 1], Theorem 26's
    initialisation) with its output weights trained by full-batch gradient descent on the hinge loss."""

    k: int = 13  # 2^k = 8192: with 600 features the floor stays positive up to ||w|| = 236
    m: int = 300  # half-width: 2m = 600 features, as in Experiment 1
    n: int = 10_000
    n_test: int = 20_000
    steps: int = 300
    lr: float = 30.0  # the lowest training hinge of 30, 100 and 300 on one draw outside the chapter's streams
    replicas: int = 3  # independent draws of A, features and samples, a batch axis


@dataclasses.dataclass(frozen=True)
class FeatureEmergenceSizes:
    parity: ParitySizes = ParitySizes()
    variants: VariantSizes = VariantSizes()
    samples: SampleSizes = SampleSizes()
    interval: IntervalSizes = IntervalSizes()
    hidden: HiddenSizes = HiddenSizes()
    mixture: MixtureSizes = MixtureSizes()
    digits_cluster: DigitsClusterSizes = DigitsClusterSizes()
    injection: InjectionSizes = InjectionSizes()
    selection: SelectionSizes = SelectionSizes()
    theorem2: Theorem2Sizes = Theorem2Sizes()


BOOK = FeatureEmergenceSizes()
CI = override(
    BOOK,
    parity={"d": 200, "D": 50, "n": 10_000,  # half the patterns and half the sample: (D - k)/n as at book
            "n_test": 2000, "steps": 200, "seeds": 2},  # fewer steps and seeds: the time of the batched program
    variants={"seeds": 1, "dims": (50, 1000)},  # one seed per variant; d = D and 20 D of ci's D
    samples={"seeds": 1},  # one seed per sample size
    interval={"batch": 500},  # the classifier stage's batch of ci's parity runs
    hidden={"n": 3000},  # a smaller sample: the prediction's tolerance follows n
    mixture={"experiments": ((100, 4, 1.0, 40), (25, 4, 0.7, 25), (100, 5, 1.0, 40)),  # half the epochs
             "n": 3000, "n_test": 2000},
    injection={"teacher_steps": 400, "student_steps": 300},
    selection={"replicas": 8,  # four measuring replicas: the rise's spread is between teachers, and two measuring
               # ones leave it within noise of its bound at some seeds
               "student_replicas": 2, "widths": (1, 2, 3, 4, 6, 8, 12, 16),  # narrower: the time of ci
               "student_widths": (1, 2, 4, 8, 16, 32), "teacher_steps": 400, "student_steps": 300},
)
FULL = override(
    BOOK,
    parity={"n": 50_000, "n_test": 10_000, "steps": 600, "batch": 1000},  # the source's E.1.1
    variants={"seeds": 5},
    samples={"seeds": 5},
    hidden={"n": 50_000},
    mixture={"seeds": 5, "n": 20_000, "n_test": 10_000},
    injection={"teacher_steps": 800, "student_steps": 800},
    selection={"n_train": 1200, "replicas": 8,
               "widths": (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512),
               "teacher_factors": (1.0, 50 / 9, 500 / 9),  # the source's FC(9), FC(50) and FC(500)
               "student_widths": (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
                                  1536, 2048),
               "student_replicas": 8, "teacher_steps": 800, "student_steps": 800},
    theorem2={"n": 50_000, "replicas": 5},
)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}

# Our choices where the source is silent (Appendix E.1 says only "the training follows Section 3").
SECOND_LAYER_STEP = 1800.0  # eta_a of the classifier stage at its start
FIRST_LAYER_FACTOR = 0.03  # W and b of the classifier stage: this times the theorem's eta = k^2/(T m^(1/3))
# SGD steps of the random-feature model's second layer and of the NTK model, tuned as eta_a was: on two tuning seeds
# (stream "tuning", run seed 100, ci sizes, test accuracy), grid 1e-4 ... 10 in factors of about 3
# (the chapter shows the grid); 0.01 for both before the tuning
RF_STEP = 0.1
NTK_STEP = 0.001
PROTOTYPE_STEP = 100.0  # eta_a of the chapter notes' prototype stage (constant): the pre-registered recipe
# the tuning sweep: step -> (NTK, RF) test accuracy, mean of the two tuning seeds (ci sizes, main group)
BASELINE_TUNING = {1e-4: (0.7733, 0.7405), 3e-4: (0.8343, 0.7405), 1e-3: (0.8375, 0.7408), 3e-3: (0.8195, 0.7405),
                   0.01: (0.7835, 0.7405), 0.03: (0.7825, 0.7983), 0.1: (0.7615, 0.8190), 0.3: (0.7450, 0.8185),
                   1.0: (0.7298, 0.7953), 10.0: (0.7315, 0.7718)}
# The same for the fixed-feature models under interval labels (E.1.2; k = 30 makes the features 30 times smaller):
# one tuning seed (run seed 100, ci sizes, test accuracy with structure), the grid 1e-3 ... 1e4 in factors of 10
INTERVAL_NTK_STEP = 10.0
INTERVAL_RF_STEP = 100.0
INTERVAL_TUNING = {1e-3: (0.5772, 0.5772), 0.01: (0.5772, 0.5772), 0.1: (0.8044, 0.5772), 1.0: (0.959, 0.5772),
                   10.0: (0.9736, 0.6576), 100.0: (0.972, 0.7696), 1e3: (0.9716, 0.762), 1e4: (0.9716, 0.7588)}
PROBE_C = 1.0  # inverse penalty of the logistic probes on standardised features (scikit-learn's default)
PROBE_ITERATIONS = 10  # Newton steps of the probes (their accuracy no longer changes after five)
PROBE_FIT = 3000  # training samples a probe is fitted on (at most; the cost is n p^2 per Newton step)
UNSCALED_PROBE_FIT = 1000  # training samples of the probe at the features' scale (1000 gradient steps of n p each)


# -- the source's numbers (Appendix E = A.7, test accuracies as fractions) ------------------------------------------
TABLE1 = {"net": 1.000, "ntk": 0.864, "rf": 0.760, "one": 0.522, "two": 1.000, "net_nostruct": 0.520,
          "cos_rf": 0.114, "cos_one": 0.848, "cos_two": 0.997, "cos_nostruct": 0.253}
TABLE2 = {"net": 1.000, "ntk": 1.000, "rf": 0.732, "one": 0.410, "two": 1.000, "net_nostruct": 1.000,
          "cos_two": 0.994, "cos_nostruct": 0.965}
TABLE3 = {100: {"net": 1.000, "ntk": 0.815, "rf": 0.783, "one": 0.511, "two": 1.000, "net_nostruct": 0.510,
                "cos_rf": 0.354, "cos_two": 1.000, "cos_nostruct": 0.331},
          2000: {"net": 1.000, "ntk": 0.754, "rf": 0.770, "one": 0.5001, "two": 1.000, "net_nostruct": 0.525,
                 "cos_rf": 0.056, "cos_two": 0.998, "cos_nostruct": 0.309}}
TABLE4 = {0.8: {"net": 1.000, "ntk": 0.827, "rf": 0.704, "one": 0.757, "two": 1.000, "net_nostruct": 0.617,
                "cos_two": 0.999, "cos_nostruct": 0.218},
          0.9: {"net": 1.000, "ntk": 0.817, "rf": 0.724, "one": 0.892, "two": 1.000, "net_nostruct": 0.718,
                "cos_two": 0.997, "cos_nostruct": 0.286}}
TABLE5 = {25_000: {"net": 1.000, "ntk": 0.841, "rf": 0.747, "one": 0.500, "two": 1.000, "net_nostruct": 0.502,
                   "cos_two": 0.997, "cos_nostruct": 0.230},
          10_000: {"net": 1.000, "ntk": 0.750, "rf": 0.743, "one": 0.503, "two": 1.000, "net_nostruct": 0.522,
                   "cos_two": 0.994, "cos_nostruct": 0.176}}
SOURCE_N = 50_000  # the source's training sample in E.1 and E.2.1-E.2.2

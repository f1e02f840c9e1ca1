"""Sizes, recipes and runs of the chapter "Feature learning emerges from the input structure, and beats fixed
features" (Shi, Wei and Liang, ICLR 2022 = dissertation ch. 2; experiments in Appendix E = A.7).

The source's main run (E.1.1) has d = 500, D = 100, k = 5, p_o = 1/2, parity labels, m = 300 (2m = 600 units),
50,000 training samples, T = 600, batch 1000 after two full-batch steps. ``FULL`` is that run; ``BOOK`` keeps d, D,
k, m and shrinks n and T; ``CI`` overrides a few sizes (each with its reason). Where the source is silent (step sizes
after step 2, the baselines' optimiser, the probes) the choice is named here and stated in the chapter.

Every sparse-coding run is in pattern coordinates z = M^T x (exact, see :func:`sample_patterns`), batched over
replicas: the seeds, the settings with and without input structure, and the variants of Appendix E.2 are one
tensor program (:func:`parity_program`).
"""

from __future__ import annotations

import dataclasses
import math

import torch

from feature_learning.book.profiles import override
from feature_learning.data.bases import orthonormal_dictionary
from feature_learning.data.gaussian_mixture import hypercube_centres, hypercube_mixture
from feature_learning.data.sparse_coding import (
    HiddenRepresentationTask,
    SparseCodingTask,
    interval_set,
    parity_set,
)
from feature_learning.measure.geometry import best_cosine_per_target, cosine_to
from feature_learning.measure.metrics import argmax_accuracy, sign_accuracy
from feature_learning.measure.probes import logistic_probe
from feature_learning.measure.statistics import Estimate, Null, difference
from feature_learning.models.two_layer import (
    TwoLayerNet,
    init_lecun,
    init_symmetric_gaussian,
    init_torch_default,
    ntk_forward,
    paper_init_scales,
    smoothed_trunc_relu,
    smoothed_trunc_relu_grad,
    zeros_like,
)
from feature_learning.theory.feature_emergence import (
    interval_constants,
    mixture_cosine_and_sd,
    second_step_cosine_general,
    second_step_cosine_sd,
)
from feature_learning.training.loop import OptimConfig, batches_with_replacement, minibatches, train
from feature_learning.training.losses import (
    balance_and_confidence,
    cross_entropy,
    hinge,
    logistic,
)


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
    n_test: int = 5000
    n_probe: int = 5000  # samples the probes are fitted on


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
class InjectionSizes:
    """E.5 (Algorithm 1) on the bundled digits with Gaussian injected inputs."""

    teacher_width: int = 16
    student_width: int = 50
    teacher_steps: int = 500
    student_steps: int = 400
    n_student: int = 1200
    alpha: float = 0.5  # share of injected inputs in the mixture student's training set
    lr: float = 1e-2
    reg: float = 1.0  # weight of R1 + R2 on the injected inputs while training the teacher
    seeds: int = 4  # students' initialisations (one teacher)


@dataclasses.dataclass(frozen=True)
class FeatureEmergenceSizes:
    parity: ParitySizes = ParitySizes()
    variants: VariantSizes = VariantSizes()
    samples: SampleSizes = SampleSizes()
    interval: IntervalSizes = IntervalSizes()
    hidden: HiddenSizes = HiddenSizes()
    mixture: MixtureSizes = MixtureSizes()
    injection: InjectionSizes = InjectionSizes()


BOOK = FeatureEmergenceSizes()
CI = override(
    BOOK,
    parity={"d": 200, "D": 50, "n": 10_000,  # half the patterns and half the sample: (D - k)/n as at book
            "n_test": 2000, "steps": 200, "seeds": 2},  # fewer steps and seeds: the time of the batched program
    variants={"seeds": 1, "dims": (50, 1000)},  # one seed per variant; d = D and 20 D of ci's D
    samples={"seeds": 1},  # one seed per sample size
    hidden={"n": 3000},  # a smaller sample: the prediction's tolerance follows n
    mixture={"experiments": ((100, 4, 1.0, 40), (25, 4, 0.7, 25), (100, 5, 1.0, 40)),  # half the epochs
             "n": 3000, "n_test": 2000},
    injection={"teacher_steps": 400, "student_steps": 300},
)
FULL = override(
    BOOK,
    parity={"n": 50_000, "n_test": 10_000, "steps": 600, "batch": 1000},  # the source's E.1.1
    variants={"seeds": 5},
    samples={"seeds": 5},
    hidden={"n": 50_000},
    mixture={"seeds": 5, "n": 20_000, "n_test": 10_000},
    injection={"teacher_steps": 800, "student_steps": 800},
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
PROBE_C = 1.0  # inverse penalty of the logistic probes on standardised features (scikit-learn's default)
PROBE_ITERATIONS = 10  # Newton steps of the probes (their accuracy no longer changes after five)
PROBE_FIT = 3000  # training samples a probe is fitted on (at most; the cost is n p^2 per Newton step)


# -- the source's numbers (Appendix E = A.7, test accuracies as fractions) ------------------------------------------
TABLE1 = {"net": 1.000, "ntk": 0.864, "rf": 0.760, "one": 0.522, "two": 1.000, "net_nostruct": 0.520,
          "cos_rf": 0.114, "cos_one": 0.848, "cos_two": 0.997, "cos_nostruct": 0.253}
TABLE2 = {"net": 1.000, "ntk": 1.000, "rf": 0.732, "one": 0.410, "two": 1.000, "net_nostruct": 1.000,
          "cos_two": 0.994, "cos_nostruct": 0.965}
TABLE3 = {100: {"net": 1.000, "ntk": 0.815, "rf": 0.783, "one": 0.511, "two": 1.000, "net_nostruct": 0.510,
                "cos_rf": 0.354, "cos_two": 1.000},
          2000: {"net": 1.000, "ntk": 0.754, "rf": 0.770, "one": 0.5001, "two": 1.000, "net_nostruct": 0.525,
                 "cos_rf": 0.056, "cos_two": 0.998}}
TABLE4 = {0.8: {"net": 1.000, "ntk": 0.827, "rf": 0.704, "one": 0.757, "two": 1.000, "net_nostruct": 0.617,
                "cos_two": 0.999},
          0.9: {"net": 1.000, "ntk": 0.817, "rf": 0.724, "one": 0.892, "two": 1.000, "net_nostruct": 0.718,
                "cos_two": 0.997}}
TABLE5 = {25_000: {"net": 1.000, "ntk": 0.841, "rf": 0.747, "one": 0.500, "two": 1.000, "net_nostruct": 0.502,
                   "cos_two": 0.997},
          10_000: {"net": 1.000, "ntk": 0.750, "rf": 0.743, "one": 0.503, "two": 1.000, "net_nostruct": 0.522,
                   "cos_two": 0.994}}
SOURCE_N = 50_000  # the source's training sample in E.1 and E.2.1-E.2.2


# -- the two full-batch steps (eq. (4), Theorem 26) -----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class StepConfig:
    """One full-batch step of eq. (4): step size, penalties lambda_a and lambda_w, noise level sigma_xi."""

    eta: float
    lam_a: float
    lam_w: float
    noise_std: float


def first_steps(k: int, m: int, sigma_tilde: float, gamma: float) -> tuple[StepConfig, StepConfig]:
    """Steps 1 and 2 of Theorem 26 (= Thm A.20): eta^(1) = gamma^2 sigma~^2/(k m^3), lambda_a = 0,
    lambda_w = 1/(2 eta^(1)); then eta = 1, lambda_a = lambda_w = 1/2. The noise level is the lemmas'
    sigma_xi = 1/k^(3/2) (Lemmas 18, 20, 23; Theorem 26 writes 1/k^2, an inconsistency the chapter notes)."""
    eta_1 = gamma**2 * sigma_tilde**2 / (k * m**3)
    s = 1 / k**1.5
    return StepConfig(eta_1, 0.0, 1 / (2 * eta_1), s), StepConfig(1.0, 0.5, 0.5, s)


def _decay(eta: float, lam: float) -> float:
    factor = 1.0 - 2.0 * eta * lam
    return 0.0 if abs(factor) < 1e-12 else factor  # lambda = 1/(2 eta): exact erasure


def class_weights(y: torch.Tensor, weighted: torch.Tensor | None = None) -> torch.Tensor:
    """alpha_n = 1/(2 Pr[y = y_n]) with Pr the share of the class in the sample (the class-weighted hinge of the
    general setting, A.293) for the replicas flagged in ``weighted`` (R,), 1 for the others: shape of y (R, n)."""
    alpha = torch.ones_like(y)
    if weighted is not None and bool(weighted.any()):
        pos = (y > 0).to(y.dtype)
        frac = pos.mean(-1, keepdim=True)
        alpha = torch.where(weighted[:, None], pos / (2 * frac) + (1 - pos) / (2 * (1 - frac)), alpha)
    return alpha


def hinge_gradients(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor | None = None,
                    chunk: int = 2048) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (W, b, a) of the mean (class-weighted) hinge loss of the noise-smoothed network (eq. (3),
    ``net.noise_std``) by Lemma 12's formulas, summed over chunks of samples (so that a full batch of 50,000
    samples never needs its (R, n, 2m) activations at once): with c_n = -alpha_n y_n 1[y_n g(x_n) < 1]/n,
    dL/da_i = sum_n c_n sigma~(z_ni), dL/dw_i = a_i sum_n c_n sigma~'(z_ni) x_n, dL/db_i = a_i sum_n c_n
    sigma~'(z_ni), where sigma~' = Pr_xi[z + xi in (0, 1)] (the indicator expectation, with xi in it). ``alpha``
    (R, n): the class weights of :func:`class_weights` (default 1). Checked against autograd in the tests."""
    n = x.shape[-2]
    alpha = torch.ones_like(y) if alpha is None else alpha
    gW, gb, ga = torch.zeros_like(net.W), torch.zeros_like(net.b), torch.zeros_like(net.a)
    for start in range(0, n, chunk):
        xc, yc = x[:, start:start + chunk], y[:, start:start + chunk]
        z = net.preactivation(xc)
        act = smoothed_trunc_relu(z, net.noise_std)
        out = (act * net.a[:, None, :]).sum(-1)
        c = -(alpha[:, start:start + chunk] * yc) * (yc * out < 1).to(z.dtype) / n  # (R, chunk)
        ga += torch.einsum("rn,rni->ri", c, act)
        G = c[..., None] * smoothed_trunc_relu_grad(z, net.noise_std)  # (R, chunk, 2m), times a_i below
        gW += torch.einsum("rni,rnd->rid", G, xc)
        gb += G.sum(1)
    return gW * net.a[..., None], gb * net.a, ga


def full_batch_step(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, step: StepConfig,
                    alpha: torch.Tensor | None = None) -> TwoLayerNet:
    """One step of eq. (4) on the whole sample (the "approximate full gradient" of E.1), replicas independent:
    theta <- (1 - 2 eta lambda) theta - eta grad L(theta; sigma_xi), with b unpenalised and the decay set to exactly
    0 where lambda = 1/(2 eta) (the erasure of Theorem 26). L is the mean hinge loss of the noise-smoothed network
    (eq. (3), :func:`hinge_gradients`), class-weighted with ``alpha`` (:func:`class_weights`) where given."""
    with torch.no_grad():
        gW, gb, ga = hinge_gradients(dataclasses.replace(net, noise_std=step.noise_std), x, y, alpha)
        return dataclasses.replace(net, W=_decay(step.eta, step.lam_w) * net.W - step.eta * gW,
                                   b=net.b - step.eta * gb, a=_decay(step.eta, step.lam_a) * net.a - step.eta * ga)


def two_steps(init: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, steps: tuple[StepConfig, StepConfig],
              alpha: torch.Tensor | None = None) -> tuple[TwoLayerNet, TwoLayerNet]:
    """The networks after steps 1 and 2 (full batch, in the dtype of ``init``: float32 in :func:`parity_program`)."""
    one = full_batch_step(init, x, y, steps[0], alpha)
    return one, full_batch_step(one, x, y, steps[1], alpha)


# -- the classifier stage and the fixed-feature baselines -----------------------------------------------------------
def stage_step(k: int, m: int, steps: int) -> float:
    """eta = k^2/(T m^(1/3)) for t > 2 (Theorem 26)."""
    return k**2 / (steps * m ** (1 / 3))


def stage_schedule(steps: int):
    """The factor of every step size at mini-batch step t of the classifier stage: a cosine decay from 1 to 0 over
    the stage (our choice; the source gives none), so that the stage ends at rest instead of in an oscillation."""
    return lambda t: 0.5 * (1 + math.cos(math.pi * t / steps))


@dataclasses.dataclass
class StageResult:
    net: TwoLayerNet  # the trained network
    rf: TwoLayerNet  # the random-feature model (first layer frozen at initialisation)
    ntk: TwoLayerNet  # the NTK model's displacement from the initialisation
    history: dict[str, torch.Tensor]  # "step" (L,) and the test accuracy of "net", "rf", "ntk", each (L, R)
    test_acc: dict[str, torch.Tensor]  # (R,) float64
    test_hinge: dict[str, torch.Tensor]  # (R,) float64


def _hinge_slope(out: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """d/d out of the mean class-weighted hinge loss over the batch: -alpha y 1[y out < 1] / B."""
    return -alpha * y * (y * out < 1).to(out.dtype) / y.shape[-1]


def network_gradients(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor) -> list[torch.Tensor]:
    """The network's part of :func:`stage_gradients`: the hinge-loss gradients of W, b and a."""
    z = net.preactivation(x)
    h = z.clamp(0.0, 1.0)
    c = _hinge_slope((h * net.a[:, None, :]).sum(-1), y, alpha)
    G = c[..., None] * ((z > 0) & (z < 1)).to(z.dtype)
    return [net.a[..., None] * torch.einsum("rni,rnd->rid", G, x), net.a * G.sum(1), torch.einsum("rn,rni->ri", c, h)]


def stage_gradients(net: TwoLayerNet, rf: TwoLayerNet, init: TwoLayerNet, ntk: TwoLayerNet, x: torch.Tensor,
                    y: torch.Tensor, alpha: torch.Tensor) -> list[torch.Tensor]:
    """The hinge-loss gradients of a mini-batch for the three models of the classifier stage, in the order
    (net W, b, a; random-feature a; NTK W, b, a), written out (sigma_xi = 0, so sigma' = 1[0 < z < 1]): for an
    output sum_i a_i h_i with slope c_n = dL/d out_n, dL/da = sum_n c_n h_n and the first layer's gradients are
    a_i sum_n c_n sigma'(z_ni) (x_n, 1). The NTK model is sum_i da_i sigma(z0_i) + a0_i sigma'(z0_i)(<dw_i, x> +
    db_i) (:func:`feature_learning.models.two_layer.ntk_forward`). Checked against autograd in the tests."""
    grads = network_gradients(net, x, y, alpha)
    z0 = init.preactivation(x)
    h0 = z0.clamp(0.0, 1.0)
    grads.append(torch.einsum("rn,rni->ri", _hinge_slope((h0 * rf.a[:, None, :]).sum(-1), y, alpha), h0))
    slope0 = ((z0 > 0) & (z0 < 1)).to(z0.dtype) * init.a[:, None, :]
    moved = torch.matmul(x, ntk.W.transpose(1, 2)) + ntk.b[:, None, :]
    c0 = _hinge_slope((h0 * ntk.a[:, None, :] + slope0 * moved).sum(-1), y, alpha)
    G0 = c0[..., None] * slope0
    grads += [torch.einsum("rni,rnd->rid", G0, x), G0.sum(1), torch.einsum("rn,rni->ri", c0, h0)]
    return grads


def classifier_stage(two: TwoLayerNet, init: TwoLayerNet, data: dict[str, torch.Tensor], *, k: int, steps: int,
                     batch: int, log_every: int, generator: torch.Generator, eta_a: float = SECOND_LAYER_STEP,
                     decay: bool = True, baselines: bool = True) -> StageResult:
    """Steps t = 3..T of the network (mini-batch SGD of the hinge loss, sigma_xi = 0, lambda = 0) and, side by side,
    the same number of SGD steps of the two fixed-feature models of Appendix E.1 on the same mini-batches: random
    features (the second layer of the initial network) and the NTK model (the network linearised at initialisation,
    trained in parameter space). Step sizes: ``eta_a`` (default ``SECOND_LAYER_STEP``) for the network's a,
    ``FIRST_LAYER_FACTOR`` times the theorem's eta = k^2/(T m^(1/3)) for its W and b, ``RF_STEP`` and
    ``NTK_STEP`` for the baselines (trained only with ``baselines``), all times :func:`stage_schedule` (constant
    without ``decay``). Runs in
    float32; ``data`` has x, y (train) and x_test,
    y_test, each batched over the replicas R, and optionally the class weights ``alpha`` (R, n) of the training
    samples (:func:`class_weights`: the class-weighted hinge, for imbalanced classes; default 1)."""
    x, y, xt, yt = (data[key].float() for key in ("x", "y", "x_test", "y_test"))
    alpha = data["alpha"].float() if "alpha" in data else torch.ones_like(y)
    eta = FIRST_LAYER_FACTOR * stage_step(k, init.width // 2, steps)
    net = two.to(torch.float32)
    init32 = dataclasses.replace(init, trained=()).to(torch.float32)
    rf = dataclasses.replace(init32, trained=("a",)).detached()
    ntk = dataclasses.replace(zeros_like(init32), trained=("W", "b", "a")).detached()
    models = {"net": net, "rf": rf, "ntk": lambda inputs: ntk_forward(init32, ntk, inputs)}
    if not baselines:
        models = {"net": net}
    sample = batches_with_replacement(x.shape[1], batch, generator, x.device)

    def grads(step):
        idx = sample(step)
        if not baselines:
            return network_gradients(net, x[:, idx], y[:, idx], alpha[:, idx])
        return stage_gradients(net, rf, init32, ntk, x[:, idx], y[:, idx], alpha[:, idx])

    def log(step):
        return {name: sign_accuracy(model(xt), yt) for name, model in models.items()}

    groups = net.param_groups(lr={"W": eta, "b": eta, "a": eta_a})
    if baselines:
        groups += rf.param_groups(lr={"a": RF_STEP}) + ntk.param_groups(lr={"W": NTK_STEP, "b": NTK_STEP,
                                                                            "a": NTK_STEP})
    stage = steps - 2
    with torch.no_grad():
        history = train(groups, None, OptimConfig(stage, 1.0, optimizer="gd", warmup=0,
                                                  schedule=stage_schedule(stage) if decay else lambda t: 1.0),
                        grad_fn=grads, log_every=log_every, log_fn=log, description="classifier stage")
        history["step"] = history["step"] + 2  # the stage starts after the two full-batch steps
        outputs = {name: model(xt) for name, model in models.items()}
    return StageResult(net=net, rf=rf, ntk=ntk, history=history,
                       test_acc={name: sign_accuracy(out, yt).cpu() for name, out in outputs.items()},
                       test_hinge={name: hinge(out, yt).mean(-1).double().cpu() for name, out in outputs.items()})


def probe(features: torch.Tensor, y: torch.Tensor, features_test: torch.Tensor, y_test: torch.Tensor,
          n_fit: int | None = None) -> torch.Tensor:
    """"Train the best classifier on top" of frozen features (Appendix E.1): logistic regression on standardised
    features, penalty 1/2 ||w||^2 with C = ``PROBE_C``, solved by Newton's method
    (:func:`feature_learning.measure.probes.logistic_probe`); fitted on the first ``n_fit`` training samples
    (default ``PROBE_FIT``).
    Returns the test accuracy per replica (R,). Standardising makes the probe blind to the features' scale (the
    step-one features vary at the 1e-10 scale), so it is the best linear classifier of their directions."""
    n_fit = min(n_fit or PROBE_FIT, features.shape[1])
    out = logistic_probe(features[:, :n_fit].double(), y[:, :n_fit].double(), features_test.double(),
                         y_test.double(), PROBE_C, iterations=PROBE_ITERATIONS, standardize=True)
    return out["accuracy"].cpu()


# -- sparse-coding data in pattern coordinates ----------------------------------------------------------------------
def sample_patterns(task: SparseCodingTask, n: int, A: torch.Tensor, generator: torch.Generator,
                    negative_ratio: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """n samples (z, y) of ``task`` in pattern coordinates z = M^T x = (phi~ - E phi~)/sigma~ (n, D), float64.

    This is exact, not an approximation: with orthonormal M every input x = M z lies in span(M), so
    <w, x> = <M^T w, z>, and every gradient with respect to w is a combination of inputs, so it lies in span(M) too.
    The part of w orthogonal to span(M) is erased by step 1's decay in the network and never moved in the
    random-feature and NTK models; it enters only the cosines, through its norm. (The law of M^T w^(0) is
    N(0, sigma_w^2 I_D) whatever M is, so M itself never needs to be drawn.) ``negative_ratio`` resamples to that
    share of class -1 (Appendix E.2.2,
    :meth:`feature_learning.data.sparse_coding.SparseCodingTask.sample_class_ratio`)."""
    eye = torch.eye(task.D, dtype=torch.float64)
    if negative_ratio is None:
        z, y, _ = task.sample(n, eye, A, generator)
    else:
        z, y, _ = task.sample_class_ratio(n, eye, A, negative_ratio, generator)
    return z, y


def paired_samples(task: SparseCodingTask, A: torch.Tensor, n: int, n_test: int, generator: torch.Generator,
                   negative_ratio: float | None = None) -> dict[str, torch.Tensor]:
    """Training and test sets with input structure (replica 0) and without it (replica 1, phi~ uniform: the family
    F_Xi0), the same A and labelling: x, y, x_test, y_test of shapes (2, n, D), (2, n), ..."""
    parts = {"x": [], "y": [], "x_test": [], "y_test": []}
    for member in (task, task.without_structure()):
        for count, xs, ys in ((n, "x", "y"), (n_test, "x_test", "y_test")):
            z, y = sample_patterns(member, count, A, generator, negative_ratio)
            parts[xs].append(z), parts[ys].append(y)
    return {key: torch.stack(value) for key, value in parts.items()}


def symmetric_init(k: int, d_pattern: int, d: int, m: int, sigma_tilde: float, gamma: float,
                   generator: torch.Generator) -> tuple[TwoLayerNet, torch.Tensor]:
    """The unbiased initialisation of Section 3.1 with the scales of Theorem 26 (one replica, 2m units), in
    pattern coordinates, and the units' component orthogonal to span(M) (1, 2m, d - D): w_{m+i} = w_i there too."""
    net = init_symmetric_gaussian(1, d_pattern, 2 * m, **paper_init_scales(k, sigma_tilde, gamma),
                                  activation="trunc_relu", generator=generator)
    perp = torch.randn(1, m, d - d_pattern, generator=generator, dtype=torch.float64) / k
    return net, torch.cat([perp, perp], 1)


def _stack_nets(nets: list[TwoLayerNet], repeat: int = 1) -> TwoLayerNet:
    """Replicas of several one-replica networks side by side, each repeated ``repeat`` times."""
    def cat(name):
        return torch.cat([getattr(net, name).detach().repeat_interleave(repeat, 0) for net in nets])

    return dataclasses.replace(nets[0], W=cat("W"), b=cat("b"), a=cat("a"))


def _unit_direction(D: int, A: torch.Tensor) -> torch.Tensor:
    v = torch.zeros(D, dtype=torch.float64)
    v[A] = 1.0  # sum_A M_j in pattern coordinates
    return v


def max_cosine(W: torch.Tensor, v: torch.Tensor, perp_sq: torch.Tensor | None = None) -> torch.Tensor:
    """max_i cos(w_i, v) per replica (R,) (the "Cos Similarity" of the source's tables), float64."""
    return cosine_to(W.double(), v.double(), perp_sq).max(-1).values.cpu()


# -- Experiment 1 and the variants of E.2: one batched program ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Group:
    """One setting of the batched parity program: ``seeds`` seeds, each with and without input structure, at input
    dimension ``d``, with a share ``negative_ratio`` of class -1 (None: the law's balanced classes). Imbalanced
    groups train with the class-weighted hinge (A.293; the general setting prescribes it for steps 1-2, and we
    keep it in the classifier stage too); ``plain_steps`` also runs steps 1-2 with the plain hinge (an ablation,
    probes only); ``probes`` fits the probes on the step-1 and step-2 features."""

    name: str
    seeds: int
    d: int
    negative_ratio: float | None = None
    probes: bool = True
    plain_steps: bool = False


@dataclasses.dataclass
class GroupResult:
    """Per seed (rows) and setting (columns: with structure, without): accuracies and hinge losses on the test set,
    best cosines with sum_A M_j, the majority rate; the probes (structure only) per seed; the test-accuracy curves
    (L, S, 2) at ``history["step"]``."""

    group: Group
    test_acc: dict[str, torch.Tensor]  # "net", "ntk", "rf": (S, 2)
    test_hinge: dict[str, torch.Tensor]
    max_cos: dict[str, torch.Tensor]  # "init", "one", "two", "net": (S, 2)
    majority: torch.Tensor  # (S, 2)
    probes: dict[str, torch.Tensor]  # "one", "two" (and "two_plain"): (S,)
    history: dict[str, torch.Tensor]


@dataclasses.dataclass
class Diagnostics:
    """The first seed of the first group, with structure (and without, where named): the weights after 0, 1 and 2
    steps in the coordinates of R^d = span(M) + its complement (for Figure 2), the direction sum_A M_j there, the
    step-1 weights' signal-to-background ratio on A (Lemma 15) with and without structure, and the spread of
    |cos(w_i, sum_A M_j)| over the units after two steps."""

    W: dict[str, torch.Tensor]  # (2m, d)
    v: torch.Tensor  # (d,)
    snr_one: torch.Tensor  # (2,)
    cos_spread_two: float


def _snr(W: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """Mean |w_j| over j in A over the root-mean-square w_j off A (pattern coordinates; Lemma 15's T_j)."""
    mask = torch.zeros(W.shape[-1], dtype=torch.bool)
    mask[A] = True
    T = W.abs()
    return T[..., mask].mean((-1, -2)) / T[..., ~mask].pow(2).mean((-1, -2)).sqrt()


def parity_program(groups: list[Group], size: ParitySizes, run, *, stream: str = "parity", **stage) -> tuple[
        dict[str, GroupResult], Diagnostics]:
    """E.1.1 (and the variants of E.2) for every group and seed as one batched program: replica 2 r with input
    structure and 2 r + 1 without, sharing A and the initialisation; each seed of each group its own named stream
    (``run.generator(stream, group.name, seed)``) for A, the initialisation and the samples. Two full-batch steps
    (the schedule of Theorem 26), probes on the features after steps 1 and 2, then the classifier stage with the
    fixed-feature baselines (:func:`classifier_stage`)."""
    task = SparseCodingTask(size.D, size.D, size.k, parity_set(size.k), p_o=size.p_o)
    sigma_tilde, gamma = task.sigma_tilde(), (1 - size.p_o) / 2
    inits, perps, vs, data, weighted, owners, As = [], [], [], [], [], [], []
    for group in groups:
        for s in range(group.seeds):
            g = run.generator(stream, group.name, s)
            A = task.relevant_set(g)
            net, perp = symmetric_init(size.k, size.D, group.d, size.m, sigma_tilde, gamma, g)
            inits.append(net), perps.append(perp), vs.append(_unit_direction(size.D, A)), As.append(A)
            data.append(paired_samples(task, A, size.n, size.n_test, g, group.negative_ratio))
            weighted += [group.negative_ratio is not None] * 2
            owners.append(group.name)
    device = run.device
    # float32: the steps' gradients are O(1) sums (float64 changes w^(2) by 1e-6 relative); only the step-one
    # features, whose variation is 1e-10 of their value, are evaluated in float64 (:func:`_probe_rows`)
    init = _stack_nets(inits, 2).to(dtype=torch.float32, device=device)
    v = torch.stack(vs).repeat_interleave(2, 0).to(device)
    perp_sq = torch.cat([p.pow(2).sum(-1) for p in perps]).repeat_interleave(2, 0).to(device)
    batch = {key: torch.cat([d[key] for d in data]).to(dtype=torch.float32, device=device) for key in data[0]}
    batch["alpha"] = class_weights(batch["y"], torch.tensor(weighted, device=device))
    steps = first_steps(size.k, size.m, sigma_tilde, gamma)
    one, two = two_steps(init, batch["x"], batch["y"], steps, batch["alpha"])
    cos = {"init": max_cosine(init.W, v, perp_sq), "one": max_cosine(one.W, v), "two": max_cosine(two.W, v)}
    # probes on the structured replicas: step one for balanced groups, step two for every group that asks
    probes = {}
    by_name = {g.name: g for g in groups}
    rows = {"one": [2 * r for r, name in enumerate(owners) if by_name[name].probes and by_name[name].negative_ratio
                    is None],
            "two": [2 * r for r, name in enumerate(owners) if by_name[name].probes]}
    rows["init"] = rows["one"]  # the random features at initialisation: the probe is their own optimum
    for key, net in (("init", init), ("one", one), ("two", two)):
        if rows[key]:
            probes[key] = _probe_rows(net, batch, torch.tensor(rows[key], device=device))
    rows["two_plain"] = plain_rows = [2 * r for r, name in enumerate(owners) if by_name[name].plain_steps]
    if plain_rows:
        idx = torch.tensor(plain_rows, device=device)
        sub = {key: value[idx] for key, value in batch.items()}
        sub_init = dataclasses.replace(init, W=init.W[idx], b=init.b[idx], a=init.a[idx])
        _, plain_two = two_steps(sub_init, sub["x"], sub["y"], steps)  # alpha = 1: the plain hinge
        probes["two_plain"] = _probe_rows(plain_two, sub, torch.arange(len(plain_rows), device=device))
    stage = classifier_stage(two, init, batch, k=size.k, steps=size.steps, batch=size.batch,
                             log_every=size.log_every, generator=run.generator(stream, "stage"), **stage)
    cos["net"] = max_cosine(stage.net.W, v)
    yt = batch["y_test"]
    majority = torch.maximum((yt > 0).double().mean(-1), (yt < 0).double().mean(-1)).cpu()
    results = _split_groups(groups, stage, cos, majority, probes, rows)
    # the diagnostics of the first seed (Figure 2): weights in R^d = span(M) + complement, M = I on the first D axes
    pad = perps[0][0].shape[-1]
    cos_two_abs = cosine_to(two.W[:1].double(), v[0]).abs()

    def full(W, with_perp=False):
        rest = perps[0][0] if with_perp else torch.zeros(W.shape[0], pad, dtype=torch.float64)
        return torch.cat([W.detach().double().cpu(), rest], -1)

    diag = Diagnostics(
        W={"init": full(init.W[0], True), "one": full(one.W[0]), "two": full(two.W[0])},
        v=torch.cat([vs[0], torch.zeros(pad, dtype=torch.float64)]),
        snr_one=_snr(one.W[:2].detach().cpu(), As[0]),
        cos_spread_two=float(cos_two_abs.max() - cos_two_abs.min()))
    return results, diag


def _split_groups(groups: list[Group], stage: StageResult, cos: dict, majority: torch.Tensor, probes: dict,
                  rows: dict) -> dict[str, GroupResult]:
    """The replicas of the batched program, group by group: (S, 2) per group (seed, setting)."""
    results, start = {}, 0
    for group in groups:
        stop = start + 2 * group.seeds

        def pick(t, lo=start, hi=stop):
            return t[lo:hi].reshape(-1, 2, *t.shape[1:])

        group_probes = {}
        for key, value in probes.items():
            kept = [i for i, r in enumerate(rows[key]) if start <= r < stop]
            if kept:
                group_probes[key] = value[kept]
        history = {"step": stage.history["step"]}
        for name in stage.test_acc:
            curve = stage.history[name][:, start:stop]
            history[name] = curve.reshape(curve.shape[0], -1, 2)
        results[group.name] = GroupResult(
            group=group, test_acc={key: pick(val) for key, val in stage.test_acc.items()},
            test_hinge={key: pick(val) for key, val in stage.test_hinge.items()},
            max_cos={key: pick(val) for key, val in cos.items()}, majority=pick(majority),
            probes=group_probes, history=history)
        start = stop
    return results


def _probe_rows(net: TwoLayerNet, batch: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
    """:func:`probe` on the features of the replicas ``idx``, evaluated in float64 (the step-one features vary at
    the 1e-10 scale of their value)."""
    sub = dataclasses.replace(net, W=net.W[idx], b=net.b[idx], a=net.a[idx]).to(torch.float64)
    x, xt = batch["x"][idx, :PROBE_FIT].double(), batch["x_test"][idx].double()
    return probe(sub.features(x), batch["y"][idx, :PROBE_FIT], sub.features(xt), batch["y_test"][idx])


# -- Experiment 3: interval labels (E.1.2) --------------------------------------------------------------------------
@dataclasses.dataclass
class IntervalResult:
    """With structure (index 0) and without (1): the exact positive rate and gamma of the law, the test positive
    rate, the best cosine with sum_A M_j after two steps with its derived prediction and standard deviation, and
    probes on the random features at initialisation and on the two-step features."""

    pos_rate: torch.Tensor  # (2,) exact
    gamma: torch.Tensor  # (2,) exact
    test_pos_rate: torch.Tensor  # (2,)
    cos_two: torch.Tensor  # (2,)
    cos_init: torch.Tensor  # (2,): the same units at initialisation (the null of the step-2 cosines)
    cos_pred: torch.Tensor  # (2,)
    cos_sd: torch.Tensor  # (2,)
    probes: dict[str, torch.Tensor]  # "init", "two": (2,)


def interval_experiment(size: IntervalSizes, run) -> IntervalResult:
    """E.1.2: y = +1 iff sum_A phi~ in [low, k]; Pr[phi~_j = 1] = p_in on A and 1/2 elsewhere (with structure) or
    1/2 everywhere (without). Two full-batch steps with the theorem's schedule (gamma of the structured law, exact,
    for the initialisation scale and eta^(1), in both settings), in pattern coordinates, then probes."""
    k = size.k
    task = SparseCodingTask(size.D, size.D, k, interval_set(size.low, k), law="bernoulli", p_o=0.5, p_in=size.p_in)
    exact = [interval_constants(k, size.low, p) for p in (size.p_in, 0.5)]
    gamma = float(exact[0]["gamma"])
    g = run.generator("interval")
    A = task.relevant_set(g)
    net, _ = symmetric_init(k, size.D, size.D, size.m, task.sigma_tilde(), gamma, g)
    data = {key: value.to(run.device) for key, value in paired_samples(task, A, size.n, size.n_test, g).items()}
    init = _stack_nets([net], 2).to(device=run.device)
    _, two = two_steps(init, data["x"], data["y"], first_steps(k, size.m, task.sigma_tilde(), gamma))
    v = _unit_direction(size.D, A).to(run.device)
    preds, sds = [], []
    for p_in, law, member in ((size.p_in, exact[0], task), (0.5, exact[1], task.without_structure())):
        var_sq = member.sigma_tilde() ** 2
        gam, v_in, v_out = float(law["gamma"]), p_in * (1 - p_in), 0.25
        g_sq = k * gam**2 / var_sq
        t_perp = ((k - 1) * v_in + (size.D - k) * v_out) / var_sq
        t_perp_sq = ((k - 1) * v_in**2 + (size.D - k) * v_out**2) / var_sq**2
        preds.append(float(second_step_cosine_general(g_sq, t_perp, size.n)))
        sds.append(float(second_step_cosine_sd(g_sq, t_perp, t_perp_sq, size.n)))
    probes = {name: probe(net_.features(data["x"]), data["y"], net_.features(data["x_test"]), data["y_test"],
                          n_fit=size.n_probe) for name, net_ in (("init", init), ("two", two))}
    yt = data["y_test"]
    return IntervalResult(
        pos_rate=torch.tensor([float(e["pos_rate"]) for e in exact], dtype=torch.float64),
        gamma=torch.tensor([float(e["gamma"]) for e in exact], dtype=torch.float64),
        test_pos_rate=(yt > 0).double().mean(-1).cpu(), cos_two=max_cosine(two.W, v),
        cos_init=max_cosine(init.W, v),
        cos_pred=torch.tensor(preds, dtype=torch.float64), cos_sd=torch.tensor(sds, dtype=torch.float64),
        probes=probes)


# -- Experiment 5: labels from a hidden representation (E.3.1) ------------------------------------------------------
@dataclasses.dataclass
class HiddenResult:
    """Units' cosines with M E[y z] after 0, 1, 2 steps (2m,), their weights in R^d for Figure 15, the direction,
    the derived prediction of the step-2 cosine with its standard deviation, probes on the initial and two-step
    features, the positive rate and the gamma used by the schedule."""

    cos: dict[str, torch.Tensor]
    W: dict[str, torch.Tensor]
    u: torch.Tensor
    cos_pred: float
    cos_sd: float
    probes: dict[str, float]
    pos_rate: float
    gamma: float


def hidden_representation_experiment(size: HiddenSizes, run) -> HiddenResult:
    """E.3.1 with the source's d, D, k and codes per label, ``size.n`` training and as many test samples, 2m units,
    in pattern coordinates (the units' component orthogonal to span(M) kept for the initial cosines). The two
    full-batch steps use the theorem's schedule with gamma = ||E[y phi~_A]|| / sqrt(k) (our choice: the source's
    gamma is one number because every relevant pattern correlates equally with the label in D_A^mix; here the
    correlations differ per pattern, and this is their root mean square). The derived cosine uses the drawn codes'
    exact covariance of y z (:func:`feature_learning.theory.feature_emergence.second_step_cosine_general`)."""
    task = HiddenRepresentationTask(size.d, size.D, size.k, size.per_label, p_o=0.5)
    g = run.generator("hidden")
    codes, labels = task.codes(g)
    A = torch.randperm(task.D, generator=g)[: task.k].sort().values
    eye = torch.eye(task.D, dtype=torch.float64)
    x, y, _ = task.sample(size.n, eye, A, codes, labels, g)
    xt, yt, _ = task.sample(size.n, eye, A, codes, labels, g)
    x, y, xt, yt = (t[None].to(run.device) for t in (x, y, xt, yt))
    sigma_tilde = task.sigma_tilde(codes)
    corr = task.label_correlation(A, codes, labels)  # E[y z] in pattern coordinates
    gamma = float(corr.norm()) * sigma_tilde / task.k**0.5
    init, perp = symmetric_init(task.k, task.D, task.d, size.m, sigma_tilde, gamma, g)
    init = init.to(device=run.device)
    one, two = two_steps(init, x, y, first_steps(task.k, size.m, sigma_tilde, gamma))
    sigma_z = task.pattern_covariance(A, codes) / sigma_tilde**2
    g_sq = float(corr @ corr)
    proj = torch.eye(task.D, dtype=torch.float64) - torch.outer(corr, corr) / g_sq
    c_perp = proj @ sigma_z @ proj  # Cov(y z) = Sigma_z - g g^T, restricted to the complement of g
    t_perp, t_perp_sq = float(torch.trace(c_perp)), float(torch.trace(c_perp @ c_perp))
    pad = torch.zeros(2 * size.m, task.d - task.D, dtype=torch.float64)
    W = {"init": torch.cat([init.W[0].detach().cpu(), perp[0]], -1),
         "one": torch.cat([one.W[0].detach().cpu(), pad], -1), "two": torch.cat([two.W[0].detach().cpu(), pad], -1)}
    u_full = torch.cat([corr, torch.zeros(task.d - task.D, dtype=torch.float64)])
    probes = {name: float(probe(net.features(x), y, net.features(xt), yt, n_fit=min(size.n, 2000))[0])
              for name, net in (("init", init), ("two", two))}
    return HiddenResult(
        cos={key: cosine_to(W[key][None], u_full)[0] for key in W}, W=W, u=u_full,
        cos_pred=float(second_step_cosine_general(g_sq, t_perp, size.n)),
        cos_sd=float(second_step_cosine_sd(g_sq, t_perp, t_perp_sq, size.n)), probes=probes,
        pos_rate=float((yt > 0).double().mean()), gamma=gamma)


# -- Experiment 5: the Gaussian hypercube mixture (E.3.2) -----------------------------------------------------------
@dataclasses.dataclass
class MixtureResult:
    """One setting of Table 6, per seed: test accuracy (S,), the best cosine of a neuron with each cluster centre at
    initialisation and after training (S, 2^k), the centres and their labels, the first-layer weights (Figure 16)."""

    d: int
    k: int
    sigma_r: float
    epochs: int
    acc: torch.Tensor
    best_init: torch.Tensor
    best: torch.Tensor
    centres: torch.Tensor
    centre_labels: torch.Tensor
    W_init: torch.Tensor
    W: torch.Tensor


def gaussian_mixture_experiment(size: MixtureSizes, run) -> list[MixtureResult]:
    """E.3.2 for each setting of ``size.experiments``: a two-layer ReLU network of width ``size.width`` (PyTorch's
    default initialisation, both layers trained) on the hypercube Gaussian mixture of eq. (290), one replica per
    seed, trained "as in typical practice" (the source's words; our choice: AdamW, logistic loss, mini-batches)."""
    out = []
    for e, (d, k, sigma_r, epochs) in enumerate(size.experiments):
        g = run.generator("mixture", e)
        S, n = size.seeds, size.n
        Ms = [orthonormal_dictionary(d, k, g, dtype=torch.float32) for _ in range(S)]
        train_set = [hypercube_mixture(n, M, sigma_r, g) for M in Ms]
        test_set = [hypercube_mixture(size.n_test, M, sigma_r, g) for M in Ms]
        x, y = (torch.stack([t[i] for t in train_set]).to(run.device) for i in (0, 1))
        xt, yt = (torch.stack([t[i] for t in test_set]).to(run.device) for i in (0, 1))
        centres, centre_labels = (torch.stack(t) for t in zip(*(hypercube_centres(M) for M in Ms), strict=True))
        net = init_torch_default(S, d, size.width, generator=g, device=run.device)
        W0 = net.W.detach().clone()
        batch = minibatches(torch.arange(n), size.batch, g)

        def loss(step, net=net, batch=batch, x=x, y=y):
            idx = batch(step).to(run.device)
            return logistic(net(x[:, idx]), y[:, idx]).mean(-1).sum()

        train(net.parameters(), loss, OptimConfig(epochs * (n // size.batch), size.lr, warmup=0),
              description=f"mixture {e + 1}")
        with torch.no_grad():
            acc = sign_accuracy(net(xt), yt).cpu()
        W = net.W.detach().cpu()
        out.append(MixtureResult(d, k, sigma_r, epochs, acc, best_cosine_per_target(W0.cpu(), centres),
                                 best_cosine_per_target(W, centres), centres, centre_labels, W0.cpu(), W))
    return out


# -- Experiment 6: injected inputs on the digits (E.5, Algorithm 1) -------------------------------------------------
@dataclasses.dataclass
class InjectionResult:
    """The students' test accuracy against the teacher's labels over training: ``real_acc`` and ``injected_acc``
    (L, S, 2) at ``step`` (L,), per seed of the students' initialisation and student (mixture, digits only); the
    share of each class among the teacher's labels of the injected test inputs (10,)."""

    step: torch.Tensor
    real_acc: torch.Tensor
    injected_acc: torch.Tensor
    injected_label_share: torch.Tensor


def injection_experiment(size: InjectionSizes, run) -> InjectionResult:
    """Algorithm 1 / Appendix E.5 of Shi, Wei and Liang on bundled data:

    1. a teacher FC(m_t) (one hidden layer, quadratic activation,
       :func:`feature_learning.models.two_layer.init_lecun`) is trained on digits with the regulariser R1 + R2
       (eqs. (291)-(293)) on Gaussian inputs with the digits' mean and covariance, so that its labels there are
       balanced and confident;
    2. the teacher relabels digits and Gaussian inputs;
    3. two students FC(m_s) train on a mixture with a share ``alpha`` of Gaussian inputs and on digits only (the same
       number of samples), from ``seeds`` initialisations each (one batched program); their test accuracy against
       the teacher is tracked on fresh digits and fresh Gaussians.

    Deviation: the source chooses the teacher's size by the U-shaped part of a double-descent curve; here it is
    given. The steps are AdamW (our choice; the source does not say)."""
    from feature_learning.data.digits import gaussian_like, load_digits, random_split

    g = run.generator("injection")
    digits, target = load_digits()
    train_idx, test_idx = random_split(len(digits), size.n_student, g)
    x_train, y_train, x_test = digits[train_idx], target[train_idx], digits[test_idx]
    u_train, u_test = gaussian_like(x_train, size.n_student, g), gaussian_like(x_train, size.n_student // 2, g)
    d, classes = x_train.shape[1], int(target.max()) + 1
    teacher = init_lecun(1, d, size.teacher_width, d_out=classes, generator=g)

    def teacher_loss(step):
        r1, r2 = balance_and_confidence(teacher(u_train))
        return cross_entropy(teacher(x_train)[0], y_train).mean() + size.reg * (r1 + r2).sum()

    train(teacher.parameters(), teacher_loss, OptimConfig(size.teacher_steps, size.lr, warmup=1),
          description="teacher")
    with torch.no_grad():
        def label(inputs):
            return teacher(inputs)[0].argmax(-1)

        y_real_train, y_real_test, y_inj_train, y_inj_test = (label(t) for t in (x_train, x_test, u_train, u_test))
    n, n_inj = size.n_student, int(round(size.alpha * size.n_student))
    pick_real = torch.randperm(len(x_train), generator=g)
    pick_inj = torch.randperm(len(u_train), generator=g)[:n_inj]
    mix_x = torch.cat([x_train[pick_real[: n - n_inj]], u_train[pick_inj]])
    mix_y = torch.cat([y_real_train[pick_real[: n - n_inj]], y_inj_train[pick_inj]])
    xs = torch.stack([mix_x, x_train[pick_real[:n]]] * size.seeds).to(run.device)
    ys = torch.stack([mix_y, y_real_train[pick_real[:n]]] * size.seeds).to(run.device)
    student = init_lecun(2 * size.seeds, d, size.student_width, d_out=classes, generator=g, device=run.device)
    x_test, u_test = x_test.to(run.device), u_test.to(run.device)
    y_real_test, y_inj_test = y_real_test.to(run.device), y_inj_test.to(run.device)

    def student_loss(step):
        return cross_entropy(student(xs), ys).mean(-1).sum()

    def log(step):
        return {"real": argmax_accuracy(student(x_test), y_real_test),
                "injected": argmax_accuracy(student(u_test), y_inj_test)}

    history = train(student.parameters(), student_loss, OptimConfig(size.student_steps, size.lr, warmup=1),
                    log_every=max(1, size.student_steps // 40), log_fn=log, description="students")
    share = torch.bincount(y_inj_test.cpu(), minlength=classes).double() / len(y_inj_test)
    def per_seed(curve):
        return curve.reshape(curve.shape[0], size.seeds, 2)

    return InjectionResult(step=history["step"], real_acc=per_seed(history["real"]),
                           injected_acc=per_seed(history["injected"]), injected_label_share=share)


# -- the chapter's runs ---------------------------------------------------------------------------------------------
def parity_groups(size: FeatureEmergenceSizes) -> list[Group]:
    """E.1.1 ("main") and the variants of E.2.1 (input dimension d = D and 20 D) and E.2.2 (class shares)."""
    P, V = size.parity, size.variants
    return [Group("main", P.seeds, P.d), Group("dim_small", V.seeds, V.dims[0], probes=False),
            Group("dim_large", V.seeds, V.dims[1], probes=False),
            Group("ratio_low", V.seeds, P.d, V.ratios[0], plain_steps=True),
            Group("ratio_high", V.seeds, P.d, V.ratios[1], plain_steps=True)]


def parity_experiment(size: FeatureEmergenceSizes, run) -> tuple[dict[str, GroupResult], Diagnostics]:
    """Experiment 1 and the variants of Appendix E.2.1-E.2.2, one batched program (:func:`parity_program`)."""
    return parity_program(parity_groups(size), size.parity, run)


def prototype_stage_experiment(size: FeatureEmergenceSizes, run) -> GroupResult:
    """Experiment 1's main group (the same streams: the same A, initialisation and samples) with the classifier
    stage of the chapter notes' prototype, eta_a = ``PROTOTYPE_STEP`` constant, the recipe before the tuning; the
    network only (no fixed-feature baselines)."""
    P = size.parity
    results, _ = parity_program([Group("main", P.prototype_seeds, P.d, probes=False)], P, run, eta_a=PROTOTYPE_STEP,
                                decay=False, baselines=False)
    return results["main"]


def source_ratio_sample(source_n: int, size: ParitySizes) -> int:
    """The sample with the source's background-to-sample ratio: (D - k)/n = (100 - 5)/source_n."""
    return round(source_n * (size.D - size.k) / (100 - 5))


def sample_size_experiment(size: FeatureEmergenceSizes, run) -> dict[int, GroupResult]:
    """Appendix E.2.3 (Table 5), keyed by the source's n: for each of its samples, our sample at the same (D - k)/n
    (:func:`source_ratio_sample`) and the source's width, one batched program each (the widths differ)."""
    out = {}
    for source_n, m in zip(size.samples.source_ns, size.samples.widths, strict=True):
        sizes = dataclasses.replace(size.parity, n=source_ratio_sample(source_n, size.parity), m=m)
        results, _ = parity_program([Group(f"n{source_n}", size.samples.seeds, size.parity.d)], sizes, run,
                                    stream="sample size")
        out[source_n] = results[f"n{source_n}"]
    return out


def mean_se(values: torch.Tensor) -> tuple[float, float | None]:
    """Mean over seeds and its standard error (None for a single seed, where it is undefined)."""
    v = values.detach().double().flatten()
    if v.numel() == 1:
        return float(v[0]), None
    return float(v.mean()), float(v.std() / math.sqrt(v.numel()))


def accuracy_se(values: torch.Tensor, n_test: int | None, *others: torch.Tensor) -> tuple[float, float | None]:
    """:func:`mean_se` of a seed-wise accuracy (or a difference of accuracies, ``values``); with a single seed, where
    the standard error over training runs is undefined, the binomial standard error over the ``n_test`` test samples
    of ``values`` and of each accuracy in ``others`` it is a difference of (a lower bound: it omits the variation
    between training runs; None without ``n_test``)."""
    mean, se = mean_se(values)
    if se is None and n_test:
        parts = [values] if not others else others
        se = math.sqrt(sum(float(p.flatten()[0]) * (1 - float(p.flatten()[0])) for p in parts) / n_test)
    return mean, se


def group_summary(result: GroupResult, n_test: int | None = None) -> dict[str, tuple[float, float | None]]:
    """Seed means and standard errors of a group, with structure unless the key says ``_nostruct``: accuracies and
    hinge losses of the three models, the network's gaps to the fixed-feature models (and to the better of each and
    the majority rate), accuracies minus the majority rate, the best cosines, the probes. With one seed the
    accuracies' standard errors are binomial over ``n_test`` test samples (:func:`accuracy_se`)."""
    out = {}
    acc, majority = result.test_acc, result.majority
    for key, values in acc.items():
        out[key] = accuracy_se(values[:, 0], n_test)
        out[f"{key}_nostruct"] = accuracy_se(values[:, 1], n_test)
        out[f"{key}_minus_majority"] = accuracy_se(values[:, 0] - majority[:, 0], n_test, values[:, 0])
        out[f"{key}_nostruct_minus_majority"] = accuracy_se(values[:, 1] - majority[:, 1], n_test, values[:, 1])
        out[f"hinge_{key}"] = mean_se(result.test_hinge[key][:, 0])
    for key in ("ntk", "rf") if "rf" in acc else ():
        net, other = acc["net"][:, 0], acc[key][:, 0]
        out[f"net_beats_{key}"] = accuracy_se(net - other, n_test, net, other)
        best = torch.maximum(other, majority[:, 0].to(other.dtype))
        out[f"net_leads_{key}"] = accuracy_se(net - best, n_test, net, best)
    for key, values in result.max_cos.items():
        out[f"cos_{key}"] = mean_se(values[:, 0])
        out[f"cos_{key}_nostruct"] = mean_se(values[:, 1])
    for key, values in result.probes.items():
        out[f"probe_{key}"] = mean_se(values)
    out["majority"] = mean_se(result.majority[:, 0])
    out["structure_drop"] = accuracy_se(acc["net"][:, 0] - acc["net"][:, 1], n_test, acc["net"][:, 0],
                                        acc["net"][:, 1])
    return out


CHANCE = 0.5  # the untrained network: g^(0) = 0 exactly, so every prediction is a tie (balanced classes)
RF_NULL = "random features: the same network's first layer frozen at initialisation (this run)"


def estimate(summary: dict[str, tuple[float, float | None]], key: str, null: Null | None = None) -> Estimate:
    """A seed mean of :func:`group_summary` with its standard error and the null it is to beat."""
    mean, se = summary[key]
    return Estimate(mean, se, null)


def lead_bound(negative_ratio: float | None) -> float:
    """The network's required lead over the better of a fixed-feature model and the majority class: 0.10 (the
    notes' margin), or half the room above the majority rate where that is smaller (at a share 0.9 of class -1 no
    model can lead the majority class by more than 0.10). Fixed by the group's class share, not by a run."""
    majority = 0.5 if negative_ratio is None else max(negative_ratio, 1 - negative_ratio)
    return round(min(0.10, (1 - majority) / 2), 6)


def group_estimates(summary: dict[str, tuple[float, float | None]]) -> dict[str, Estimate]:
    """The reproduction claims of a group of the parity program, each with its null measured in the same run or
    exact: the network's accuracy against random features'; its lead over the better of a fixed-feature model and
    the majority class against the same lead of the trivial predictor (½ or the majority class); the
    step-2 cosine against the same units at initialisation; the drop without input structure against the
    untrained network's (0); the probe on the step-2 features against the probe on the random features (where
    fitted); the fixed-feature models' accuracy against chance."""
    majority = summary["majority"][0]
    out = {"net": estimate(summary, "net", Null(summary["rf"][0], RF_NULL)),
           "hinge_net": estimate(summary, "hinge_net", Null(1.0, "the untrained network (g = 0: hinge 1, exact)")),
           "cos_two": estimate(summary, "cos_two", Null(summary["cos_init"][0], "the same units at initialisation")),
           "structure_drop": estimate(summary, "structure_drop",
                                      Null(0.0, "the untrained network (½ with and without structure)"))}
    for name in ("ntk", "rf"):
        out[f"net_leads_{name}"] = estimate(summary, f"net_leads_{name}", Null(
            max(CHANCE, majority) - max(summary[name][0], majority),
            "the trivial predictor (the untrained network's ½, or the majority class) in place of the network"))
        out[name] = estimate(summary, name, Null(CHANCE, "chance (the untrained model)"))
    if "probe_two" in summary:
        null = (Null(summary["probe_init"][0], "a converged probe on the random features at initialisation")
                if "probe_init" in summary else Null(summary["rf"][0], RF_NULL))
        out["probe_two"] = estimate(summary, "probe_two", null)
    out["nostruct_minus_majority"] = estimate(summary, "net_nostruct_minus_majority",
                                              Null(0.0, "the majority-class predictor"))
    if "probe_one" in summary:
        gain = difference(estimate(summary, "probe_two"), estimate(summary, "probe_one"))
        out["probe_gain"] = dataclasses.replace(gain, null=Null(0.0, "features that step 2 leaves unchanged"))
    return out


SOURCE_ROUNDING = 0.0005  # the source prints cosines to three decimals
OFFSET_NOTE = ("the source's cosine sits below our derived prediction at its own n by more than its rounding and "
               "three sd of a five-seed mean, at n = 50,000, 25,000 and 10,000 alike (Tables 1 and 5), as it would if "
               "its step 1 kept part of w^(0) (see cos_one_step)")


def source_cosine(n: int, source: float, negative_ratio: float | None = None) -> dict:
    """The derived step-2 cosine at the source's D = 100, sample n and five seeds, against the source's printed
    cosine: the ledger arguments of a ``close_to`` prediction with tolerance ``SOURCE_ROUNDING`` plus three sd of the
    five-seed mean. Exact arithmetic (no run): documented as not reproduced where the printed value is outside."""
    pred, sd = cosine_prediction(dataclasses.replace(ParitySizes(), D=100), n, 5, negative_ratio)
    atol = SOURCE_ROUNDING + 3 * sd
    return {"kind": "prediction", "source_value": source, "measured": pred, "atol": atol,
            "not_reproduced": OFFSET_NOTE if abs(pred - source) > atol else None}


def tuning_table() -> tuple[list[str], list[list[str]]]:
    """The baseline step sweep (``BASELINE_TUNING``) as a table, the chosen steps marked."""
    rows = [[f"{step:g}", f"{ntk:.3f}" + (" (chosen)" if step == NTK_STEP else ""),
             f"{rf:.3f}" + (" (chosen)" if step == RF_STEP else "")] for step, (ntk, rf) in BASELINE_TUNING.items()]
    return ["SGD step", "NTK test accuracy", "RF test accuracy"], rows


STAGE_REVISED = ("the classifier stage's output step was raised from the notes' prototype (η_a = 100, constant) to "
                 "η_a = 1800 with a cosine decay of every step (commit 8a103d5), after prototype runs left seeds on a "
                 "plateau below 0.99; the prototype recipe stays as net_with_structure_prototype")
THM2_NOT_TESTABLE = ("Theorem 2's floor p_o(1 − √(2N)B/2^k) is negative for N = 600 features once B ≥ 0.92: vacuous at "
                     "simulation scale, and an untrained model (hinge 1) passes any floor below 1")


def prototype_claim(result: GroupResult, n_test: int, source_value: float) -> dict:
    """The ledger arguments of the network-accuracy claim under the prototype stage
    (:func:`prototype_stage_experiment`), with the status its seeds earn: pass if every seed reaches 0.99, not
    reproduced if none does, inconclusive with the rate otherwise."""
    acc = result.test_acc["net"][:, 0]
    passes, runs = int((acc >= 0.99).sum()), acc.numel()
    mean, se = accuracy_se(acc, n_test)
    claim = {"id": "net_with_structure_prototype", "kind": "reproduction", "source_value": source_value,
             "statement": "network test accuracy with the notes' prototype classifier stage (η_a = 100, constant), the "
                          "recipe before the tuning (notes: ≥ 0.99)", "bound": 0.99,
             "measured": Estimate(mean, se, Null(CHANCE, "the untrained network (g = 0: accuracy ½)"))}
    if passes == 0:
        claim["not_reproduced"] = "no seed reaches 0.99 with the prototype stage"
    elif passes < runs:
        claim["inconclusive"] = "some seeds reach 0.99 with the prototype stage, others stop below"
        claim["rate"] = (passes, runs)
    return claim


def prototype_source(ledger) -> dict:
    """The source-map entry of the prototype-stage claim, with the status that claim earned."""
    status = {"pass": "reproduced", "inconclusive": "inconclusive", "not reproduced": "not reproduced"}
    claim = next(c for c in ledger.claims if c.id == "net_with_structure_prototype")
    entry = {"id": "table1_prototype", "where": "Table 1 / A.1 (E.1.1); chapter notes §4.1",
             "what": "the network reaches 100% with the classifier stage fixed before the tuning (η_a = 100)",
             "status": status.get(claim.status, "reproduced"), "claims": [claim.id]}
    if entry["status"] != "reproduced":
        entry["note"] = claim.not_reproduced or claim.inconclusive
    return entry


def cosine_prediction(size: ParitySizes, n: int, seeds: int, negative_ratio: float | None = None) -> tuple[
        float, float]:
    """The derived step-2 cosine at sample size n and the standard deviation of a mean over ``seeds`` seeds
    (:func:`feature_learning.theory.feature_emergence.mixture_cosine_and_sd`, enumerated from the law)."""
    from fractions import Fraction

    rho = None if negative_ratio is None else Fraction(negative_ratio).limit_denominator(1000)
    cos, sd = mixture_cosine_and_sd(size.k, size.D, n, size.p_o, rho)
    return cos, sd / math.sqrt(seeds)


# -- what the chapter glues and draws -------------------------------------------------------------------------------
def summary_values(prefix: str, summary: dict[str, tuple[float, float | None]]) -> dict[str, float]:
    """A group summary as glue values: ``<prefix>_<key>`` (the seed mean) and ``<prefix>_<key>_se``."""
    out = {}
    for key, (mean, se) in summary.items():
        out[f"{prefix}_{key}"] = mean
        out[f"{prefix}_{key}_se"] = float("nan") if se is None else se
    return out


def size_values(size: FeatureEmergenceSizes) -> dict[str, float]:
    """The sizes the prose names."""
    P = size.parity
    n_half, n_fifth = (source_ratio_sample(n, P) for n in size.samples.source_ns)
    return {"size_d": P.d, "size_D": P.D, "size_n": P.n, "size_T": P.steps, "size_width": 2 * P.m,
            "size_batch": P.batch, "seeds": P.seeds, "variant_seeds": size.variants.seeds,
            "dim_small": size.variants.dims[0], "dim_large": size.variants.dims[1], "sample_seeds": size.samples.seeds,
            "n_half": n_half, "n_fifth": n_fifth, "small_m": size.samples.widths[1],
            "ratio_source": (100 - 5) / SOURCE_N, "ratio_ours": (P.D - P.k) / P.n,
            "interval_n": size.interval.n, "interval_width": 2 * size.interval.m, "hidden_n": size.hidden.n,
            "hidden_width": 2 * size.hidden.m, "inj_teacher_width": size.injection.teacher_width,
            "mix_seeds": size.mixture.seeds, "mix_n": size.mixture.n, "inj_seeds": size.injection.seeds,
            "eta_a": SECOND_LAYER_STEP, "first_layer_factor": FIRST_LAYER_FACTOR, "rf_step": RF_STEP,
            "ntk_step": NTK_STEP, "prototype_step": PROTOTYPE_STEP,
            "stage_eta": FIRST_LAYER_FACTOR * stage_step(P.k, P.m, P.steps)}


TABLE_COLUMNS = [("net", "Network"), ("ntk", "NTK"), ("rf", "RF"), ("one", "One Step"), ("two", "Two Step"),
                 ("net_nostruct", "Network w/o structure"), ("cos_two", "cos (two steps)")]


def source_table(rows: dict[str, dict], columns=None) -> tuple[list[str], list[list[str]]]:
    """Rows of the source's tables (label -> values) as (columns, rows) for ``chapter.glue_table``: accuracies in
    percent and cosines as the source prints them."""
    columns = columns or TABLE_COLUMNS

    def cell(key, value):
        if key.startswith("cos"):
            return f"{value:.3f}"
        text = f"{100 * value:.2f}".rstrip("0")
        return text + "0" if text.endswith(".") else text

    return ["setting"] + [name for _, name in columns], [[label] + [cell(c, values[c]) for c, _ in columns]
                                                         for label, values in rows.items()]


MODEL_NAMES = {"net": "Network", "ntk": "NTK", "rf": "RF"}
MODEL_COLOURS = {"net": "tab:red", "ntk": "tab:blue", "rf": "tab:green"}


def accuracy_figure(panels: list[tuple[str, GroupResult, tuple[int, ...]]], ylim=(0.4, 1.02)):
    """Test accuracy against step of the network, the NTK and the random-feature model, one panel per (title,
    group, settings): setting 0 (with structure, solid) and/or 1 (without, dashed), mean and standard deviation over
    the group's seeds (Figures 1, 9, 11 and 13 of the source); chance (0.5) dotted, and the majority rate as a
    dash-dotted line where the classes are imbalanced."""
    from feature_learning.plotting.curves import Curve, Guide, Panel, plot_panels

    out = []
    for i, (title, result, settings) in enumerate(panels):
        curves = [Curve(result.history["step"], result.history[key][:, :, setting],
                        name if setting == 0 else f"w/o structure: {name}", "-" if setting == 0 else "--",
                        MODEL_COLOURS[key], spread="sd", kwargs={} if setting == 0 else {"alpha": 0.6})
                  for setting in settings for key, name in MODEL_NAMES.items()]
        guides = [Guide(0.5, style=":")]
        if result.group.negative_ratio is not None:
            guides.append(Guide(float(result.majority[0, 0]), style="-.", color="k"))
        out.append(Panel(curves, title, "step", "test accuracy" if i == 0 else "", guides, ylim=ylim,
                         legend="lower right" if i == 0 else None, legend_size=6))
    return plot_panels(out, width=3.4, sharey=True)


def mds_figure(W: dict[str, torch.Tensor], direction: torch.Tensor, names: tuple[str, str]):
    """Figures 2 and 15: MDS of the units after 0, 1 and 2 steps with +-direction as stars."""
    from feature_learning.plotting.neurons import mds_panels

    titles = {"init": "initialisation", "one": "after step 1", "two": "after step 2"}
    marks = [(names[0], direction, "tab:red"), (names[1], -direction, "tab:orange")]
    return mds_panels([[{"title": f"{titles[key]}: max cos {float(cosine_to(W[key][None], direction).max()):.3f}",
                         "W": W[key], "marks": marks} for key in ("init", "one", "two")]])


def mixture_figure(results: list[MixtureResult]):
    """Figure 16: MDS of the 800 first-layer weights and the cluster centres (stars by label) at initialisation
    (top) and after training (bottom), first seed of each setting."""
    from feature_learning.plotting.neurons import mds_panels

    rows = [[], []]
    for e, r in enumerate(results):
        centres, labels = r.centres[0].double(), r.centre_labels[0]
        marks = [(f"centre, y = {int(v):+d}", centres[labels == v], colour)
                 for v, colour in ((1.0, "tab:red"), (-1.0, "tab:orange"))]
        rows[0].append({"title": f"experiment {e + 1}, initialisation", "W": r.W_init[0], "marks": marks})
        rows[1].append({"title": f"experiment {e + 1}, epoch {r.epochs}", "W": r.W[0], "marks": marks})
    return mds_panels(rows)


def injection_figure(result: InjectionResult):
    """The injected-input protocol: students' test accuracy against the teacher's labels over training, mean and
    standard deviation over the students' seeds; chance (0.5) dotted."""
    from feature_learning.plotting.curves import Curve, Guide, Panel, plot_panels

    curves = [Curve(result.step, result.real_acc[:, :, 0], "mixture student: digits part", color="tab:blue",
                    spread="sd"),
              Curve(result.step, result.injected_acc[:, :, 0], "mixture student: Gaussian part", color="tab:orange",
                    spread="sd"),
              Curve(result.step, result.real_acc[:, :, 1], "digits-only student: digits", "--", "k", spread="sd")]
    return plot_panels([Panel(curves, "", "step", "test accuracy", [Guide(0.5, style=":")], ylim=(0.0, 1.02),
                              legend="lower right", legend_size=6)], width=6)


# -- the source map: every result of the source the chapter rests on ---------------------------------------------------
def _ids(*prefixes: str, suffixes: tuple[str, ...]) -> list[str]:
    return [f"{p}_{s}" for p in prefixes for s in suffixes]


SOURCE_MAP = [
    {"id": "thm1", "where": "Thm 1 = Thm 26", "status": "reproduced", "claims": ["net_with_structure", "net_hinge"],
     "what": "gradient descent on a two-layer network learns every labelling of the relevant count (parity here)"},
    {"id": "lemma5", "where": "Lemma 5 / A.2", "status": "verified", "claims": ["lemma5_exact"],
     "what": "3(k+1) truncated-ReLU units along Σ_A M_j fit any labelling, with bounded weights"},
    {"id": "mixture_law", "where": "App. C", "status": "verified", "claims": ["mixture_gamma"],
     "what": "D_A^mix has balanced classes and γ = (1 − p_o)/2"},
    {"id": "thm2", "where": "Thm 2, Cor. 3", "status": "not testable here", "claims": ["ntk_hinge", "rf_hinge"],
     "what": "fixed features need exponentially many features or norm: hinge ≥ p_o(1 − √(2N)B/2^k)",
     "note": "vacuous at N = 600 features; its direction is carried by Table 1's NTK and RF accuracies"},
    {"id": "thm4", "where": "Thm 4", "status": "verified",
     "claims": ["parities_uncorrelated", "sq_bound", "net_without_structure", "ntk_without_structure",
                "rf_without_structure"],
     "what": "without input structure no polynomial SQ learner (mini-batch SGD included) learns the parity"},
    {"id": "table1_accuracy", "where": "Table 1 / Fig. 1 (E.1.1)", "status": "reproduced",
     "claims": ["net_beats_ntk", "net_beats_rf", "ntk_accuracy", "rf_accuracy", "structure_drop"],
     "what": "network 100% against NTK 86.4% and RF 76.0%; 52% without input structure"},
    {"id": "table1_cos_two", "where": "Table 1 / Fig. 2 (E.1.1)", "status": "reproduced",
     "claims": ["cos_two_steps", "cos_two_no_structure"],
     "what": "after two steps the weights align with Σ_A M_j (0.997; 0.253 without structure)"},
    {"id": "table1_cos_one", "where": "Table 1 / Fig. 2 (E.1.1)", "status": "not reproduced",
     "claims": ["cos_one_step"], "what": "after one step the best cosine is 0.848",
     "note": "with the stated λ_w = 1/(2η) step 1 erases w^(0) and the cosine is ≈ 0.99 at every seed"},
    {"id": "table1_two_step", "where": "Table 1 / Sec. 5.2", "status": "reproduced", "claims": ["probe_two_steps"],
     "what": "the best classifier on the step-two features: 100%"},
    {"id": "table1_one_step", "where": "Table 1 / Sec. 5.2", "status": "not reproduced",
     "claims": ["probe_step_gain", "probe_one_halfspace"],
     "what": "the best classifier on the step-one features: 52%, far below step two",
     "note": "a converged probe finds the best halfspace, 27/32, at every seed"},
    {"id": "table2", "where": "Table 2 (E.1.2)", "status": "reproduced",
     "claims": ["interval_two_step", "interval_cos_two", "interval_cos_no_structure"],
     "what": "interval labels: the two-step features reach 100% and align (0.994; 0.965 without structure)"},
    {"id": "table2_fixed_features", "where": "Table 2, Figs. 7-8 (E.1.2)", "status": "not attempted", "claims": [],
     "what": "interval labels: NTK and random features come close to the network (the advantage disappears)",
     "note": "the classifier stage is not run at k = 30, where the chapter notes found our parity recipe unstable"},
    {"id": "table3", "where": "Table 3 / Fig. 9 (E.2.1)", "status": "reproduced",
     "claims": _ids("dim_small", "dim_large", suffixes=("net", "net_beats_ntk", "net_beats_rf", "cos_two",
                                                        "structure_drop")),
     "what": "d = 100 and 2000: the network still beats NTK and RF, and needs the input structure"},
    {"id": "table4", "where": "Table 4 / Fig. 11 (E.2.2)", "status": "reproduced",
     "claims": _ids("ratio_low", "ratio_high", suffixes=("net", "net_beats_ntk", "net_beats_rf", "two_step",
                                                         "no_structure")),
     "what": "negative shares 0.8 and 0.9: the network reaches 100%; without structure it falls below the majority"},
    {"id": "table5", "where": "Table 5 / Fig. 13 (E.2.3)", "status": "reproduced",
     "claims": _ids("n25000", "n10000", suffixes=("net", "net_beats_ntk", "net_beats_rf", "two_step",
                                                  "structure_drop")),
     "what": "n = 25,000 and 10,000 (m = 50): the same picture at smaller samples"},
    {"id": "fig15", "where": "Fig. 15 (E.3.1)", "status": "verified", "claims": ["hidden_clusters"],
     "what": "labels from a hidden representation: the weights form clusters after one and two steps"},
    {"id": "fig16", "where": "Fig. 16 / Table 6 (E.3.2)", "status": "reproduced",
     "claims": ["mixture1_centres_covered", "mixture2_centres_covered", "mixture3_centres_covered"],
     "what": "Gaussian mixture: every cluster centre is covered by some neurons"},
    {"id": "injection", "where": "Figs. 4, 22 (E.5)", "status": "reproduced on an analogue",
     "claims": ["injection_ordering", "injection_mixture_lower", "injection_real_part"],
     "analogue": "scikit-learn's 8×8 digits with Gaussian inputs of their mean and covariance, α = ½",
     "what": "a student learns injected inputs slower and worse than the real ones labelled by the same teacher"},
    {"id": "injection_rest", "where": "Figs. 23-26, Alg. 1 (E.5)", "status": "not attempted", "claims": [],
     "what": "Tiny ImageNet injection, the sweep over α, the double-descent choice of the teacher",
     "note": "no dataset can be downloaded here; the α sweep and the teacher selection are not built"},
    {"id": "real_data", "where": "Figs. 3, 17-21, Table 7 (E.4)", "status": "not attempted", "claims": [],
     "what": "on MNIST, CIFAR-10 and SVHN the neurons of trained networks cluster; a small CNN analogue",
     "note": "the datasets cannot be downloaded here, and the notes' digits analogue is not built"},
    {"id": "variant_weights", "where": "Figs. 10, 12, 14 (E.2)", "status": "not attempted", "claims": [],
     "what": "MDS pictures of the weights in the variants",
     "note": "pictures only; the cosines they show are claimed with Tables 3-5"},
    {"id": "erratum_bias_gradient", "where": "eq. (24) / (A.20)", "status": "erratum",
     "claims": ["smoothed_activation"],
     "what": "the bias gradient omits ξ_i inside the indicator",
     "note": "the derivative of the smoothed activation is Pr[z + ξ ∈ (0, 1)]: the noise belongs inside"},
]

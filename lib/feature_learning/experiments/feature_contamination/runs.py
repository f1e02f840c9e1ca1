"""The classification runs of the chapter "Feature contamination" (Figs. 3a-c, 7, 8), the theory checked on
the trained networks, the two controls and the gradient mechanism (Experiment 2)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import sympy as sp
import torch

from feature_learning.book.profiles import Run
from feature_learning.data.structured_features import StructuredFeatures
from feature_learning.experiments.feature_contamination import measures as measure
from feature_learning.experiments.feature_contamination.sizes import (
    WEIGHT_DECAY,
    ClassificationSizes,
    ContaminationSizes,
)
from feature_learning.measure.metrics import risk, sign_accuracy
from feature_learning.measure.statistics import binomial_se, mean_se
from feature_learning.models.two_layer import TwoLayerNet, init_fixed_output
from feature_learning.theory import feature_contamination as theory
from feature_learning.training.loop import OptimConfig, fresh_batches, train
from feature_learning.training.losses import hinge


def feature_model(size: ClassificationSizes) -> StructuredFeatures:
    return StructuredFeatures(d_core=size.d_core, d_bg=size.d_bg)


def held_out_sets(data, n: int, generator: torch.Generator, device=None):
    """Fixed ID and OOD test sets ((x, y), (x, y)), shared by all replicas, drawn in this order."""
    x_id, y_id, *_ = data.sample(n, split="id", generator=generator, device=device)
    x_ood, y_ood, *_ = data.sample(n, split="ood", generator=generator, device=device)
    return (x_id, y_id), (x_ood, y_ood)


TARGET_FRACTION = 0.5  # a run reached its training target when its ID loss ends at most half its initial value
# Lemma A.6's thresholds, in standard deviations of E_{x|y}<w_k, x> at initialisation: where Lemma D.3's bounds sit at
# least ten binomial standard errors of 200,000 neurons from the Gaussian tail (at 2 they sit 3.4 away)
MILLS_DELTAS = (0.5, 1.0, 1.5)


def reached(start, end, fraction: float = TARGET_FRACTION) -> tuple[int, int]:
    """(runs that reached their training target, runs): per replica, a finite final ID loss ``end`` at most
    ``fraction`` of its value ``start`` at initialisation (a NaN never reaches it)."""
    start, end = (np.asarray(v, dtype=float).ravel() for v in (start, end))
    ok = np.isfinite(end) & (end <= fraction * start)
    return int(ok.sum()), int(ok.size)


def history_reached(history: dict, key: str) -> tuple[int, int]:
    """:func:`reached` on the first and last logged value of ``key`` (one per replica)."""
    return reached(initial(history, key), final(history, key))


def final(history: dict, key: str) -> np.ndarray:
    """The last logged value of ``key``, one per replica."""
    return history[key][-1].double().numpy()


def initial(history: dict, key: str) -> np.ndarray:
    return history[key][0].double().numpy()


@dataclasses.dataclass(frozen=True)
class Stat:
    """A mean over seeds (or samples) with its standard error (:func:`feature_learning.measure.statistics.mean_se`)."""

    mean: float
    se: float

    @property
    def value(self) -> float:  # the claims ledger reads value and se
        return self.mean

    @classmethod
    def of(cls, values) -> Stat:
        return cls(*mean_se(np.asarray(values, dtype=float).ravel()))


# ---- Step 1: SymPy's derivative of the hinge loss against Eq. (12) on every sign region --------------------------
@dataclasses.dataclass
class RegionCheck:
    """SymPy's gradient of the hinge loss compared with Eq. (12) / (49) (indicator 1{y h <= 1}) and with the indicator
    the source prints (1{h <= 1}) at exact points of every sign region
    (:func:`~feature_learning.theory.feature_contamination.region_points`)."""

    activation: str
    points: int
    regions: set  # the regions visited: (sign <w_1,x>, ..., y, loss active)
    eq12_mismatches: int  # points where SymPy's derivative differs from Eq. (12)
    printed_mismatches: set  # regions where it differs from the printed indicator
    loss_inactive_points: int  # points with y h > 1

    @property
    def reachable(self) -> int:
        """Sign regions that exist: 2^(width + 2), less the loss-inactive ones with no active ReLU (there h = 0)."""
        width = len(next(iter(self.regions))) - 2
        return 2 ** (width + 2) - (2 if self.activation == "relu" else 0)


def hinge_gradient_check(grad: theory.HingeGradient) -> RegionCheck:
    points = theory.region_points(grad)
    regions = [theory.region_of(grad, p) for p in points]
    derivative = [theory.at(grad.derivative, p) for p in points]
    eq12 = sum(d != theory.at(grad.eq12, p) for d, p in zip(derivative, points, strict=True))
    printed = {r for d, p, r in zip(derivative, points, regions, strict=True) if d != theory.at(grad.printed, p)}
    return RegionCheck(grad.activation, len(points), set(regions), eq12, printed,
                       sum(not r[-1] for r in regions))


# ---- the classification runs (Figs. 3a-c, 7, 8) ---------------------------------------------------------------------
@dataclasses.dataclass
class ClassificationRun:
    net: TwoLayerNet  # trained
    init: TwoLayerNet  # at step 0 (detached)
    history: dict[str, torch.Tensor]  # (T, R) curves; corr_pos / corr_neg (T, tracked neurons) of replica 0
    snapshots: dict[int, torch.Tensor]  # step -> W
    data: StructuredFeatures
    tests: tuple  # ((x_id, y_id), (x_ood, y_ood))


def run_classification(size: ClassificationSizes, activation: str, generator: torch.Generator, device=None, *,
                       init: TwoLayerNet | None = None, tests=None, data: StructuredFeatures | None = None,
                       snapshots: tuple[int, ...] = (), tracked_neurons: int = 10) -> ClassificationRun:
    """The theory's setting (Sec. 3.2, appendix F.1): fixed +-1/m output layer, hinge loss, online SGD on fresh
    batches with weight decay on W (Eq. (4): w <- (1 - eta lambda) w - eta grad), batched over ``size.seeds``
    replicas. Draws, from ``generator`` and in this order, the initial network (unless ``init`` is given), the test
    sets (unless ``tests`` is given) and the batches. ``data`` replaces the feature model of F.1 (e.g. by one whose
    background has mean zero in training); the first-layer weights at the logged steps in ``snapshots`` are kept."""
    data = feature_model(size) if data is None else data
    if init is None:
        init = init_fixed_output(size.seeds, size.d0, size.width, d_ambient=size.d, activation=activation,
                                 generator=generator, device=device)
    init = init.detached()
    net = init.detached()
    if tests is None:
        tests = held_out_sets(data, size.n_test, generator, device)
    (x_id, y_id), (x_ood, y_ood) = tests
    saved = {}

    def sample(step):
        x, y, _ = data.sample(size.batch, replicas=size.seeds, generator=generator, device=device)
        return x, y

    def log(step):
        if step in snapshots:
            saved[step] = net.W.detach().clone()
        out_id, out_ood = net(x_id), net(x_ood)
        p_pos, p_neg = measure.class_activation_rates(net, x_id, y_id)
        fw = measure.feature_weights(net, size.d_core)
        corr_pos, corr_neg = measure.class_correlations(net, size.d_core, data.mu_core(), data.mu_bg("id"))
        return {
            "id_hinge": risk(out_id, y_id, hinge), "ood_hinge": risk(out_ood, y_ood, hinge),
            "id_acc": sign_accuracy(out_id, y_id), "ood_acc": sign_accuracy(out_ood, y_ood),
            "id_margin": (y_id * out_id).mean(-1),
            "p_pos": p_pos.mean(-1), "p_neg": p_neg.mean(-1),
            "core": fw.core, "bg": fw.bg, "core_norm": fw.core_norm, "bg_norm": fw.bg_norm,
            "corr_pos": corr_pos[0, :tracked_neurons], "corr_neg": corr_neg[0, :tracked_neurons],
            "both_positive": ((corr_pos > 0) & (corr_neg > 0)).float().mean(-1),
        }

    config = OptimConfig(steps=size.steps, lr=size.lr, optimizer="sgd", weight_decay=WEIGHT_DECAY, warmup=0)
    history = train(net.parameters(), fresh_batches(net, sample, hinge), config, log_every=size.log_every,
                    log_at=snapshots, log_fn=log)
    return ClassificationRun(net, init, history, saved, data, tests)


@dataclasses.dataclass
class ReluVsLinear:
    """Experiment 1: the ReLU and the linear network of appendix F.1 on the same data model."""

    relu: ClassificationRun
    linear: ClassificationRun
    time: np.ndarray  # logged steps in the source's steps
    snapshot_steps: tuple[int, ...]
    init_gap: Stat  # p_pos - p_neg of the ReLU network at initialisation, mean and se over all neurons
    p_pos_median: float  # median over all neurons of the final activation rate on the positive class
    bg_init_sd: float  # sd of a replica's mean background weight at initialisation, 1/sqrt(d m d_bg)
    p_pos_medians: np.ndarray  # per replica: the median over its neurons of the final positive-class rate
    p_pos_median_init: float  # the mean over replicas of that median at initialisation (the untrained network)

    def final(self, net: str, key: str) -> np.ndarray:
        return final(getattr(self, net).history, key)

    def initial(self, net: str, key: str) -> np.ndarray:
        return initial(getattr(self, net).history, key)

    def stat(self, net: str, key: str) -> Stat:
        """The final value of ``key`` over seeds."""
        return Stat.of(self.final(net, key))

    def bg_over_core(self) -> Stat:
        """b/c per seed: the ReLU network's mean background weight over its mean oriented core weight."""
        return Stat.of(self.final("relu", "bg") / self.final("relu", "core"))

    def values(self) -> dict[str, float]:
        """The numbers the chapter glues: every logged quantity at the end and at initialisation (seed means)."""
        out = {}
        for net in ("relu", "linear"):
            for key in ("id_hinge", "ood_hinge", "id_acc", "ood_acc", "p_pos", "p_neg", "core", "bg", "core_norm",
                        "bg_norm", "both_positive"):
                out[f"{net}_{key}"] = float(self.final(net, key).mean())
                out[f"{net}_{key}_init"] = float(self.initial(net, key).mean())
        return {**out, "bc_ratio": self.bg_over_core().mean, "init_gap": self.init_gap.mean,
                "init_gap_se": self.init_gap.se, "p_pos_median": self.p_pos_median}


def relu_vs_linear(size: ContaminationSizes, run: Run) -> ReluVsLinear:
    """Figs. 3a-c, 7 and 8: both networks trained, with snapshots of the ReLU network's weights at initialisation,
    early, at a quarter of the run and at the end (for Experiment 2)."""
    c = size.classification
    quarter = c.steps // 4 - c.steps // 4 % c.log_every
    snaps = (0, 2 * c.log_every, quarter, c.steps)
    relu = run_classification(c, "relu", run.generator("classification", "relu"), run.device, snapshots=snaps)
    linear = run_classification(c, "identity", run.generator("classification", "linear"), run.device)
    (x_id, y_id), _ = relu.tests
    p_pos, p_neg = measure.class_activation_rates(relu.init, x_id, y_id)
    final_pos, _ = measure.class_activation_rates(relu.net, x_id, y_id)
    return ReluVsLinear(relu, linear, c.source_steps(relu.history["step"].numpy()), snaps,
                        Stat.of((p_pos - p_neg).double().cpu().numpy()), float(final_pos.median()),
                        1 / math.sqrt(c.d * c.width * c.d_bg),
                        final_pos.double().median(-1).values.cpu().numpy(),
                        float(p_pos.double().median(-1).values.mean()))


# ---- the theory against the trained networks -------------------------------------------------------------------------
@dataclasses.dataclass
class TheoryChecks:
    clt_error: float  # largest |Phi formula - exact activation probability| over neurons, classes and snapshots
    clt_error_by_step: dict[int, float]
    mc_error: float  # largest |measured rate (test set) - exact| at the end
    mc_sd: float  # largest Monte-Carlo standard deviation of a measured rate at the end
    berry_esseen: float  # C0 * the Berry-Esseen ratio for d0 equal weights (C0 = 0.56)
    ood_samples: int  # inputs per split for the OOD-risk estimate
    ratio: np.ndarray  # per replica: r = (d_core c - d_bg b)/(d_core c + d_bg b) (Step 6)
    margin: np.ndarray  # per replica: mean ID margin M = E[y h]
    id_risk: np.ndarray  # per replica: ID hinge risk on the same inputs
    ood_lower: np.ndarray  # per replica: 1 - r M
    ood_upper: np.ndarray  # per replica: 1 - r (1 - R_ID)
    ood_unit: np.ndarray  # per replica: the notes' estimate 1 - r (M = 1)
    ood_measured: np.ndarray  # per replica: the OOD hinge risk on the same inputs
    decay_ratio: np.ndarray  # per replica: linear bg norm ratio over (1 - eta lambda)^t
    decay: float
    never_learn: float  # fraction of ReLU neurons whose correlation with their own class ends <= 0
    both_positive_run: float  # fraction of the ReLU run's neurons at init positive on both classes
    both_positive_run_se: float
    both_positive_mc: float  # the same over ``checks.init_neurons`` fresh initial neurons
    both_positive_mc_se: float
    both_positive_theory: float
    init_tail: np.ndarray  # (len(MILLS_DELTAS), 2): share of the fresh neurons with E_{x|y}<w_k, x> >= delta sd, for
    # y = sign(a_k) and y = -sign(a_k) (Lemma A.6)
    init_tail_n: int  # fresh neurons per share


def theory_checks(size: ContaminationSizes, run: Run, exp: ReluVsLinear) -> TheoryChecks:
    """Step 4 (Lemma B.1's normal approximation, against the exact activation probability of every neuron at every
    snapshot), Step 5 (the OOD-risk estimate), Theorem 4.4's strengthening (pure decay of the linear network's
    background norm) and the initial both-positive fraction (closed form against the run and a large sample)."""
    c = size.classification
    act = theory.activation_probability()
    sigma = float(act.sigma)
    data = exp.relu.data

    def clt(W):
        net = dataclasses.replace(exp.relu.net, W=W)
        exact = measure.exact_activation_rates(net, c.d_core)
        corr = measure.class_correlations(net, c.d_core, data.mu_core(), data.mu_bg())
        norm = W.double().norm(dim=-1)
        pred = [torch.special.ndtr(k.double() / (sigma * norm)) for k in corr]
        return max(float((p - e).abs().max()) for p, e in zip(pred, exact, strict=True)), exact

    by_step = {}
    for step, W in exp.relu.snapshots.items():
        by_step[step], exact = clt(W)
    (x_id, y_id), _ = exp.relu.tests
    measured = measure.class_activation_rates(exp.relu.net, x_id, y_id)
    n_class = (y_id == 1).sum().item(), (y_id == -1).sum().item()
    mc_error = max(float((m_ - e).abs().max()) for m_, e in zip(measured, exact, strict=True))
    mc_sd = float(max((e * (1 - e)).clamp_min(0).div(min(n_class)).sqrt().max() for e in exact))
    mom = theory.uniform_moments()
    be = 0.56 * float(mom.berry_esseen.subs(mom.n, c.d0))

    ood = theory.ood_hinge_estimate()
    ratio = sp.lambdify((ood.c, ood.b, ood.d_core, ood.d_bg), ood.ratio)
    r = ratio(exp.final("relu", "core"), exp.final("relu", "bg"), c.d_core, c.d_bg)
    lower, upper = (sp.lambdify((ood.r, ood.M, ood.R_id), getattr(ood, k)) for k in ("lower", "upper"))
    (xi, yi), (xo, yo) = held_out_sets(data, size.checks.estimate_samples, run.generator("ood_estimate"), run.device)
    with torch.no_grad():
        out_id, out_ood = exp.relu.net(xi), exp.relu.net(xo)
    margin = (yi * out_id).mean(-1).double().cpu().numpy()
    r_id = risk(out_id, yi, hinge).double().cpu().numpy()

    decay = (1 - c.lr * WEIGHT_DECAY) ** c.steps
    lin = exp.linear.history["bg_norm"]
    corr_pos, corr_neg = measure.class_correlations(exp.relu.net, c.d_core, data.mu_core(), data.mu_bg())

    init_pos, init_neg = measure.class_correlations(exp.relu.init, c.d_core, data.mu_core(), data.mu_bg())
    both_run = ((init_pos > 0) & (init_neg > 0)).double()
    frac = theory.both_positive_at_init()
    replicas = math.ceil(size.checks.init_neurons / c.width)
    fresh = init_fixed_output(replicas, c.d0, c.width, d_ambient=c.d, generator=run.generator("init_neurons"))
    fresh_pos, fresh_neg = measure.class_correlations(fresh, c.d_core, data.mu_core(), data.mu_bg())
    both_mc = ((fresh_pos > 0) & (fresh_neg > 0)).double()
    sd = math.sqrt((data.mu_core() ** 2 * c.d_core + data.mu_bg() ** 2 * c.d_bg) / c.d)  # of E_{x|y}<w_k, x> at init
    tail = np.array([[float((k >= delta * sd).double().mean()) for k in (fresh_pos, fresh_neg)]
                     for delta in MILLS_DELTAS])
    return TheoryChecks(
        clt_error=max(by_step.values()), clt_error_by_step=by_step, mc_error=mc_error, mc_sd=mc_sd, berry_esseen=be,
        ood_samples=size.checks.estimate_samples, ratio=r, margin=margin, id_risk=r_id,
        ood_lower=lower(r, margin, r_id),
        ood_upper=upper(r, margin, r_id), ood_unit=1 - r, ood_measured=risk(out_ood, yo, hinge).double().cpu().numpy(),
        decay_ratio=(lin[-1] / lin[0]).double().numpy() / decay, decay=decay,
        never_learn=float((corr_pos <= 0).double().mean()),
        both_positive_run=float(both_run.mean()), both_positive_run_se=binomial_se(float(both_run.mean()),
                                                                                   both_run.numel()),
        both_positive_mc=float(both_mc.mean()), both_positive_mc_se=binomial_se(float(both_mc.mean()),
                                                                                both_mc.numel()),
        both_positive_theory=float(frac.fraction.subs({frac.d_core: c.d_core, frac.d_bg: c.d_bg})),
        init_tail=tail, init_tail_n=fresh_pos.numel(),
    )


def ood_margin_allowance(th: TheoryChecks) -> np.ndarray:
    """Per replica, how far ID margins that are not 1 can move the OOD risk from the unit-margin estimate 1 - r:
    the bracket of Step 6 spans [1 - r M, 1 - r + r R_ID], within r (|M - 1| + R_ID) of 1 - r."""
    return th.ratio * (np.abs(th.margin - 1) + th.id_risk)


# ---- two controls: time rescaling and a background with mean zero ----------------------------------------------------
@torch.no_grad()
def coupled_shift_risks(net: TwoLayerNet, data: StructuredFeatures, n: int, generator: torch.Generator,
                        device=None) -> tuple[np.ndarray, np.ndarray]:
    """ID and OOD hinge risk per replica on coupled inputs: n ID samples, and the same samples with every background
    coordinate moved by mu_bg(ood) - mu_bg(id) (U[0, 1] - 1 is U[-1, 0], so this is an OOD sample). The difference
    is the cost of the shift, free of the noise of two independent test sets."""
    x, y, _ = data.sample(n, split="id", generator=generator, device=device)
    x_ood = x.clone()
    x_ood[..., data.d_core:] += data.mu_bg("ood") - data.mu_bg("id")
    return tuple(risk(net(v), y, hinge).double().cpu().numpy() for v in (x, x_ood))


@dataclasses.dataclass
class Controls:
    half: ClassificationRun  # eta/2 for 2T steps from the ReLU run's initial network, on its test sets
    zero_mean: ClassificationRun  # background U[-1/2, 1/2] in training, U[-3/2, -1/2] at test time
    zero_decay_ratio: np.ndarray  # per replica: background norm ratio over (1 - eta lambda)^t
    zero_shift: tuple[np.ndarray, np.ndarray]  # per replica: ID and OOD risk of the zero-mean network, coupled


def controls(size: ContaminationSizes, run: Run, exp: ReluVsLinear) -> Controls:
    c = size.classification
    half_size = dataclasses.replace(c, lr=c.lr / 2, steps=2 * c.steps, log_every=2 * c.log_every)
    half = run_classification(half_size, "relu", run.generator("classification", "half_step"), run.device,
                              init=exp.relu.init, tests=exp.relu.tests)
    zero_data = dataclasses.replace(exp.relu.data, bg_id_range=(-0.5, 0.5), bg_ood_range=(-1.5, -0.5))
    zero = run_classification(c, "relu", run.generator("classification", "zero_mean"), run.device, data=zero_data)
    decay = (1 - c.lr * WEIGHT_DECAY) ** c.steps
    bg = zero.history["bg_norm"]
    shift = coupled_shift_risks(zero.net, zero_data, size.checks.estimate_samples, run.generator("zero_mean_shift"),
                                run.device)
    return Controls(half, zero, (bg[-1] / bg[0]).double().numpy() / decay, shift)


# ---- Experiment 2: the gradient mechanism, neuron by neuron ---------------------------------------------------------
@dataclasses.dataclass
class MechanismRow:
    step: int
    source_step: float
    rate_gap: float  # mean over neurons of rho_+ - rho_-
    bg_measured: float
    bg_formula: float
    core_measured: float
    core_formula: float
    corr_bg: float  # correlation over neurons of the measured and predicted background gradient


@dataclasses.dataclass
class Mechanism:
    rows: list[MechanismRow]
    eq14_error: float  # largest relative |autograd - Eq. (14)| (float64) over snapshots
    corr_bg_min: float  # over the snapshots after initialisation
    core_rel_max: float  # largest relative error of the mean core rate after initialisation
    neurons: int  # neurons per snapshot (for the standard error of a correlation)
    panel_step: int
    panels: list  # (title, formula, measured) at ``panel_step``


def gradient_mechanism(size: ContaminationSizes, run: Run, exp: ReluVsLinear) -> Mechanism:
    """At each snapshot of the ReLU run: the feature-wise gradient of the mean hinge loss on fresh inputs, by autograd
    and by Eq. (14) (float64), against the rates of Step 3
    (:func:`~feature_learning.theory.feature_contamination.contamination_rates`, with the measured rho_+-: the
    probability of being active and loss-active on the positive / negative class)."""
    c = size.classification
    data = exp.relu.data
    x, y, _ = data.sample(size.checks.gradient_samples, generator=run.generator("gradient_samples"),
                          dtype=torch.float64, device=run.device)
    rates = theory.contamination_rates()
    args = (rates.rho_plus, rates.rho_minus, rates.mu, theory.m, theory.eta)
    core_rate, bg_rate = (sp.lambdify(args, getattr(rates, k)) for k in ("core", "bg"))
    rows, panels, err, panel_step = [], [], 0.0, exp.snapshot_steps[2]
    for step, W in exp.relu.snapshots.items():
        net = dataclasses.replace(exp.relu.net, W=W).to(dtype=torch.float64)
        core_g, bg_g = measure.gradient_projections(net, x, y, c.d_core)
        core_14, bg_14 = measure.eq14_projections(net, x, y, c.d_core)
        scale = float(torch.maximum(core_g.abs().max(), bg_g.abs().max()))
        err = max(err, float(torch.maximum((core_g - core_14).abs().max(), (bg_g - bg_14).abs().max())) / scale)
        r_pos, r_neg = measure.loss_active_rates(net, x, y)
        # a gradient step of size 1: the rates per unit step size
        pred_core, pred_bg = core_rate(r_pos, r_neg, data.mu_core(), c.width, 1), bg_rate(r_pos, r_neg, data.mu_core(),
                                                                                           c.width, 1)
        corr = float(np.corrcoef(pred_bg.flatten().cpu().numpy(), bg_g.flatten().cpu().numpy())[0, 1])
        rows.append(MechanismRow(step, float(c.source_steps(step)), float((r_pos - r_neg).mean()),
                                 float(bg_g.mean()), float(pred_bg.mean()), float(core_g.mean()),
                                 float(pred_core.mean()), corr))
        if step == panel_step:
            panels = [("core gradient (oriented)", pred_core, core_g), ("background gradient", pred_bg, bg_g),
                      ("background / core", ((r_pos - r_neg) / (r_pos + r_neg)).flatten(), (bg_g / core_g).flatten())]
    later = [r for r in rows if r.step > 0]
    return Mechanism(rows, err, min(r.corr_bg for r in later),
                     max(abs(r.core_measured - r.core_formula) / r.core_formula for r in later),
                     c.seeds * c.width, panel_step, panels)


# ---- Lemma B.6 in its regime, and Lemma A.2's batch-gradient gap --------------------------------------------------
@dataclasses.dataclass
class DriftCheck:
    """Lemma B.6 on a run with d_core >> d_bg: for the neurons in N_y^(t) (sign(a_k) = y and E_{x|y}<w_k, x> at least
    ``threshold``), the population drift E_{t+1} - (1 - lambda eta) E_t = -eta <grad R(h), E[x | y]> in units of
    eta d0 / m, at every snapshot t <= ``horizon`` (R the hinge risk, estimated on ``samples`` fresh inputs)."""

    d_core: int
    d_bg: int
    steps: tuple[int, ...]
    neurons: dict[int, int]  # step -> neurons in N_y^(t), seeds pooled
    smallest: float  # the smallest normalised drift over those neurons, snapshots and seeds
    median: float
    samples: int
    threshold: float
    horizon: float  # m / (eta d0), the lemma's time scale, in steps


def drift_check(size: ContaminationSizes, run: Run, d_core: int = 48, d_bg: int = 16,
                horizon_multiple: int = 4) -> DriftCheck:
    """d_bg = 16 is d0 / ln d0 (15.4 at d0 = 64), the Theta(d0 / log d0) of Definition 3.1; the run lasts
    ``horizon_multiple`` times the lemma's m / (eta d0) steps, with the classification's other sizes."""
    samples = size.checks.drift_samples
    c = dataclasses.replace(size.classification, d_core=d_core, d_bg=d_bg)
    horizon = c.width / (c.lr * c.d0)
    steps = max(int(horizon_multiple * horizon), 2)
    snaps = (0, steps // 4, steps // 2, steps)
    c = dataclasses.replace(c, steps=steps, log_every=steps)
    gen = run.generator("lemma_b6")
    r = run_classification(c, "relu", gen, run.device, snapshots=snaps)
    x, y, _ = r.data.sample(samples, generator=gen, dtype=torch.float64, device=run.device)
    mu, threshold = r.data.mu_core(), 0.5 * math.sqrt(c.d0 / c.d)  # one initial sd of E_{x|y}<w_k, x>
    neurons, drifts = {}, []
    for step, W in r.snapshots.items():
        net = dataclasses.replace(r.net, W=W).to(dtype=torch.float64)
        core_g, bg_g = measure.gradient_projections(net, x, y, d_core)
        pos, _ = measure.class_correlations(net, d_core, mu, r.data.mu_bg())
        inside = pos >= threshold
        neurons[step] = int(inside.sum())
        drifts.append((mu * (d_core * core_g + d_bg * bg_g))[inside] / (c.d0 / c.width))
    d = torch.cat(drifts)
    return DriftCheck(d_core, d_bg, snaps, neurons, float(d.min()), float(d.median()), samples, threshold, horizon)


@dataclasses.dataclass
class GradientGap:
    """Lemma A.2 on the trained ReLU network: the feature-wise gap |<grad of the batch loss - grad of the population
    loss, m_j>| for every neuron k, feature j, replica and of ``batches`` fresh batches of the run's size N, against
    the Bernstein bound at failure probability ``delta`` with a union over all of them (Lemma D.2 with d1 = d2 = 1,
    the standard constants): the t with N' t^2 = 2 L (v + b t / 3), L = ln(2 K / delta), v the per-sample second
    moment of the coordinate, b = 2/m, and N' = 1 / (1/N + 1/N_ref) because the population gradient is itself
    estimated on N_ref fresh inputs. ``ratio``: the largest gap over its bound; ``printed_ratio``: the same against
    D.1's printed exponent (no factor 2)."""

    ratio: float
    printed_ratio: float
    batch: int
    batches: int
    reference: int
    delta: float


def _per_sample_gradients(net, x, y):
    """-grad_{w_k} of the hinge loss per sample, Eq. (14): a_k y 1{y h <= 1} 1{<w_k, x> >= 0} x, as (R, n, m)
    weights of x."""
    loss_active = (y * net(x) < 1).double()
    active = (net.preactivation(x) > 0).double()
    return (y * loss_active).unsqueeze(-1) * active * net.a.detach().unsqueeze(1)


@torch.no_grad()
def gradient_gap(size: ContaminationSizes, run: Run, exp: ReluVsLinear, delta: float = 0.01) -> GradientGap:
    c, batches = size.classification, size.checks.gap_batches
    net = exp.relu.net.to(dtype=torch.float64)
    gen = run.generator("lemma_a2")
    n_ref = size.checks.gradient_samples
    x, y, _ = exp.relu.data.sample(n_ref, generator=gen, dtype=torch.float64, device=run.device)
    w = _per_sample_gradients(net, x, y)
    xr = x.unsqueeze(0).expand(net.replicas, -1, -1)
    g_ref = torch.einsum("rnm,rnd->rmd", w, xr) / n_ref
    v = torch.einsum("rnm,rnd->rmd", w**2, xr**2) / n_ref
    n_eff = 1 / (1 / c.batch + 1 / n_ref)
    log_k = math.log(2 * batches * g_ref.numel() / delta)
    b = 2 / c.width

    def threshold(factor):  # the t with n t^2 = factor L (v + b t / 3): exp(-n t^2 / (factor (v + b t / 3))) = e^{-L}
        lin = factor * log_k * b / 3
        return (lin + (lin**2 + 4 * n_eff * factor * log_k * v).sqrt()) / (2 * n_eff)

    bound, printed = threshold(2), threshold(1)
    ratio = printed_ratio = 0.0
    for _ in range(batches):
        xb, yb, _ = exp.relu.data.sample(c.batch, generator=gen, dtype=torch.float64, device=run.device)
        gap = (torch.einsum("rnm,rnd->rmd", _per_sample_gradients(net, xb, yb),
                            xb.unsqueeze(0).expand(net.replicas, -1, -1)) / c.batch - g_ref).abs()
        ratio, printed_ratio = max(ratio, float((gap / bound).max())), max(printed_ratio, float((gap / printed).max()))
    return GradientGap(ratio, printed_ratio, c.batch, batches, n_ref, delta)


@dataclasses.dataclass(frozen=True)
class BernsteinExample:
    """Lemma D.1 on n Rademacher variables (x_i = +-1, b = 1, E x_i^2 = 1) at deviation n delta: the exact tail
    Pr[sum x_i >= n delta] against the printed bound exp(-n delta^2 / (E x^2 + b delta / 3)) and the standard one,
    with the factor 2, exp(-n delta^2 / (2 (E x^2 + b delta / 3)))."""

    n: int
    delta: float
    exact: float
    printed: float
    standard: float


def bernstein_example(n: int = 100, delta: float = 0.2) -> BernsteinExample:
    need = math.ceil((n + n * delta) / 2 - 1e-12)  # sum = 2 (#plus) - n >= n delta
    exact = sum(math.comb(n, k) for k in range(need, n + 1)) / 2**n
    exponent = n * delta**2 / (1 + delta / 3)
    return BernsteinExample(n, delta, exact, math.exp(-exponent), math.exp(-exponent / 2))

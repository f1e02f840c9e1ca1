"""Recipes and runs of the chapter "Pretraining label granularity: why fine labels teach the rare feature
that coarse labels skip" (Hong, Cui, Fuxman, Chan and Luo, "Towards understanding the effect of pretraining label
granularity", arXiv 2023; theory in its appendices B-F).

The theory simulation keeps the structure of appendix B (patch data, per-output neuron groups with frozen output
weights, softmax cross-entropy, online SGD on exactly balanced fresh batches, the bias schedules of eqs. (7) and
(93)) and replaces the asymptotic constants, which are unusable at d of a few dozen (ln^10(32) ~ 2.5e5), by knobs
(:class:`~.sizes.PatchModel`): the threshold tau (theory sqrt((4 + 2 c0) ln d)), the bias divisor lambda (theory
ln^5 d), the
expected number of neurons above threshold per (output, feature) n_lucky (theory Theta(d^c0 / sqrt(ln d))), the
per-patch noise norm sigma_zeta sqrt(d) (theory ln^-10 d). Values: the seed notes, section 4.9, with their
recommended noise 0.05 and the safe pruning margin 0.4.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import torch

from feature_learning.book.profiles import Run
from feature_learning.data.multiview_patches import (
    HierarchicalPatches,
    MultiViewPatches,
    bag_of_patches,
    kmeans_labels,
    labels_at_level,
    oversplit_labels,
    random_sublabels,
)
from feature_learning.experiments.label_granularity.bias_schedule import train_bias_schedule
from feature_learning.experiments.label_granularity.sizes import (
    LABELS,
    GranularitySizes,
    HierarchySizes,
    PatchModel,
)
from feature_learning.measure.lucky_neurons import level_crossing, responding, set_mean, set_sizes, singly_activated
from feature_learning.measure.statistics import ls_slope
from feature_learning.models.patch_conv import PatchConvNet, init_thresholded, merge_heads, width_for_lucky
from feature_learning.theory.label_granularity import expected_singly_lucky, log_time_constant
from feature_learning.training.losses import cross_entropy

# The training target of every training run, fixed before its runs were guarded: the training loss (cross-entropy with
# the training labels on fresh samples of the training distribution) at the last step at most TRAIN_LOSS_FRACTION of
# its untrained value ln C (C outputs; the outputs start at order sigma0). Thms 5.1 and 5.2 conclude with the
# training loss o(1); the recipe ends far below the target (coarse about 0.01 of ln 2, fine about 0.3 of ln 2k at ci),
# a run stopped in Phase I sits at ln C. Accuracy cannot serve: the initialisation, conditioned on Prop. 1's event,
# already classifies normal samples by a margin of order sigma0.
TRAIN_LOSS_FRACTION = 0.5


# ---- one training run ---------------------------------------------------------------------------------------------
def feature_pairs(data: MultiViewPatches, labels: str, y: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The (output, feature) pairs of class y whose singly-activated sets define A*_common and A*_sub.

    Coarse: output y with v_y, and output y with each v_{y,c}. Fine: head (y, c) with v_y, and with v_{y,c}."""
    common, sub = [], []
    for c in range(data.k):
        out = y if labels == "coarse" else data.fine_label(y, c)
        sub.append((out, data.subclass(y, c)))
        if labels == "fine" or c == 0:
            common.append((out, data.common(y)))
    return common, sub


def coarse_outputs(F: torch.Tensor, data: MultiViewPatches, labels: str) -> torch.Tensor:
    """The binary outputs: F itself for coarse training, the merged heads F_y = sum_c F_{y,c} for fine."""
    return F if labels == "coarse" else merge_heads(F, data.coarse_of_fine().to(F.device), 2)


def margin(F2: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """F_y - F_{y'} for binary outputs (R, N, 2) and labels (R, N) -> (R, N)."""
    own = F2.gather(-1, y.unsqueeze(-1)).squeeze(-1)
    other = F2.gather(-1, (1 - y).unsqueeze(-1)).squeeze(-1)
    return own - other


@dataclasses.dataclass
class TrainingRun:
    k: int
    labels: str
    counts: str
    steps: torch.Tensor  # (T_log,)
    A_common: torch.Tensor  # (T_log, R, 2) mean <w, v_y> over the singly-activated common-feature neurons, per class
    A_sub: torch.Tensor  # (T_log, R, 2) the same for the subclass features v_{y,c}, pooled over c
    F_normal: torch.Tensor  # (T_log, R) mean over normal eval samples of the own-class output (merged for fine)
    loss: torch.Tensor  # (T_log, R) cross-entropy on the eval samples (with the training labels)
    set_sizes_common: torch.Tensor  # (R, pairs) |S*(v_y)| for the pairs of both classes
    set_sizes_sub: torch.Tensor  # (R, pairs) |S*(v_{y,c})|
    net: PatchConvNet
    n_responding: torch.Tensor  # (R,) neurons (summed over the two classes' outputs / heads) firing on a clean v_y
    seconds: float
    redraws: int = 0  # initialisation blocks (output, replica) rejected by the condition of Proposition 1's event
    extra: dict = dataclasses.field(default_factory=dict)  # further logged quantities (``extra_log``)

    def reached(self, fraction: float = TRAIN_LOSS_FRACTION) -> torch.Tensor:
        """(R,) bool: the replica reached its training target, a training loss at the last step at most ``fraction``
        of its untrained value ln C (a NaN never reaches it)."""
        return self.loss[-1] <= fraction * math.log(self.net.n_outputs)

    def ratio_curve(self) -> torch.Tensor:
        """(A_sub(t) - A_sub(0)) / (A_common(t) - A_common(0)) at every logged step, per class, averaged over the
        classes where it is defined (singly-activated neurons of both kinds, and a common feature that has moved):
        (T_log, R); nan where no class qualifies."""
        per_class = (self.A_sub - self.A_sub[0]) / (self.A_common - self.A_common[0])
        per_class = torch.where(torch.isfinite(per_class), per_class, torch.nan)
        return per_class.nanmean(-1)

    def ratio_at(self, i: int = -1) -> torch.Tensor:
        """:meth:`ratio_curve` at logged index i: (R,)."""
        return self.ratio_curve()[i]

    @property
    def ratio(self) -> torch.Tensor:
        """The init-subtracted ratio at the last logged step (coarse theory: 1/k), per replica."""
        return self.ratio_at(-1)

    def early_ratio(self, t: int) -> torch.Tensor:
        """Growth of A_common over A_sub between steps 0 and t (coarse: k), or its inverse for fine ((2k-1)/k)."""
        r = self.ratio_at(int((self.steps == t).nonzero()[0, 0]))
        return 1.0 / r if self.labels == "coarse" else r

    def phase_times(self, d: int, lam: float) -> dict[str, float]:
        """First logged step with F_normal >= 1/d (end of Phase I, Def. D.1, per the eval mean) and >= ln(lambda)
        (T_{1,1}, Lemma E.2 with ln^5 d -> lambda), in the replica mean."""
        mean = self.F_normal.mean(-1)
        out = {}
        for name, level in (("T0", 1.0 / d), ("T11", math.log(lam))):
            hit = (mean >= level).nonzero()
            out[name] = float(self.steps[hit[0, 0]]) if len(hit) else float("nan")
        return out


def log_times(steps: int, n_log: int, early: int) -> list[int]:
    """Every step up to ``early``, then about ``n_log`` log-spaced steps up to ``steps``."""
    grid = set(range(early + 1)) | {int(round(t)) for t in np.geomspace(1, steps, n_log)}
    return sorted(t for t in grid if t <= steps)


def required_features(data: MultiViewPatches, labels: str) -> dict[int, list[int]]:
    """The features each output must start with a singly-activated neuron for (Proposition 1's event, on which the
    theorems hold): coarse output y its common feature v_y; fine head (y, c) v_y and its own v_{y,c}."""
    if labels == "coarse":
        return {y: [data.common(y)] for y in (0, 1)}
    return {data.fine_label(y, c): [data.common(y), data.subclass(y, c)] for y in (0, 1) for c in range(data.k)}


def init_net(model: PatchModel, data: MultiViewPatches, labels: str, replicas: int, generator: torch.Generator,
             prune: bool = True, device=None, dtype=torch.float32) -> PatchConvNet:
    """The thresholded initialisation
    (:func:`~feature_learning.models.patch_conv.init_thresholded`), conditioned on :func:`required_features`."""
    C = 2 if labels == "coarse" else data.n_subclasses
    return init_thresholded(replicas, C, model.width, data.d, sigma0=model.sigma0, tau=model.tau,
                            generator=generator, features=range(data.n_features),
                            prune_margin=model.prune_margin if prune else None,
                            require=required_features(data, labels), dtype=dtype, device=device)


def train_run(model: PatchModel, k: int, labels: str, steps: int, replicas: int, run: Run, *,
              counts: str = "exact", n_log: int = 40, early: int = 4, prune: bool = True,
              extra_log=None, tag: str = "sweep") -> TrainingRun:
    """Train one learner (coarse: 2 outputs, eq. (7); fine: 2k heads, eq. (93)) on fresh balanced batches.

    Streams (named by ``tag``, the experiment): the batches ("batches", tag, k, counts) are shared by coarse and
    fine runs at the same k; the initialisation ("init", tag, k, labels) is drawn for the unpruned width and then
    pruned, so that a pruned and an unpruned run hold the same firing neurons."""
    if labels not in LABELS:
        raise ValueError(f"labels must be one of {LABELS}, got {labels!r}")
    data = model.data(k, counts)
    device = run.device
    net = init_net(model, data, labels, replicas, run.generator("init", tag, k, labels), prune, device)
    batches = run.generator("batches", tag, k, counts)
    evalgen = run.generator("eval", tag, k, counts)
    Xe, ye, fe = data.sample(2, evalgen, replicas=replicas, device=device)
    target = ye if labels == "coarse" else fe
    feats = list(range(data.n_features))
    members = singly_activated(net.projections(feats), model.tau * model.sigma0)
    pairs = [feature_pairs(data, labels, y) for y in (0, 1)]

    def sample(step):
        X, y, fine = data.sample(model.n_per_subclass(k), batches, replicas=replicas, device=device)
        return X, (y if labels == "coarse" else fine)

    def log(step):
        F = net(Xe)
        proj = net.projections(feats)
        ce = -torch.log_softmax(F, -1).gather(-1, target.unsqueeze(-1)).squeeze(-1).mean(-1)
        F2 = coarse_outputs(F, data, labels)
        out = {"A_common": torch.stack([set_mean(proj, members, p[0]) for p in pairs], -1),
               "A_sub": torch.stack([set_mean(proj, members, p[1]) for p in pairs], -1),
               "F_normal": F2.gather(-1, ye.unsqueeze(-1)).squeeze(-1).mean(-1), "loss": ce}
        if extra_log is not None:
            out.update(extra_log(step, net))
        return out

    start = time.perf_counter()
    rule = "eq7" if labels == "coarse" else "eq93"
    history = train_bias_schedule(net, sample, steps=steps, lr=model.lr, lam=model.lam, rule=rule,
                                  log_at=log_times(steps, n_log, early), log_fn=log,
                                  description=f"{labels} k={k}")
    seconds = time.perf_counter() - start
    owners = [0, 1] if labels == "coarse" else list(range(data.n_subclasses))
    n_resp = sum(responding(net.W, net.b, data.common(o // (1 if labels == "coarse" else k)), o) for o in owners)
    return TrainingRun(k=k, labels=labels, counts=counts, steps=history["step"],
                       A_common=history["A_common"], A_sub=history["A_sub"], F_normal=history["F_normal"],
                       loss=history["loss"], set_sizes_common=set_sizes(members, pairs[0][0] + pairs[1][0]),
                       set_sizes_sub=set_sizes(members, pairs[0][1] + pairs[1][1]), net=net,
                       n_responding=n_resp, seconds=seconds, redraws=net.redraws,
                       extra={key: v for key, v in history.items()
                              if key not in ("step", "A_common", "A_sub", "F_normal", "loss")})


@dataclasses.dataclass
class Evaluation:
    normal_margin: torch.Tensor  # (R,) mean over normal test samples of F_y - F_y'
    hard_margin: torch.Tensor  # (R,)
    normal_acc: torch.Tensor  # (R,)
    hard_other: torch.Tensor  # (R,) mean F_y' on hard samples
    hard_acc: torch.Tensor  # (R, n_rho) accuracy on hard samples with distractor rho
    loss: torch.Tensor  # (R,) cross-entropy with the training labels (coarse or fine) on the normal test samples
    rhos: tuple[float, ...]
    n_samples: int  # test samples per replica (normal and hard)

    @property
    def rho_half(self) -> torch.Tensor:
        """The distractor strength at which hard accuracy falls below 1/2 (linear interpolation), per replica; NaN
        where only rho = 0 was evaluated (no grid to cross)."""
        if len(self.rhos) < 2:
            return torch.full((self.hard_acc.shape[0],), torch.nan, dtype=torch.float64)
        return level_crossing(torch.tensor(self.rhos, dtype=torch.float64), self.hard_acc, 0.5)


@torch.no_grad()
def evaluate(net: PatchConvNet, model: PatchModel, k: int, labels: str, n_test: int, rhos, generator,
             counts: str = "exact", device=None) -> Evaluation:
    """Margins and accuracies on fresh normal and hard test samples (binary task; fine heads merged)."""
    data = model.data(k, counts)
    R = net.replicas
    X, y, fine = data.sample(n_test, generator, replicas=R, device=device)
    F = net(X)
    target = y if labels == "coarse" else fine
    loss = cross_entropy(F.double(), target).mean(-1)
    F2 = coarse_outputs(F, data, labels)
    m_normal = margin(F2, y)
    Xh, yh, _ = data.sample(n_test, generator, replicas=R, hard=True, device=device)
    F2h = coarse_outputs(net(Xh), data, labels)
    m_hard = margin(F2h, yh)
    other = F2h.gather(-1, (1 - yh).unsqueeze(-1)).squeeze(-1)
    accs = []
    for rho in rhos:
        Xr, yr, _ = data.sample(n_test, generator, replicas=R, hard=True, distract=rho, device=device)
        accs.append((margin(coarse_outputs(net(Xr), data, labels), yr) > 0).double().mean(-1))
    return Evaluation(normal_margin=m_normal.mean(-1).cpu(), hard_margin=m_hard.mean(-1).cpu(),
                      normal_acc=(m_normal > 0).double().mean(-1).cpu(), hard_other=other.mean(-1).cpu(),
                      hard_acc=torch.stack(accs, -1).cpu(), loss=loss.cpu(), rhos=tuple(rhos), n_samples=y.shape[-1])


# ---- the experiments ----------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Sweep:
    runs: dict[tuple[str, int], TrainingRun]  # (labels, k) -> run
    evals: dict[tuple[str, int], Evaluation]

    def ks(self, labels: str) -> list[int]:
        return sorted(k for lab, k in self.runs if lab == labels)


def run_sweep(size: GranularitySizes, run: Run) -> Sweep:
    """Coarse and fine training at each k of the sweep (the same batches for both at a given k), each evaluated on
    fresh normal and hard test samples and on hard samples with distractors: the whole grid ``sw.rhos`` at the k
    where coarse and fine labels are compared (both trained there), rho = 0 alone at the others."""
    sw, model = size.sweep, size.model
    runs, evals = {}, {}
    for labels, ks, replicas in (("coarse", sw.coarse_ks, sw.coarse_replicas), ("fine", sw.fine_ks, sw.fine_replicas)):
        for k in ks:
            steps = sw.steps if labels == "coarse" else sw.fine_steps_per_k * k
            ends = {min(ks): sw.slope_replicas, max(ks): sw.lever_replicas} if labels == "coarse" else {}
            R = ends.get(k, replicas)
            r = train_run(model, k, labels, steps, R, run, n_log=sw.n_log, early=sw.early)
            runs[(labels, k)] = r
            rhos = sw.rhos if k in set(sw.coarse_ks) & set(sw.fine_ks) else sw.rhos[:1]
            evals[(labels, k)] = evaluate(r.net, model, k, labels, sw.n_test, rhos,
                                          run.generator("test", k, labels), device=run.device)
            r.net.workspace.clear()  # the finished run's scratch buffers (up to ~13 GB at full; no value changes)
    return Sweep(runs, evals)


def source_threshold(d: int, labels: str, c0: float) -> float:
    """The source's threshold: sqrt((4 + 2 c0) ln d) for coarse labels (appendix B.3), sqrt((2 + 2 c0) ln d) for
    fine ones (appendix F.1)."""
    return math.sqrt(((4 if labels == "coarse" else 2) + 2 * c0) * math.log(d))


def source_model(model: PatchModel, k: int, labels: str, c0: float) -> PatchModel:
    """The simulation's model with the source's threshold and bias divisor ln^5 d kept at d = model.d(k)."""
    d = model.d(k)
    return dataclasses.replace(model, tau=source_threshold(d, labels, c0), lam=math.log(d) ** 5)


def run_source_constants(size: GranularitySizes, run: Run, c0: float) -> Sweep:
    """Coarse and fine training at k = size.source.k with the source's threshold and bias divisor
    (:func:`source_model`), evaluated like the sweep (own streams) at rho = 0 (its claims read the margins)."""
    sc, sw = size.source, size.sweep
    runs, evals = {}, {}
    for labels, replicas in (("coarse", sc.coarse_replicas), ("fine", sc.fine_replicas)):
        model = source_model(size.model, sc.k, labels, c0)
        steps = sw.steps if labels == "coarse" else sw.fine_steps_per_k * sc.k
        r = train_run(model, sc.k, labels, steps, replicas, run, n_log=sw.n_log, early=sw.early, tag="source")
        runs[(labels, sc.k)] = r
        evals[(labels, sc.k)] = evaluate(r.net, model, sc.k, labels, sw.n_test, sw.rhos[:1],  # margins only
                                         run.generator("test", "source", sc.k, labels), device=run.device)
        r.net.workspace.clear()
    return Sweep(runs, evals)


@dataclasses.dataclass
class LogTime:
    runs: dict[str, TrainingRun]  # "exact", "bernoulli"
    F_class: dict[str, torch.Tensor]  # counts -> (T_log, R, 2) mean F_y on normal eval samples of class y
    slope: dict[str, torch.Tensor]  # counts -> (R,) dF/d ln t on [T/4, T] (class mean)
    C_fit: torch.Tensor  # (R, 2) exact counts: slope of e^F + F against t on [T/4, T], per class
    C_pred: torch.Tensor  # (R, 2) the finite-size constant with the responding neurons counted at the end


def run_logtime(size: GranularitySizes, run: Run) -> LogTime:
    """Theorem E.1's law F_+(t) = ln(C t + t0) under coarse labels at k = logtime.k, with exact and with Bernoulli
    patch counts; per-class F on fixed normal samples, and the constant C against its finite-size prediction."""
    lt, model = size.logtime, size.model
    runs, F_class, slope = {}, {}, {}
    for counts in ("exact", "bernoulli"):
        data = model.data(lt.k, counts)
        Xc, yc, _ = data.sample(4, run.generator("logtime_eval", counts), replicas=lt.replicas, device=run.device)

        def per_class(step, net, Xc=Xc, yc=yc):
            F = net(Xc).gather(-1, yc.unsqueeze(-1)).squeeze(-1)  # (R, N) own-class output
            return {"F_class": torch.stack([(F * (yc == y)).sum(-1) / (yc == y).sum(-1) for y in (0, 1)], -1)}

        r = train_run(model, lt.k, "coarse", lt.steps, lt.replicas, run, counts=counts, n_log=60, early=0,
                      extra_log=per_class, tag="logtime")
        runs[counts] = r
        F_class[counts] = r.extra["F_class"]
        t = r.steps.clamp_min(1).double()
        keep = (t >= lt.steps / 4) & (t <= lt.steps)
        slope[counts] = ls_slope(torch.log(t[keep]), F_class[counts].mean(-1)[keep].double())
    r = runs["exact"]
    data = model.data(lt.k)
    t = r.steps.double()
    keep = t >= lt.steps / 4
    G = torch.exp(F_class["exact"]) + F_class["exact"]  # e^F + F = C t + const
    tc = t[keep] - t[keep].mean()
    C_fit = (tc.view(-1, 1, 1) * (G[keep] - G[keep].mean(0))).sum(0) / (tc * tc).sum()
    C_pred = torch.zeros_like(C_fit)
    for y in (0, 1):
        n_common = responding(r.net.W, r.net.b, data.common(y), y).double()
        n_sub = torch.stack([responding(r.net.W, r.net.b, data.subclass(y, c), y) for c in range(lt.k)]).double()
        for i in range(lt.replicas):
            C_pred[i, y] = log_time_constant(model.lr, model.s_star, model.P, model.lam, float(n_common[i]),
                                             float(n_sub[:, i].mean()), lt.k)
    return LogTime(runs=runs, F_class=F_class, slope=slope, C_fit=C_fit, C_pred=C_pred)


@dataclasses.dataclass
class Pruning:
    max_F_gap: float  # largest |F_pruned - F_unpruned| on the eval samples over the logged steps
    max_F: float  # largest |F| for scale
    pruned_moved: float  # largest |W_T - W_0| + |b_T - b_0| over the neurons the pruning drops (0: never fired)
    kept: int  # neurons kept per output (largest over outputs and replicas)
    width: int  # neurons per output before pruning
    safe_margin: float  # the notes' rule for this run's T, N, P and neuron count


def run_pruning(size: GranularitySizes, run: Run) -> Pruning:
    """Pruned against unpruned initialisation (float64, same init and batch streams, coarse labels): the F trajectory
    and, in the unpruned run, every neuron that pruning would drop must never move."""
    pr, model = size.pruning, size.model
    data = model.data(pr.k)
    Fs, nets = {}, {}
    for prune in (True, False):
        net = init_net(model, data, "coarse", pr.replicas, run.generator("pruning", "init"), prune=prune,
                       device=run.device, dtype=torch.float64)
        W0, b0 = net.W.clone(), net.b.clone()
        batches = run.generator("pruning", "batches")
        Xe, ye, _ = data.sample(2, run.generator("pruning", "eval"), replicas=pr.replicas, dtype=torch.float64,
                                device=run.device)

        def sample(step, batches=batches):
            X, y, _ = data.sample(model.n_per_subclass(pr.k), batches, replicas=pr.replicas, dtype=torch.float64,
                                  device=run.device)
            return X, y

        hist = train_bias_schedule(net, sample, steps=pr.steps, lr=model.lr, lam=model.lam, rule="eq7",
                                   log_at=log_times(pr.steps, 20, 0),
                                   log_fn=lambda step, net=net, Xe=Xe: {"F": net(Xe)})
        Fs[prune], nets[prune] = hist["F"], (net, W0, b0)
    net, W0, b0 = nets[False]
    idx = torch.as_tensor(range(data.n_features), device=W0.device)
    dropped = W0[..., idx].max(-1).values < (model.tau - model.prune_margin) * model.sigma0
    moved = ((net.W - W0).abs().amax(-1) + (net.b - b0).abs())[dropped]
    return Pruning(max_F_gap=float((Fs[True] - Fs[False]).abs().max()), max_F=float(Fs[False].abs().max()),
                   pruned_moved=float(moved.max()) if moved.numel() else 0.0,
                   kept=int((~dropped).sum(-1).max()), width=model.width,
                   safe_margin=model.safe_margin(pr.steps, 2 * model.width))


@dataclasses.dataclass
class LuckyCount:
    taus: tuple[float, ...]
    measured: np.ndarray  # (n_tau,) mean |S*(v)| per (output, feature) over trials
    se: np.ndarray
    predicted: np.ndarray  # m Q(tau) (1 - Q(tau))^(n_f - 1)
    width: np.ndarray  # m per tau (n_lucky / Q(tau))


def run_lucky_count(size: GranularitySizes, run: Run) -> LuckyCount:
    """Monte Carlo of the singly-activated set sizes at initialisation (Proposition 1 at finite size), with the
    chapter's width rule m = n_lucky / Q(tau), against m Q(tau)(1 - Q(tau))^(n_f - 1)."""
    lc = size.lucky
    measured, se, predicted, widths = [], [], [], []
    for tau in lc.taus:
        m = width_for_lucky(size.model.n_lucky, tau)
        W = torch.randn(lc.trials, m, lc.n_features, generator=run.generator("lucky", tau), dtype=torch.float64)
        counts = singly_activated(W, tau).sum(1).double()  # (trials, n_features)
        per_trial = counts.mean(-1)
        measured.append(float(per_trial.mean()))
        se.append(float(per_trial.std() / math.sqrt(lc.trials)))
        predicted.append(expected_singly_lucky(m, tau, lc.n_features))
        widths.append(m)
    return LuckyCount(taus=lc.taus, measured=np.array(measured), se=np.array(se), predicted=np.array(predicted),
                      width=np.array(widths))


def example_samples(model: PatchModel, k: int, run: Run) -> dict[str, torch.Tensor]:
    """One normal and one hard sample of subclass (+, 0), as patch x feature matrices (for the data figure)."""
    data = model.data(k)
    gen = run.generator("example", k)
    X, _, _ = data.sample(1, gen)
    Xh, _, _ = data.sample(1, gen, hard=True)
    return {"normal": X[0, 0, :, : data.n_features], "hard": Xh[0, 0, :, : data.n_features]}


# ---- a synthetic label hierarchy (seed notes, section 4.8) --------------------------------------------------------
HIERARCHY_RUNS = ("coarse (baseline)", "manual leaves", "over-split leaves", "random sub-IDs",
                  "k-means per superclass", "k-means global", "coarse, few per leaf", "manual, few per leaf",
                  "leaf pairs", "coarse, wider", "manual leaves, wider")
CHECKPOINTED = "manual leaves"  # the label function evaluated at the intermediate checkpoints too (Table 6)


def hierarchy_tree(model: PatchModel, hs: HierarchySizes):
    tree = HierarchicalPatches(branching=hs.branching, P=model.P, s_per_level=(model.s_star, model.s_star),
                               sigma_zeta=1.0, n_nuisance=hs.n_nuisance, s_nuisance=hs.s_nuisance,
                               gamma=model.gamma, s_f=model.s_f, iota=model.iota)
    return dataclasses.replace(tree, sigma_zeta=model.noise / math.sqrt(tree.d))


def pretraining_labels(name: str, tree, leaf: torch.Tensor, X: torch.Tensor, hs: HierarchySizes,
                       generator: torch.Generator, seed: int) -> torch.Tensor:
    """The pretraining labels of one training set (n,) for the label function ``name``."""
    sup = labels_at_level(tree, leaf, 0)
    b = tree.n_leaves // tree.branching[0]
    if name.startswith("coarse"):
        return sup
    if name.startswith("manual"):
        return leaf
    if name == "leaf pairs":  # an intermediate level: each superclass's leaves merged two by two
        return leaf // 2
    if name == "over-split leaves":
        return oversplit_labels(leaf, hs.oversplit, generator)
    if name == "random sub-IDs":
        return random_sublabels(sup, b, generator)
    emb = bag_of_patches(X, hs.embed_noise, generator)
    if name == "k-means per superclass":
        return kmeans_labels(emb, b, seed, groups=sup)
    if name == "k-means global":
        return kmeans_labels(emb, tree.n_leaves, seed)
    raise ValueError(f"unknown label function {name!r}")


@dataclasses.dataclass
class HierarchyRun:
    name: str
    G: int
    hard_acc: torch.Tensor  # (R, n_rho) after merging heads by majority superclass
    normal_acc: torch.Tensor  # (R,)
    hard_margin: torch.Tensor  # (R,)
    purity: torch.Tensor  # (R,) fraction of training images whose label's majority superclass is their own
    leaf_purity: torch.Tensor  # (R,) fraction in the majority leaf of their label (1 for labels nested in leaves)
    train_loss: torch.Tensor  # (R,) superclass cross-entropy of the merged heads on the replica's training images
    n_super: int  # K0, the superclasses
    checkpoints: dict[int, torch.Tensor] = dataclasses.field(default_factory=dict)  # step -> (R, n_rho) hard_acc
    net: PatchConvNet | None = None  # the trained network (its hidden layer is the cross-data-set probe's encoder)

    def reached(self, fraction: float = TRAIN_LOSS_FRACTION) -> torch.Tensor:
        """(R,) bool: the replica reached the hierarchy's training target: the superclass cross-entropy of its merged
        heads on its own training images (the task the transfer reads; every label function is a refinement of it
        but global k-means) at most ``fraction`` of its untrained value ln K0."""
        return self.train_loss <= fraction * math.log(self.n_super)

    def rho_half(self, rhos, step: int | None = None) -> torch.Tensor:
        """rho_1/2 per replica after training, or at the checkpoint ``step``."""
        acc = self.hard_acc if step is None else self.checkpoints[step]
        return level_crossing(torch.tensor(rhos, dtype=torch.float64), acc, 0.5)


def checkpoint_steps(hs: HierarchySizes) -> tuple[int, ...]:
    """The intermediate checkpoints (fractions ``hs.checkpoints`` of the training steps: Table 6's 50 and 70 of 90
    epochs)."""
    return tuple(int(round(f * hs.steps)) for f in hs.checkpoints)


def run_hierarchy(size: GranularitySizes, run: Run) -> dict[str, HierarchyRun]:
    """Every label function of ``HIERARCHY_RUNS`` on independent training sets per replica (the same images for
    every label function at a given sample size), trained for ``steps`` minibatch steps (64 images drawn with
    replacement) with eq. (7) (two classes) or eq. (93) (more), merged to the superclasses and tested on hard
    images with distractors."""
    hs, model = size.hierarchy, size.model
    tree = hierarchy_tree(model, hs)
    R, K0 = hs.replicas, hs.branching[0]
    feats = list(range(tree.n_node_features + tree.n_nuisance))
    out = {}
    sets = {}
    for per_leaf in (hs.per_leaf, hs.few_per_leaf):
        leaves = torch.arange(tree.n_leaves).repeat_interleave(per_leaf)
        draws = [tree.sample(len(leaves), run.generator("hierarchy_data", per_leaf, r), leaves=leaves)
                 for r in range(R)]
        sets[per_leaf] = (torch.stack([x for x, _, _ in draws]), leaves)
    test_gen = run.generator("hierarchy_test")
    n_test = hs.n_test * tree.n_leaves
    tests = [tree.sample(n_test, test_gen, hard=True, distract=rho) for rho in hs.rhos]
    normal_X, normal_leaf, _ = tree.sample(n_test, test_gen)
    for name in HIERARCHY_RUNS:
        per_leaf = hs.few_per_leaf if "few" in name else hs.per_leaf
        X, leaves = sets[per_leaf]
        labels = torch.stack([pretraining_labels(name, tree, leaves, X[r], hs,
                                                 run.generator("hierarchy_labels", name, r), seed=run.seed + r)
                              for r in range(R)])  # (R, n)
        G = int(labels.max()) + 1
        sup = tree.ancestor(leaves, 0)
        # majority superclass and leaf of each label, per replica
        head_sup = torch.zeros(R, G, dtype=torch.long)
        purity, leaf_purity = torch.zeros(R), torch.zeros(R)
        for r in range(R):
            counts = torch.zeros(G, K0).index_put_((labels[r], sup), torch.ones(len(sup)), accumulate=True)
            head_sup[r] = counts.argmax(-1)
            purity[r] = counts.max(-1).values.sum() / len(sup)
            lc = torch.zeros(G, tree.n_leaves).index_put_((labels[r], leaves), torch.ones(len(sup)), accumulate=True)
            leaf_purity[r] = lc.max(-1).values.sum() / len(sup)
        width = width_for_lucky(model.n_lucky * (hs.wide if "wider" in name else 1.0), model.tau)
        net = init_thresholded(R, G, width, tree.d, sigma0=model.sigma0, tau=model.tau,
                               generator=run.generator("hierarchy_init", name), features=feats,
                               prune_margin=model.prune_margin, device=run.device)
        batches = run.generator("hierarchy_batches", name)
        Xd = X.to(run.device)

        def sample(step, Xd=Xd, labels=labels, batches=batches):
            idx = torch.randint(0, Xd.shape[1], (R, model.batch), generator=batches)
            Xb = Xd.gather(1, idx.view(R, -1, 1, 1).expand(-1, -1, *Xd.shape[2:]).to(Xd.device))
            return Xb, labels.gather(1, idx).to(Xd.device)

        def merged(Xt, net=net, head_sup=head_sup):
            F = net(Xt.unsqueeze(0).expand(R, *Xt.shape).to(run.device)).cpu()  # (R, n, G)
            return torch.stack([merge_heads(F[r], head_sup[r], K0) for r in range(R)])

        @torch.no_grad()
        def hard_accs(step=None, merged=merged):
            return {"hard_acc": torch.stack([(merged(Xt).argmax(-1) == tree.ancestor(lt, 0)).double().mean(-1)
                                             for Xt, lt, _ in tests], -1)}

        history = train_bias_schedule(net, sample, steps=hs.steps, lr=hs.lr, lam=model.lam,
                                      rule="eq7" if G == 2 else "eq93", description=name,
                                      log_at=checkpoint_steps(hs) if name == CHECKPOINTED else (),
                                      log_fn=hard_accs if name == CHECKPOINTED else None)
        checkpoints = ({int(t): a for t, a in zip(history["step"][:-1], history["hard_acc"][:-1], strict=True)}
                       if name == CHECKPOINTED else {})
        with torch.no_grad():
            accs = hard_accs()["hard_acc"]
            y0 = tree.ancestor(tests[0][1], 0).unsqueeze(0).expand(R, -1)
            hard_m = margin(merged(tests[0][0]), y0).mean(-1)
            normal_acc = (merged(normal_X).argmax(-1) == tree.ancestor(normal_leaf, 0)).double().mean(-1)
            F_train = net(Xd).cpu()  # (R, n, G): each replica on its own training images
            train_loss = torch.stack([cross_entropy(merge_heads(F_train[r], head_sup[r], K0).double(), sup).mean()
                                      for r in range(R)])
        out[name] = HierarchyRun(name=name, G=G, hard_acc=accs, normal_acc=normal_acc,
                                 hard_margin=hard_m, purity=purity, leaf_purity=leaf_purity, train_loss=train_loss,
                                 n_super=K0, checkpoints=checkpoints, net=net)
    return out



# ---- cross-data-set transfer: a linear probe on the frozen hidden layer (Sec. 4.4, Tables 3, 4, 10, 11) ----------
CROSS_ENCODERS = ("manual leaves", "leaf pairs", "coarse (baseline)")  # finest to coarsest pretraining labels


def hidden_layer(net: PatchConvNet, X: torch.Tensor, chunk: int = 64) -> torch.Tensor:
    """The frozen hidden layer h_r(X) = sum_p relu(<w_r, x_p> + b_r) of every neuron of every output group,
    concatenated, for images X (n, P, d) shared by the replicas: (R, n, C m), float64."""
    R = net.replicas
    out = []
    with torch.no_grad():
        for lo in range(0, X.shape[0], chunk):
            Xc = X[lo: lo + chunk].to(net.W.device, net.W.dtype)
            out.append(net.preactivation(Xc.unsqueeze(0).expand(R, *Xc.shape)).relu_().sum(2).flatten(-2).cpu())
    return torch.cat(out, 1).double()


def ridge_probe(H: torch.Tensor, y: torch.Tensor, H_test: torch.Tensor, n_classes: int, lam: float) -> torch.Tensor:
    """Predicted classes (R, n_test) of a ridge least-squares probe on one-hot targets, fitted per replica on unit-norm
    representations H (R, n, D) (the final LayerNorm of the source's ViT plays this part: the readout sees the
    encoder's responses relative to each other, not its overall scale), in the dual form (n x n)."""
    def unit(A):
        return A / A.norm(dim=-1, keepdim=True).clamp_min(1e-300)

    H, H_test = unit(H), unit(H_test)
    Y = torch.nn.functional.one_hot(y, n_classes).double().expand(H.shape[0], -1, -1)
    K = H @ H.transpose(-1, -2)
    alpha = torch.linalg.solve(K + lam * torch.eye(K.shape[-1], dtype=K.dtype), Y)
    return (H_test @ H.transpose(-1, -2) @ alpha).argmax(-1)


@dataclasses.dataclass
class CrossProbe:
    n_classes: int  # target classes: a leaf's position within its superclass
    n_test: int  # target test images
    trained: dict[str, torch.Tensor]  # label function -> (R,) probe accuracy of its trained network
    untrained: dict[str, torch.Tensor]  # the same networks at their initialisation
    lams: tuple[float, ...]  # further ridge penalties, for the display
    at_lams: dict[str, torch.Tensor]  # label function -> (n_lam, R) accuracy of the trained network at ``lams``


def run_cross_probe(size: GranularitySizes, run: Run, hier: dict[str, HierarchyRun],
                    lams: tuple[float, ...] = (1e-4, 1.0)) -> CrossProbe:
    """Cross-data-set transfer on the synthetic hierarchy: the hidden layers of the hierarchy's networks, frozen
    after pretraining on ``CROSS_ENCODERS``' labels, are probed linearly on a target task whose classes cut across
    the pretraining classes: class j holds leaf j of every superclass (a union of leaves, as ImageNet-1k's classes
    are mostly ImageNet-21k leaves, and of no superclass or leaf pair). Fresh target images, ``probe_per_leaf`` per
    leaf to fit the probe and ``probe_test`` to test it; the same probe on the same networks at their initialisation
    (re-drawn from the hierarchy's init streams) is the untrained null."""
    hs, model = size.hierarchy, size.model
    tree = hierarchy_tree(model, hs)
    b = tree.n_leaves // tree.branching[0]
    feats = list(range(tree.n_node_features + tree.n_nuisance))

    def target(n_per_leaf, gen):
        leaves = torch.arange(tree.n_leaves).repeat_interleave(n_per_leaf)
        X, leaf, _ = tree.sample(len(leaves), gen, leaves=leaves)
        return X, leaf % b

    X, y = target(hs.probe_per_leaf, run.generator("cross_probe", "fit"))
    Xt, yt = target(hs.probe_test, run.generator("cross_probe", "test"))
    trained, untrained, at_lams = {}, {}, {}
    for name in CROSS_ENCODERS:
        net = hier[name].net
        fresh = init_thresholded(hs.replicas, net.n_outputs, width_for_lucky(model.n_lucky, model.tau), tree.d,
                                 sigma0=model.sigma0, tau=model.tau, generator=run.generator("hierarchy_init", name),
                                 features=feats, prune_margin=model.prune_margin, device=run.device)
        if fresh.W.shape != net.W.shape:
            raise RuntimeError(f"the re-drawn initialisation of {name!r} is not the trained network's")
        for store, encoder in ((trained, net), (untrained, fresh)):
            H, Ht = hidden_layer(encoder, X), hidden_layer(encoder, Xt)
            grid = (hs.probe_ridge,) + (lams if encoder is net else ())
            accs = torch.stack([(ridge_probe(H, y, Ht, b, lam) == yt).double().mean(-1) for lam in grid])
            store[name] = accs[0]
            if encoder is net:
                at_lams[name] = accs[1:]
    return CrossProbe(n_classes=b, n_test=len(yt), trained=trained, untrained=untrained, lams=lams, at_lams=at_lams)

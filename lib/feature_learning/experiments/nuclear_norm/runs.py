"""The four experiments of the chapter "Rank regularisation for domain generalisation", in notebook order."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math

import numpy as np
import torch

from feature_learning.book.claims import trained_runs
from feature_learning.book.profiles import Run
from feature_learning.data.digits import load_digits
from feature_learning.data.domain_shift import (
    ClassCodeDomains,
    reweighting_features,
    reweighting_sums,
    spurious_2d,
    with_environment_block,
)
from feature_learning.experiments.nuclear_norm.sizes import (
    DTYPE,
    AnalogueSizes,
    FiniteSampleSizes,
    NuclearSizes,
    PopulationSizes,
    ToySizes,
)
from feature_learning.measure.metrics import argmax_accuracy, sign_accuracy
from feature_learning.measure.rank import nuclear_norm, stable_rank
from feature_learning.measure.statistics import Estimate, Null, mean_se, paired_difference, strictly_monotone_rate
from feature_learning.models.two_layer import init_torch_default
from feature_learning.theory import nuclear_norm as theory
from feature_learning.training.convex import keep_top_k, logistic_ridge_newton, soft_threshold
from feature_learning.training.loop import OptimConfig, train

# -- the training target ------------------------------------------------------------------------------------------
SETTLE = 0.01  # fixed in advance, before any run read it: 1% of the objective at initialisation


def reached_target(start, late, end) -> torch.Tensor:
    """Whether a trained model reached its training target, elementwise over replicas: its training objective (fit
    plus penalty, on the whole training sample) at the end is below its value at initialisation by at least ``SETTLE``
    of that value (it trained), and did not rise by ``SETTLE`` of it or more from the second last tenth of the steps
    (``late``) to the last (``end``; it is not oscillating or diverging, it may still be falling). A model that never
    trained fails the first; one whose step is too large for its penalty fails one or the other. Every claim on a
    trained model counts its replicas that reached it (``trained=``)."""
    start, late, end = (torch.as_tensor(v, dtype=DTYPE) for v in (start, late, end))
    return ((start - end) >= SETTLE * start) & ((end - late) < SETTLE * start)


def log_steps(steps: int) -> tuple[int, ...]:
    """The steps at which a run records its objective: the start, and every ``steps // 50``-th step of the last
    fifth (the end is recorded after the last step)."""
    return (0, *range(int(0.8 * steps), steps, max(1, steps // 50)))


def target_reached(steps, values, total: int) -> torch.Tensor:
    """:func:`reached_target` from the objectives ``values`` recorded at ``steps`` (:func:`log_steps` and the end) of a
    run of ``total`` steps: the start, the mean over the second last tenth of the steps and the mean over the last
    tenth (one step's reading of a mini-batch trainer moves by about 1% of the start). A run with no step compares
    its start with itself."""
    steps = torch.as_tensor(list(steps))
    values = torch.stack([torch.as_tensor(v, dtype=DTYPE) for v in values])
    late_from, end_from = int(0.8 * total), int(0.9 * total)
    late = (steps > 0) & (steps >= late_from) & (steps < end_from)
    end = steps >= end_from
    start = values[0]
    return reached_target(start, values[late].mean(0) if late.any() else start,
                          values[end].mean(0) if end.any() else start)


# -- Experiment 1: the population optima -----------------------------------------------------------------------------
@dataclasses.dataclass
class BlockOptimum:
    lam: float
    alpha: float
    beta: float
    id_accuracy: float
    ood_accuracy: float

    @property
    def ratio(self) -> float:
        return self.alpha / self.beta


@dataclasses.dataclass
class SweepPoint:
    gap: int  # d - r
    alpha: float
    beta: float
    ood_accuracy: float
    clt: float  # the normal approximation of the same accuracy


@dataclasses.dataclass
class Population:
    sizes: PopulationSizes
    optima: list[BlockOptimum]
    full_w: torch.Tensor  # (d,) the d-dimensional ERM-l2 optimum at full_lambda
    full_block: BlockOptimum  # the two-parameter optimum on the same sample
    support_losses: dict[tuple[int, ...], float]  # ERM-rank objective of every support of size <= r (small model)
    rank_w: torch.Tensor  # (d,) ERM-rank (B = r) of the large model, trained by IHT on the full_samples draws
    rank_ood_accuracy: float  # its OOD accuracy on as many OOD draws
    sweep: list[SweepPoint]
    rank_reached: bool = False  # the IHT run reached its training target (:func:`reached_target`)

    def within_block_spread(self) -> float:
        """Largest |w_j - block mean| of the d-dimensional optimum over the gap alpha - beta of its block means."""
        r = self.sizes.r
        w_r, w_u = self.full_w[:r], self.full_w[r:]
        spread = max(float((w_r - w_r.mean()).abs().max()), float((w_u - w_u.mean()).abs().max()))
        return spread / float(w_r.mean() - w_u.mean())

    def block_means_gap(self) -> float:
        """Largest relative difference between the d-dimensional optimum's block means and (alpha, beta)."""
        r = self.sizes.r
        return max(abs(float(self.full_w[:r].mean()) / self.full_block.alpha - 1),
                   abs(float(self.full_w[r:].mean()) / self.full_block.beta - 1))

    def best_supports(self) -> dict[int, tuple[int, ...]]:
        """The support of least ERM-rank objective for each budget B."""
        out = {}
        for support, loss in self.support_losses.items():
            if len(support) not in out or loss < self.support_losses[out[len(support)]]:
                out[len(support)] = support
        return dict(sorted(out.items()))

    def best_supports_text(self) -> str:
        """:meth:`best_supports` as a reader reads it: "B=1: {0}; B=2: {0, 1}; ..." (coordinates from 0)."""
        return "; ".join(f"B={budget}: {{{', '.join(map(str, support))}}}"
                         for budget, support in self.best_supports().items())

    @property
    def rank_support_in_R(self) -> float:
        """Share of the ERM-rank weights' support that lies in R (the invariant features)."""
        support = self.rank_w != 0
        return float(support[: self.sizes.r].sum() / support.sum())


def block_optimum(s_r, s_u, ood_r, ood_u, r: int, d: int, lam: float) -> BlockOptimum:
    """The two-parameter ERM-l2 problem (E.10) on sampled block sums, and the ID / OOD accuracy of its optimum."""
    penalty = torch.tensor([lam * r, lam * (d - r)], dtype=DTYPE)
    a, b = logistic_ridge_newton(torch.stack([s_r, s_u], 1), penalty).tolist()
    # margins y <z, w>: y = +1, and a tie counts as correct (eq. (E.42))
    return BlockOptimum(lam, a, b, float(sign_accuracy(a * s_r + b * s_u, 1, ties=1.0)),
                        float(sign_accuracy(a * ood_r + b * ood_u, 1, ties=1.0)))


def full_optimum(z: torch.Tensor, lam: float, iterations: int = 500) -> torch.Tensor:
    """The d-dimensional ERM-l2 optimum on the rows of z (margins), by L-BFGS in float64."""
    w = torch.zeros(z.shape[1], dtype=DTYPE, requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1, max_iter=iterations, tolerance_grad=1e-12, tolerance_change=1e-15,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.softplus(-(z @ w)).mean() + 0.5 * lam * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach()


def population(size: NuclearSizes, run: Run) -> Population:
    """Sec. 6.4's model at infinite data (Lemma 6.1, Prop. 6.3): the ERM-l2 optimum (alpha, beta) from the
    two-parameter reduction (E.10) on a Monte-Carlo sample of the block sums, the full d-dimensional optimum, the
    ERM-rank optimum by exhaustive search over supports, and ID/OOD accuracies against d - r."""
    p = size.population
    g = run.generator("population")
    s_r, s_u = reweighting_sums(p.samples, p.r, p.d, p.gamma, g)
    ood_r, ood_u = reweighting_sums(p.samples, p.r, p.d, -p.gamma, run.generator("population_ood"))
    optima = [block_optimum(s_r, s_u, ood_r, ood_u, p.r, p.d, lam) for lam in p.lambdas]
    z = reweighting_features(p.full_samples, p.r, p.d, p.gamma, run.generator("population_full"))
    full_w = full_optimum(z, p.full_lambda)
    full_block = block_optimum(z[:, :p.r].sum(1), z[:, p.r:].sum(1), ood_r, ood_u, p.r, p.d, p.full_lambda)
    # Lemma 6.2 by exhaustive search: every support of size B <= r of the small model, weights fitted on it
    zs = reweighting_features(p.support_samples, p.support_r, p.support_d, p.gamma, run.generator("supports"))
    losses = {}
    for budget in range(1, p.support_r + 1):
        for support in itertools.combinations(range(p.support_d), budget):
            penalty = torch.full((budget,), p.support_lambda, dtype=DTYPE)
            w = logistic_ridge_newton(zs[:, support], penalty)
            losses[support] = float(torch.nn.functional.softplus(-(zs[:, support] @ w)).mean()
                                    + 0.5 * p.support_lambda * (w * w).sum())
    # ERM-rank with B = r on the large model, trained (IHT from a constant start, the l2 term of lambdas[0] kept so
    # that the minimum is attained), not assumed to sit on R: where its weights land is what Lemma 6.2 claims
    w_rank = torch.full((p.d,), 1e-3, dtype=DTYPE)
    logged, objective = [0], [logistic_objective(z, w_rank, l2=p.lambdas[0])]
    for step in range(1, p.rank_steps + 1):
        w_rank = keep_top_k(w_rank - 0.5 * (logistic_grad(z, w_rank) + p.lambdas[0] * w_rank), p.r)
        if step in log_steps(p.rank_steps) or step == p.rank_steps:
            logged.append(step)
            objective.append(logistic_objective(z, w_rank, l2=p.lambdas[0]))
    z_ood = reweighting_features(p.full_samples, p.r, p.d, -p.gamma, run.generator("population_full_ood"))
    rank_ood = float(sign_accuracy(z_ood @ w_rank, 1, ties=1.0))
    sweep = []
    gs = run.generator("sweep")
    sweep_r = torch.rand(p.samples, p.sweep_r, generator=gs, dtype=DTYPE).sum(1)
    sweep_ood_r = torch.rand(p.samples, p.sweep_r, generator=gs, dtype=DTYPE).sum(1)
    for gap in p.sweep_gaps:
        _, s_gap = reweighting_sums(p.samples, 1, gap + 1, p.gamma, run.generator("sweep_u", gap))
        _, o_gap = reweighting_sums(p.samples, 1, gap + 1, -p.gamma, run.generator("sweep_ood", gap))
        opt = block_optimum(sweep_r, s_gap, sweep_ood_r, o_gap, p.sweep_r, p.sweep_r + gap, p.sweep_lambda)
        sweep.append(SweepPoint(gap, opt.alpha, opt.beta, opt.ood_accuracy,
                                theory.clt_accuracy(opt.alpha, opt.beta, p.sweep_r, p.sweep_r + gap, -p.gamma)))
    return Population(p, optima, full_w, full_block, losses, w_rank, rank_ood, sweep,
                      bool(target_reached(logged, objective, p.rank_steps)))


# -- Experiment 2: finite samples ------------------------------------------------------------------------------------
@dataclasses.dataclass
class Method:
    name: str
    setting: str
    w: torch.Tensor  # (d,) learned weights
    id_accuracy: float
    ood_accuracy: float
    stable_rank: float  # of the OOD batch feature matrix Z diag(w)
    lam: float = float("nan")
    batch: int = 0
    reached: bool = False  # reached its training target (:func:`reached_target`)


@dataclasses.dataclass
class FiniteSample:
    sizes: FiniteSampleSizes
    methods: list[Method]

    def block_means(self, m: Method) -> tuple[float, float]:
        r = self.sizes.r
        return float(m.w[:r].mean()), float(m.w[r:].mean())

    def get(self, name: str, lam: float | None = None, batch: int | None = None) -> Method:
        for m in self.methods:
            if m.name == name and (lam is None or m.lam == lam) and (batch is None or m.batch == batch):
                return m
        raise KeyError((name, lam, batch))

    def nu(self, batch: int) -> list[Method]:
        return [m for m in self.methods if m.name == "ERM-NU" and m.batch == batch]

    @staticmethod
    def trained(*methods: Method) -> tuple[int, int]:
        """(methods that reached their training target, methods): the ``trained=`` of a claim that reads them."""
        return trained_runs(*(bool(m.reached) for m in methods))


def logistic_objective(z: torch.Tensor, w: torch.Tensor, l2: float = 0.0, l1: float = 0.0) -> torch.Tensor:
    """Mean ln(1 + exp(-z w)) plus (l2 / 2) ||w||^2 + l1 ||w||_1, for w of shape (..., d) and z (n, d)."""
    return (torch.nn.functional.softplus(-(w @ z.T)).mean(-1) + 0.5 * l2 * (w * w).sum(-1)
            + l1 * w.abs().sum(-1))


def nu_penalty(z: torch.Tensor, w: torch.Tensor, batch: int) -> torch.Tensor:
    """The ERM-NU penalty ||Z_B diag(w)||_* / sqrt(B) averaged over the disjoint batches of ``batch`` rows of z (the
    rest dropped): its value on the whole sample, for w (..., d)."""
    chunks = z[: z.shape[0] // batch * batch].reshape(-1, batch, z.shape[1])
    feats = chunks.to(torch.float32) * w[..., None, None, :].to(torch.float32)
    return nuclear_norm(feats).mean(-1).to(DTYPE) / math.sqrt(batch)


def logistic_grad(z: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Gradient of mean ln(1 + exp(-z w)) in w for w of shape (..., d) and z (n, d)."""
    p = torch.sigmoid(-(w @ z.T))  # (..., n)
    return -(p @ z) / z.shape[0]


def finite_sample(size: NuclearSizes, run: Run) -> FiniteSample:
    """The re-weighting model on n samples (Sec. 6.4): ERM-l2, ERM-l1, IHT (ERM-rank, ||w||_0 <= B_rank) and ERM-NU
    (eq. 6.2 with the nuclear norm of a mini-batch's feature matrix) with a batch larger and smaller than d."""
    f = size.finite
    z = reweighting_features(f.n, f.r, f.d, f.gamma, run.generator("finite_train"))
    z_id = reweighting_features(f.test, f.r, f.d, f.gamma, run.generator("finite_id"))
    z_ood = reweighting_features(f.test, f.r, f.d, -f.gamma, run.generator("finite_ood"))
    z_rank = z_ood[: f.rank_batch]

    def method(name, setting, trained, lam=float("nan"), batch=0):
        w, reached = trained
        w = w.detach()
        return Method(name, setting, w, float(sign_accuracy(z_id @ w, 1, ties=1.0)),  # z carries y: margins
                      float(sign_accuracy(z_ood @ w, 1, ties=1.0)), float(stable_rank(z_rank * w)), lam, batch,
                      bool(reached))

    def gd(step_fn, objective):
        w = torch.full((f.d,), f.init, dtype=DTYPE)
        logged, values = [0], [objective(w)]
        for step in range(1, f.steps + 1):
            w = step_fn(w)
            if step in log_steps(f.steps) or step == f.steps:
                logged.append(step)
                values.append(objective(w))
        return w, target_reached(logged, values, f.steps)

    out = [method("ERM-l2", f"lambda={f.l2_lambda}", gd(lambda w: w - f.lr * (logistic_grad(z, w) + f.l2_lambda * w),
                                                        lambda w: logistic_objective(z, w, l2=f.l2_lambda)),
                  f.l2_lambda)]
    for lam in f.l1_lambdas:
        out.append(method("ERM-l1", f"lambda={lam}, proximal GD",
                          gd(lambda w, lam=lam: soft_threshold(w - f.lr * logistic_grad(z, w), f.lr * lam),
                             lambda w, lam=lam: logistic_objective(z, w, l1=lam)), lam))
    for budget in f.iht_budgets:
        out.append(method("IHT", f"B_rank={budget}",
                          gd(lambda w, b=budget: keep_top_k(w - f.lr * logistic_grad(z, w), b),
                             lambda w: logistic_objective(z, w)), batch=budget))
    for batch, lambdas in ((f.nu_batch, f.nu_lambdas), (f.nu_small_batch, f.nu_small_lambdas)):
        ws, settled = train_nu_linear(z, lambdas, batch, f, run.generator("finite_nu", batch))
        out += [method("ERM-NU", f"lambda={lam}, batch {batch}", (w, ok), lam, batch)
                for lam, w, ok in zip(lambdas, ws, settled, strict=True)]
    return FiniteSample(f, out)


def train_nu_linear(z: torch.Tensor, lambdas, batch: int, f: FiniteSampleSizes,
                    generator: torch.Generator) -> torch.Tensor:
    """ERM-NU on the linear model: mean logistic loss of a mini-batch plus lambda ||Z_B diag(w)||_* / sqrt(B) (the
    batch feature matrix Phi(X) = Z_B diag(w); row signs y do not change its singular values), SGD with lr
    ``f.lr`` on the schedule ``f.nu_schedule`` from w = ``f.init``; the lambdas train as replicas on the same batches.
    Returns w (L, d) and whether each replica reached its training target (L,), the objective measured on the whole
    sample (:func:`nu_penalty`)."""
    lam = torch.tensor(lambdas, dtype=DTYPE)[:, None]
    w = torch.full((len(lambdas), f.d), f.init, dtype=DTYPE, requires_grad=True)
    scale = 1 / math.sqrt(batch)

    def loss(step):
        zb = z[torch.randint(0, z.shape[0], (batch,), generator=generator)]
        fit = torch.nn.functional.softplus(-(w @ zb.T)).mean(-1)
        penalty = nuclear_norm(zb.to(torch.float32) * w[:, None, :].to(torch.float32)).to(DTYPE) * scale
        return (fit + lam[:, 0] * penalty).sum()

    def objective(step):
        with torch.no_grad():
            return {"objective": logistic_objective(z, w) + lam[:, 0] * nu_penalty(z, w, batch)}

    history = train([w], loss, OptimConfig(steps=f.nu_steps, lr=f.lr, optimizer="gd", warmup=0,
                                           schedule=f.nu_schedule),
                    log_at=log_steps(f.nu_steps), log_fn=objective, progress=False)
    return w.detach(), target_reached(history["step"], history["objective"], f.nu_steps)


# -- Experiment 3: the 2-D toy ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class ToyRun:
    name: str
    slopes: torch.Tensor  # (seeds,) w2/w1 of the effective classifier A^T v
    first: torch.Tensor  # (seeds,) w1
    id_accuracy: torch.Tensor  # (seeds,) on the test sample
    ood_accuracy: torch.Tensor
    id_formula: torch.Tensor  # (seeds,) theory.toy_2d_accuracies at the learned slope
    ood_formula: torch.Tensor
    sigma2: torch.Tensor  # (seeds,) smaller singular value of A X over the larger (rank of the features)
    reached: torch.Tensor  # (seeds,) bool: reached its training target (:func:`reached_target`)


@dataclasses.dataclass
class Toy:
    sizes: ToySizes
    runs: list[ToyRun]

    def get(self, name: str) -> ToyRun:
        return next(r for r in self.runs if r.name == name)

    def trained(self, *names: str) -> tuple[int, int]:
        """(runs of the methods ``names``, default all, that reached their training target, runs)."""
        runs = [self.get(n) for n in names] if names else self.runs
        return trained_runs(*(r.reached for r in runs))

    def max_formula_gap(self) -> float:
        return max(float(torch.maximum((r.id_accuracy - r.id_formula).abs(), (r.ood_accuracy - r.ood_formula).abs())
                         .max()) for r in self.runs)


def toy_2d(size: NuclearSizes, run: Run) -> Toy:
    """Sec. 6.3.1 as specified: Phi(x) = A x (2 x 2) and a linear head v, no bias, full-batch GD from A = I and a
    small random v; ERM, ERM-NU (lambda ||A X||_* / sqrt(n)), ERM with weight decay on A and v, and both."""
    t = size.toy
    methods = {"ERM": (0.0, 0.0), "ERM-NU": (t.nu_lambda, 0.0), "ERM-l2": (0.0, t.weight_decay),
               "ERM-l2 + NU": (t.nu_lambda, t.weight_decay)}
    results = {name: [] for name in methods}
    for seed in range(t.seeds):
        x, y = spurious_2d(t.n, 0.7, run.generator("toy_train", seed))
        x_id, y_id = spurious_2d(t.test, 0.7, run.generator("toy_id", seed))
        x_ood, y_ood = spurious_2d(t.test, 0.3, run.generator("toy_ood", seed))
        v0 = 0.1 * torch.randn(2, generator=run.generator("toy_init", seed), dtype=DTYPE)
        for name, (lam, wd) in methods.items():
            A = torch.eye(2, dtype=DTYPE).requires_grad_()
            v = v0.clone().requires_grad_()

            def loss(step, A=A, v=v, lam=lam, wd=wd, x=x, y=y):
                feats = x @ A.T
                fit = torch.nn.functional.softplus(-y * (feats @ v)).mean()
                return (fit + lam * nuclear_norm(feats) / math.sqrt(t.n)
                        + 0.5 * wd * ((A * A).sum() + (v * v).sum()))

            history = train([A, v], loss, OptimConfig(steps=t.steps, lr=t.lr, optimizer="gd", warmup=0),
                            log_at=log_steps(t.steps), log_fn=lambda step, loss=loss: {"objective": loss(step)},
                            progress=False)
            with torch.no_grad():
                u = A.T @ v
                s = torch.linalg.svdvals(x @ A.T)
                slope = float(u[1] / u[0])
                results[name].append((slope, float(u[0]), float(sign_accuracy(x_id @ u, y_id, ties=1.0)),
                                      float(sign_accuracy(x_ood @ u, y_ood, ties=1.0)),
                                      theory.toy_2d_accuracies(slope, 0.7), theory.toy_2d_accuracies(slope, 0.3),
                                      float(s[1] / s[0]),
                                      bool(target_reached(history["step"], history["objective"], t.steps))))
    runs = [ToyRun(name, *(torch.tensor(col, dtype=DTYPE) for col in list(zip(*rows, strict=True))[:-1]),
                   torch.tensor([row[-1] for row in rows])) for name, rows in results.items()]
    return Toy(t, runs)


# -- Experiment 4: synthetic DomainBed and digits ----------------------------------------------------------------------
@dataclasses.dataclass
class Analogue:
    name: str
    lambdas: tuple[float, ...]
    id_accuracy: torch.Tensor  # (L, S)
    ood_accuracy: torch.Tensor  # (L, S) headline OOD domain
    ood_extra: dict[float, torch.Tensor]  # other OOD gammas -> (L, S)
    stable_rank: torch.Tensor  # (L, S) of the OOD feature matrix
    chance: float
    init_stable_rank: torch.Tensor | None = None  # (L, S) the same for the untrained featurizers
    reached: torch.Tensor | None = None  # (L, S) bool: each replica reached its training target

    def trained(self, *lams: float) -> tuple[int, int]:
        """(replicas at the lambdas ``lams``, default all, that reached their training target, replicas): the
        ``trained=`` of a claim that reads them; none recorded counts as none reached."""
        rows = [self.index(lam) for lam in lams] if lams else list(range(len(self.lambdas)))
        if self.reached is None:
            return 0, len(rows) * self.ood_accuracy.shape[1]
        return int(self.reached[rows].sum()), self.reached[rows].numel()

    def index(self, lam: float) -> int:
        return self.lambdas.index(lam)

    def best_lambda(self) -> float:
        return self.lambdas[int(self.ood_accuracy.mean(1).argmax())]

    def change(self, values: torch.Tensor, lam: float, null: Null | None = None) -> Estimate:
        """values[lam] - values[ERM], paired by seed (the same data and batches), over the seeds."""
        return paired_difference(values[self.index(lam)].numpy(), values[self.index(0.0)].numpy(), null)

    def ood_at(self, lam: float, null: Null | None = None) -> Estimate:
        """Mean OOD accuracy at ``lam`` over the seeds, with its standard error."""
        return Estimate(*mean_se(self.ood_accuracy[self.index(lam)].numpy()), null)

    def stable_rank_falls(self) -> tuple[list[float], bool, tuple[int, int]]:
        """Fig. 6.5's observation (1): the mean stable rank over seeds per lambda, whether it falls strictly along
        the whole grid, and in how many seeds it does."""
        means = self.stable_rank.mean(1)
        return [float(m) for m in means], bool((means.diff() < 0).all()), strictly_monotone_rate(self.stable_rank.T)

    def stable_rank_falls_up_to(self, largest: float) -> tuple[list[float], bool, tuple[int, int]]:
        """:meth:`stable_rank_falls` on the lambdas of the grid up to ``largest`` (ERM included)."""
        keep = [i for i, lam in enumerate(self.lambdas) if lam <= largest]
        ranks = self.stable_rank[keep]
        means = ranks.mean(1)
        return [float(m) for m in means], bool((means.diff() < 0).all()), strictly_monotone_rate(ranks.T)


def train_featurizers(xs: torch.Tensor, ys: torch.Tensor, lambdas, classes: int, a: AnalogueSizes,
                      generator: torch.Generator, mixup: float = 0.0, initial: list | None = None):
    """Train featurizer (d_in -> width -> features MLP, ReLU, PyTorch-default init) and linear head with cross
    entropy + lambda sum svdvals(F_batch) (the source's code: unnormalised, on the batch feature matrix), Adam.
    ``xs`` (S, n, d_in) and ``ys`` (S, n): one data set per seed; replicas are (lambda, seed) pairs, trained as one
    batched program on the same batch indices per seed. ``mixup`` > 0: Mixup (Zhang et al.; DomainBed's default
    alpha 0.2) within each batch, the inputs and their cross entropies mixed with a Beta(mixup, mixup) weight drawn
    per step and seed and a random pairing of the batch; the penalty is on the mixed batch's features. ``initial``:
    a list that receives a copy of the untrained featurizer. Returns (net, head W (R, features, classes), head b,
    reached (L, S)): whether each replica reached its training target, its objective (cross entropy on the whole
    training set, unmixed, plus lambda times the mean nuclear norm of its disjoint batches) recorded at
    :func:`log_steps` (:func:`target_reached`)."""
    S, n, d_in = xs.shape
    L = len(lambdas)
    net = init_torch_default(L * S, d_in, a.width, d_out=a.features, generator=generator)
    if initial is not None:
        initial.append(copy.deepcopy(net))
    weights = None
    if mixup > 0:
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator)))
        weights = torch.tensor(rng.beta(mixup, mixup, size=(a.steps, S)), dtype=torch.float32)
    bound = 1 / math.sqrt(a.features)
    head_w = ((torch.rand(L * S, a.features, classes, generator=generator) * 2 - 1) * bound).requires_grad_()
    head_b = ((torch.rand(L * S, classes, generator=generator) * 2 - 1) * bound).requires_grad_()
    lam = torch.tensor(lambdas, dtype=torch.float32).repeat_interleave(S)
    seed_of = torch.arange(L * S) % S
    x32 = xs.to(torch.float32)

    def loss(step):
        idx = torch.randint(0, n, (S, a.batch), generator=generator)
        xb = torch.gather(x32, 1, idx[..., None].expand(-1, -1, d_in))[seed_of]
        yb = torch.gather(ys, 1, idx)[seed_of]
        if weights is not None:
            pair = torch.randperm(a.batch, generator=generator)
            mix = weights[step][seed_of][:, None]
            xb = mix[..., None] * xb + (1 - mix[..., None]) * xb[:, pair]
        feats = net(xb)
        logits = torch.bmm(feats, head_w) + head_b[:, None]

        def ce(labels):
            return torch.nn.functional.cross_entropy(logits.reshape(-1, classes), labels.reshape(-1),
                                                     reduction="none").view(L * S, -1)

        fit = ce(yb) if weights is None else mix * ce(yb) + (1 - mix) * ce(yb[:, pair])
        return (fit.mean(-1) + lam * nuclear_norm(feats)).sum()

    chunks = n // a.batch * a.batch

    def objective(step):
        feats = net(x32[seed_of])
        logits = torch.bmm(feats, head_w) + head_b[:, None]
        fit = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ys[seed_of], reduction="none").mean(-1)
        penalty = nuclear_norm(feats[:, :chunks].reshape(L * S, -1, a.batch, feats.shape[-1])).mean(-1)
        return {"objective": fit + lam * penalty}

    history = train([*net.parameters(), head_w, head_b], loss,
                    OptimConfig(steps=a.steps, lr=a.lr, warmup=0, betas=(0.9, 0.999)),
                    log_at=log_steps(a.steps), log_fn=objective, progress=False)
    return net, head_w.detach(), head_b.detach(), target_reached(history["step"], history["objective"],
                                                                 a.steps).view(L, S)


def evaluate(net, head_w, head_b, x: torch.Tensor, y: torch.Tensor, L: int, S: int):
    """Accuracy (L, S) and stable rank of the feature matrix (L, S) on one test set per seed (x (S, n, d_in))."""
    with torch.no_grad():
        seed_of = torch.arange(L * S) % S
        feats = net(x.to(torch.float32)[seed_of])
        logits = torch.bmm(feats, head_w) + head_b[:, None]
        acc = torch.stack([argmax_accuracy(logits[i], y[seed_of[i]]) for i in range(L * S)])
        return acc.view(L, S).to(DTYPE), stable_rank(feats.to(DTYPE)).view(L, S)


def domain_analogue(size: NuclearSizes, run: Run, which: str, *, lambdas=None, classes: int | None = None,
                    mixup: float = 0.0) -> Analogue:
    """``which`` = "synthetic" (class codes, orthogonal + tanh mixer, two training domains gamma = 0.35, 0.25,
    ID test 0.3, OOD tests ``ood_gammas``) or "digits" (the bundled digits split into two training domains
    and an OOD test set, each with an environmental block of u class-coded coordinates). ``lambdas`` (default: the
    sizes' grid), ``classes`` (the synthetic task's class count; default: the sizes') and ``mixup`` (the Beta
    parameter of Mixup training, 0: ERM) vary the training; the data of a seed depend only on ``which`` and
    ``classes``, so the runs of one task share them."""
    a = size.analogue
    lambdas = tuple(a.lambdas if lambdas is None else lambdas)
    n_classes = a.classes if classes is None else classes
    S, L = a.seeds, len(lambdas)
    train_x, train_y, id_x, id_y, ood = [], [], [], [], {g: ([], []) for g in a.ood_gammas}
    for seed in range(S):
        g = run.generator(f"{which}_data" if n_classes == a.classes else f"{which}_{n_classes}_data", seed)
        if which == "synthetic":
            task = ClassCodeDomains.draw(n_classes, a.r, a.u, g)
            parts = [task.sample(a.n_per_domain, gam, g) for gam in a.train_gammas]
            xi, yi = task.sample(a.n_test, a.id_gamma, g)
            for gam in a.ood_gammas:
                xo, yo = task.sample(a.n_test, gam, g)
                ood[gam][0].append(xo)
                ood[gam][1].append(yo)
            classes = n_classes
        else:
            digits, labels = load_digits(DTYPE)
            classes = int(labels.max()) + 1
            code = torch.where(torch.rand(classes, a.digits_u, generator=g) < 0.5, -1.0, 1.0).to(DTYPE)
            order = torch.randperm(len(labels), generator=g)
            n1, n2 = a.digits_train
            splits = [order[:n1], order[n1:n1 + n2], order[n1 + n2:]]
            parts = [(with_environment_block(digits[i], labels[i], code, gam, g), labels[i])
                     for i, gam in zip(splits[:2], a.train_gammas, strict=True)]
            seen = torch.cat(splits[:2])  # ID test: the training images with a fresh environmental block at id_gamma
            xi, yi = with_environment_block(digits[seen], labels[seen], code, a.id_gamma, g), labels[seen]
            for gam in a.ood_gammas:
                ood[gam][0].append(with_environment_block(digits[splits[2]], labels[splits[2]], code, gam, g))
                ood[gam][1].append(labels[splits[2]])
        train_x.append(torch.cat([p[0] for p in parts]))
        train_y.append(torch.cat([p[1] for p in parts]))
        id_x.append(xi)
        id_y.append(yi)
    variant = ("" if n_classes == a.classes else f"_{n_classes}") + ("_mixup" if mixup else "")
    initial = []
    net, hw, hb, reached = train_featurizers(torch.stack(train_x), torch.stack(train_y), lambdas, classes, a,
                                    run.generator(f"{which}{variant}_train"), mixup=mixup, initial=initial)
    id_acc, _ = evaluate(net, hw, hb, torch.stack(id_x), torch.stack(id_y), L, S)
    results = {gam: evaluate(net, hw, hb, torch.stack(xs), torch.stack(ys), L, S) for gam, (xs, ys) in ood.items()}
    head = a.ood_gammas[0]
    _, init_rank = evaluate(initial[0], hw, hb, torch.stack(ood[head][0]), torch.stack(ood[head][1]), L, S)
    return Analogue(which + variant, lambdas, id_acc, results[head][0], {gam: res[0] for gam, res in results.items()},
                    results[head][1], 1 / classes, init_rank, reached)


def stable_rank_scaling(generator: torch.Generator) -> tuple[float, float]:
    """How the stable rank of 2M compares with that of M (a random 50 x 10 matrix): ours, ||M||_F^2 / ||M||_2^2,
    and the source's printed ||M||_F^2 / ||M||_2 (Sec. 6.3.3). A rank is scale-free: the ratio must be 1."""
    m = torch.randn(50, 10, generator=generator, dtype=DTYPE)

    def printed(x):
        return float((x * x).sum() / torch.linalg.matrix_norm(x, ord=2))

    return float(stable_rank(2 * m) / stable_rank(m)), printed(2 * m) / printed(m)

"""The experiments of the chapter "Contrastive learning between universality and label efficiency", in
notebook order: Experiments 1-5 on the linear multi-task model of Sec. 7.2.2 in float64, then optimal tables on a
finite Z (Thm 7.2 (2)) and the notes' nonlinear InfoNCE prototype (float32). The draws inside the runs use
``run.device_generator`` (on a GPU they are made there, not on the CPU and copied; on the CPU the numbers are
``run.generator``'s); the dictionary M and the allocation problem, computed on the CPU, use ``run.generator``."""

from __future__ import annotations

import dataclasses
import math

import torch

from feature_learning.book.claims import trained_runs
from feature_learning.book.profiles import Run
from feature_learning.data.multitask_linear import MultiTaskLinear
from feature_learning.experiments.contrastive.sizes import (
    CHANCE_FRACTION,
    DTYPE,
    ROUNDING,
    TARGET_GAP,
    ContrastiveSizes,
    PretrainSizes,
    RegularisationSizes,
    TradeoffSizes,
)
from feature_learning.measure.probes import logistic_probe
from feature_learning.measure.representations import feature_weights, linear_cka
from feature_learning.theory import contrastive as theory
from feature_learning.training.constraints import dykstra, project_frobenius_ball, project_spectral_frobenius
from feature_learning.training.loop import OptimConfig, train
from feature_learning.training.losses import logistic_contrastive


def draw_model(size: ContrastiveSizes, run: Run, T: int | None = None) -> MultiTaskLinear:
    m = size.model
    model = MultiTaskLinear.draw(m.s, m.r, m.T if T is None else T, m.u, run.generator("dictionary", T), DTYPE)
    model.M = model.M.to(run.device)
    return model


# -- Experiment 1: the reduced allocation problem ------------------------------------------------------------------
@dataclasses.dataclass
class AllocationResult:
    pairs: tuple[tuple[int, int], ...]
    Ts: tuple[int, ...]
    alpha: torch.Tensor  # (pairs, Ts) minimiser over the grid
    beta: torch.Tensor  # (pairs, Ts)
    curve_grid: torch.Tensor  # alpha grid
    curves: dict[int, torch.Tensor]  # T -> loss along the grid for the first (s, r)

    def beta_error(self) -> float:
        """max |beta - 1/T| over the table."""
        inv = torch.tensor([1 / T for T in self.Ts], dtype=DTYPE)
        return float((self.beta - inv).abs().max())


def allocation(size: ContrastiveSizes, run: Run) -> AllocationResult:
    """Minimise E[l(alpha Z + beta(alpha) Z_1)] over alpha (Lemma F.3 reduced by Prop. 7.3's symmetry) for every
    (s, r) and T, one Monte-Carlo sample per cell: drawn on the CPU (the same samples on every device), the losses
    evaluated on the run's device."""
    a = size.allocation
    alpha = torch.empty(len(a.pairs), len(a.Ts), dtype=DTYPE)
    beta = torch.empty_like(alpha)
    curves, grid = {}, None
    for i, (s, r) in enumerate(a.pairs):
        for j, T in enumerate(a.Ts):
            sol = theory.solve_allocation(s, r, T, a.n, 1, run.generator("allocation", s, r, T), a.grid_points,
                                          run.device)
            alpha[i, j], beta[i, j] = sol.alpha[0], sol.beta[0]
            if i == 0:
                curves[T], grid = sol.loss[0], sol.grid
    return AllocationResult(a.pairs, a.Ts, alpha, beta, grid, curves)


# -- Experiment 2: learned representations --------------------------------------------------------------------------
def pretrain_configs(model: MultiTaskLinear) -> tuple[torch.Tensor, list[str]]:
    """The pre-training sets: the first n tasks for n = 1..T (the target is task 1), then tasks 2 and 3 alone (the
    other targets of Fig. 7.3's analogue; task 3 only when T >= 3). (C, T)."""
    rows = [model.first_tasks(n) for n in range(1, model.T + 1)]
    names = ["task 1" if n == 1 else f"tasks 1-{n}" for n in range(1, model.T + 1)]
    for t in range(1, min(model.T, 3)):
        alone = torch.zeros(model.T, dtype=torch.float64)
        alone[t] = 1.0
        rows.append(alone)
        names.append(f"task {t + 1}")
    return torch.stack(rows), names


def contrastive_loss(model: MultiTaskLinear, W: torch.Tensor, tasks: torch.Tensor,
                     generator: torch.Generator) -> torch.Tensor:
    """Per-replica loss (F.38) on fresh examples: W (R, C, k, d), tasks (R, C, n) -> (R, C). The C configurations
    of a replica share their Gaussian draws (common random numbers; each configuration's examples are exact)."""
    shared = (tasks.shape[0], 1, tasks.shape[-1])
    z = model.sample_z(tasks, generator, shared)
    x, x_pos = model.inputs(z), model.inputs(model.augment(z, generator, shared))
    phi, phi_pos = x @ W.transpose(-1, -2), x_pos @ W.transpose(-1, -2)
    return logistic_contrastive(phi, phi_pos, phi.mean(-2, keepdim=True)).mean(-1)


def block_mean(model: MultiTaskLinear, weights: torch.Tensor, name: str) -> torch.Tensor:
    """Mean of squared feature weights (..., d) over a block: "S", "U", or "P1".."PT"."""
    idx = {"S": model.shared(), "U": model.spurious()}.get(name)
    if idx is None:
        idx = model.private(int(name[1:]) - 1)
    return weights[..., idx.to(weights.device)].mean(-1)


@dataclasses.dataclass
class TrainingTarget:
    """Contrastive losses of a batch of runs on the same fresh examples: where each run started, where it ended, and
    the closed-form optimum of its own problem. A run reached its training target when its final loss closed at least
    ``1 - TARGET_GAP`` of the gap from its start to the optimum (a NaN never does)."""
    start: torch.Tensor
    final: torch.Tensor
    optimum: torch.Tensor

    def reached(self) -> torch.Tensor:
        return self.final - self.optimum <= TARGET_GAP * (self.start - self.optimum) + ROUNDING

    def counts(self) -> tuple[int, int]:
        """(runs that reached the target, runs)."""
        return trained_runs(self.reached())


def training_target(model: MultiTaskLinear, W_start: torch.Tensor, W_final: torch.Tensor, W_opt: torch.Tensor,
                    included: torch.Tensor, batch: int, generator: torch.Generator) -> TrainingTarget:
    """The losses (F.38) of W_start, W_final and W_opt (broadcast to W_final's (R, C, k, d)) on one fresh batch of
    each run's pre-training set ``included`` (R, C, T): the same examples for the three (common random numbers)."""
    with torch.no_grad():
        tasks = model.mixture_tasks(included, batch, generator)
        state = generator.get_state()
        losses = []
        for W in (W_start, W_final, W_opt):
            generator.set_state(state)
            losses.append(contrastive_loss(model, W.to(W_final.device).expand_as(W_final), tasks, generator).cpu())
    return TrainingTarget(*losses)


def optimum_weights(model: MultiTaskLinear, configs: torch.Tensor, budget: bool = True) -> torch.Tensor:
    """Closed-form squared weights (C, k) of the optimum on each pre-training set (C, T): 1 on S and, with the
    Frobenius budget, beta = 1/n on the private features of the n tasks in the set (Props. 7.3, F.8 with alpha = 1,
    the minimiser Experiment 1 finds; Prop. 7.4 for n = 1), without it 1; 0 elsewhere."""
    configs = configs.to(DTYPE).cpu()
    beta = 1 / configs.sum(-1, keepdim=True) if budget else torch.ones(configs.shape[0], 1, dtype=DTYPE)
    w = torch.zeros(configs.shape[0], model.k, dtype=DTYPE)
    w[:, : model.s] = 1.0
    for t in range(model.T):
        w[:, model.private(t)] = configs[:, t: t + 1] * beta
    return w.to(model.M.device)


@dataclasses.dataclass
class Pretrained:
    model: MultiTaskLinear
    names: list[str]
    configs: torch.Tensor  # (C, T) tasks in each pre-training set
    W: torch.Tensor  # (R, C, k, d)
    weights: torch.Tensor  # (R, C, d) squared feature weights diag((WM)^T WM)
    loss: torch.Tensor  # (logs, R, C)
    log_steps: torch.Tensor
    cka: dict[str, torch.Tensor]  # pair name -> (R,) CKA on target-task inputs
    cka_closed: dict[str, float]
    training: TrainingTarget  # (R, C)

    def trained(self) -> tuple[int, int]:
        """(runs that reached their training target, runs): every replica x pre-training set."""
        return self.training.counts()

    def block(self, name: str) -> torch.Tensor:
        """Mean squared weight on a block, (R, C): "S", "U", or "P1".."PT"."""
        return block_mean(self.model, self.weights, name)


def learn_representations(model: MultiTaskLinear, configs: torch.Tensor, p: PretrainSizes, generator: torch.Generator,
                          W0: torch.Tensor | None = None, project=None, frobenius: float | None = None):
    """Projected GD on the contrastive loss for every replica x configuration (R, C), batched, within
    {||W|| <= 1, ||W||_F <= frobenius} (default sqrt(r), the model's budget; ``math.inf``: no Frobenius budget).
    Returns (W (R, C, k, d), history, W0)."""
    R, C = p.replicas, configs.shape[0]
    if W0 is None:
        W0 = p.init_scale * torch.randn(R, C, model.k, model.d, generator=generator, dtype=DTYPE,
                                        device=generator.device)
    W = W0.to(model.M.device).clone().requires_grad_()
    included = configs.expand(R, C, model.T)
    fro = math.sqrt(model.r) if frobenius is None else frobenius
    if project is None:
        def project():
            W.copy_(project_spectral_frobenius(W, 1.0, fro))

    def loss(step):
        return contrastive_loss(model, W, model.mixture_tasks(included, p.batch, generator), generator)

    history = train([W], lambda step: loss(step).sum(),
                    OptimConfig(steps=p.steps, lr=p.lr, optimizer="gd", warmup=0),
                    log_every=max(1, p.steps // 10), log_fn=lambda step: {"loss": loss(step)}, project=project)
    return W.detach(), history, W0


def target_features(model: MultiTaskLinear, W: torch.Tensor, n: int, generator: torch.Generator):
    """Draw n target-task inputs per replica; returns c -> the features (R, n, k) of configuration c of W (R, C, k,
    d) on them (one configuration at a time: the inputs are many)."""
    x = model.inputs(model.sample_z(torch.zeros(W.shape[0], n, dtype=torch.long), generator))
    return lambda c: torch.einsum("rnd,rkd->rnk", x, W[:, c])


def pretrain(size: ContrastiveSizes, run: Run) -> Pretrained:
    """Learn W on every pre-training set (Sec. 7.2.2: the even mixtures of the first n tasks and the single tasks),
    read the feature weights and compare the representations by linear CKA on target-task inputs."""
    model = draw_model(size, run)
    configs, names = pretrain_configs(model)
    W, hist, W0 = learn_representations(model, configs, size.pretrain, run.device_generator("pretrain"))
    R, C = W.shape[:2]
    target = training_target(model, W0, W, model.representation(optimum_weights(model, configs)),
                             configs.to(W.device).expand(R, C, model.T), size.pretrain.batch,
                             run.device_generator("pretrain_target"))
    weights = feature_weights(W, model.M).cpu()  # measurements live on the CPU (the notebook's statistics)
    feats = target_features(model, W, size.pretrain.cka_samples, run.device_generator("cka"))
    cka, closed = {}, {}
    s, r, T = model.s, model.r, model.T
    for n in range(2, T + 1):
        cka[f"1 vs 1-{n}"] = linear_cka(feats(0), feats(n - 1)).cpu()
        closed[f"1 vs 1-{n}"] = float(theory.cka_mixtures(1, n, s, r))
    cka["1 vs 2"] = linear_cka(feats(0), feats(T)).cpu()
    closed["1 vs 2"] = math.sqrt(s / r)
    return Pretrained(model, names, configs, W, weights, hist["loss"].cpu(), hist["step"], cka, closed, target)


@dataclasses.dataclass
class Unbudgeted:
    """The trade-off's trivial model: representations pre-trained without the Frobenius budget (||W|| <= 1 only),
    on task 1, tasks 1-2 and tasks 1-T. Nothing then forces a down-weighting: every feature seen in pre-training
    can keep weight 1."""
    weights: torch.Tensor  # (R, 3, d)
    target: torch.Tensor  # (R * draws, 3) target probe accuracy with m labels, paired across the three sets
    cka: dict[str, torch.Tensor]  # "1 vs 1-2", "1 vs 1-T" -> (R,)
    training: TrainingTarget  # (R, 3)

    def trained(self) -> tuple[int, int]:
        """(runs that reached their training target, runs)."""
        return self.training.counts()

    def drop(self) -> float:
        """Target accuracy, task 1 minus tasks 1-T (the measurement of target_falls)."""
        return float((self.target[:, 0] - self.target[:, -1]).mean())


def pretrain_unbudgeted(size: ContrastiveSizes, run: Run, pre: Pretrained, m: int = 20) -> Unbudgeted:
    """Experiment 2's pre-training (with the step ``unbudgeted_lr``) and Experiment 3's target probe with the
    Frobenius budget removed."""
    model, T = pre.model, pre.model.T
    configs = pre.configs[[0, 1, T - 1]]
    p = dataclasses.replace(size.pretrain, lr=size.pretrain.unbudgeted_lr)
    W, _, W0 = learn_representations(model, configs, p, run.device_generator("pretrain_unbudgeted"),
                                     frobenius=math.inf)
    target = training_target(model, W0, W, model.representation(optimum_weights(model, configs, budget=False)),
                             configs.to(W.device).expand(*W.shape[:2], T), p.batch,
                             run.device_generator("pretrain_unbudgeted_target"))
    feats = target_features(model, W, size.pretrain.cka_samples, run.device_generator("cka_unbudgeted"))
    cka = {"1 vs 1-2": linear_cka(feats(0), feats(1)).cpu(), f"1 vs 1-{T}": linear_cka(feats(0), feats(2)).cpu()}
    acc = learned_probe_accuracy(model, W, [0], size.tradeoff, [m], run.device_generator("tradeoff_unbudgeted"))
    target_acc = acc[0, :, :, 0].permute(0, 2, 1).reshape(-1, 3)
    return Unbudgeted(feature_weights(W, model.M).cpu(), target_acc, cka, target)


# -- Experiment 3: the trade-off --------------------------------------------------------------------------------------
def probe_accuracy(F_fit: torch.Tensor, y_fit: torch.Tensor, F_test: torch.Tensor, y_test: torch.Tensor,
                   C: float, chunk: int = 512) -> torch.Tensor:
    """Logistic-probe test accuracy for every leading index: F (..., n, k), y (..., n) in {-1, +1} -> (...)."""
    lead = F_fit.shape[:-2]
    Ff, yf = F_fit.reshape(-1, *F_fit.shape[-2:]), y_fit.expand(*lead, y_fit.shape[-1]).reshape(-1, y_fit.shape[-1])
    Ft, yt = F_test.reshape(-1, *F_test.shape[-2:]), y_test.expand(*lead, y_test.shape[-1]).reshape(-1,
                                                                                                   y_test.shape[-1])
    out = [logistic_probe(Ff[i:i + chunk], yf[i:i + chunk], Ft[i:i + chunk], yt[i:i + chunk], C)["accuracy"]
           for i in range(0, Ff.shape[0], chunk)]
    return torch.cat(out).reshape(lead)


def sign(y: torch.Tensor) -> torch.Tensor:
    return torch.where(y >= 0, 1.0, -1.0).to(y.dtype)


def learned_probe_accuracy(model: MultiTaskLinear, W: torch.Tensor, tasks, t_sizes: TradeoffSizes, ms,
                           generator: torch.Generator) -> torch.Tensor:
    """Probe accuracy of representations W (R, C, k, d) on each task: (len(ms), R, C, len(tasks), draws). Every
    (replica, draw) has its own u* and labelled set, shared by the C representations (paired comparisons)."""
    R, C = W.shape[:2]
    D = t_sizes.draws
    u_star = model.label_directions(generator, (R, D))
    out = torch.empty(len(ms), R, C, len(tasks), D, dtype=DTYPE)
    for it, t in enumerate(tasks):
        def labelled(n, t=t):
            z = model.sample_z(torch.full((R, D, n), t, dtype=torch.long), generator)
            return torch.einsum("rDnd,rckd->rcDnk", model.inputs(z), W), sign(model.labels(z, u_star, t))[:, None]

        F_test, y_test = labelled(t_sizes.n_test)
        for im, m in enumerate(ms):
            F_fit, y_fit = labelled(m)
            out[im, :, :, it] = probe_accuracy(F_fit, y_fit, F_test, y_test, t_sizes.C).cpu()
    return out


def reduced_probe_accuracy(s: int, r: int, betas, t_sizes: TradeoffSizes, ms, replicas: int,
                           generator: torch.Generator, device) -> torch.Tensor:
    """Probe accuracy on one task of the closed-form representations with weight 1 on S and beta on the task's
    private features: (len(ms), replicas, len(betas), draws). Exact reduction: on the task's data the closed-form
    representation is Q [sqrt(w) * z_{R_t}; 0], and the L2-penalised probe is invariant to the rotation Q and to
    zero coordinates, so the probe sees sqrt(w) * z_{R_t} (r numbers)."""
    D = t_sizes.draws
    w = torch.tensor([[1.0] * s + [b] * (r - s) for b in betas], dtype=DTYPE, device=device).sqrt()  # (B, r)
    g = torch.randn(replicas, D, 2, r, generator=generator, dtype=DTYPE, device=generator.device)
    u = torch.cat([g[..., 0, :s] / g[..., 0, :s].norm(dim=-1, keepdim=True),
                   g[..., 1, s:] / g[..., 1, s:].norm(dim=-1, keepdim=True)], -1).to(device) / math.sqrt(2)

    def labelled(n):
        z = torch.randn(replicas, D, n, r, generator=generator, dtype=DTYPE, device=generator.device).to(device)
        y = sign((z * u[:, :, None]).sum(-1))
        return z[:, None] * w[None, :, None, None], y[:, None]

    F_test, y_test = labelled(t_sizes.n_test)
    out = torch.empty(len(ms), replicas, len(betas), D, dtype=DTYPE)
    for im, m in enumerate(ms):
        F_fit, y_fit = labelled(m)
        out[im] = probe_accuracy(F_fit, y_fit, F_test, y_test, t_sizes.C).cpu()
    return out


@dataclasses.dataclass
class TradeoffCurve:
    """Target and average probe accuracy against the number n of tasks in pre-training, per m; samples on the last
    axis (replica x draw), paired across n."""
    label: str
    ns: tuple[int, ...]
    ms: tuple[int, ...]
    T: int
    target: torch.Tensor  # (len(ms), len(ns), samples)
    average: torch.Tensor  # (len(ms), len(ns), samples)

    def mean(self, which: str) -> torch.Tensor:
        return getattr(self, which).mean(-1)

    def drop(self, m: int, which: str = "target") -> tuple[float, float]:
        """Paired change first n -> last n (target: first - last; average: last - first), with its se."""
        v = getattr(self, which)[self.ms.index(m)]
        d = v[0] - v[-1] if which == "target" else v[-1] - v[0]
        return float(d.mean()), float(d.std() / math.sqrt(d.numel()))

    def steps(self, m: int, which: str = "target") -> tuple[torch.Tensor, torch.Tensor]:
        """Paired consecutive changes (decreases of the target, increases of the average) with their se."""
        v = getattr(self, which)[self.ms.index(m)]
        d = v[:-1] - v[1:] if which == "target" else v[1:] - v[:-1]
        return d.mean(-1), d.std(-1) / math.sqrt(d.shape[-1])


@dataclasses.dataclass
class Tradeoff:
    learned: TradeoffCurve  # T = 4, learned representations, every task probed
    closed: TradeoffCurve  # T = 4, closed-form representations (symmetry over tasks)
    large: TradeoffCurve  # T = large_T, closed form
    other_task_specific: torch.Tensor  # (len(ms), samples) task-1-specific representation on task 2 (learned)
    alone_vs_all: torch.Tensor  # (targets, len(ms), samples): accuracy on target t pre-trained on task t alone
    # minus pre-trained on all T tasks (learned; targets: tasks 1, 2, 3), paired

    def target_drops(self, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Per target task: the mean paired drop from task-alone to all-task pre-training and its se."""
        d = self.alone_vs_all[:, self.learned.ms.index(m)]
        return d.mean(-1), d.std(-1) / math.sqrt(d.shape[-1])


def closed_form_curve(s: int, r: int, T: int, ns, t_sizes: TradeoffSizes, replicas: int, generator, device,
                      label: str) -> TradeoffCurve:
    """Closed-form trade-off: pre-training on the first n tasks gives weight 1/n on the private features of the
    tasks in the mixture and 0 on the others (Props. 7.3 / F.8, 7.4). Target = task 1; the average over the T tasks
    is (n/T) acc(1/n) + (1 - n/T) acc(0) since tasks are exchangeable."""
    betas = [1 / n for n in ns] + [0.0]
    acc = reduced_probe_accuracy(s, r, betas, t_sizes, t_sizes.ms, replicas, generator, device)
    acc = acc.permute(0, 2, 1, 3).reshape(len(t_sizes.ms), len(betas), -1)
    target = acc[:, : len(ns)]
    frac = torch.tensor([n / T for n in ns], dtype=DTYPE)[None, :, None]
    average = frac * target + (1 - frac) * acc[:, -1:]
    return TradeoffCurve(label, tuple(ns), tuple(t_sizes.ms), T, target, average)


def tradeoff(size: ContrastiveSizes, run: Run, pre: Pretrained) -> Tradeoff:
    """Probe the learned representations of Experiment 2 (T = 4) on every task for every m, and the closed-form
    representations for T = 4 and T = large_T."""
    t = size.tradeoff
    model, T = pre.model, pre.model.T
    acc = learned_probe_accuracy(model, pre.W, range(T), t, t.ms, run.device_generator("tradeoff_learned"))
    R, D = acc.shape[1], acc.shape[-1]
    per = acc[:, :, :T]  # (ms, R, n, tasks, D): mixtures of the first n tasks
    target = per[:, :, :, 0].permute(0, 2, 1, 3).reshape(len(t.ms), T, R * D)
    average = per.mean(3).permute(0, 2, 1, 3).reshape(len(t.ms), T, R * D)
    learned = TradeoffCurve("learned, T=4", tuple(range(1, T + 1)), tuple(t.ms), T, target, average)
    other = acc[:, :, 0, 1].reshape(len(t.ms), R * D)
    alone = [0] + [pre.names.index(f"task {j + 1}") for j in range(1, min(T, 3))]  # task j's own configuration
    alone_vs_all = torch.stack([(acc[:, :, c, j] - acc[:, :, T - 1, j]).reshape(len(t.ms), R * D)
                                for j, c in enumerate(alone)])
    closed = closed_form_curve(model.s, model.r, T, tuple(range(1, T + 1)), t, t.closed_replicas,
                               run.device_generator("tradeoff_closed"), run.device, f"closed form, T={T}")
    large = closed_form_curve(model.s, model.r, t.large_T, t.large_prefixes, t, t.closed_replicas,
                              run.device_generator("tradeoff_large"), run.device, f"closed form, T={t.large_T}")
    return Tradeoff(learned, closed, large, other, alone_vs_all)


def further_probes(size: ContrastiveSizes, run: Run, model: MultiTaskLinear, W: torch.Tensor, task: int, ms,
                   stream: str, *keys) -> torch.Tensor:
    """Probe accuracy of two representations W (R, 2, k, d) on ``task``, first minus second, on further labelled
    sets: ``advantage_chunks`` x ``draws`` per replica with ``advantage_n_test`` test points, drawn a chunk at a time
    (memory) from the stream (``stream``, ``keys``). (len(ms), samples), paired across the two representations and
    across m (each set of every m is drawn beside the others, with the same u* and test points)."""
    t = size.tradeoff
    chunk = dataclasses.replace(t, n_test=t.advantage_n_test)
    g = run.device_generator(stream, *keys)
    parts = []
    for _ in range(t.advantage_chunks):
        acc = learned_probe_accuracy(model, W, [task], chunk, ms, g)  # (ms, R, 2, 1, D)
        parts.append((acc[:, :, 0, 0] - acc[:, :, 1, 0]).reshape(len(ms), -1))
    return torch.cat(parts, -1)


def label_budget_advantage(size: ContrastiveSizes, run: Run, pre: Pretrained, ms=(20, 200)) -> torch.Tensor:
    """Tables F.2/F.3's reading on the learned representations: target (task 1) probe accuracy pre-trained on task 1
    alone minus pre-trained on all T tasks, for each m, on further labelled sets (:func:`further_probes`):
    (len(ms), samples), paired across m."""
    T = pre.model.T
    return further_probes(size, run, pre.model, pre.W[:, [0, T - 1]], 0, ms, "label_budget")


def further_target_drops(size: ContrastiveSizes, run: Run, pre: Pretrained, m: int = 20) -> torch.Tensor:
    """Fig. 7.3's reading on further labelled sets: for each target task 1, 2, 3, its probe accuracy with m labels
    pre-trained on that task alone minus pre-trained on all T tasks (:func:`further_probes`, one stream per
    target): (targets, samples)."""
    T = pre.model.T
    alone = [0] + [pre.names.index(f"task {j + 1}") for j in range(1, min(T, 3))]
    return torch.stack([further_probes(size, run, pre.model, pre.W[:, [c, T - 1]], j, (m,), "target_drops", j)[0]
                        for j, c in enumerate(alone)])


# -- Experiment 4: contrastive fine-tuning (Prop. F.9) -----------------------------------------------------------------
@dataclasses.dataclass
class Finetuned:
    gammas: tuple[float, ...]
    weights: torch.Tensor  # (R, G, d)
    distance: torch.Tensor  # (R, G) ||W - W*||_F
    spectral: torch.Tensor  # (R, G) ||W||
    predicted: tuple[float, ...]  # Prop. F.9's beta' per gamma
    ms: tuple[int, ...]
    accuracy: torch.Tensor  # (len(ms), G + 1, samples): target probe accuracy, gammas then the specific rep.
    # (and W* last when ``finetune(..., universal=True)``)
    model: MultiTaskLinear
    training: TrainingTarget  # (R, G): the optimum is Prop. F.9's
    W: torch.Tensor  # (R, G, k, d) the fine-tuned representations

    def trained(self) -> tuple[int, int]:
        """(runs that reached their training target, runs): every replica x radius."""
        return self.training.counts()

    def block(self, name: str) -> torch.Tensor:
        """Mean squared weight on a block, (R, G)."""
        return block_mean(self.model, self.weights, name)


def finetune(size: ContrastiveSizes, run: Run, T: int | None = None, gammas: tuple[float, ...] | None = None,
             ms: tuple[int, ...] | None = None, universal: bool = False) -> Finetuned:
    """Start from the closed-form mixture representation W* (alpha = 1, beta = 1/T), run projected GD on the target
    task's contrastive loss within {||W - W*||_F <= gamma, ||W|| <= 1} (F.104-F.105; the projection onto the
    intersection by Dykstra's algorithm), then probe the target task. ``T``, ``gammas``, ``ms``: the model's T and
    the profile's sizes unless given (another T draws its own streams); ``universal``: W* is probed too, as the last
    column of ``accuracy`` (on the same labelled sets: the other columns do not change)."""
    f = size.finetune
    gammas, ms = tuple(f.gammas if gammas is None else gammas), tuple(f.ms if ms is None else ms)
    model = draw_model(size, run, T)
    own = () if T is None else (T,)  # the streams of the default run are unchanged
    T, G, R = model.T, len(gammas), size.pretrain.replicas
    W_star = model.representation(model.block_weights(T, 1.0, 1.0 / T))
    W0 = W_star.expand(R, G, *W_star.shape).clone()
    radius = torch.tensor(gammas, dtype=DTYPE, device=model.M.device)[None, :, None, None]
    configs = model.first_tasks(1)[None].expand(G, T)
    holder = {}  # the leaf tensor, read by the projection

    def project():
        W = holder["W"]
        W.copy_(dykstra(W, [lambda V: project_frobenius_ball(V, W_star, radius),
                            lambda V: project_spectral_frobenius(V, 1.0, math.inf)], f.dykstra_iterations,
                            tol=1e-13))

    W = W0.to(model.M.device).clone().requires_grad_()
    holder["W"] = W
    included = configs.expand(R, G, T)
    g = run.device_generator("finetune", *own)

    def loss(step):
        return contrastive_loss(model, W, model.mixture_tasks(included, size.pretrain.batch, g), g)

    train([W], lambda step: loss(step).sum(), OptimConfig(steps=f.steps, lr=f.lr, optimizer="gd", warmup=0),
          project=project)
    W = W.detach()
    predicted = tuple(theory.finetune_beta(model.s, T, gam) for gam in gammas)
    w_opt = model.block_weights(T, 1.0, 1.0 / T).expand(G, model.k).clone()
    w_opt[:, model.private(0)] = torch.tensor(predicted, dtype=DTYPE, device=w_opt.device)[:, None]
    target = training_target(model, W0, W, model.representation(w_opt), included, size.pretrain.batch,
                             run.device_generator("finetune_target", *own))
    weights = feature_weights(W, model.M).cpu()
    distance = (W - W_star).pow(2).sum((-1, -2)).sqrt().cpu()
    spectral = torch.linalg.matrix_norm(W, 2).cpu()
    W_spec = model.representation(model.block_weights(1, 1.0, 1.0)).expand(R, 1, model.k, model.d)
    t_sizes = size.tradeoff
    probed = [W, W_spec] + ([W_star.expand(R, 1, model.k, model.d)] if universal else [])
    acc = learned_probe_accuracy(model, torch.cat(probed, 1), [0], t_sizes, ms,
                                 run.device_generator("finetune_lp", *own))
    acc = acc[:, :, :, 0].permute(0, 2, 1, 3).reshape(len(ms), G + 1 + universal, -1)
    return Finetuned(gammas, weights, distance, spectral, predicted, ms, acc, model, target, W)


def further_finetune_gain(size: ContrastiveSizes, run: Run, ft: Finetuned, m: int = 20) -> torch.Tensor:
    """Table F.9's reading on further labelled sets (:func:`further_probes`): target probe accuracy with m labels
    after fine-tuning at the largest radius minus at radius 0 (W* itself): (samples,)."""
    return further_probes(size, run, ft.model, ft.W[:, [len(ft.gammas) - 1, 0]], 0, (m,), "finetune_gain")[0]


# -- Experiment 5: fine-tuning with and without contrastive regularisation (eq. 7.9) -------------------------------
@dataclasses.dataclass
class RegularisationRow:
    T: int
    m: int
    lp: torch.Tensor  # (R,) test accuracy of the probe on the frozen W*
    ft: torch.Tensor  # (R,) fine-tuning (W and the head)
    ours: torch.Tensor  # (R,) fine-tuning with the contrastive term
    private_ft: torch.Tensor  # (R,) mean squared weight on the target's private features after FT
    private_ours: torch.Tensor  # (R,) ... after Ours
    train_loss: torch.Tensor  # (R, 2) classification loss on the augmented labelled points after FT, Ours

    def trained(self) -> tuple[int, int]:
        """(fits whose training loss is below ``CHANCE_FRACTION`` of the zero head's ln 2, fits): FT and Ours."""
        return int((self.train_loss < CHANCE_FRACTION * math.log(2)).sum()), self.train_loss.numel()


def regularised_finetune(model: MultiTaskLinear, m: int, r_sizes: RegularisationSizes, generator: torch.Generator,
                         C: float) -> RegularisationRow:
    """From the closed-form universal W* (alpha = 1, beta = 1/T), fit on m labelled target points, each with
    ``augmentations`` fixed augmentations (z_U redrawn): LP (probe on W*, no augmentation), FT (joint GD on W and
    the head on the augmented points, W projected onto the representation class) and Ours (FT plus lam times the
    contrastive loss on pairs of augmentations of the same labelled point, batch-mean negative). FT and Ours share
    their data and initialisation (paired)."""
    R, A, T = r_sizes.replicas, r_sizes.augmentations, model.T
    dev = model.M.device
    u_star = model.label_directions(generator, (R,))
    z = model.sample_z(torch.zeros(R, m, dtype=torch.long), generator)
    y = sign(model.labels(z, u_star, 0))
    z_aug = model.augment(z[:, :, None].expand(R, m, A, model.d), generator)
    x_aug = model.inputs(z_aug)  # (R, m, A, d)
    z_test = model.sample_z(torch.zeros(R, r_sizes.n_test, dtype=torch.long), generator)
    y_test, x_test = sign(model.labels(z_test, u_star, 0)), model.inputs(z_test)
    W_star = model.representation(model.block_weights(T, 1.0, 1.0 / T))
    lp = probe_accuracy(model.inputs(z) @ W_star.T, y, x_test @ W_star.T, y_test, C)
    W = W_star.expand(R, 2, *W_star.shape).clone().requires_grad_()  # methods: FT, Ours
    u = torch.zeros(R, 2, model.k, dtype=DTYPE, device=dev, requires_grad=True)
    b = torch.zeros(R, 2, dtype=DTYPE, device=dev, requires_grad=True)
    ours = torch.tensor([0.0, 1.0], dtype=DTYPE, device=dev)
    fro = math.sqrt(model.r)

    def classification(step):
        phi = torch.einsum("rmad,rskd->rsmak", x_aug, W)
        pred = (phi * u[:, :, None, None]).sum(-1) + b[..., None, None]
        return phi, torch.nn.functional.softplus(-y[:, None, :, None] * pred).mean((-1, -2))

    def loss(step):
        phi, cls = classification(step)
        cls = cls + r_sizes.head_penalty * u.pow(2).sum(-1)
        i = torch.randint(m, (r_sizes.pairs,), generator=generator, device=generator.device).to(dev)
        a = torch.randint(A, (2, r_sizes.pairs), generator=generator, device=generator.device).to(dev)
        anchor, positive = phi[:, :, i, a[0]], phi[:, :, i, a[1]]
        con = logistic_contrastive(anchor, positive, anchor.mean(-2, keepdim=True)).mean(-1)
        return (cls + r_sizes.lam * ours * con).sum()

    def project():
        W.copy_(project_spectral_frobenius(W, 1.0, fro))

    train([{"params": [W], "lr": r_sizes.lr}, {"params": [u, b], "lr": r_sizes.head_lr}], loss,
          OptimConfig(steps=r_sizes.steps, lr=r_sizes.lr, optimizer="gd", warmup=0), project=project)
    with torch.no_grad():
        pred = torch.einsum("rnd,rskd->rsnk", x_test, W).mul(u[:, :, None]).sum(-1) + b[..., None]
        acc = (pred * y_test[:, None] > 0).to(DTYPE).mean(-1)
        private = feature_weights(W, model.M)[..., model.private(0).to(dev)].mean(-1)
        train_loss = classification(r_sizes.steps)[1]
    return RegularisationRow(T, m, lp.cpu(), acc[:, 0].cpu(), acc[:, 1].cpu(), private[:, 0].cpu(),
                             private[:, 1].cpu(), train_loss.cpu())


def regularisation_table(size: ContrastiveSizes, run: Run) -> list[RegularisationRow]:
    """LP, FT and Ours for every T and m of ``size.regularisation`` (the analogue of Tables 7.1 / F.5)."""
    r_sizes = size.regularisation
    rows = []
    for T in r_sizes.Ts:
        model = draw_model(size, run, T)
        for m in r_sizes.ms:
            rows.append(regularised_finetune(model, m, r_sizes, run.device_generator("regularisation", T, m),
                                             size.tradeoff.C))
    return rows


# -- Experiment 6: a nonlinear encoder trained by InfoNCE (the notes' prototype) --------------------------------------
@dataclasses.dataclass
class NonlinearTradeoff:
    """Target and average probe accuracy of MLP encoders pre-trained by InfoNCE on the first n tasks, inputs a fixed
    random nonlinear mixing of the linear model's z. Samples (replica x draw) on the last axis, paired across n."""
    ns: tuple[int, ...]
    m: int
    target: torch.Tensor  # (len(ns), samples)
    average: torch.Tensor  # (len(ns), samples)
    loss: torch.Tensor  # (R, len(ns)) InfoNCE loss of the last step
    chance_loss: float  # log(batch): InfoNCE of a constant encoder

    def trained(self) -> tuple[int, int]:
        """(encoders whose last loss is below ``CHANCE_FRACTION`` of the chance loss log(batch), encoders): the
        training target."""
        return int((self.loss < CHANCE_FRACTION * self.chance_loss).sum()), self.loss.numel()

    def change(self, which: str) -> torch.Tensor:
        """Paired change from the first to the last pre-training set (last minus first), per sample."""
        v = getattr(self, which)
        return v[-1] - v[0]


def nonlinear_mixing(model: MultiTaskLinear, width: int, out: int, generator: torch.Generator):
    """The notes' mixing x = tanh(z A) B + 0.5 (z A)[:, :out], A (d, width) and B (width, out) Gaussian with
    variance 1/fan-in (float32)."""
    A = torch.randn(model.d, width, generator=generator, device=generator.device) / math.sqrt(model.d)
    B = torch.randn(width, out, generator=generator, device=generator.device) / math.sqrt(width)

    def mix(z: torch.Tensor) -> torch.Tensor:
        h = z.to(A.dtype).to(A.device) @ A
        return torch.tanh(h) @ B + 0.5 * h[..., :out]
    return mix


def nonlinear_tradeoff(size: ContrastiveSizes, run: Run) -> NonlinearTradeoff:
    """Pre-train R x len(ns) MLP encoders (in -> hidden -> k_out, ReLU; one batched program) by InfoNCE (in-batch
    negatives, temperature tau, normalised features) with Adam on the even mixtures of the first n tasks, then probe
    the normalised features of every task with m labels (L2-penalised logistic regression, C of the notes)."""
    nl, mod = size.nonlinear, size.model
    model = draw_model(size, run)
    g = run.device_generator("nonlinear")
    mix = nonlinear_mixing(model, nl.mixing_width, nl.inputs, g)
    R, N = nl.replicas, len(nl.ns)
    dev = model.M.device

    def init(fan_in, fan_out):  # one initialisation per replica, shared by its pre-training sets (paired)
        w = torch.randn(R, 1, fan_in, fan_out, generator=g, device=g.device) / math.sqrt(fan_in)
        return w.expand(R, N, fan_in, fan_out).to(dev).clone().requires_grad_()
    W1, W2 = init(nl.inputs, nl.hidden), init(nl.hidden, nl.k_out)
    b1 = torch.zeros(R, N, 1, nl.hidden, device=dev, requires_grad=True)

    def encode(x):
        return torch.nn.functional.normalize(torch.relu(x @ W1 + b1) @ W2, dim=-1)

    included = torch.stack([model.first_tasks(n) for n in nl.ns]).expand(R, N, mod.T)
    opt = torch.optim.Adam([W1, b1, W2], lr=nl.lr)
    labels = torch.arange(nl.batch, device=dev).expand(R, N, nl.batch)
    loss = torch.full((R, N), math.log(nl.batch))  # InfoNCE of a constant encoder, until a step is taken
    for _ in range(nl.steps):
        z = model.sample_z(model.mixture_tasks(included, nl.batch, g), g)
        a, p = encode(mix(z)), encode(mix(model.augment(z, g)))
        logits = a @ p.transpose(-1, -2) / nl.tau
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).transpose(1, 2), labels.flatten(0, 1),
                                                 reduction="none").mean(-1)
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
    with torch.no_grad():
        D = nl.draws
        u_star = model.label_directions(g, (R, D))
        acc = torch.empty(N, mod.T, R, D, dtype=DTYPE)

        def feats(z):
            f = encode(mix(z).reshape(R, 1, -1, nl.inputs))
            return f.reshape(R, N, D, z.shape[-2], nl.k_out).permute(1, 0, 2, 3, 4).to(DTYPE)
        for t in range(mod.T):
            z_fit = model.sample_z(torch.full((R, D, nl.m), t, dtype=torch.long), g)
            z_test = model.sample_z(torch.full((R, D, nl.n_test), t, dtype=torch.long), g)
            acc[:, t] = probe_accuracy(feats(z_fit), sign(model.labels(z_fit, u_star, t)), feats(z_test),
                                       sign(model.labels(z_test, u_star, t)), nl.C).cpu()
    target, average = acc[:, 0].reshape(N, R * D), acc.mean(1).reshape(N, R * D)
    return NonlinearTradeoff(tuple(nl.ns), nl.m, target, average, loss.detach().cpu(), math.log(nl.batch))


# -- Theorem 7.2 (2) on a finite Z: which features the optimal table encodes at each radius ---------------------------
@dataclasses.dataclass
class EncodingSweep:
    probs: tuple[float, ...]  # P[z_i = 1] of the independent binary features
    spread: tuple[float, ...]  # Pr[z_{-i} = z^-_{-i}, z_i != z^-_i] per feature
    radii: tuple[float, ...]
    dim: int
    encoding: torch.Tensor  # (radii, features): max ||h(z) - h(z')|| / B_r over pairs differing only in z_i
    loss: torch.Tensor  # (radii,) best loss over the restarts
    runner_up_gap: torch.Tensor  # (radii,) loss of the restart at the 10th percentile minus the best


def encoding_sweep(size: ContrastiveSizes, run: Run) -> EncodingSweep:
    """Minimise the logistic contrastive loss E[l(h(z)^T (h(z) - h(z^-)))] (z^+ = z: no spurious features) over
    tables h: {0,1}^n -> the sphere of radius B_r in R^dim, by Adam on the directions from random restarts (one
    batched program per radius), and read how far the best table moves when one feature flips."""
    e = size.encoding
    n = len(e.probs)
    Z = torch.tensor([[(c >> (n - 1 - i)) & 1 for i in range(n)] for c in range(2 ** n)], dtype=DTYPE)
    p = torch.tensor(e.probs, dtype=DTYPE)
    pi = (Z * p + (1 - Z) * (1 - p)).prod(-1)
    pair = pi[:, None] * pi[None, :]
    flip = [[int(c ^ (1 << (n - 1 - i))) for c in range(2 ** n)] for i in range(n)]
    same = p.pow(2) + (1 - p).pow(2)
    spread = tuple(float(2 * p[i] * (1 - p[i]) * same[torch.arange(n) != i].prod()) for i in range(n))
    g = run.generator("encoding")
    enc, best, gap = torch.empty(len(e.radii), n, dtype=DTYPE), torch.empty(len(e.radii), dtype=DTYPE), \
        torch.empty(len(e.radii), dtype=DTYPE)

    def table_loss(V, B):
        H = B * torch.nn.functional.normalize(V, dim=-1)
        return torch.nn.functional.softplus(H @ H.transpose(-1, -2) - B * B).mul(pair).sum((-1, -2)), H

    for j, B in enumerate(e.radii):
        V = torch.randn(e.restarts, 2 ** n, e.dim, generator=g, dtype=DTYPE).requires_grad_()
        opt = torch.optim.Adam([V], lr=e.lr)
        for _ in range(e.steps):
            opt.zero_grad()
            table_loss(V, B)[0].sum().backward()
            opt.step()
        with torch.no_grad():
            L, H = table_loss(V, B)
            order = L.argsort()
            h = H[order[0]]
            best[j], gap[j] = L[order[0]], L[order[len(order) // 10]] - L[order[0]]
            for i in range(n):
                enc[j, i] = (h - h[flip[i]]).norm(dim=-1).max() / B
    return EncodingSweep(tuple(e.probs), spread, tuple(e.radii), e.dim, enc, best, gap)

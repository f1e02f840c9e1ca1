"""Chapter "Contrastive learning between universality and label efficiency" (dissertation ch. 7 with appendix F;
Shi et al., ICLR 2023): sizes, recipes and runs.

Every run is the linear multi-task model of Sec. 7.2.2 (:class:`feature_learning.data.multitask_linear.MultiTaskLinear`)
in float64: representations W (k x d) are learned by projected gradient descent on the logistic contrastive loss with
the batch mean as the negative (F.38), projected exactly onto {||W|| <= 1, ||W||_F <= sqrt(r)}
(:func:`feature_learning.training.constraints.project_spectral_frobenius`); linear probes are scikit-learn's
L2-penalised logistic regression (C = 1), solved to optimality by
:func:`feature_learning.measure.probes.logistic_probe`. Seeds are a replica axis: every replica has its own
initialisation, label directions u_t* and samples, and the replicas train as one batched program.
The closed forms of :mod:`feature_learning.theory.contrastive` are what the runs are compared with.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from feature_learning.book.profiles import Run, override
from feature_learning.data.multitask_linear import MultiTaskLinear
from feature_learning.measure.probes import logistic_probe
from feature_learning.measure.representations import feature_weights, linear_cka
from feature_learning.theory import contrastive as theory
from feature_learning.training.constraints import dykstra, project_frobenius_ball, project_spectral_frobenius
from feature_learning.training.loop import OptimConfig, train
from feature_learning.training.losses import logistic_contrastive

DTYPE = torch.float64  # the notes: the linear model's weights must be read to 3 decimals


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
    cka_samples: int = 5000  # target-task inputs on which representations are compared


@dataclasses.dataclass(frozen=True)
class TradeoffSizes:
    ms: tuple[int, ...] = (10, 20, 50, 200)  # labelled target samples
    draws: int = 10  # labelled sets (with their own u*) per replica
    n_test: int = 2000
    C: float = 1.0  # scikit-learn's default, as in the notes' prototype
    large_T: int = 16
    large_prefixes: tuple[int, ...] = (1, 2, 4, 8, 16)  # tasks in pre-training for the T = 16 curve
    closed_replicas: int = 16  # replicas of the closed-form curves (cheap: the probe sees r numbers)


@dataclasses.dataclass(frozen=True)
class FinetuneSizes:
    gammas: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 1.5)
    steps: int = 300
    lr: float = 1.0
    dykstra_iterations: int = 20
    ms: tuple[int, ...] = (10, 20, 50)


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
    replicas: int = 24  # FT - LP at T = 4 is ~0.03 with a replica sd ~0.03: 24 put it ~4 se from 0
    n_test: int = 2000


@dataclasses.dataclass(frozen=True)
class ContrastiveSizes:
    model: ModelSizes = ModelSizes()
    allocation: AllocationSizes = AllocationSizes()
    pretrain: PretrainSizes = PretrainSizes()
    tradeoff: TradeoffSizes = TradeoffSizes()
    finetune: FinetuneSizes = FinetuneSizes()
    regularisation: RegularisationSizes = RegularisationSizes()


BOOK = ContrastiveSizes()
CI = override(
    BOOK,
    allocation={"n": 40_000, "grid_points": 201},  # alpha = 1 sits on the boundary: a coarse grid finds it
    tradeoff={"n_test": 1000},  # half the test points: the paired differences stay beyond 2 se
    regularisation={"ms": (20,)},  # one label budget: the table's middle column
)
FULL = override(
    BOOK,
    allocation={"n": 400_000, "grid_points": 2001},  # the notes' N = 4e5
    pretrain={"steps": 1000, "replicas": 16},  # the notes' full size: longer training, more seeds
    tradeoff={"draws": 40, "n_test": 5000, "closed_replicas": 64},
    finetune={"steps": 600},
    regularisation={"replicas": 32, "steps": 600},
)  # FULL: the paper-scale counterpart of every experiment (runs unchanged on CUDA)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}


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
    (s, r) and T, one Monte-Carlo sample per cell."""
    a = size.allocation
    alpha = torch.empty(len(a.pairs), len(a.Ts), dtype=DTYPE)
    beta = torch.empty_like(alpha)
    curves, grid = {}, None
    for i, (s, r) in enumerate(a.pairs):
        for j, T in enumerate(a.Ts):
            sol = theory.solve_allocation(s, r, T, a.n, 1, run.generator("allocation", s, r, T), a.grid_points)
            alpha[i, j], beta[i, j] = sol.alpha[0], sol.beta[0]
            if i == 0:
                curves[T], grid = sol.loss[0], sol.grid
    return AllocationResult(a.pairs, a.Ts, alpha, beta, grid, curves)


# -- Experiment 2: learned representations --------------------------------------------------------------------------
def pretrain_configs(model: MultiTaskLinear) -> tuple[torch.Tensor, list[str]]:
    """The pre-training sets: the first n tasks for n = 1..T (the target is task 1) and task 2 alone. (C, T)."""
    rows = [model.first_tasks(n) for n in range(1, model.T + 1)]
    other = torch.zeros(model.T, dtype=torch.float64)
    other[1] = 1.0
    names = ["task 1" if n == 1 else f"tasks 1-{n}" for n in range(1, model.T + 1)] + ["task 2"]
    return torch.stack(rows + [other]), names


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

    def block(self, name: str) -> torch.Tensor:
        """Mean squared weight on a block, (R, C): "S", "U", or "P1".."PT"."""
        return block_mean(self.model, self.weights, name)


def learn_representations(model: MultiTaskLinear, configs: torch.Tensor, p: PretrainSizes, generator: torch.Generator,
                          W0: torch.Tensor | None = None, project=None):
    """Projected GD on the contrastive loss for every replica x configuration (R, C), batched.
    Returns (W (R, C, k, d), history)."""
    R, C = p.replicas, configs.shape[0]
    if W0 is None:
        W0 = p.init_scale * torch.randn(R, C, model.k, model.d, generator=generator, dtype=DTYPE)
    W = W0.to(model.M.device).clone().requires_grad_()
    included = configs.expand(R, C, model.T)
    fro = math.sqrt(model.r)
    if project is None:
        def project():
            W.copy_(project_spectral_frobenius(W, 1.0, fro))

    def loss(step):
        return contrastive_loss(model, W, model.mixture_tasks(included, p.batch, generator), generator)

    history = train([W], lambda step: loss(step).sum(),
                    OptimConfig(steps=p.steps, lr=p.lr, optimizer="gd", warmup=0),
                    log_every=max(1, p.steps // 10), log_fn=lambda step: {"loss": loss(step)}, project=project)
    return W.detach(), history


def pretrain(size: ContrastiveSizes, run: Run) -> Pretrained:
    """Learn W on every pre-training set (Sec. 7.2.2: the even mixtures of the first n tasks and the single tasks),
    read the feature weights and compare the representations by linear CKA on target-task inputs."""
    model = draw_model(size, run)
    configs, names = pretrain_configs(model)
    W, hist = learn_representations(model, configs, size.pretrain, run.generator("pretrain"))
    weights = feature_weights(W, model.M).cpu()  # measurements live on the CPU (the notebook's statistics)
    g = run.generator("cka")
    z = model.sample_z(torch.zeros(size.pretrain.replicas, size.pretrain.cka_samples, dtype=torch.long), g)
    feats = torch.einsum("rnd,rckd->rcnk", model.inputs(z), W)
    cka, closed = {}, {}
    s, r, T = model.s, model.r, model.T
    for n in range(2, T + 1):
        cka[f"1 vs 1-{n}"] = linear_cka(feats[:, 0], feats[:, n - 1]).cpu()
        closed[f"1 vs 1-{n}"] = float(theory.cka_mixtures(1, n, s, r))
    cka["1 vs 2"] = linear_cka(feats[:, 0], feats[:, T]).cpu()
    closed["1 vs 2"] = math.sqrt(s / r)
    return Pretrained(model, names, configs, W, weights, hist["loss"].cpu(), hist["step"], cka, closed)


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
    g = torch.randn(replicas, D, 2, r, generator=generator, dtype=DTYPE)
    u = torch.cat([g[..., 0, :s] / g[..., 0, :s].norm(dim=-1, keepdim=True),
                   g[..., 1, s:] / g[..., 1, s:].norm(dim=-1, keepdim=True)], -1).to(device) / math.sqrt(2)

    def labelled(n):
        z = torch.randn(replicas, D, n, r, generator=generator, dtype=DTYPE).to(device)
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
    acc = learned_probe_accuracy(model, pre.W, range(T), t, t.ms, run.generator("tradeoff_learned"))
    R, D = acc.shape[1], acc.shape[-1]
    per = acc[:, :, :T]  # (ms, R, n, tasks, D): mixtures of the first n tasks
    target = per[:, :, :, 0].permute(0, 2, 1, 3).reshape(len(t.ms), T, R * D)
    average = per.mean(3).permute(0, 2, 1, 3).reshape(len(t.ms), T, R * D)
    learned = TradeoffCurve("learned, T=4", tuple(range(1, T + 1)), tuple(t.ms), T, target, average)
    other = acc[:, :, 0, 1].reshape(len(t.ms), R * D)
    closed = closed_form_curve(model.s, model.r, T, tuple(range(1, T + 1)), t, t.closed_replicas,
                               run.generator("tradeoff_closed"), run.device, f"closed form, T={T}")
    large = closed_form_curve(model.s, model.r, t.large_T, t.large_prefixes, t, t.closed_replicas,
                              run.generator("tradeoff_large"), run.device, f"closed form, T={t.large_T}")
    return Tradeoff(learned, closed, large, other)


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
    model: MultiTaskLinear

    def block(self, name: str) -> torch.Tensor:
        """Mean squared weight on a block, (R, G)."""
        return block_mean(self.model, self.weights, name)


def finetune(size: ContrastiveSizes, run: Run) -> Finetuned:
    """Start from the closed-form mixture representation W* (alpha = 1, beta = 1/T), run projected GD on the target
    task's contrastive loss within {||W - W*||_F <= gamma, ||W|| <= 1} (F.104-F.105; the projection onto the
    intersection by Dykstra's algorithm), then probe the target task."""
    f = size.finetune
    model = draw_model(size, run)
    T, G, R = model.T, len(f.gammas), size.pretrain.replicas
    W_star = model.representation(model.block_weights(T, 1.0, 1.0 / T))
    W0 = W_star.expand(R, G, *W_star.shape).clone()
    radius = torch.tensor(f.gammas, dtype=DTYPE, device=model.M.device)[None, :, None, None]
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
    g = run.generator("finetune")

    def loss(step):
        return contrastive_loss(model, W, model.mixture_tasks(included, size.pretrain.batch, g), g)

    train([W], lambda step: loss(step).sum(), OptimConfig(steps=f.steps, lr=f.lr, optimizer="gd", warmup=0),
          project=project)
    W = W.detach()
    weights = feature_weights(W, model.M).cpu()
    distance = (W - W_star).pow(2).sum((-1, -2)).sqrt().cpu()
    spectral = torch.linalg.matrix_norm(W, 2).cpu()
    W_spec = model.representation(model.block_weights(1, 1.0, 1.0)).expand(R, 1, model.k, model.d)
    t_sizes = size.tradeoff
    acc = learned_probe_accuracy(model, torch.cat([W, W_spec], 1), [0], t_sizes, f.ms, run.generator("finetune_lp"))
    acc = acc[:, :, :, 0].permute(0, 2, 1, 3).reshape(len(f.ms), G + 1, -1)
    predicted = tuple(theory.finetune_beta(model.s, T, gam) for gam in f.gammas)
    return Finetuned(tuple(f.gammas), weights, distance, spectral, predicted, tuple(f.ms), acc, model)


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

    def loss(step):
        phi = torch.einsum("rmad,rskd->rsmak", x_aug, W)
        pred = (phi * u[:, :, None, None]).sum(-1) + b[..., None, None]
        cls = torch.nn.functional.softplus(-y[:, None, :, None] * pred).mean((-1, -2))
        cls = cls + r_sizes.head_penalty * u.pow(2).sum(-1)
        i = torch.randint(m, (r_sizes.pairs,), generator=generator).to(dev)
        a = torch.randint(A, (2, r_sizes.pairs), generator=generator).to(dev)
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
    return RegularisationRow(T, m, lp.cpu(), acc[:, 0].cpu(), acc[:, 1].cpu(), private[:, 0].cpu(),
                             private[:, 1].cpu())


def regularisation_table(size: ContrastiveSizes, run: Run) -> list[RegularisationRow]:
    """LP, FT and Ours for every T and m of ``size.regularisation`` (the analogue of Tables 7.1 / F.5)."""
    r_sizes = size.regularisation
    rows = []
    for T in r_sizes.Ts:
        model = draw_model(size, run, T)
        for m in r_sizes.ms:
            rows.append(regularised_finetune(model, m, r_sizes, run.generator("regularisation", T, m),
                                             size.tradeoff.C))
    return rows


# -- figures ---------------------------------------------------------------------------------------------------------
def plot_block_weights(pre: Pretrained):
    """Mean squared feature weight on S, each P_t and U per pre-training set (mean over replicas), with the closed
    form (Props. 7.3 / 7.4) as the outline bars' targets."""
    from feature_learning.plotting.curves import grouped_bars

    m = pre.model
    blocks = ["S"] + [f"P{t}" for t in range(1, m.T + 1)] + ["U"]
    series = {name: [float(pre.block(b)[:, c].mean()) for b in blocks] for c, name in enumerate(pre.names)}
    return grouped_bars(blocks, series, ylabel=r"mean $a_j^2$ on the block", title="learned feature weights")


def plot_tradeoff(curves: list[TradeoffCurve], m: int, bound_Ts=(1, 2, 4, 8, 16)):
    """Target and average probe accuracy against the number of pre-training tasks (mean +- se over replicas and
    labelled sets), one panel per curve, and the bound ratio (T+1)/(2 sqrt T) of Prop. F.8."""
    from feature_learning.plotting.curves import Curve, Panel, plot_panels

    panels = []
    for c in curves:
        i = c.ms.index(m)
        n = math.sqrt(c.target.shape[-1])
        panels.append(Panel([
            Curve(list(c.ns), c.target[i].mean(-1), "target task", "o-", yerr=c.target[i].std(-1) / n),
            Curve(list(c.ns), c.average[i].mean(-1), f"average over {c.T} tasks", "s--",
                  yerr=c.average[i].std(-1) / n)],
            xlabel="tasks in pre-training", ylabel=f"probe accuracy (m={m})", title=c.label, ticks_at_x=True,
            legend_size=8))
    panels.append(Panel([Curve(list(bound_Ts), [theory.bound_ratio(T) for T in bound_Ts], r"$(T+1)/(2\sqrt{T})$",
                               "k.-")],
                        xlabel="T", ylabel="universal / specific bound", title="Prop. F.8", xscale="log",
                        ticks_at_x=True, legend_size=8))
    return plot_panels(panels, width=4.6, height=3.3)


def plot_finetune(f: Finetuned):
    """Squared feature weights after contrastive fine-tuning against gamma (replicas' mean, se on the target's
    private features) and Prop. F.9's curve."""
    from feature_learning.plotting.curves import Curve, Panel, plot_panels

    m = f.model
    grid = torch.linspace(0, max(f.gammas), 200, dtype=DTYPE)
    gammas = list(f.gammas)
    P1 = f.block("P1")
    return plot_panels([Panel([
        Curve(grid, [theory.finetune_beta(m.s, m.T, float(g)) for g in grid],
              r"Prop. F.9: $\min(1,1/\sqrt{T}+\gamma/\sqrt{s})^2$", "k-"),
        Curve(gammas, P1.mean(0).tolist(), "learned: target's private features", "o",
              yerr=(P1.std(0) / math.sqrt(P1.shape[0])).tolist()),
        Curve(gammas, f.block("P2").mean(0).tolist(), "learned: other tasks' private features", "s"),
        Curve(gammas, f.block("S").mean(0).tolist(), "learned: shared features", "^"),
    ], xlabel=r"$\gamma$", ylabel=r"mean $a_j^2$", title="contrastive fine-tuning on the target task",
        legend_size=8)], width=4.6, height=3.3)


# -- the source map ---------------------------------------------------------------------------------------------------
LINEAR_ANALOGUE = ("the source's own linear multi-task model (Sec. 7.2.2): representations learned by projected "
                   "gradient descent, L2-penalised logistic probes on m labelled points")


def source_map(size: ContrastiveSizes, pre: Pretrained, reg: list[RegularisationRow]) -> list[dict]:
    """Every result of ch. 7 and App. F the chapter rests on, its status here and the claims that carry it
    (``ClaimLedger.source``)."""
    T = size.model.T
    a = LINEAR_ANALOGUE
    private = [f"mixture_private_weight_P{t}" for t in range(1, T + 1)]
    cka = [f"cka_{pair.replace(' ', '_')}" for pair in pre.cka]
    reg20 = [r.T for r in reg if r.m == 20]
    return [
        dict(id="thm71", where="Thm 7.1, App. F.1", status="verified", claims=["thm71_identity"],
             what="With l(t) = -t the contrastive loss is the PCA objective of the augmentation-smoothed "
                  "representation"),
        dict(id="f11_xor", where="App. F.1.1", status="verified", claims=["xor_optimal"],
             what="A contrastive optimum can encode a feature without making it linearly usable (the XOR table)"),
        dict(id="thm72_1", where="Thm 7.2 (1)", status="verified", claims=["mixture_spurious_weight"],
             what="The optimal representation does not depend on the spurious (augmentation-changed) features"),
        dict(id="thm72_2", where="Thm 7.2 (2)", status="not attempted",
             what="Each invariant feature is encoded once B_r >= B_i; more spread-out features are encoded first",
             note="a sweep of the norm budget B_r on a finite Z was not built (review fix 3, left for later)"),
        dict(id="prop73", where="Prop. 7.3, Prop. F.8, Lemma F.3", status="verified",
             what="On an even mixture of T tasks the representation is Q(sqrt(alpha) z_S + sqrt(beta) z_rest) with "
                  "alpha = 1, beta = 1/T (r = 2s); the probe's risk bound scales as 1/sqrt(m)",
             claims=["allocation_alpha", "beta_one_over_T", "mixture_shared_weight", *private,
                     "drop_shrinks_with_m"]),
        dict(id="prop_f8_ratio", where="Prop. F.8, App. F.2.4", status="verified",
             what="The universal representation's bound is worse than the specific one's by O(sqrt T)",
             claims=["bound_ratio", "f24_identity", "drop_grows_with_T"]),
        dict(id="prop74", where="Prop. 7.4", status="verified",
             what="Pre-trained on task t alone, the representation keeps exactly R_t; on another task only the "
                  "shared features remain",
             claims=["single_S_weight", "single_P1_weight", "single_other_weight", "average_rises_each_task_m200"]),
        dict(id="lemma_f5", where="Lemma F.5 (F.64-F.68)", status="verified", claims=["min_norm_predictor"],
             what="The min-norm probe on the universal representation has ||u||^2 = v1/alpha + v2/beta"),
        dict(id="lemma_f5_sqrt", where="Lemma F.5, proof", status="erratum", claims=["min_norm_predictor"],
             what="X_{t,j} = alpha sum z_j, K = max(C_2 m alpha_t sigma_S^2, ...)",
             note="sqrt(alpha) sum z_j (its stated variance m alpha is that of sqrt(alpha) sum z_j), and alpha for S"),
        dict(id="prop_f8_dominance", where="Prop. F.8, proof", status="erratum", claims=["allocation_alpha"],
             what="alpha Z + (2 - alpha) Z_1 / T at alpha = 1 'stochastically dominates' the other alpha",
             note="not pointwise (the Z and Z_1 terms trade off for T > 1); the conclusion alpha = 1 holds, as the "
                  "reduced problem solved numerically shows"),
        dict(id="prop_f9", where="Prop. F.9 (F.104-F.112)", status="verified",
             what="Contrastive fine-tuning within ||W - W*||_F <= gamma raises the target's private weight to "
                  "min(1, 1/sqrt(T) + gamma/sqrt(s)) and keeps the rest",
             claims=["f9_solution", "f9_private_weight", "f9_shared_kept", "f9_others_kept",
                     "finetune_reaches_specific"]),
        dict(id="fig71", where="Sec. 7.3.1, Fig. 7.1, Table 7.1 (LP row)", status="reproduced on an analogue",
             analogue=a, what="Adding pre-training sets lowers the target's linear-probe accuracy and raises the "
                              "average over tasks (MoCo v2, CINIC-10 + SVHN + GTSRB + ImageNet32)",
             claims=["target_falls", "average_rises", "table71_lp_falls"]),
        dict(id="fig71_text", where="Sec. 7.3.1 text vs Table 7.1", status="erratum",
             claims=["fig71_text_vs_table71"], what="CIFAR-10 LP accuracy 88.5 -> 76.4",
             note="Table 7.1 prints 88.41 -> 75.64"),
        dict(id="fig73", where="Fig. 7.3, App. F.3.2, F.3.5", status="not attempted",
             what="The trade-off for MoCo v2, NNCLR and SimSiam on three target tasks",
             note="ResNet18 pre-training for 800 epochs on four image collections: out of reach on a CPU; the "
                  "notes' nonlinear InfoNCE prototype gave no clean trade-off, so no nonlinear analogue is built"),
        dict(id="fig74", where="Fig. 7.4", status="not attempted",
             what="The trade-off on ImageNet subsets (MoCo v3, SimSiam)", note="ImageNet pre-training: out of reach"),
        dict(id="tables_f2_f3", where="Tables F.2, F.3", status="not attempted",
             what="MoCo v3 LP accuracy on ImageNet-Bird / -Vehicle with 500 to 8k labels: the specific "
                  "pre-training's advantage shrinks with more labels",
             note="ImageNet pre-training: out of reach; the linear model's version is drop_shrinks_with_m (Prop. "
                  "7.3)"),
        dict(id="fig75", where="Sec. 7.3.2, Fig. 7.5", status="reproduced on an analogue", analogue=a,
             what="Linear CKA to the target-specific representation falls as pre-training sets are added; "
                  "representations from different tasks are dissimilar",
             claims=["cka_falls_with_tasks", *cka]),
        dict(id="table72_ft_lp", where="Tables 7.1, 7.2", status="reproduced on an analogue", analogue=a,
             what="Fine-tuning beats linear probing on the universal representation",
             claims=[f"ft_beats_lp_T{t}" for t in reg20]),
        dict(id="sec733_mechanism", where="Sec. 7.2.2, 7.3.3, Fig. F.8", status="reproduced on an analogue",
             analogue=a, what="Contrastive regularisation highlights the task-specific (private) features",
             claims=[f"ours_raises_private_T{t}" for t in reg20]),
        dict(id="table72_gain", where="Sec. 7.3.3, Tables 7.1, 7.2", status="not testable here",
             what="Contrastive regularisation beats fine-tuning by 0.4 to 4.8 points (0.7 to 1 on CIFAR-10)",
             claims=[f"ours_beats_ft_T{t}" for t in reg20],
             note="in the linear model fine-tuning already finds a near-optimal head; the source's regime (deep "
                  "encoders, real augmentations, fine-tuning far from optimal) is not simulated"),
        dict(id="table_f9", where="Table F.9, App. F.3.4", status="reproduced on an analogue", analogue=a,
             what="Contrastive regularisation, then a linear probe, beats the probe on the pre-trained "
                  "representation", claims=["finetune_improves_probe"]),
        dict(id="table_f9_trend", where="Table F.9", status="not attempted",
             what="... and the gain grows as the pre-training data grow more diverse",
             note="fine-tuning is run at T = 4 only; Table F.9's arithmetic: tablef9_gain_grows"),
        dict(id="foundation_models", where="Sec. 7.3.3, Table 7.2", status="not attempted",
             what="CLIP (ViT-L), MoCo v3 (ViT-B) and SimCSE (BERT) with contrastive regularisation",
             note="no foundation-model weights or data here; Table 7.2 is carried as data (table72_range)"),
    ]

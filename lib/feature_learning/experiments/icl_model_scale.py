"""Chapter "Model scale and in-context learning" (dissertation ch. 5, appendix D): sizes, recipes and runs.

The source has no synthetic experiments for sections 5.4-5.5; the configuration (d = 8, N = 64, the spectrum below,
(nu1, nu2) = (1, 3), gamma = 0.2) is the one of the chapter notes and is stated in the chapter. Section 5.6's LLM
experiments cannot run here; :func:`transformer_scale_sweep` repeats their protocol on tiny softmax transformers.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from feature_learning.book.profiles import Run, override
from feature_learning.data.in_context import icl_classification_tokens, parity_task_sets, random_orthogonal
from feature_learning.measure.in_context import (
    icl_flip_accuracy,
    mc_parity_accuracy,
    mc_regression_risk,
    projection_energy,
)
from feature_learning.models.linear_attention import lsa_population_loss
from feature_learning.plotting.curves import series_panels
from feature_learning.theory import icl as theory
from feature_learning.training.loop import OptimConfig, train

DTYPE = torch.float64  # closed forms and Monte Carlo in float64; the transformers train in float32
SPECTRUM = (2.0, 1.5, 1.0, 0.5, 0.25, 0.15, 0.1, 0.05)  # eigenvalues of Lambda (the notes' configuration)
EVAL_TASK = (1.0, -0.8, 0.5, 0.3, 0.4, -0.2, 0.3, 0.1)  # c = Q^T w of the evaluation task (the notes' F4)
SPECIAL_TASK = (1.0, -0.7)  # s of Theorem 5.4.3's special case, in the top-2 eigen-directions (the notes' F6)
ALL_RANKS = (1, 2, 3, 4, 5, 6, 7, 8)


# -- sizes ----------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RegressionSizes:
    d: int = 8
    N: int = 64  # pretraining context length
    spectrum: tuple[float, ...] = SPECTRUM  # descending and distinct, so the optimum is unique up to c


@dataclasses.dataclass(frozen=True)
class TrainSizes:
    ranks: tuple[int, ...] = ALL_RANKS  # ranks trained on the exact population loss
    steps: int = 3000


@dataclasses.dataclass(frozen=True)
class RiskSizes:
    ranks: tuple[int, ...] = ALL_RANKS  # optimal rank-r models evaluated by Monte Carlo
    sigmas: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0)  # label-noise levels
    Ms: tuple[int, ...] = (16, 64)  # evaluation context lengths (16 as in section 5.6)
    prompts: int = 60_000  # Monte Carlo prompts per point
    best_rank_sigmas: tuple[float, ...] = (0.0, 2.0, 4.0)  # noise levels of the best-rank trade-off


@dataclasses.dataclass(frozen=True)
class ParitySizes:
    nu1: int = 1  # the small model has 2 (nu1 + 1) heads, k = 2^nu1 important features
    nu2: int = 3  # the large model has 2 (nu2 + 1) heads, d = 2^nu2 features
    gamma: float = 0.2
    Ms: tuple[int, ...] = (16, 32, 64, 128, 256, 1024)  # evaluation context lengths
    prompts: int = 20_000  # Monte Carlo prompts per M and per flip fraction
    energy_prompts: int = 20_000  # prompts for the projection energies of Theorem 5.5.2
    min_norm_steps: int = 3000


@dataclasses.dataclass(frozen=True)
class TransformerSizes:
    """The LLM analogue (not in the source): binary ICL with a prior direction, w = e_1 + tau g / sqrt(d), M = 16
    in-context examples as in section 5.6, transformers whose width, heads and depth grow together."""

    shapes: tuple[tuple[int, int, int], ...] = ((8, 1, 1), (16, 2, 2), (32, 4, 2))  # (d_model, heads, blocks)
    d: int = 8
    M: int = 16
    tau: float = 1.0
    lr: float = 3e-3
    steps: int = 1000
    batch: int = 64
    seeds: int = 4  # replicas trained as one batched program
    eval_prompts: int = 4000


@dataclasses.dataclass(frozen=True)
class ICLSizes:
    regression: RegressionSizes = RegressionSizes()
    train: TrainSizes = TrainSizes()
    risk: RiskSizes = RiskSizes()
    flips: tuple[float, ...] = (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0)  # flipped fractions of context labels
    parity: ParitySizes = ParitySizes()
    transformer: TransformerSizes = TransformerSizes()


BOOK = ICLSizes()
CI = override(
    BOOK,
    train={"ranks": (1, 2, 4, 8), "steps": 2000},  # the smallest, largest and two middle ranks
    risk={"ranks": (1, 2, 4, 8), "sigmas": (0.0, 1.0, 2.0, 4.0), "prompts": 20_000},  # CI time
    flips=(0.0, 0.25, 0.5, 0.75, 1.0),
    parity={"Ms": (16, 64, 256, 1024), "prompts": 4000, "min_norm_steps": 1500},
    transformer={"steps": 600, "seeds": 3, "eval_prompts": 2000},  # the transformers dominate the CI time
)
FULL = override(
    BOOK,
    train={"steps": 20_000},
    risk={"prompts": 1_000_000},
    parity={"prompts": 100_000, "min_norm_steps": 10_000},
    transformer={"shapes": (*BOOK.transformer.shapes, (64, 8, 2)), "steps": 5000, "batch": 256, "seeds": 5,
                 "eval_prompts": 5000},  # the notes' full-size T1
)
SIZES = {"ci": CI, "book": BOOK, "full": FULL}


# -- the regression setting ------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Setting:
    """Lambda = Q diag(lam) Q^T with a random orthogonal Q (section 5.4)."""

    Q: torch.Tensor
    lam: torch.Tensor
    N: int

    @property
    def Lam(self) -> torch.Tensor:
        return self.Q @ torch.diag(self.lam) @ self.Q.T

    @property
    def d(self) -> int:
        return len(self.lam)

    def optimal_U(self, r: int) -> torch.Tensor:
        return theory.optimal_U(self.Q, self.lam, self.N, r)

    def optimal_Us(self, ranks) -> torch.Tensor:
        return torch.stack([self.optimal_U(r) for r in ranks])


def setting(size: ICLSizes, run: Run) -> Setting:
    s = size.regression
    return Setting(random_orthogonal(s.d, run.generator(1)), torch.tensor(s.spectrum, dtype=DTYPE), s.N)


# -- Experiment 1: training the rank-r attention --------------------------------------------------------------------
def train_rank_r_lsa(Lam: torch.Tensor, N: int, ranks, steps: int, generator: torch.Generator,
                     lr: float = 0.05, init_scale: float = 0.01):
    """Gradient training (Adam) of rank-r factorised reduced LSAs U = A B^T (A, B in R^{d x r}), u = 1, on the exact
    population loss of Lemma 5.1, whose minimiser Theorem 5.4.1 gives. All ranks train as one batched program:
    replica k holds d x d factors whose columns beyond ranks[k] are masked to zero. Returns (U (K, d, d), history)."""
    d, K = Lam.shape[0], len(ranks)
    mask = (torch.arange(d)[None, None, :] < torch.tensor(ranks)[:, None, None]).to(Lam.dtype)  # (K, 1, d)
    A = (init_scale * torch.randn(K, d, d, generator=generator, dtype=Lam.dtype)).requires_grad_()
    B = (init_scale * torch.randn(K, d, d, generator=generator, dtype=Lam.dtype)).requires_grad_()
    ones = torch.ones(K, dtype=Lam.dtype)

    def U_of() -> torch.Tensor:
        return (A * mask) @ (B * mask).transpose(1, 2)

    def loss_fn(step: int) -> torch.Tensor:
        return lsa_population_loss(U_of(), ones, Lam, N).sum()

    history = train([A, B], loss_fn, OptimConfig(steps=steps, lr=lr, warmup=10, schedule="cosine",
                                                 betas=(0.9, 0.999)),
                    log_every=max(1, steps // 100),
                    log_fn=lambda s: {"loss": lsa_population_loss(U_of(), ones, Lam, N)})
    return U_of().detach(), history


@dataclasses.dataclass
class Training:
    ranks: tuple[int, ...]
    U: torch.Tensor  # (K, d, d) trained attentions
    U_star: torch.Tensor  # (K, d, d) Theorem 5.4.1
    loss: torch.Tensor  # (K,) trained population loss (Lemma 5.1)
    L_r: torch.Tensor  # (K,) the closed-form optimal loss

    @property
    def rel_errors(self) -> torch.Tensor:
        return (self.U - self.U_star).flatten(1).norm(dim=1) / self.U_star.flatten(1).norm(dim=1)

    @property
    def loss_gaps(self) -> torch.Tensor:
        return (self.loss - self.L_r).abs()


def exact_training(size: ICLSizes, run: Run, st: Setting) -> Training:
    """Experiment 1: every rank of ``size.train`` trained on the exact population loss."""
    t = size.train
    U, hist = train_rank_r_lsa(st.Lam, st.N, t.ranks, t.steps, run.generator(2))
    L_r = torch.stack([theory.rank_r_pretraining_loss(st.lam, st.N, r) for r in t.ranks])
    return Training(t.ranks, U, st.optimal_Us(t.ranks), hist["loss"][-1], L_r)


def plot_training(tr: Training, st: Setting):
    """The trained full-rank attention in the eigenbasis, and each rank's diagonal against v*."""
    V = st.Q.T @ tr.U[-1] @ st.Q
    series = []
    for k, r in enumerate(tr.ranks):
        diag = torch.diagonal(st.Q.T @ tr.U[k] @ st.Q)
        series.append({"x": range(1, st.d + 1), "y": diag, "style": "o", "color": f"C{k}", "label": f"trained r={r}"})
        series.append({"x": range(1, st.d + 1), "y": theory.v_star(st.lam, st.N, r), "style": "k_", "ms": 12})
    return series_panels([
        {"matrix": V, "title": f"Q^T U Q, trained, r={tr.ranks[-1]}"},
        {"series": series, "xlabel": "eigen-direction i", "ylabel": r"$(Q^\top U Q)_{ii}$ (dashes: $v_i^*$)"},
    ], width=4.5)


# -- Experiment 2: the evaluation risk ------------------------------------------------------------------------------
@dataclasses.dataclass
class RiskSweep:
    ranks: tuple[int, ...]
    sigmas: tuple[float, ...]
    Ms: tuple[int, ...]
    mean: torch.Tensor  # (M, sigma, rank) Monte Carlo risk
    se: torch.Tensor
    closed: torch.Tensor  # Theorem 5.4.2
    closed_slopes: list  # per M: the exact slope in sigma^2, sum_{i<=r} a_i^2 / M, per rank

    @property
    def zmax(self) -> float:
        return float(((self.mean - self.closed).abs() / self.se).max())

    def slopes(self, m: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Least-squares slope of the Monte Carlo risk in sigma^2 per rank at Ms[m], and the closed form."""
        sig2 = np.array([s**2 for s in self.sigmas])
        mc = np.array([np.polyfit(sig2, self.mean[m, :, k].numpy(), 1)[0] for k in range(len(self.ranks))])
        return mc, np.array(self.closed_slopes[m])


def eval_risk_sweep(size: ICLSizes, run: Run, st: Setting) -> RiskSweep:
    """Experiment 2: the optimal rank-r attentions on fresh prompts with the fixed task c = EVAL_TASK, label noise
    sigma and context length M, all ranks on the same prompts (common random numbers), against Theorem 5.4.2."""
    r = size.risk
    c = torch.tensor(EVAL_TASK, dtype=DTYPE)
    Us = st.optimal_Us(r.ranks)
    shape = (len(r.Ms), len(r.sigmas), len(r.ranks))
    mean, se, closed = torch.zeros(shape, dtype=DTYPE), torch.zeros(shape, dtype=DTYPE), torch.zeros(shape, dtype=DTYPE)
    g = run.generator(3)
    for i, M in enumerate(r.Ms):
        for j, sigma in enumerate(r.sigmas):
            mean[i, j], se[i, j], _ = mc_regression_risk(st.Q, st.lam, Us, M, r.prompts, g, w=st.Q @ c, sigma=sigma)
            closed[i, j] = torch.stack([theory.eval_risk(c, st.lam, st.N, M, rank, sigma) for rank in r.ranks])
    slopes = [[float((st.lam * theory.v_star(st.lam, st.N, k)).pow(2).sum() / M) for k in r.ranks] for M in r.Ms]
    return RiskSweep(r.ranks, r.sigmas, r.Ms, mean, se, closed, slopes)


def plot_risk(rs: RiskSweep):
    mc, th = rs.slopes()
    series = []
    for j, sigma in enumerate(rs.sigmas):
        series.append({"x": rs.ranks, "y": rs.mean[0, j], "yerr": 2 * rs.se[0, j], "style": "o", "color": f"C{j}",
                       "label": f"MC, sigma={sigma}"})
        series.append({"x": rs.ranks, "y": rs.closed[0, j], "style": "-", "color": f"C{j}"})
    return series_panels([
        {"series": series, "xlabel": "rank r", "ylabel": f"evaluation risk, M={rs.Ms[0]}"},
        {"series": [{"x": rs.ranks, "y": th, "style": "k-", "label": r"closed form $\sum_{i\leq r}a_i^2/M$"},
                    {"x": rs.ranks, "y": mc, "style": "o", "label": "MC slope"}],
         "xlabel": "rank r", "ylabel": r"d risk / d $\sigma^2$", "legend": 8},
    ])


@dataclasses.dataclass
class Tradeoff:
    sigmas: tuple[float, ...]
    gap_mc: list[float]  # Theorem 5.4.3: risk of rank 6 minus rank 2, w in the top-2 span, M = 16
    gap_se: list[float]
    gap_closed: list[float]
    best_sigmas: tuple[float, ...]
    ranks: tuple[int, ...]  # 0..d
    ew_closed: torch.Tensor  # (sigma, rank) E_w risk, closed form, M = 16
    ew_mean: torch.Tensor  # Monte Carlo
    ew_se: torch.Tensor

    @property
    def gap_z(self) -> float:
        return max(abs(a - b) / s for a, b, s in zip(self.gap_mc, self.gap_closed, self.gap_se, strict=True))

    @property
    def best_closed(self) -> list[int]:
        return [int(torch.argmin(row)) for row in self.ew_closed]

    @property
    def best_mc(self) -> list[int]:
        return [int(torch.argmin(row)) for row in self.ew_mean]


def scale_tradeoff(size: ICLSizes, run: Run, st: Setting, M: int = 16) -> Tradeoff:
    """Theorem 5.4.3's special case (ranks 2 and 6) against sigma, and the risk averaged over w ~ N(0, I) against the
    rank for a few noise levels (closed form with c = 1, and Monte Carlo on common random numbers)."""
    r = size.risk
    s_task = torch.zeros(st.d, dtype=DTYPE)
    s_task[: len(SPECIAL_TASK)] = torch.tensor(SPECIAL_TASK, dtype=DTYPE)
    U26 = st.optimal_Us((2, 6))
    gap_mc, gap_se, gap_closed = [], [], []
    for sigma in r.sigmas:
        mean, se, _ = mc_regression_risk(st.Q, st.lam, U26, M, r.prompts, run.generator(4), w=st.Q @ s_task,
                                         sigma=sigma)
        gap_mc.append(float(mean[1] - mean[0])), gap_se.append(float(se[0] + se[1]))
        gap_closed.append(float(theory.eval_risk(s_task, st.lam, st.N, M, 6, sigma)
                                - theory.eval_risk(s_task, st.lam, st.N, M, 2, sigma)))
    ranks = tuple(range(st.d + 1))
    U_all = st.optimal_Us(ranks)
    ones = torch.ones(st.d, dtype=DTYPE)
    closed, means, ses = [], [], []
    for sigma in r.best_rank_sigmas:
        closed.append(torch.stack([theory.eval_risk(ones, st.lam, st.N, M, k, sigma) for k in ranks]))
        mean, se, _ = mc_regression_risk(st.Q, st.lam, U_all, M, r.prompts, run.generator(5), w=None, sigma=sigma)
        means.append(mean), ses.append(se)
    return Tradeoff(r.sigmas, gap_mc, gap_se, gap_closed, r.best_rank_sigmas, ranks, torch.stack(closed),
                    torch.stack(means), torch.stack(ses))


def plot_best_rank(tr: Tradeoff):
    series = []
    for j, sigma in enumerate(tr.best_sigmas):
        series.append({"x": tr.ranks, "y": tr.ew_closed[j], "style": "-", "color": f"C{j}",
                       "label": f"sigma={sigma}, best r={tr.best_closed[j]}"})
        series.append({"x": tr.ranks, "y": tr.ew_mean[j], "yerr": 2 * tr.ew_se[j], "style": "o", "ms": 3,
                       "color": f"C{j}"})
    return series_panels([{"series": series, "xlabel": "rank r", "ylabel": r"$\mathbb{E}_w$ risk, M=16",
                           "legend": 8}], width=5.2)


@dataclasses.dataclass
class FlipSweep:
    ranks: tuple[int, ...]
    flips: tuple[float, ...]
    mean: torch.Tensor  # (flip, rank) Monte Carlo risk
    se: torch.Tensor
    closed: torch.Tensor
    accuracy: torch.Tensor  # sign accuracy

    @property
    def zmax(self) -> float:
        return float(((self.mean - self.closed).abs() / self.se).max())


def flip_sweep(size: ICLSizes, run: Run, st: Setting, ranks=(2, 8), M: int = 16) -> FlipSweep:
    """The optimal rank-2 and full-rank attentions with exactly a fraction p of the M context labels flipped, against
    the risk derived in the chapter (Theorem 5.4.2 with the flip factor (1 - 2p))."""
    c = torch.tensor(EVAL_TASK, dtype=DTYPE)
    Us = st.optimal_Us(ranks)
    rows = []
    for p in size.flips:
        mean, se, acc = mc_regression_risk(st.Q, st.lam, Us, M, size.risk.prompts, run.generator(6), w=st.Q @ c,
                                           flip_frac=p)
        closed = torch.stack([theory.eval_risk(c, st.lam, st.N, M, r, 0.0, p) for r in ranks])
        rows.append((mean, se, closed, acc))
    return FlipSweep(ranks, tuple(size.flips), *(torch.stack(col) for col in zip(*rows, strict=True)))


def plot_flips(fs: FlipSweep):
    risk, acc = [], []
    for k, r in enumerate(fs.ranks):
        risk.append({"x": fs.flips, "y": fs.closed[:, k], "style": "-", "color": f"C{k}", "label": f"closed, r={r}"})
        risk.append({"x": fs.flips, "y": fs.mean[:, k], "style": "o", "color": f"C{k}", "label": f"MC, r={r}"})
        acc.append({"x": fs.flips, "y": fs.accuracy[:, k], "style": "o-", "color": f"C{k}", "label": f"r={r}"})
    return series_panels([
        {"series": risk, "xlabel": "fraction of flipped context labels", "ylabel": "risk, M=16"},
        {"series": acc, "xlabel": "fraction of flipped context labels", "ylabel": "sign accuracy", "legend": 8},
    ], width=4.5, height=3.2)


# -- sparse parity (section 5.5) --------------------------------------------------------------------------------------
def min_norm_diagonal_heads(V0: torch.Tensor, a: torch.Tensor, pairs, gamma: float, steps: int,
                            penalty: float = 1e3, lr: float = 1e-2):
    """Search for a smaller-norm zero-loss model in the diagonal family of Theorem 5.5.1 with the same a: minimise
    ||V||_F^2 + penalty * sum relu(1 - margin)^2 over every (task, query pattern) at N = infinity (Adam from V0),
    then rescale so that the minimum margin is exactly 1 (g is 1-homogeneous in V), which makes the result feasible.
    A check of the min-norm claim, not the exact lambda -> 0+ optimum. Returns (V, squared norm, min margin)."""
    from feature_learning.data.in_context import parity_population_features

    z, phi, y, _, _ = parity_population_features(V0.shape[0], pairs, gamma)
    feats = z * phi
    V = V0.clone().requires_grad_()

    def loss_fn(step: int) -> torch.Tensor:
        margin = y * (torch.relu(feats @ V) @ a)
        return (V**2).sum() + penalty * (torch.relu(1 - margin) ** 2).sum()

    train([V], loss_fn, OptimConfig(steps=steps, lr=lr, warmup=10, schedule="cosine", betas=(0.9, 0.999)))
    with torch.no_grad():
        margin = y * (torch.relu(feats @ V) @ a)
        V = V / margin.min()
        margin = y * (torch.relu(feats @ V) @ a)
    return V.detach(), float((V**2).sum()), float(margin.min())


@dataclasses.dataclass
class Constructions:
    nu1: int
    nu2: int
    gamma: float
    S1: list
    S2: list
    V1: torch.Tensor  # g_1*: (d, 2 (nu1 + 1)) head diagonals
    a1: torch.Tensor
    V2: torch.Tensor  # g_2*
    a2: torch.Tensor
    loss2: torch.Tensor  # per-task hinge loss of g_2* on S1 + S2
    margin2: torch.Tensor
    loss1_S1: torch.Tensor
    margin1_S1: torch.Tensor
    loss1_S2: torch.Tensor
    loss1b_S1: torch.Tensor  # the same heads as g_1* with the constant head at scale (nu1 + 1) / (4 gamma)
    loss1b_S2: torch.Tensor

    @property
    def d(self) -> int:
        return 2**self.nu2

    @property
    def k(self) -> int:
        return 2**self.nu1

    @property
    def coverage(self) -> float:
        """Fraction of S2 tasks on which g_1* has zero loss."""
        return float((self.loss1_S2 < 1e-12).double().mean())


def parity_constructions(size: ICLSizes) -> Constructions:
    """Theorem 5.5.1's g_1*, g_2* at N = infinity: exact enumeration of every (task, query pattern)."""
    p = size.parity
    d, k = 2**p.nu2, 2**p.nu1
    S1, S2 = parity_task_sets(d, k)
    V2, a2 = theory.parity_construction(p.nu2, p.gamma, p.nu2)
    V1, a1 = theory.small_construction(p.nu1, p.nu2, p.gamma)
    V1b, a1b = theory.small_construction(p.nu1, p.nu2, p.gamma, nu_scale=p.nu1 + 1)
    loss2, margin2, _ = theory.parity_population(V2, a2, S1 + S2, p.gamma)
    loss1_S1, margin1_S1, _ = theory.parity_population(V1, a1, S1, p.gamma)
    loss1_S2, _, _ = theory.parity_population(V1, a1, S2, p.gamma)
    loss1b_S1, _, _ = theory.parity_population(V1b, a1b, S1, p.gamma)
    loss1b_S2, _, _ = theory.parity_population(V1b, a1b, S2, p.gamma)
    return Constructions(p.nu1, p.nu2, p.gamma, S1, S2, V1, a1, V2, a2, loss2, margin2, loss1_S1, margin1_S1,
                         loss1_S2, loss1b_S1, loss1b_S2)


@dataclasses.dataclass
class MinNorm:
    norm_construction: float
    norm_found: float
    margin_found: float
    max_loss_found: float

    @property
    def ratio(self) -> float:
        return self.norm_found / self.norm_construction


def min_norm_check(size: ICLSizes, nu2: int = 2) -> MinNorm:
    """The min-norm claim of Theorem 5.5.1 at d = 2^nu2: a zero-loss model of the same diagonal family and signs a
    with a smaller norm than g_2*."""
    gamma = size.parity.gamma
    S1, S2 = parity_task_sets(2**nu2, 2)
    V, a = theory.parity_construction(nu2, gamma, nu2)
    V_found, norm_found, margin_found = min_norm_diagonal_heads(V, a, S1 + S2, gamma, size.parity.min_norm_steps)
    loss, _, _ = theory.parity_population(V_found, a, S1 + S2, gamma)
    return MinNorm(float((V**2).sum()), norm_found, margin_found, float(loss.max()))


@dataclasses.dataclass
class ParityRobustness:
    energy: tuple[float, float]  # E ||P_Dj Xi||^2 for the small and the large construction, M = 16
    energy_se: tuple[float, float]
    Ms: tuple[int, ...]
    accuracy: torch.Tensor  # (M, 2) small, large, on S1 tasks
    hinge: torch.Tensor
    flips: tuple[float, ...]
    flip_accuracy: torch.Tensor  # (flip, 2) at M = 64
    prompts: int

    @property
    def ratio(self) -> float:
        return self.energy[0] / self.energy[1]

    @property
    def ratio_se(self) -> float:
        (e1, e2), (s1, s2) = self.energy, self.energy_se
        return self.ratio * math.sqrt((s1 / e1) ** 2 + (s2 / e2) ** 2)

    def at(self, M: int) -> torch.Tensor:
        return self.accuracy[self.Ms.index(M)]


def parity_robustness(size: ICLSizes, run: Run, con: Constructions, flip_M: int = 64) -> ParityRobustness:
    """Theorem 5.5.2 at finite context: the projection energies, and the accuracy of g_1*, g_2* on S1 tasks against
    M and against the fraction of flipped context labels."""
    p = size.parity
    e1, se1 = projection_energy(con.V1, 16, p.energy_prompts, run.generator(7))
    e2, se2 = projection_energy(con.V2, 16, p.energy_prompts, run.generator(8))
    models = [(con.V1, con.a1), (con.V2, con.a2)]
    acc, hinge = [], []
    for j, M in enumerate(p.Ms):
        a, h = mc_parity_accuracy(models, con.d, con.S1, con.gamma, M, p.prompts, run.generator(10 + j))
        acc.append(a), hinge.append(h)
    flip_acc = []
    for j, f in enumerate(size.flips):
        a, _ = mc_parity_accuracy(models, con.d, con.S1, con.gamma, flip_M, p.prompts, run.generator(40 + j),
                                  flip_frac=f)
        flip_acc.append(a)
    return ParityRobustness((e1, e2), (se1, se2), p.Ms, torch.stack(acc), torch.stack(hinge), tuple(size.flips),
                            torch.stack(flip_acc), p.prompts)


def plot_parity(pr: ParityRobustness, con: Constructions):
    names = (f"small, m={2 * (con.nu1 + 1)}", f"large, m={2 * (con.nu2 + 1)}")
    return series_panels([
        {"series": [{"x": pr.Ms, "y": pr.accuracy[:, k], "style": st, "label": names[k]}
                    for k, st in enumerate(("o-", "s-"))],
         "xscale": "log", "xlabel": "context length M", "ylabel": "accuracy on S1 tasks", "legend": 8},
        {"series": [{"x": pr.flips, "y": pr.flip_accuracy[:, k], "style": st, "label": names[k].split(",")[0]}
                    for k, st in enumerate(("o-", "s-"))],
         "xlabel": "fraction of flipped context labels (M=64)", "ylabel": "accuracy", "legend": 8},
    ], width=4.5, height=3.2)


# -- the LLM analogue (section 5.6) ------------------------------------------------------------------------------------
def tf_config(shape: tuple[int, int, int], t: TransformerSizes = BOOK.transformer):
    """TransformerConfig of the LLM analogue for shape (d_model, heads, blocks): head width d_model / heads, MLP
    ratio 4, tokens [x_i; y_i] of width d+1 and one logit read out at the query."""
    from feature_learning.models.transformer import TransformerConfig

    d_model, heads, blocks = shape
    return TransformerConfig(vocab=t.d + 1, seq_len=t.M + 1, n_out=1, d_model=d_model, n_heads=heads,
                             d_head=d_model // heads, d_mlp=4 * d_model, n_blocks=blocks)


def tf_prior(d: int = BOOK.transformer.d) -> torch.Tensor:
    """The prior direction e_1 of the LLM analogue (the 'semantic prior' a pretrained model brings)."""
    prior = torch.zeros(d)
    prior[0] = 1.0
    return prior


def train_icl_transformer(config, prior: torch.Tensor, tau: float, M: int, steps: int, batch: int,
                          generator: torch.Generator, replicas: int = 1, lr: float = 1e-3, weight_decay: float = 1e-4,
                          device: torch.device | str = "cpu"):
    """Train small softmax transformers (:class:`~feature_learning.models.transformer.Transformer` on real-valued
    tokens) on the synthetic binary ICL task of :func:`icl_classification_tokens` with the logistic loss on fresh
    batches (AdamW). ``config.vocab`` must be d+1 and ``config.n_out`` 1. The ``replicas`` (seeds) differ in their
    initialisation and see the same batches; weights and prompts are drawn on the CPU from ``generator`` and moved to
    ``device``, so CPU and CUDA runs see the same numbers. Returns (model, history)."""
    from feature_learning.models.transformer import init_transformer

    d = prior.shape[0]
    model = init_transformer(config, replicas=replicas, generator=generator, device=device)

    def loss_fn(step: int) -> torch.Tensor:
        tokens, yq = icl_classification_tokens(batch, M, d, prior, tau, generator)
        tokens, yq = tokens.to(device), yq.to(device)
        logit = model.forward_continuous(tokens)[..., 0]  # (R, B)
        return torch.nn.functional.softplus(-yq * logit).mean(-1).sum()

    history = train(model.parameters(), loss_fn, OptimConfig(steps=steps, lr=lr, weight_decay=weight_decay,
                                                             warmup=20, schedule="cosine"),
                    log_every=max(1, steps // 10), log_fn=lambda s: {"loss": loss_fn(s)})
    return model, history


@dataclasses.dataclass
class TransformerSweep:
    shapes: tuple[tuple[int, int, int], ...]
    flips: tuple[float, ...]
    accuracy: np.ndarray  # (size, flip, seed) against the clean query label
    reference: np.ndarray  # (flip, 2): the prior rule and the context rule on the same prompts
    params: list[int]

    @property
    def seeds(self) -> int:
        return self.accuracy.shape[-1]

    def mean_se(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard error over the seeds (last axis)."""
        return values.mean(-1), values.std(-1, ddof=1) / math.sqrt(self.seeds)

    @property
    def drop(self) -> np.ndarray:
        """Sensitivity per size and seed: accuracy with clean labels minus accuracy with every label flipped."""
        return self.accuracy[:, 0] - self.accuracy[:, -1]

    @property
    def drop_half(self) -> np.ndarray:
        return self.accuracy[:, 0] - self.accuracy[:, self.flips.index(0.5)]


def transformer_scale_sweep(size: ICLSizes, run: Run) -> TransformerSweep:
    """Train every transformer size (replicas = seeds) on the analogue task, then score each on the same evaluation
    prompts (common random numbers) for every flipped fraction of context labels."""
    t = size.transformer
    prior = tf_prior(t.d)
    acc, params = [], []
    for k, shape in enumerate(t.shapes):
        model, _ = train_icl_transformer(tf_config(shape, t), prior, t.tau, t.M, t.steps, t.batch,
                                         run.generator(60 + k), replicas=t.seeds, lr=t.lr, device=run.device)
        a, ref = icl_flip_accuracy(model, prior, t.tau, t.M, size.flips, t.eval_prompts, run.generator(70),
                                   device=run.device)
        acc.append(a.numpy())
        params.append(sum(p[0].numel() for p in model.parameters()))
    return TransformerSweep(t.shapes, tuple(size.flips), np.stack(acc), ref.numpy(), params)


def plot_transformer_flips(ts: TransformerSweep):
    mean, se = ts.mean_se(ts.accuracy)
    series = [{"x": ts.flips, "y": mean[k], "yerr": 2 * se[k], "color": f"C{k}",
               "label": f"width {s[0]}, heads {s[1]}, blocks {s[2]}"} for k, s in enumerate(ts.shapes)]
    series += [{"x": ts.flips, "y": ts.reference[:, 0], "style": "k--", "label": "prior rule"},
               {"x": ts.flips, "y": ts.reference[:, 1], "style": "k:", "label": "context rule"}]
    drop, drop_se = ts.mean_se(ts.drop)
    half, half_se = ts.mean_se(ts.drop_half)
    return series_panels([
        {"series": series, "hline": 0.5, "xlabel": "fraction of flipped context labels (M=16)",
         "ylabel": "accuracy against the true label"},
        {"series": [{"x": ts.params, "y": drop, "yerr": 2 * drop_se, "label": "p = 0 -> 1"},
                    {"x": ts.params, "y": half, "yerr": 2 * half_se, "style": "s--", "label": "p = 0 -> 0.5"}],
         "xscale": "log", "xlabel": "parameters", "ylabel": "accuracy drop", "legend": 8},
    ], width=5.0, height=3.6)

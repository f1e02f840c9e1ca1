"""Chapter "Model scale and in-context learning" (dissertation ch. 5, appendix D): sizes, recipes and runs.

The source has no synthetic experiments for sections 5.4-5.5; the configuration (d = 8, N = 64, the spectrum below,
(nu1, nu2) = (1, 3), gamma = 0.2) is the one of the chapter notes and is stated in the chapter. Section 5.6's LLM
experiments cannot run here; :func:`transformer_scale_sweep` repeats their protocol on tiny softmax transformers.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import sympy as sp
import torch

from feature_learning.book.profiles import Run, override
from feature_learning.data.in_context import (
    icl_classification_tokens,
    icl_regression_prompts,
    parity_population_features,
    parity_task_sets,
    random_orthogonal,
)
from feature_learning.measure.in_context import (
    icl_flip_accuracy,
    mc_parity_accuracy,
    mc_regression_risk,
    projection_energy,
)
from feature_learning.measure.statistics import Estimate, Null, difference, paired_difference
from feature_learning.models.linear_attention import lsa_population_loss
from feature_learning.plotting.curves import Curve, Guide, Panel, plot_panels
from feature_learning.theory import icl as theory
from feature_learning.training.loop import OptimConfig, train

DTYPE = torch.float64  # closed forms and Monte Carlo in float64; the transformers train in float32
SPECTRUM = (2.0, 1.5, 1.0, 0.5, 0.25, 0.15, 0.1, 0.05)  # eigenvalues of Lambda (the notes' configuration)
EVAL_TASK = (1.0, -0.8, 0.5, 0.3, 0.4, -0.2, 0.3, 0.1)  # c = Q^T w of the evaluation task (the notes' F4)
SPECIAL_TASK = (1.0, -0.7)  # s of Theorem 5.4.3's special case, in the top-2 eigen-directions (the notes' F6)
ENERGY_M = 16  # context length of the projection energies (the notes' F13)
ALL_RANKS = (1, 2, 3, 4, 5, 6, 7, 8)
PRIOR_RULE = "the prior rule sign<e_1, x_q> (ignores the context)"  # trivial models of the LLM analogue's claims
SIZE_BLIND = Null(0.0, "size-blind: the smallest model at every size")


# -- sizes ----------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RegressionSizes:
    d: int = 8
    N: int = 64  # pretraining context length
    spectrum: tuple[float, ...] = SPECTRUM  # descending and distinct, so the optimum is unique up to c


@dataclasses.dataclass(frozen=True)
class ExactSizes:
    """Experiment 1a: the rank-r attention trained on Lemma 5.1's exact population loss (L-BFGS)."""

    ranks: tuple[int, ...] = ALL_RANKS
    max_iter: int = 4000  # L-BFGS iterations; it stops once the summed loss changes by less than 1e-12
    init_scale: float = 0.01  # small random factors, not diagonal in the eigenbasis


@dataclasses.dataclass(frozen=True)
class SGDSizes:
    """Experiment 1b: the rank-r attention trained by online SGD on fresh sampled prompts (the notes' R1b)."""

    ranks: tuple[int, ...] = ALL_RANKS
    steps: int = 1500
    batch: int = 256  # fresh prompts per step and replica
    replicas: int = 4  # independent runs (own initialisation and prompts), for the standard error
    lr: float = 0.5  # first half of the steps
    tail_lr: float = 0.1  # second half, whose iterates (the factors) are averaged (Polyak-Ruppert)
    init_scale: float = 0.1
    loss_prompts: int = 100_000  # Monte Carlo prompts for the pretraining loss at U* (notes' target 2)


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
    seeds: int = 4  # independent replicas (initialisation and batches) trained as one batched program
    eval_prompts: int = 4000


@dataclasses.dataclass(frozen=True)
class ICLSizes:
    regression: RegressionSizes = RegressionSizes()
    exact: ExactSizes = ExactSizes()
    sgd: SGDSizes = SGDSizes()
    risk: RiskSizes = RiskSizes()
    flips: tuple[float, ...] = (0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0)  # flipped fractions of context labels
    parity: ParitySizes = ParitySizes()
    transformer: TransformerSizes = TransformerSizes()


BOOK = ICLSizes()
CI = override(
    BOOK,
    sgd={"steps": 1000, "replicas": 3, "loss_prompts": 40_000},  # CI time; the errors stay well inside the bounds
    risk={"ranks": (1, 2, 4, 8), "sigmas": (0.0, 1.0, 2.0, 4.0), "prompts": 20_000},  # CI time
    flips=(0.0, 0.25, 0.5, 0.75, 1.0),
    parity={"Ms": (16, 64, 256, 1024)},
    transformer={"eval_prompts": 2000},  # CI time; the standard error over the seeds dominates
)
FULL = override(
    BOOK,
    sgd={"steps": 5000, "batch": 1024},
    risk={"prompts": 1_000_000},
    parity={"prompts": 100_000},
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

    def L_r(self, ranks) -> torch.Tensor:
        return torch.stack([theory.rank_r_pretraining_loss(self.lam, self.N, r) for r in ranks])

    def eigen(self, U: torch.Tensor) -> torch.Tensor:
        """Q^T U Q: an attention in the eigenbasis of Lambda."""
        return self.Q.T @ U @ self.Q


def setting(size: ICLSizes, run: Run) -> Setting:
    s = size.regression
    return Setting(random_orthogonal(s.d, run.generator("basis")), torch.tensor(s.spectrum, dtype=DTYPE), s.N)


def reduction_check(st: Setting, run: Run, samples: int = 16) -> float:
    """Largest |Lemma 5.1's loss - C - F(Q^T U Q)| over random (non-diagonal) U at the chapter's d and Q, with F the
    eigenbasis loss of the derivation (float64 rounding if the reduction holds)."""
    U = torch.randn(samples, st.d, st.d, generator=run.generator("reduction_check"), dtype=DTYPE)
    lemma = lsa_population_loss(U, torch.ones(samples, dtype=DTYPE), st.Lam, st.N) - 0.5 * st.lam.sum()
    return float((lemma - theory.eigenbasis_loss_numeric(st.eigen(U), st.lam, st.N)).abs().max())


# -- Experiment 1a: the exact population loss ------------------------------------------------------------------------
def rank_masks(ranks, d: int) -> torch.Tensor:
    """(K, d, 1): row i of a factor W^K, W^Q in R^{d x d} is used by rank r iff i < r (a rank-r key and query)."""
    return (torch.arange(d)[None, :] < torch.tensor(ranks)[:, None]).to(DTYPE)[..., None]


def train_rank_r_exact(Lam: torch.Tensor, N: int, ranks, generator: torch.Generator, max_iter: int,
                       init_scale: float = 0.01) -> torch.Tensor:
    """Rank-r attentions U = W_K^T W_Q (W_K, W_Q in R^{r x d}, u = 1) trained on Lemma 5.1's exact population loss by
    L-BFGS (strong Wolfe line search), from small random factors, every rank in one batched program (the losses
    are summed; the ranks share no parameter). Returns U (K, d, d)."""
    d = Lam.shape[0]
    mask = rank_masks(ranks, d)
    WK = (init_scale * torch.randn(len(ranks), d, d, generator=generator, dtype=DTYPE) * mask).requires_grad_()
    WQ = (init_scale * torch.randn(len(ranks), d, d, generator=generator, dtype=DTYPE) * mask).requires_grad_()
    ones = torch.ones(len(ranks), dtype=DTYPE)
    opt = torch.optim.LBFGS([WK, WQ], lr=1, max_iter=max_iter, history_size=50, tolerance_grad=1e-14,
                            tolerance_change=1e-12, line_search_fn="strong_wolfe")  # the loss is O(1)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = lsa_population_loss((WK * mask).transpose(1, 2) @ (WQ * mask), ones, Lam, N).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return ((WK * mask).transpose(1, 2) @ (WQ * mask)).detach()


@dataclasses.dataclass
class Training:
    ranks: tuple[int, ...]
    U: torch.Tensor  # (..., K, d, d) trained attentions (a leading replica axis for SGD)
    U_star: torch.Tensor  # (K, d, d) Theorem 5.4.1
    loss: torch.Tensor  # (..., K) Lemma 5.1's population loss at U
    L_r: torch.Tensor  # (K,) the closed-form optimal loss

    @property
    def rel_errors(self) -> torch.Tensor:
        """||U - U*||_F / ||U*||_F per rank (and replica)."""
        return (self.U - self.U_star).flatten(-2).norm(dim=-1) / self.U_star.flatten(-2).norm(dim=-1)

    @property
    def excess(self) -> torch.Tensor:
        """(L(U) - L_r) / L_r per rank (and replica): how far above the optimal loss the trained model sits."""
        return (self.loss - self.L_r) / self.L_r

    def v_errors(self, st: Setting) -> torch.Tensor:
        """||diag(Q^T U Q) - v*|| / ||v*|| per rank (and replica): the learned v_i against Theorem 5.4.1's."""
        v = torch.diagonal(st.eigen(self.U), dim1=-2, dim2=-1)
        v_star = torch.diagonal(st.eigen(self.U_star), dim1=-2, dim2=-1)
        return (v - v_star).norm(dim=-1) / v_star.norm(dim=-1)

    @staticmethod
    def worst_rank(errors: torch.Tensor) -> Estimate:
        """Mean over replicas (first axis) at the rank where it is largest, with its standard error over replicas."""
        e = errors.double()
        mean, se = e.mean(0), e.std(0) / e.shape[0] ** 0.5
        k = int(mean.argmax())
        return Estimate(float(mean[k]), float(se[k]))

    def replicas_within(self, errors: torch.Tensor, bound: float) -> tuple[int, int]:
        """(replicas whose error is within ``bound`` at every rank, replicas)."""
        ok = (errors <= bound).all(-1)
        return int(ok.sum()), int(ok.numel())


def exact_training(size: ICLSizes, run: Run, st: Setting) -> Training:
    """Experiment 1a: every rank of ``size.exact`` trained on the exact population loss."""
    e = size.exact
    U = train_rank_r_exact(st.Lam, st.N, e.ranks, run.generator("exact_init"), e.max_iter, e.init_scale)
    loss = lsa_population_loss(U, torch.ones(len(e.ranks), dtype=DTYPE), st.Lam, st.N)
    return Training(e.ranks, U, st.optimal_Us(e.ranks), loss, st.L_r(e.ranks))


# -- Experiment 1b: online SGD on sampled prompts --------------------------------------------------------------------
def factor_gradients(WK: torch.Tensor, WQ: torch.Tensor, s: torch.Tensor, xq: torch.Tensor, yq: torch.Tensor):
    """Gradients of the mean over the batch of (1/2)(s^T W_K^T W_Q x_q - y_q)^2 in W_K and W_Q (..., d, d), for
    context averages s (..., B, d), queries x_q (..., B, d) and labels y_q (..., B)."""
    ks, qx = s @ WK.transpose(-1, -2), xq @ WQ.transpose(-1, -2)  # W_K s and W_Q x_q, (..., B, d)
    err = (ks * qx).sum(-1) - yq
    B = err.shape[-1]
    return (err[..., None] * qx).transpose(-1, -2) @ s / B, (err[..., None] * ks).transpose(-1, -2) @ xq / B


def train_rank_r_sgd(Q: torch.Tensor, lam: torch.Tensor, N: int, ranks, s: SGDSizes,
                     generator: torch.Generator) -> torch.Tensor:
    """Rank-r attentions y_hat = (1/N) sum_i y_i x_i^T W_K^T W_Q x_q (the LSA of eq. 5.1 with W^KQ_11 = W_K^T W_Q,
    w^PV_22 = 1 and the other blocks zero; W_K, W_Q in R^{r x d}) trained by online SGD on the loss
    (1/2)(y_hat - y_q)^2 of fresh prompts (w ~ N(0, I), x ~ N(0, Lambda), section 5.4).

    Each factor's gradient is preconditioned by the inverse second moment of its own input, measured on the prompts
    seen so far: E[x_q x_q^T] for W_Q and E[s s^T] (s = y^T X / N, computed in float32) for W_K. Without it the
    curvature of entry (i, j) of Q^T U Q is lam'_i lam_i lam_j, which spans a factor 2.5e4 over the chapter's
    spectrum; with it the rates spread like T_ii = lam_i / sqrt(lam'_i), a factor 10. A constant step ``s.lr`` for
    the first half of the steps, ``s.tail_lr`` for the second, whose factors are averaged (Polyak-Ruppert; averaging
    the factors keeps the rank). ``s.replicas`` independent runs (own initialisation and prompts) and every rank
    train as one batched program; the prompts are drawn in float32 (the cost of the experiment), the model computes
    in float64. Returns U (R, K, d, d)."""
    d, K, R, B = len(lam), len(ranks), s.replicas, s.batch
    mask = rank_masks(ranks, d)
    WK = s.init_scale * torch.randn(R, K, d, d, generator=generator, dtype=DTYPE) * mask
    WQ = s.init_scale * torch.randn(R, K, d, d, generator=generator, dtype=DTYPE) * mask
    moments = {"x": torch.zeros(R, 1, d, d, dtype=DTYPE), "s": torch.zeros(R, 1, d, d, dtype=DTYPE), "n": 0}
    mean = {"K": torch.zeros_like(WK), "Q": torch.zeros_like(WQ), "n": 0}
    tail = s.steps // 2
    Q32, lam32 = Q.float(), lam.float()

    def grads(step: int) -> list[torch.Tensor]:
        pr = icl_regression_prompts(R * B, N, Q32, lam32, generator)
        sv = (pr.y[:, None, :] @ pr.X).to(DTYPE).view(R, 1, B, d) / N  # s = y^T X / N, (R, 1, B, d)
        xq, yq = pr.xq.to(DTYPE).view(R, 1, B, d), pr.yq.to(DTYPE).view(R, 1, B)
        moments["n"] += B
        moments["x"] += (xq.transpose(-1, -2) @ xq - B * moments["x"]) / moments["n"]
        moments["s"] += (sv.transpose(-1, -2) @ sv - B * moments["s"]) / moments["n"]
        gK, gQ = factor_gradients(WK, WQ, sv, xq, yq)
        if step >= tail:
            mean["K"] += WK
            mean["Q"] += WQ
            mean["n"] += 1
        return [gK @ torch.linalg.inv(moments["s"]) * mask, gQ @ torch.linalg.inv(moments["x"]) * mask]

    schedule = lambda step: 1.0 if step < tail else s.tail_lr / s.lr  # noqa: E731
    train([WK, WQ], None, OptimConfig(steps=s.steps, lr=s.lr, optimizer="gd", warmup=0, schedule=schedule),
          grad_fn=grads)
    return (mean["K"] / mean["n"]).transpose(-1, -2) @ (mean["Q"] / mean["n"])


def sgd_training(size: ICLSizes, run: Run, st: Setting) -> Training:
    """Experiment 1b: every rank of ``size.sgd`` trained by online SGD on sampled prompts."""
    s = size.sgd
    U = train_rank_r_sgd(st.Q, st.lam, st.N, s.ranks, s, run.generator("sgd"))
    loss = lsa_population_loss(U.flatten(0, 1), torch.ones(U.shape[0] * U.shape[1], dtype=DTYPE), st.Lam, st.N)
    return Training(s.ranks, U, st.optimal_Us(s.ranks), loss.view(U.shape[:2]), st.L_r(s.ranks))


@dataclasses.dataclass
class LossMC:
    ranks: tuple[int, ...]
    mean: torch.Tensor  # (K,) Monte Carlo of (1/2)(y_hat - y_q)^2 at U*, rho = N
    se: torch.Tensor
    L_r: torch.Tensor

    @property
    def z(self) -> torch.Tensor:
        return (self.mean - self.L_r).abs() / self.se

    @property
    def rel(self) -> torch.Tensor:
        return (self.mean - self.L_r).abs() / self.L_r


def pretraining_loss_mc(size: ICLSizes, run: Run, st: Setting) -> LossMC:
    """The pretraining loss of the optimal rank-r attentions on fresh prompts (w ~ N(0, I)), all ranks on the same
    prompts, against L_r."""
    ranks = size.sgd.ranks
    mean, se, _ = mc_regression_risk(st.Q, st.lam, st.optimal_Us(ranks), st.N, size.sgd.loss_prompts,
                                     run.generator("loss_mc"), w=None)
    return LossMC(ranks, mean / 2, se / 2, st.L_r(ranks))  # the pretraining loss has the 1/2, the risk does not


def plot_training(exact: Training, sgd: Training, st: Setting):
    """The full-rank attention in the eigenbasis (exact loss, SGD); the learned diagonal per rank against v*; the
    errors per rank."""
    diagonals = []
    x = np.arange(1, st.d + 1)
    for k, r in enumerate(exact.ranks):
        diagonals.append(Curve(x, torch.diagonal(st.eigen(exact.U[k])), f"r={r}", "o", f"C{k}"))
        diagonals.append(Curve(x, theory.v_star(st.lam, st.N, r), style="k_", kwargs={"ms": 12}))
        if r in sgd.ranks:
            v = torch.diagonal(st.eigen(sgd.U[:, sgd.ranks.index(r)]), dim1=-2, dim2=-1).mean(0)
            diagonals.append(Curve(x + 0.25, v, style="x", color=f"C{k}"))
    v_err = sgd.v_errors(st)
    errors = [
        Curve(exact.ranks, exact.rel_errors, r"exact loss: $\|U-U^*\|/\|U^*\|$", "o-"),
        Curve(sgd.ranks, v_err.mean(0), r"SGD: $\|v-v^*\|/\|v^*\|$", "s-",
              yerr=2 * v_err.std(0) / v_err.shape[0] ** 0.5),
        Curve(sgd.ranks, sgd.rel_errors.mean(0), r"SGD: $\|U-U^*\|/\|U^*\|$", "x--"),
    ]
    return plot_panels([
        Panel(image=st.eigen(exact.U[-1]), title=rf"$Q^\top UQ$, exact loss, r={exact.ranks[-1]}"),
        Panel(image=st.eigen(sgd.U[0, -1]), title=rf"$Q^\top UQ$, SGD on prompts, r={sgd.ranks[-1]}"),
        Panel(diagonals, xlabel="eigen-direction i", legend_size=6,
              ylabel=r"$(Q^\top U Q)_{ii}$: exact (o), SGD (x), $v_i^*$ (-)"),
        Panel(errors, xlabel="rank r", ylabel="relative error", yscale="log", guides=[Guide(5e-2, style="-")],
              legend_size=6),
    ], width=3.6, height=3.3)


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

    def slopes(self, m: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per rank at Ms[m]: the least-squares slope of the Monte Carlo risk in sigma^2, its standard error (the
        points are independent) and the closed form sum_{i<=r} a_i^2 / M (the exact risk is linear in sigma^2)."""
        mc, se = zip(*(least_squares_slope([s**2 for s in self.sigmas], self.mean[m, :, k], self.se[m, :, k])
                       for k in range(len(self.ranks))), strict=True)
        return np.array(mc), np.array(se), np.array(self.closed_slopes[m])


def least_squares_slope(x, y, se) -> tuple[float, float]:
    """Slope of the least-squares line through (x, y) and its standard error for independent errors ``se``."""
    x, y, se = np.asarray(x, float), np.asarray(y, float), np.asarray(se, float)
    w = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
    return float(w @ y), float(np.sqrt((w**2 * se**2).sum()))


def eval_risk_sweep(size: ICLSizes, run: Run, st: Setting) -> RiskSweep:
    """Experiment 2: the optimal rank-r attentions on fresh prompts with the fixed task c = EVAL_TASK, label noise
    sigma and context length M, all ranks on the same prompts (common random numbers), against Theorem 5.4.2."""
    r = size.risk
    c = torch.tensor(EVAL_TASK, dtype=DTYPE)
    Us = st.optimal_Us(r.ranks)
    shape = (len(r.Ms), len(r.sigmas), len(r.ranks))
    mean, se, closed = torch.zeros(shape, dtype=DTYPE), torch.zeros(shape, dtype=DTYPE), torch.zeros(shape, dtype=DTYPE)
    for i, M in enumerate(r.Ms):
        for j, sigma in enumerate(r.sigmas):
            g = run.generator("risk", M, sigma)
            mean[i, j], se[i, j], _ = mc_regression_risk(st.Q, st.lam, Us, M, r.prompts, g, w=st.Q @ c, sigma=sigma)
            closed[i, j] = torch.stack([theory.eval_risk(c, st.lam, st.N, M, rank, sigma) for rank in r.ranks])
    slopes = [[float((st.lam * theory.v_star(st.lam, st.N, k)).pow(2).sum() / M) for k in r.ranks] for M in r.Ms]
    return RiskSweep(r.ranks, r.sigmas, r.Ms, mean, se, closed, slopes)


def plot_risk(rs: RiskSweep):
    mc, mc_se, th = rs.slopes()
    curves = []
    for j, sigma in enumerate(rs.sigmas):
        curves.append(Curve(rs.ranks, rs.mean[0, j], f"MC, sigma={sigma}", "o", f"C{j}", yerr=2 * rs.se[0, j]))
        curves.append(Curve(rs.ranks, rs.closed[0, j], style="-", color=f"C{j}"))
    return plot_panels([
        Panel(curves, xlabel="rank r", ylabel=f"evaluation risk, M={rs.Ms[0]}"),
        Panel([Curve(rs.ranks, th, r"closed form $\sum_{i\leq r}a_i^2/M$", "k-"),
               Curve(rs.ranks, mc, "MC slope", "o", yerr=2 * mc_se)],
              xlabel="rank r", ylabel=r"d risk / d $\sigma^2$", legend_size=8),
    ], width=4.6, height=3.4)


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
    def gap_slope(self) -> tuple[float, float]:
        """Least-squares slope of the Monte Carlo gap in sigma^2, and its standard error."""
        return least_squares_slope([s**2 for s in self.sigmas], self.gap_mc, self.gap_se)

    @property
    def best_closed(self) -> list[int]:
        return [int(torch.argmin(row)) for row in self.ew_closed]

    def best_closed_at(self, st: Setting, M: int) -> list[int]:
        """The risk-minimising rank of the closed form (E over w ~ N(0, I)) at another context length M."""
        ones = torch.ones(st.d, dtype=DTYPE)
        return [int(torch.argmin(torch.stack([theory.eval_risk(ones, st.lam, st.N, M, k, sigma) for k in self.ranks])))
                for sigma in self.best_sigmas]

    @property
    def best_mc(self) -> list[int]:
        return [int(torch.argmin(row)) for row in self.ew_mean]

    @property
    def ew_z(self) -> float:
        """Largest |Monte Carlo - closed form| / standard error of the E_w risk over every (sigma, rank)."""
        return float(((self.ew_mean - self.ew_closed).abs() / self.ew_se).max())

    @property
    def best_mc_z(self) -> float:
        """How far the Monte Carlo risk at the closed form's best rank sits above the Monte Carlo minimum, in
        standard errors (the two ranks' errors added: conservative under the common random numbers), worst sigma.
        Zero where the two argmins agree; small where the curve is flat and the Monte Carlo argmin moves."""
        return max(float((row[b] - row.min()) / (se[b] + se[m]))
                   for row, se, b, m in zip(self.ew_mean, self.ew_se, self.best_closed, self.best_mc, strict=True))


def scale_tradeoff(size: ICLSizes, run: Run, st: Setting, M: int = 16) -> Tradeoff:
    """Theorem 5.4.3's special case (ranks 2 and 6) against sigma, and the risk averaged over w ~ N(0, I) against the
    rank for a few noise levels (closed form with c = 1, and Monte Carlo on common random numbers)."""
    r = size.risk
    s_task = torch.zeros(st.d, dtype=DTYPE)
    s_task[: len(SPECIAL_TASK)] = torch.tensor(SPECIAL_TASK, dtype=DTYPE)
    U26 = st.optimal_Us((2, 6))
    gap_mc, gap_se, gap_closed = [], [], []
    for sigma in r.sigmas:
        mean, se, _ = mc_regression_risk(st.Q, st.lam, U26, M, r.prompts, run.generator("gap"), w=st.Q @ s_task,
                                         sigma=sigma)  # the same prompts for every sigma
        gap_mc.append(float(mean[1] - mean[0])), gap_se.append(float(se[0] + se[1]))
        gap_closed.append(float(theory.eval_risk(s_task, st.lam, st.N, M, 6, sigma)
                                - theory.eval_risk(s_task, st.lam, st.N, M, 2, sigma)))
    ranks = tuple(range(st.d + 1))
    U_all = st.optimal_Us(ranks)
    ones = torch.ones(st.d, dtype=DTYPE)
    closed, means, ses = [], [], []
    for sigma in r.best_rank_sigmas:
        closed.append(torch.stack([theory.eval_risk(ones, st.lam, st.N, M, k, sigma) for k in ranks]))
        mean, se, _ = mc_regression_risk(st.Q, st.lam, U_all, M, r.prompts, run.generator("best_rank"), w=None,
                                     sigma=sigma)
        means.append(mean), ses.append(se)
    return Tradeoff(r.sigmas, gap_mc, gap_se, gap_closed, r.best_rank_sigmas, ranks, torch.stack(closed),
                    torch.stack(means), torch.stack(ses))


def plot_best_rank(tr: Tradeoff):
    curves = []
    for j, sigma in enumerate(tr.best_sigmas):
        curves.append(Curve(tr.ranks, tr.ew_closed[j], f"sigma={sigma}, best r={tr.best_closed[j]}", "-", f"C{j}"))
        curves.append(Curve(tr.ranks, tr.ew_mean[j], style="o", color=f"C{j}", yerr=2 * tr.ew_se[j],
                            kwargs={"ms": 3}))
    return plot_panels([Panel(curves, xlabel="rank r", ylabel=r"$\mathbb{E}_w$ risk, M=16", legend_size=8)],
                       width=5.2, height=3.4)


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
        mean, se, acc = mc_regression_risk(st.Q, st.lam, Us, M, size.risk.prompts, run.generator("flips"), w=st.Q @ c,
                                           flip_frac=p)  # the same prompts for every p
        closed = torch.stack([theory.eval_risk(c, st.lam, st.N, M, r, 0.0, p) for r in ranks])
        rows.append((mean, se, closed, acc))
    return FlipSweep(ranks, tuple(size.flips), *(torch.stack(col) for col in zip(*rows, strict=True)))


def plot_flips(fs: FlipSweep):
    risk, acc = [], []
    for k, r in enumerate(fs.ranks):
        risk.append(Curve(fs.flips, fs.closed[:, k], f"closed, r={r}", "-", f"C{k}"))
        risk.append(Curve(fs.flips, fs.mean[:, k], f"MC, r={r}", "o", f"C{k}"))
        acc.append(Curve(fs.flips, fs.accuracy[:, k], f"r={r}", "o-", f"C{k}"))
    return plot_panels([
        Panel(risk, xlabel="fraction of flipped context labels", ylabel="risk, M=16"),
        Panel(acc, xlabel="fraction of flipped context labels", ylabel="sign accuracy", legend_size=8),
    ], width=4.5, height=3.2)


@dataclasses.dataclass
class ScoreSweep:
    """The notes' F10 (an analogue of the source's Figure 5.3): mean square key-query scores x^T U*_r x_q of the
    relevant (top-eigen) and irrelevant (bottom-eigen) part of a context input, for every rank."""

    ranks: tuple[int, ...]
    relevant: int  # the relevant part lives in the top ``relevant`` eigen-directions
    prompts: int
    closed: torch.Tensor  # (2, ranks): relevant, irrelevant
    mean: torch.Tensor  # Monte Carlo
    se: torch.Tensor

    @property
    def z(self) -> float:
        """Largest |Monte Carlo - closed form| / standard error where the closed form is not zero."""
        live = self.closed > 0
        return float(((self.mean - self.closed).abs()[live] / self.se[live]).max())

    @property
    def irrelevant_low_rank(self) -> float:
        """Largest Monte Carlo mean square score of the irrelevant part at ranks r <= relevant (0 in exact
        arithmetic: U*_r x_q lies in the top-r span)."""
        return float(self.mean[1, : self.relevant].max())


def score_sweep(size: ICLSizes, run: Run, st: Setting, relevant: int = 4) -> ScoreSweep:
    """x = x_rel + x_irr with x ~ N(0, Lambda) split into its top-``relevant`` and remaining eigen-directions, and a
    query x_q ~ N(0, Lambda): the mean square scores of each part under U*_r, closed form and Monte Carlo."""
    ranks, prompts = tuple(range(1, st.d + 1)), size.risk.prompts
    g = run.generator("scores")
    z = torch.randn(prompts, st.d, generator=g, dtype=DTYPE) * st.lam.sqrt()  # the context input, eigen-coordinates
    zq = torch.randn(prompts, st.d, generator=g, dtype=DTYPE) * st.lam.sqrt()
    top = torch.arange(st.d) < relevant
    parts = torch.stack([z * top, z * ~top]) @ st.Q.T  # (2, prompts, d) back to input coordinates
    xq = zq @ st.Q.T
    Us = st.optimal_Us(ranks)  # (ranks, d, d)
    scores = torch.einsum("spi,rij,pj->srp", parts, Us, xq) ** 2  # (part, rank, prompt)
    A = torch.stack([st.lam * top, st.lam * ~top])
    closed = torch.stack([torch.stack([theory.score_energy(st.lam, st.N, r, a) for r in ranks]) for a in A])
    return ScoreSweep(ranks, relevant, prompts, closed, scores.mean(-1), scores.std(-1) / prompts**0.5)


def plot_scores(sc: ScoreSweep):
    curves = []
    for k, name in enumerate(("relevant (top-4 directions)", "irrelevant (bottom-4)")):
        curves.append(Curve(sc.ranks, sc.closed[k], name, "-", f"C{k}"))
        curves.append(Curve(sc.ranks, sc.mean[k], style="o", color=f"C{k}", yerr=2 * sc.se[k], kwargs={"ms": 3}))
    ylabel = r"$\mathbb{E}(\mathbf{x}^\top U_r^*\mathbf{x}_q)^2$"
    return plot_panels([Panel(curves, xlabel="rank r", ylabel=ylabel, legend_size=8)], width=5.2, height=3.4)


# -- sparse parity (section 5.5) --------------------------------------------------------------------------------------
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
    loss1b_S1: torch.Tensor  # the same heads as g_1* with the positive head at scale (nu1 + 1) / (4 gamma)
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

    @property
    def coverage_count(self) -> float:
        """The S2 pairs whose lowest nu1 bits differ, counted (the pairs g_1*'s code heads tell apart)."""
        return sum(1 for i, j in self.S2 if i % self.k != j % self.k) / len(self.S2)


def parity_constructions(size: ICLSizes, nu1: int | None = None) -> Constructions:
    """Theorem 5.5.1's g_1*, g_2* at N = infinity: exact enumeration of every (task, query pattern)."""
    p = size.parity
    nu1 = p.nu1 if nu1 is None else nu1
    d, k = 2**p.nu2, 2**nu1
    S1, S2 = parity_task_sets(d, k)
    V2, a2 = theory.parity_construction(p.nu2, p.gamma, p.nu2)
    V1, a1 = theory.small_construction(nu1, p.nu2, p.gamma)
    V1b, a1b = theory.small_construction(nu1, p.nu2, p.gamma, nu_scale=nu1 + 1)
    loss2, margin2, _ = theory.parity_population(V2, a2, S1 + S2, p.gamma)
    loss1_S1, margin1_S1, _ = theory.parity_population(V1, a1, S1, p.gamma)
    loss1_S2, _, _ = theory.parity_population(V1, a1, S2, p.gamma)
    loss1b_S1, _, _ = theory.parity_population(V1b, a1b, S1, p.gamma)
    loss1b_S2, _, _ = theory.parity_population(V1b, a1b, S2, p.gamma)
    return Constructions(nu1, p.nu2, p.gamma, S1, S2, V1, a1, V2, a2, loss2, margin2, loss1_S1, margin1_S1,
                         loss1_S2, loss1b_S1, loss1b_S2)


def construction_norms(nu2s=(1, 2, 3, 4, 5), gamma: float = 0.2) -> list[tuple[int, object, float]]:
    """||W||_F^2 of g_2* per nu2: exact (SymPy, symbolic gamma, from the theorem's definition of the heads) and the
    float64 construction the chapter computes with, at ``gamma``. Rows (nu2, exact expression, float64 value)."""
    rows = []
    for nu2 in nu2s:
        V, _ = theory.parity_construction_symbolic(nu2)
        rows.append((nu2, sp.factor(sum(v**2 for v in V)), float((theory.parity_construction(nu2, gamma, nu2)[0] ** 2)
                                                               .sum())))
    return rows


def local_min_norm_search(V0: torch.Tensor, a: torch.Tensor, pairs, gamma: float) -> torch.Tensor:
    """A local search for a smaller-norm zero-loss model of the diagonal family with the same signs a (N = infinity):
    SLSQP on min ||V||^2 subject to every margin y g >= 1, started at V0 (deterministic), then rescaled to minimum
    margin exactly 1 (g is 1-homogeneous in V). Only its activation pattern is used: the exact optimum for that
    pattern is :func:`~feature_learning.theory.icl.pattern_qp`."""
    from scipy.optimize import minimize

    d, m = V0.shape
    z, phi, y, _, _ = parity_population_features(d, pairs, gamma)
    F, Y, an = (z * phi).numpy(), y.numpy(), a.numpy()

    def margins(x):
        return Y * (np.maximum(F @ x.reshape(m, d).T, 0) @ an)

    def jacobian(x):  # d margin_p / d V[l, h] = y_p a_h 1[pre_ph > 0] F_pl, flattened head by head
        on = (F @ x.reshape(m, d).T > 0) * an
        return (Y[:, None, None] * on[:, :, None] * F[:, None, :]).reshape(len(Y), m * d)

    res = minimize(lambda x: x @ x, V0.T.reshape(-1).numpy(), jac=lambda x: 2 * x, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda x: margins(x) - 1, "jac": jacobian}],
                   options={"maxiter": 2000, "ftol": 1e-14})
    return torch.tensor(res.x / margins(res.x).min()).reshape(m, d).T


@dataclasses.dataclass
class MinNorm:
    nu2: int
    gamma: float
    norm_construction: float  # ||W||^2 of g_2*
    own: theory.PatternQP  # the minimum-norm model with g_2*'s activation pattern, exact
    found: theory.PatternQP  # the same for the pattern of the local search's model
    norm_search: float  # the local search's own (float) squared norm

    @staticmethod
    def certified(q: theory.PatternQP) -> bool:
        """Feasible (every constraint, hence every margin >= 1, holds exactly) and optimal for its pattern (KKT:
        multipliers >= 0, stationarity exact)."""
        return q.slack >= 0 and min(q.multipliers) >= 0 and all(r == 0 for r in q.residual)

    @property
    def ratio(self) -> float:
        """Exact norm of the found pattern's optimum over the construction's; inf unless it is certified feasible."""
        return float(self.found.norm) / self.norm_construction if self.found.slack >= 0 else math.inf


def min_norm_check(size: ICLSizes, nu2: int = 2) -> MinNorm:
    """The min-norm claim of Theorem 5.5.1 at d = 2^nu2 (k = 2), within the diagonal family and g_2*'s signs a: the
    exact minimum-norm model among those with g_2*'s activation pattern, and among those with the pattern a local
    search moves to."""
    gamma = size.parity.gamma
    S1, S2 = parity_task_sets(2**nu2, 2)
    V, a = theory.parity_construction(nu2, gamma, nu2)
    z, phi, _, _, _ = parity_population_features(2**nu2, S1 + S2, gamma)
    found = local_min_norm_search(V, a, S1 + S2, gamma)
    signs = [int(x) for x in a]
    own = theory.pattern_qp(2**nu2, S1 + S2, gamma, signs, (z * phi) @ V > 1e-12, V)
    other = theory.pattern_qp(2**nu2, S1 + S2, gamma, signs, (z * phi) @ found > 1e-9, found)
    return MinNorm(nu2, gamma, float((V**2).sum()), own, other, float((found**2).sum()))


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

    def energy_z(self, con: Constructions) -> float:
        """Largest |E||P_Dj Xi||^2 - (nu_j + 1)/M| over the two constructions, in standard errors (the notes' F13)."""
        target = [(nu + 1) / ENERGY_M for nu in (con.nu1, con.nu2)]
        return max(abs(e - t) / s for e, t, s in zip(self.energy, target, self.energy_se, strict=True))

    def gap(self, M: int) -> Estimate:
        """Accuracy of the small minus the large construction at context length M (binomial errors of the two
        accuracies added as if independent: conservative, they share the prompts)."""
        a = self.at(M)
        return Estimate(float(a[0] - a[1]), math.sqrt(float(a[0] * (1 - a[0]) + a[1] * (1 - a[1])) / self.prompts))

    def least_significant_gap(self) -> Estimate:
        """The gap of least significance (value over se) at every M below the largest."""
        return min((self.gap(M) for M in self.Ms[:-1]), key=lambda g: g.value / g.se)

    def lowest_at_largest_M(self) -> Estimate:
        """The less accurate construction's accuracy at the largest M, with its binomial standard error."""
        low = float(self.accuracy[-1].min())
        return Estimate(low, math.sqrt(low * (1 - low) / self.prompts))


def parity_robustness(size: ICLSizes, run: Run, con: Constructions, flip_M: int = 64) -> ParityRobustness:
    """Theorem 5.5.2 at finite context: the projection energies, and the accuracy of g_1*, g_2* on S1 tasks against
    M and against the fraction of flipped context labels."""
    p = size.parity
    e1, se1 = projection_energy(con.V1, ENERGY_M, p.energy_prompts, run.generator("energy", "small"))
    e2, se2 = projection_energy(con.V2, ENERGY_M, p.energy_prompts, run.generator("energy", "large"))
    models = [(con.V1, con.a1), (con.V2, con.a2)]
    acc, hinge = [], []
    for M in p.Ms:
        a, h = mc_parity_accuracy(models, con.d, con.S1, con.gamma, M, p.prompts, run.generator("parity", M))
        acc.append(a), hinge.append(h)
    flip_acc = []
    for f in size.flips:
        a, _ = mc_parity_accuracy(models, con.d, con.S1, con.gamma, flip_M, p.prompts,
                                  run.generator("parity_flips"), flip_frac=f)  # the same prompts for every f
        flip_acc.append(a)
    return ParityRobustness((e1, e2), (se1, se2), p.Ms, torch.stack(acc), torch.stack(hinge), tuple(size.flips),
                            torch.stack(flip_acc), p.prompts)


def plot_parity(pr: ParityRobustness, con: Constructions):
    names = (f"small, m={2 * (con.nu1 + 1)}", f"large, m={2 * (con.nu2 + 1)}")
    return plot_panels([
        Panel([Curve(pr.Ms, pr.accuracy[:, k], names[k], st) for k, st in enumerate(("o-", "s-"))],
              xscale="log", xlabel="context length M", ylabel="accuracy on S1 tasks", legend_size=8),
        Panel([Curve(pr.flips, pr.flip_accuracy[:, k], names[k].split(",")[0], st)
               for k, st in enumerate(("o-", "s-"))],
              xlabel="fraction of flipped context labels (M=64)", ylabel="accuracy", legend_size=8),
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
    tokens) on the synthetic binary ICL task of :func:`feature_learning.data.in_context.icl_classification_tokens`
    with the logistic loss on fresh batches (AdamW). ``config.vocab`` must be d+1 and ``config.n_out`` 1. The
    ``replicas`` (seeds) are independent runs: their own initialisation and their own batches, so that their spread
    is the seed-to-seed spread. Weights
    and prompts are drawn on the CPU from ``generator`` and moved to ``device``, so CPU and CUDA runs see the same
    numbers. Returns (model, history)."""
    from feature_learning.models.transformer import init_transformer

    d = prior.shape[0]
    model = init_transformer(config, replicas=replicas, generator=generator, device=device)

    def loss_fn(step: int) -> torch.Tensor:
        tokens, yq = icl_classification_tokens(replicas * batch, M, d, prior, tau, generator)
        tokens, yq = tokens.view(replicas, batch, M + 1, d + 1).to(device), yq.view(replicas, batch).to(device)
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

    # -- the claims' measurements, each with its standard error over seeds and the trivial model's value ----------
    def clean_over_prior(self) -> Estimate:
        """The largest model's clean accuracy minus the prior rule's on the same prompts; null: the prior rule."""
        mean, se = self.mean_se(self.accuracy[-1, 0])
        return Estimate(float(mean - self.reference[0, 0]), float(se),
                        Null(0.0, PRIOR_RULE))

    def clean_gain_with_size(self) -> Estimate:
        """Clean accuracy of the largest model minus the smallest's (independent seeds); null: a size-blind model."""
        big, small = (Estimate(*map(float, self.mean_se(self.accuracy[k, 0]))) for k in (-1, 0))
        return dataclasses.replace(difference(big, small), null=SIZE_BLIND)

    def sensitivity_gain_with_size(self) -> Estimate:
        """Drop (p = 0 -> 1) of the largest model minus the smallest's, paired by seed index (the same evaluation
        prompts); null: a size-blind model."""
        return paired_difference(self.drop[-1], self.drop[0], SIZE_BLIND)

    def smallest_lowest(self) -> Estimate:
        """The smallest model's lowest mean accuracy over the flip fractions; null: the context rule (no prior)."""
        mean, se = self.mean_se(self.accuracy[0])
        k = int(mean.argmin())
        return Estimate(float(mean[k]), float(se[k]),
                        Null(float(self.reference[:, 1].min()), "the context rule (no prior: learns only in context)"))

    def largest_fully_flipped(self) -> Estimate:
        """The largest model's mean accuracy with every context label flipped; null: the prior rule."""
        mean, se = self.mean_se(self.accuracy[-1, -1])
        return Estimate(float(mean), float(se), Null(float(self.reference[-1, 0]), PRIOR_RULE))


def transformer_scale_sweep(size: ICLSizes, run: Run) -> TransformerSweep:
    """Train every transformer size (replicas = seeds) on the analogue task, then score each on the same evaluation
    prompts (common random numbers) for every flipped fraction of context labels."""
    t = size.transformer
    prior = tf_prior(t.d)
    acc, params = [], []
    for shape in t.shapes:
        model, _ = train_icl_transformer(tf_config(shape, t), prior, t.tau, t.M, t.steps, t.batch,
                                         run.generator("tf_train", shape), replicas=t.seeds, lr=t.lr,
                                         device=run.device)
        a, ref = icl_flip_accuracy(model, prior, t.tau, t.M, size.flips, t.eval_prompts, run.generator("tf_eval"),
                                   device=run.device)
        acc.append(a.numpy())
        params.append(sum(p[0].numel() for p in model.parameters()))
    return TransformerSweep(t.shapes, tuple(size.flips), np.stack(acc), ref.numpy(), params)


def plot_transformer_flips(ts: TransformerSweep):
    mean, se = ts.mean_se(ts.accuracy)
    curves = [Curve(ts.flips, mean[k], f"width {s[0]}, heads {s[1]}, blocks {s[2]}", "o-", f"C{k}", yerr=2 * se[k])
              for k, s in enumerate(ts.shapes)]
    curves += [Curve(ts.flips, ts.reference[:, 0], "prior rule", "k--"),
               Curve(ts.flips, ts.reference[:, 1], "context rule", "k:")]
    drop, drop_se = ts.mean_se(ts.drop)
    half, half_se = ts.mean_se(ts.drop_half)
    return plot_panels([
        Panel(curves, guides=[Guide(0.5, style="-")], xlabel="fraction of flipped context labels (M=16)",
              ylabel="accuracy against the true label"),
        Panel([Curve(ts.params, drop, "p = 0 -> 1", "o-", yerr=2 * drop_se),
               Curve(ts.params, half, "p = 0 -> 0.5", "s--", yerr=2 * half_se)],
              xscale="log", xlabel="parameters", ylabel="accuracy drop", legend_size=8),
    ], width=5.0, height=3.6)


# -- the source map (dissertation ch. 5, lines of 001_f43d5cd3f489e262.txt) -----------------------------------------
_V = "verified"
SOURCE_MAP = [
    dict(id="lemma_5_1", where="Lemma 5.1 (L1358)", what="Pretraining loss of the linear self-attention", status=_V,
         claims=["lemma51_constant", "reduction_to_eigenbasis"]),
    dict(id="lemma_5_1_constant", where="Lemma 5.1 (L1358-1364)", status="erratum",
         what="The lemma omits its constant and silently assumes the other weight blocks zero (cited as 'Theorem 5.1')",
         claims=["lemma51_constant"], note="C = tr(Lambda)/2, derived from Gaussian moments"),
    dict(id="thm_5_4_1", where="Thm 5.4.1 (L1376), App. D.2.1", status=_V,
         what="The optimal rank-r attention keeps the top-r eigen-directions, v_i* = N/((N+1) lam_i + tr D)",
         claims=["optimum_vstar", "top_r_directions", "trained_matches_optimum", "pretraining_loss_per_rank",
                 "sgd_lands_on_vstar", "sgd_loss_near_optimum", "sgd_full_matrix"],
         note="the source gives no training; by online SGD the whole matrix misses the notes' 5% tolerance at low "
              "rank (sgd_full_matrix, not reproduced), its diagonal and loss do not"),
    dict(id="thm_5_4_1_proof", where="Thm 5.4.1 proof (App. D.2.1)", status="erratum",
         what="The proof asserts that V* is diagonal and writes U Q^T U* Q for u* Q^T U* Q", claims=["optimum_vstar"],
         note="diagonality needs Eckart-Young on the completed square (derived in the chapter)"),
    dict(id="thm_5_4_2", where="Thm 5.4.2 (L1412)", what="Evaluation risk of the rank-r optimum under label noise",
         status=_V, claims=["risk_formula_symbolic", "risk_formula_mc", "noise_slope_matches"]),
    dict(id="thm_5_4_2_large_N", where="Thm 5.4.2, Implications (L1416)", status=_V,
         what="For N lam_r >> tr D the risk is ||xi||_D^2 + ((r+1)||s||_D^2 + r||xi||_D^2 + r sigma^2)/M",
         claims=["large_N_limit"]),
    dict(id="thm_5_4_3", where="Thm 5.4.3 (L1426-1434)", status=_V,
         what="Larger rank, larger noise sensitivity: the gap (||s||_D^2 + sigma^2)/M sum (lam_i v_i*)^2 >= 0",
         claims=["gap_formula_symbolic", "gap_matches_formula", "larger_rank_worse", "gap_grows_with_noise",
                 "noise_sensitivity_grows_with_rank"]),
    dict(id="thm_5_5_1_constructions", where="Thm 5.5.1 (L1474-1500)", status=_V,
         what="g_2* has zero loss on S1 and S2, g_1* on S1, under a condition on p_T",
         claims=["g2_zero_loss_margin1", "g1_covers_S1", "g1_S2_coverage", "g2_min_norm_own_pattern",
                 "pT_condition"]),
    dict(id="thm_5_5_1_optimality", where="Thm 5.5.1 (L1474), App. D.3", status="erratum",
         what="g_1* and g_2* are the optimal (loss-minimising, then minimum-norm) models of their sizes",
         claims=["g1_is_loss_minimiser", "g2_is_min_norm"],
         note="both refuted exactly: a rescaled g_1* halves the S2 loss; a certified zero-loss model of another "
              "activation pattern has a smaller norm than g_2*"),
    dict(id="thm_5_5_2", where="Thm 5.5.2 (L1529-1542)", status=_V,
         what="The small model lets (nu1+1)/(nu2+1) of the context noise through and is more robust at finite M",
         claims=["projection_ratio", "projection_energies", "small_more_robust_finite_M", "both_accurate_large_M"]),
    dict(id="fig_5_1_clean", where="Fig. 5.1, Sec. 5.6.1 (L1513, L1562)", status="reproduced on an analogue",
         what="With clean labels larger models are better in-context learners",
         claims=["tf_large_beats_prior", "tf_larger_more_accurate_clean"],
         analogue="tiny softmax transformers on a synthetic binary ICL task with a prior direction"),
    dict(id="fig_5_1_flips", where="Fig. 5.1, Sec. 5.6.1 (L1562)", status="reproduced on an analogue",
         what="As labels are flipped larger models degrade more and override their prior",
         claims=["tf_larger_more_flip_sensitive", "tf_large_overrides_prior"],
         analogue="tiny softmax transformers on a synthetic binary ICL task with a prior direction"),
    dict(id="fig_5_1_small", where="Fig. 5.1, Sec. 5.6.1 (L1562)", status="reproduced on an analogue",
         what="Small models stay flat and seldom fall below random guessing", claims=["tf_small_not_below_chance"],
         analogue="tiny softmax transformers on a synthetic binary ICL task with a prior direction"),
    dict(id="fig_5_2", where="Fig. 5.2, Sec. 5.6.1 (L1518, L1564)", status="not testable here",
         what="Base (not instruction-tuned) models show a similar or stronger effect; instruction tuning impairs ICL",
         note="the analogue has no pretrained base/instruction-tuned pair; Llama weights cannot be used here"),
    dict(id="fig_5_3", where="Fig. 5.3, Sec. 5.6.2 (L1525, L1566-1570)", status="not attempted",
         what="Llama 2-13b attends mainly to the relevant sentence, 70b to the irrelevant one too",
         note="no Llama or GSM-IC here, and the analogue's tokens have no irrelevant sentence; the linear model's "
              "closed-form counterpart (score_closed_form, score_energy_mc) is ours, not the source's"),
    dict(id="sec_5_7", where="Sec. 5.7 (L1572-1582)", status="not attempted",
         what="The robustness gap needs both pretraining noise and inference noise",
         note="a discussion without a stated result; no check was built"),
]

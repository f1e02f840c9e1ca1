"""Section 5.4 of the chapter: the linear self-attention regression setting, its training (exact and by online SGD),
the evaluation risk under label noise, the scale trade-off, label flips and the attention scores."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from feature_learning.book.profiles import Run
from feature_learning.data.bases import random_orthogonal
from feature_learning.data.in_context import icl_regression_prompts
from feature_learning.experiments.icl_model_scale.sizes import DTYPE, EVAL_TASK, SPECIAL_TASK, ICLSizes, SGDSizes
from feature_learning.measure.in_context import mc_regression_risk
from feature_learning.measure.statistics import Estimate, slope_se
from feature_learning.models.linear_attention import lsa_population_loss, reduced_lsa_predict
from feature_learning.theory import icl as theory
from feature_learning.training.loop import OptimConfig, train


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
        mc, se = zip(*(slope_se([s**2 for s in self.sigmas], self.mean[m, :, k], se=self.se[m, :, k])
                       for k in range(len(self.ranks))), strict=True)
        return np.array(mc), np.array(se), np.array(self.closed_slopes[m])



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
        return slope_se([s**2 for s in self.sigmas], self.gap_mc, se=self.gap_se)

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


    def ordering_flip(self, small: int = 2) -> Estimate:
        """Thm 5.4.2's trade-off on the risk averaged over w ~ N(0, I) (Monte Carlo): the full-rank model beats the
        rank-``small`` one at the lowest noise level (it covers more signal) and loses to it at the highest (it keeps
        more noise). The smaller of the two risk differences, with the larger of the two conservative se (the
        ranks' errors added)."""
        lo, hi = self.ew_mean[0], self.ew_mean[-1]
        gains = [(float(lo[small] - lo[-1]), float(self.ew_se[0, small] + self.ew_se[0, -1])),
                 (float(hi[-1] - hi[small]), float(self.ew_se[-1, small] + self.ew_se[-1, -1]))]
        return Estimate(min(g for g, _ in gains), max(se for _, se in gains))


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


# -- Section 5.7: the gap needs both pretraining noise and inference noise ------------------------------------------
@dataclasses.dataclass
class NoiseSources:
    """Theorem 5.4.3's gap (rank 6 minus rank 2, w = Q s in the top-2 span), paired per prompt, with each kind of
    noise of Sec. 5.7 removed in turn."""

    Ms: tuple[int, ...]
    scaled_gap: list[float]  # M x gap at sigma = 0 (input noise only), per M: constant if the gap is exactly ~ 1/M
    scaled_gap_se: list[float]
    scaled_gap_closed: float  # ||s||_D^2 sum_{i=3..6} a_i^2, the same at every M
    clean_pretraining_gap: float  # max over prompts |prediction of rank 6 - of rank 2| with lam_3.. = 0, sigma > 0

    @property
    def scaling_z(self) -> float:
        """|M_last gap_last - M_first gap_first| in standard errors (independent prompts)."""
        a, b = self.scaled_gap[0], self.scaled_gap[-1]
        return abs(b - a) / float(np.hypot(self.scaled_gap_se[0], self.scaled_gap_se[-1]))

    @property
    def vanishing_share(self) -> float:
        """The gap at the largest M as a share of that at the smallest (exactly M_first / M_last by Thm 5.4.3)."""
        return (self.scaled_gap[-1] / self.Ms[-1]) / (self.scaled_gap[0] / self.Ms[0])


def paired_gap(Us: torch.Tensor, Q: torch.Tensor, lam: torch.Tensor, M: int, prompts: int,
               generator: torch.Generator, w: torch.Tensor, sigma: float, chunk: int = 10_000):
    """Per prompt: squared error of Us[1] minus that of Us[0], and the largest |prediction difference|. Returns the
    mean difference, its standard error and that largest difference."""
    total, total_sq, largest, count = 0.0, 0.0, 0.0, 0
    ones = torch.ones(2, dtype=Us.dtype)
    while count < prompts:
        B = min(chunk, prompts - count)
        pr = icl_regression_prompts(B, M, Q, lam, generator, w=w, sigma=sigma)
        pred = reduced_lsa_predict(pr.X, pr.y, pr.xq, Us, ones, rho=M)
        diff = (pred[1] - pr.yq) ** 2 - (pred[0] - pr.yq) ** 2
        total, total_sq = total + float(diff.sum()), total_sq + float((diff**2).sum())
        largest, count = max(largest, float((pred[1] - pred[0]).abs().max())), count + B
    mean = total / count
    return mean, float(np.sqrt(max(total_sq / count - mean**2, 0.0) / count)), largest


def noise_sources(size: ICLSizes, run: Run, st: Setting, Ms=(16, 256), sigma_pre: float = 4.0) -> NoiseSources:
    """Sec. 5.7 in the linear model. Inference noise: with sigma = 0 only the finite-M input noise is left, and M times
    the paired Monte Carlo gap must stay at its closed form ||s||_D^2 sum a_i^2 as M grows (the gap vanishes as 1/M).
    Pretraining noise: with no pretraining variance in the directions the larger model adds (lam_i = 0 for i > 2),
    the two optimal attentions predict the same on every prompt even with label noise sigma_pre."""
    s_task = torch.zeros(st.d, dtype=DTYPE)
    s_task[: len(SPECIAL_TASK)] = torch.tensor(SPECIAL_TASK, dtype=DTYPE)
    Us = st.optimal_Us((2, 6))
    scaled, scaled_se = [], []
    for M in Ms:
        mean, se, _ = paired_gap(Us, st.Q, st.lam, M, size.risk.prompts, run.generator("noise_sources", M),
                                 st.Q @ s_task, 0.0)
        scaled.append(M * mean), scaled_se.append(M * se)
    a = st.lam * theory.v_star(st.lam, st.N, 6)
    closed = float((s_task**2 * st.lam).sum() * (a[2:6] ** 2).sum())
    lam0 = st.lam.clone()
    lam0[len(SPECIAL_TASK):] = 0.0
    Us0 = torch.stack([theory.optimal_U(st.Q, lam0, st.N, r) for r in (2, 6)])
    _, _, largest = paired_gap(Us0, st.Q, lam0, Ms[0], size.risk.prompts // 4, run.generator("noise_sources_clean"),
                               st.Q @ s_task, sigma_pre)
    return NoiseSources(tuple(Ms), scaled, scaled_se, closed, largest)

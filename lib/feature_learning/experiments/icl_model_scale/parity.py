"""Section 5.5 of the chapter: sparse parity, the source's constructions g_1* and g_2*, their optimality and their
robustness to context noise."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import sympy as sp
import torch
from scipy.optimize import minimize

from feature_learning.book.profiles import Run
from feature_learning.data.in_context import parity_population_features, parity_task_sets
from feature_learning.experiments.icl_model_scale.sizes import ENERGY_M, ICLSizes
from feature_learning.measure.in_context import mc_parity_accuracy, projection_energy
from feature_learning.measure.statistics import Estimate
from feature_learning.theory import icl as theory


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

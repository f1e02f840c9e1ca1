"""Closed forms of "Domain generalization via nuclear norm regularization" (Shi et al., CPAL 2024; dissertation
ch. 6 and appendix E), in SymPy, plus the source's DomainBed tables as data.

Section 6.4's model: r invariant label-multiplied features z_j ~ U[0, 1] and d - r environmental ones z_j ~ D_gamma
(U[0, 1] with probability 1/2 + gamma, else U[-1, 0]); the OOD test flips gamma to -gamma. The functions return
expressions or dataclasses of expressions; the chapter's claims and the tests judge them.
"""

from __future__ import annotations

import dataclasses
import math

import sympy as sp

z, c = sp.symbols("z c", real=True)
gamma, alpha, beta, t = sp.symbols("gamma alpha beta t", positive=True)
r, d, eps = sp.symbols("r d epsilon", positive=True)


# -- Lemma E.1: the logistic loss ------------------------------------------------------------------------------------
@dataclasses.dataclass
class LogisticFacts:
    loss: sp.Expr  # ln(1 + e^{-z})
    first: sp.Expr  # l'(z)
    second: sp.Expr  # l''(z)
    third: sp.Expr  # l'''(z)
    shift_gap: sp.Expr  # e^{-c} l'(z) - l'(z + c): >= 0 is Lemma E.1(4), l'(z + c) <= e^{-c} l'(z)


def logistic_facts() -> LogisticFacts:
    """Lemma E.1: l(z) = ln(1 + e^{-z}) is decreasing and convex, l'(z) = -1/(1 + e^z) in (-1, 0), l' is concave on
    [0, inf) (l''' < 0 there) and l'(z + c) <= e^{-c} l'(z) for c > 0. Derivatives by SymPy, simplified."""
    loss = sp.log(1 + sp.exp(-z))
    first = sp.simplify(sp.diff(loss, z))
    return LogisticFacts(loss, first, sp.simplify(sp.diff(loss, z, 2)), sp.factor(sp.simplify(sp.diff(loss, z, 3))),
                         sp.factor(sp.simplify(sp.exp(-c) * first - first.subs(z, z + c))))


# -- Lemma E.3: moments of the features ----------------------------------------------------------------------------
def environmental_moments() -> tuple[sp.Expr, sp.Expr]:
    """Mean and variance of D_gamma by integrating its density (1/2 - gamma on [-1, 0), 1/2 + gamma on [0, 1])."""
    x = sp.symbols("x", real=True)
    density = ((sp.Rational(1, 2) - gamma, -1, 0), (sp.Rational(1, 2) + gamma, 0, 1))
    mean = sp.simplify(sum(sp.integrate(p * x, (x, lo, hi)) for p, lo, hi in density))
    second = sp.simplify(sum(sp.integrate(p * x**2, (x, lo, hi)) for p, lo, hi in density))
    return mean, sp.expand(second - mean**2)


def uniform_moments() -> tuple[sp.Expr, sp.Expr]:
    """Mean and variance of U[0, 1] (the invariant features)."""
    x = sp.symbols("x", real=True)
    mean = sp.integrate(x, (x, 0, 1))
    return mean, sp.integrate(x**2, (x, 0, 1)) - mean**2


# -- Lemma E.4: Hoeffding tails --------------------------------------------------------------------------------
def hoeffding_exponent(deviation, ranges_squared) -> sp.Expr:
    """Hoeffding: P[sum (X_i - E X_i) <= -t] <= exp(-2 t^2 / sum (b_i - a_i)^2); returns the exponent."""
    return sp.simplify(2 * deviation**2 / ranges_squared)


def hoeffding_tails() -> tuple[sp.Expr, sp.Expr]:
    """Lemma E.4's exponents: P[sum_U z_j <= 0] (mean (d - r) gamma, ranges 2) and P[sum_R z_j <= r/4] (mean r/2,
    ranges 1): (d - r) gamma^2 / 2 and r / 8."""
    return (hoeffding_exponent((d - r) * gamma, 4 * (d - r)),
            hoeffding_exponent(r / 2 - r / 4, r))


# -- Lemma 6.1(3): the ratio chain (E.33)-(E.41) ---------------------------------------------------------------------
def ratio_chain() -> list[sp.Expr]:
    """The chain bounding alpha/beta: 1/(e^{-2 alpha}(1/2 + gamma) - (1/2 - gamma)) <= (alpha = 1/sqrt r) ...
    <= 1/(2 gamma - (1 - e^{-2/sqrt r})) <= 1/(2 gamma - 2/sqrt r) < 3/(4 gamma); each link is <= the next for
    alpha <= 1/sqrt r and gamma > 3/sqrt r."""
    half = sp.Rational(1, 2)
    return [1 / (sp.exp(-2 * alpha) * (half + gamma) - (half - gamma)),
            1 / (sp.exp(-2 / sp.sqrt(r)) * (half + gamma) - (half - gamma)),
            1 / (2 * gamma - (1 - sp.exp(-2 / sp.sqrt(r)))),
            1 / (2 * gamma - 2 / sp.sqrt(r)),
            3 / (4 * gamma)]


def ratio_boundary() -> list[sp.Expr]:
    """The gamma at which the last link is tight: 1/(2 gamma - 2/sqrt r) = 3/(4 gamma)."""
    chain = ratio_chain()
    return sp.solve(sp.Eq(chain[3], chain[4]), gamma)


# -- Proposition 6.3: the ERM-l2 OOD bound (E.45)-(E.53) ----------------------------------------------------------
@dataclasses.dataclass
class OodBoundAlgebra:
    deviation: sp.Expr  # -3r/(8 gamma) + (d - r) gamma: the Hoeffding deviation in (E.49)
    expanded: sp.Expr  # 2 * deviation^2, expanded: the numerator of (E.50) times 2
    printed_numerator: sp.Expr  # (E.50) as printed: 9 r^2/(32 gamma^2) + 2 (d - r)^2 gamma^2 - 3 r (d - r)/2
    ranges_printed: sp.Expr  # 4 d, the Hoeffding denominator printed in (E.49)
    ranges_corrected: sp.Expr  # r (3/(4 gamma))^2 + 4 (d - r): sum (b_i - a_i)^2 of the summands in (E.49)
    corrected_slack: sp.Expr  # 5 (d - r) - ranges_corrected at d - r = r/gamma^2 + eps
    reduced: sp.Expr  # (4 (d - r) gamma^2 - 3 r) / 10, the exponent of (E.52)
    final_slack: sp.Expr  # reduced - r/10 at d - r = r/gamma^2 + eps


def ood_bound_algebra() -> OodBoundAlgebra:
    """The algebra of Proposition 6.3's ERM-l2 half with the Hoeffding denominator corrected."""
    deviation = -3 * r / (8 * gamma) + (d - r) * gamma
    printed = 9 * r**2 / (32 * gamma**2) + 2 * (d - r) ** 2 * gamma**2 - sp.Rational(3, 2) * r * (d - r)
    corrected = r * (3 / (4 * gamma)) ** 2 + 4 * (d - r)
    at_threshold = {d: r + r / gamma**2 + eps}
    reduced = (4 * (d - r) * gamma**2 - 3 * r) / 10
    return OodBoundAlgebra(deviation, sp.expand(2 * deviation**2), printed, 4 * d, corrected,
                           sp.simplify((5 * (d - r) - corrected).subs(at_threshold)), reduced,
                           sp.simplify((reduced - r / 10).subs(at_threshold)))


# -- Section 6.3.1: the 2-D toy ------------------------------------------------------------------------------------
@dataclasses.dataclass
class Toy2D:
    q_small: sp.Expr  # P[U1 >= t U2] for 0 < t <= 1
    q_large: sp.Expr  # the same for t > 1
    accuracy_id: sp.Expr  # 0.7 + 0.3 q(t) (t <= 1 branch)
    accuracy_ood: sp.Expr  # 0.3 + 0.7 q(t)
    error_ratio_bound: sp.Expr  # max over the (y, b) cells of the OOD weight over the ID weight: 7/3


def toy_2d(p_id=None) -> Toy2D:
    """Accuracies of sign(w1 x1 + w2 x2), w1 > 0, slope t = w2/w1 >= 0, on the 2-D task: given y the classifier is
    right when b = +1 and right with probability q(t) = P[U1 >= t U2] when b = -1 (integrated by SymPy). For *any*
    classifier the conditional law given (y, b) is the same ID and OOD; only the cell weights p/2, (1 - p)/2 change,
    so OOD error <= max(weight ratio) ID error."""
    p_id = sp.Rational(7, 10) if p_id is None else p_id
    u = sp.symbols("u", positive=True)
    q_small = sp.integrate(1 - t * u, (u, 0, 1))
    q_large = sp.integrate(1 - t * u, (u, 0, 1 / t))
    p_ood = 1 - p_id
    ratios = [(p_ood / 2) / (p_id / 2), ((1 - p_ood) / 2) / ((1 - p_id) / 2)]
    return Toy2D(q_small, sp.simplify(q_large), p_id + (1 - p_id) * q_small, p_ood + (1 - p_ood) * q_small,
                 sp.Max(*ratios))


def toy_2d_accuracies(slope: float, p_align: float) -> float:
    """Numeric accuracy p + (1 - p) q(t) of the 2-D classifier with slope t = w2/w1 (and w1 > 0) when the
    environmental sign agrees with the label with probability ``p_align`` (t < 0: the roles of b = +-1 swap)."""
    if slope < 0:  # the hard cells are then those where the environmental sign agrees with the label
        return toy_2d_accuracies(-slope, 1 - p_align)
    q = 1 - slope / 2 if slope <= 1 else 1 / (2 * slope)
    return p_align + (1 - p_align) * q


# -- a large-d heuristic (derived in the notes, not in the source) ---------------------------------------------------
def clt_accuracy(a: float, b: float, r_: int, d_: int, gamma_: float) -> float:
    """Normal approximation of P[a S_R + b S_U >= 0] with S_U's features ~ D_gamma_: mean a r/2 + b (d - r) gamma_,
    variance a^2 r/12 + b^2 (d - r)(1/3 - gamma_^2) (the moments of :func:`environmental_moments`)."""
    mean = a * r_ / 2 + b * (d_ - r_) * gamma_
    sd = math.sqrt(a * a * r_ / 12 + b * b * (d_ - r_) * (1 / 3 - gamma_**2))
    return 0.5 * math.erfc(-mean / (sd * math.sqrt(2)))


# -- the source's DomainBed tables (OOD accuracy %, ResNet-50, mean over 3 trials) ------------------------------------
DATASETS = ("VLCS", "PACS", "OfficeHome", "TerraInc", "DomainNet")
TABLE_6_1 = {  # Table 6.1 (lines 1694-1718): the rows this chapter uses
    "Mixup": (77.4, 84.6, 68.1, 47.9, 39.2, 63.4),
    "Fishr": (77.8, 85.5, 67.8, 47.4, 41.7, 64.0),
    "mDSDI": (79.0, 86.2, 69.2, 48.1, 42.8, 65.1),
    "MIRO": (79.0, 85.4, 70.5, 50.4, 44.3, 65.9),
    "ERM": (77.5, 85.5, 66.5, 46.1, 40.9, 63.3),
    "ERM-NU": (78.3, 85.6, 68.1, 49.6, 43.4, 65.0),
    "SWAD": (79.1, 88.1, 70.6, 50.0, 46.5, 66.9),
    "SWAD-NU": (79.8, 88.5, 71.3, 52.2, 47.1, 67.8),
}
TABLE_6_2_AVERAGES = {  # Table 6.2 (lines 1833-1883): per-dataset averages over test domains
    "ERM": (77.5, 85.5, 66.5, 46.1, 40.9),
    "ERM-NU": (78.3, 85.6, 68.1, 49.6, 43.4),
    "Mixup": (77.4, 84.6, 68.1, 47.9, 39.2),
    "Mixup-NU": (77.5, 84.8, 68.8, 49.6, 42.3),
    "SWAD": (79.1, 88.1, 70.6, 50.0, 46.5),
    "SWAD-NU": (79.8, 88.5, 71.3, 52.2, 47.1),
}
TABLE_E3_OFFICEHOME = {  # Table E.3 (OfficeHome, per domain A, C, P, R)
    "Fishr": (68.1, 52.1, 76.0, 80.4),
    "mDSDI": (62.4, 54.4, 76.2, 78.3),
}
PAPER_AVERAGE_GAINS = {"ERM": 1.7, "Mixup": 1.2, "SWAD": 0.9}  # Fig. 6.4 / text: average NU - baseline, one decimal


def nu_gains(table: dict = TABLE_6_2_AVERAGES) -> dict[str, tuple[float, ...]]:
    """Per-dataset NU - baseline differences of Table 6.2 and their mean (last entry), in points."""
    out = {}
    for base in ("ERM", "Mixup", "SWAD"):
        diffs = [nu - b for nu, b in zip(table[f"{base}-NU"], table[base], strict=True)]
        out[base] = (*diffs, sum(diffs) / len(diffs))
    return out

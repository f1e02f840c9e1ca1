"""Closed forms of Shi, Wei and Liang (ICLR 2022) = dissertation ch. 2, appendix A, computed with SymPy.

Each function names the statement it implements. Symbols: k (relevant patterns), D (patterns), p_o (background
probability), n (sample size), m (width), s (noise level sigma_xi).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import sympy as sp

k, D, p_o, n, m, s, z = sp.symbols("k D p_o n m s z", positive=True)
eps, T, eta = sp.symbols("epsilon T eta", positive=True)


# -- the smoothed activation (footnote 1, eq. (3)) -------------------------------------------------------------
def normal_cdf(u):
    return (1 + sp.erf(u / sp.sqrt(2))) / 2


def normal_pdf(u):
    return sp.exp(-(u**2) / 2) / sp.sqrt(2 * sp.pi)


def smoothed_relu(u, scale=s):
    """E relu(u + xi), xi ~ N(0, s^2) = u Phi(u/s) + s phi(u/s)."""
    return u * normal_cdf(u / scale) + scale * normal_pdf(u / scale)


def smoothed_trunc_relu(u=z, scale=s):
    """E sigma(u + xi) for the truncated ReLU sigma = relu(u) - relu(u - 1)."""
    return smoothed_relu(u, scale) - smoothed_relu(u - 1, scale)


def smoothed_trunc_relu_derivative(u=z, scale=s):
    """Pr_xi[u + xi in (0, 1)] = Phi(u/s) - Phi((u-1)/s): the indicator expectation of Lemma 12."""
    return normal_cdf(u / scale) - normal_cdf((u - 1) / scale)


# -- the parity mixture D_A^mix (Appendix C, proof of Theorem 2) ---------------------------------------------
def parity_mixture_law(k_val: int, p=p_o):
    """Exact law of (S, one relevant coordinate) under D_A^mix: list of (probability, S, phi_1) over the relevant
    block (the background is independent of it and of the label)."""
    out = []
    for bits in itertools.product((0, 1), repeat=k_val):
        S = sum(bits)
        prob = p / 2**k_val + (1 - p) * (sp.Rational(1, 2) if S in (0, k_val) and (S == 0 or all(bits)) else 0)
        out.append((prob, S, bits[0]))
    return out


def mixture_constants(k_val: int, p=p_o, labels=None):
    """(Pr[y=+1], gamma, E[phi~_j] for j in A) of D_A^mix with labels ``labels(S)`` (default parity), by exact
    enumeration; gamma = E[y phi~_j] - E[y] E[phi~_j] is the correlation of assumption (A1)."""
    labels = labels or (lambda S: 1 if S % 2 == 1 else -1)
    law = parity_mixture_law(k_val, p)
    Ey = sp.simplify(sum(pr * labels(S) for pr, S, _ in law))
    Ephi = sp.simplify(sum(pr * b for pr, _, b in law))
    Eyphi = sp.simplify(sum(pr * labels(S) * b for pr, S, b in law))
    return sp.simplify((1 + Ey) / 2), sp.simplify(Eyphi - Ey * Ephi), Ephi


def sigma_tilde_sq(k_sym=k, D_sym=D, p=p_o):
    """sigma~^2 = sum_j Var(phi~_j) = k/4 + (D - k) p_o (1 - p_o) for D_A^mix (background marginal p_o)."""
    k_sym, D_sym, p = sp.sympify(k_sym), sp.sympify(D_sym), sp.sympify(p)
    return k_sym / 4 + (D_sym - k_sym) * p * (1 - p)


@dataclasses.dataclass(frozen=True)
class InitScales:
    """The initialisation scales of Section 3.1 (SymPy expressions)."""

    sigma_w: sp.Expr
    sigma_b: sp.Expr
    sigma_a: sp.Expr


def init_scales(k_sym=k, D_sym=D, p=p_o) -> InitScales:
    """sigma_w = 1/k, sigma_b = 1/k^2, sigma_a = sigma~^2/(gamma k^2) with gamma = (1 - p_o)/2 (Section 3.1)."""
    k_sym, D_sym, p = sp.sympify(k_sym), sp.sympify(D_sym), sp.sympify(p)
    gamma = (1 - p) / 2
    sigma_a = sigma_tilde_sq(k_sym, D_sym, p) / (gamma * k_sym**2)
    return InitScales(sigma_w=1 / k_sym, sigma_b=1 / k_sym**2, sigma_a=sigma_a)


def expected_label_correlation(k_sym=k, D_sym=D, p=p_o):
    """E[y x] = (gamma/sigma~) sum_{j in A} M_j: its coefficient gamma/sigma~ (Lemma 6 / 15 with beta = 1)."""
    return ((1 - p) / 2) / sp.sqrt(sigma_tilde_sq(k_sym, D_sym, p))


def first_step_weight(a0, beta, eta1, k_sym=k, D_sym=D, p=p_o):
    """w_i^(1) ~ eta^(1) a_i^(0) beta gamma/sigma~ sum_A M_j (Lemma 6 / 18): the coefficient of sum_A M_j."""
    return eta1 * a0 * beta * expected_label_correlation(k_sym, D_sym, p)


def second_step_cosine(k_sym=k, D_sym=D, p=p_o, n_sym=n):
    """|cos(w_i^(2), sum_A M_j)| when the step-2 gradient is beta * (empirical E[y z]) (derived from Lemma 20; F15 of
    the chapter notes, with the relevant block's own noise added): :func:`second_step_cosine_general` with the
    parity mixture's ||g||^2 = k gamma^2 and t_perp = (k - 1) p_o/4 + (D - k) p_o (1 - p_o), both in units of
    1/sigma~^2 (:func:`second_step_moments` derives them from the law by enumeration)."""
    gamma = (1 - p) / 2
    signal = k_sym * gamma**2
    noise = ((k_sym - 1) * p / 4 + (D_sym - k_sym) * p * (1 - p)) / n_sym
    return 1 / sp.sqrt(1 + noise / signal)


def relevant_block_law(k_val: int, p=p_o):
    """The exact law of the relevant block phi~_A under D_A^mix: list of (probability, bits) over {0,1}^k."""
    out = []
    for bits in itertools.product((0, 1), repeat=k_val):
        extreme = all(bits) or not any(bits)
        out.append((p / 2**k_val + (1 - p) * (sp.Rational(1, 2) if extreme else 0), bits))
    return out


@dataclasses.dataclass(frozen=True)
class SecondStepMoments:
    """The ingredients of the step-2 cosine (:func:`second_step_moments`), exact SymPy numbers or expressions."""

    g_sq: sp.Expr  # ||g_A||^2
    t_perp: sp.Expr  # trace of Cov(alpha_y y phi~_A) orthogonal to g
    t_perp_sq: sp.Expr  # trace of its square
    alpha_sq: sp.Expr  # E[alpha_y^2]


def second_step_moments(k_val: int, p=p_o, rho=None, labels=None) -> SecondStepMoments:
    """The ingredients of the step-2 cosine for D_A^mix, derived from the law by exact enumeration (in units of
    1/sigma~^2, 1/sigma~^4): the signal ||g_A||^2 with g = E[alpha_y y phi~_A] - E[alpha_y y] E[phi~_A], and the
    trace ``t_perp`` and squared trace ``t_perp_sq`` of Cov(alpha_y y phi~_A) orthogonal to g; ``alpha_sq`` =
    E[alpha_y^2] multiplies the background's variance p_o (1 - p_o) per pattern. ``rho`` (a share of class -1,
    class-conditional resampling) uses the class weights alpha_v = 1/(2 Pr[y = v]) of the general setting (A.293);
    None is the law itself with alpha = 1. The background adds (D - k) alpha_sq p_o (1 - p_o) to t_perp and
    (D - k) (alpha_sq p_o (1 - p_o))^2 to t_perp_sq (independent coordinates)."""
    labels = labels or (lambda S: 1 if S % 2 == 1 else -1)
    law = relevant_block_law(k_val, p)
    pos = sum(pr for pr, bits in law if labels(sum(bits)) > 0)
    share = {1: pos, -1: 1 - pos}  # Pr[y = v] under the law
    target = share if rho is None else {1: 1 - rho, -1: rho}  # Pr[y = v] after resampling
    weight = {v: 1 if rho is None else sp.Rational(1, 2) / target[v] for v in (1, -1)}
    mean = sp.Matrix([sum(pr * bits[j] for pr, bits in law) for j in range(k_val)])
    g = sp.zeros(k_val, 1)
    second = sp.zeros(k_val, k_val)
    for pr, bits in law:
        v = labels(sum(bits))
        q = pr * target[v] / share[v]  # the resampled probability of this atom
        c = sp.Matrix(bits) - mean
        g += q * weight[v] * v * c
        second += q * weight[v] ** 2 * (c * c.T)
    g = sp.simplify(g)
    cov = second - g * g.T
    g_sq = sp.simplify((g.T * g)[0, 0])
    proj = sp.eye(k_val) - g * g.T / g_sq
    c_perp = proj * cov * proj
    alpha_sq = sum(target[v] * weight[v] ** 2 for v in (1, -1))
    return SecondStepMoments(g_sq=g_sq, t_perp=sp.simplify(c_perp.trace()),
                             t_perp_sq=sp.simplify((c_perp * c_perp).trace()), alpha_sq=sp.simplify(alpha_sq))


def enumerated_second_step_cosine(k_val: int, rho=None):
    """The step-2 cosine of :func:`second_step_cosine_general` with the ingredients enumerated from the law
    (:func:`second_step_moments`), symbolic in D, n and p_o (at the share ``rho`` of class -1 with the class
    weights, p_o = 1/2): what the closed form :func:`second_step_cosine` must equal."""
    p = p_o if rho is None else sp.Rational(1, 2)
    mom = second_step_moments(k_val, p, rho)
    t_perp = mom.t_perp + (D - k_val) * mom.alpha_sq * p * (1 - p)
    return second_step_cosine_general(mom.g_sq, t_perp, n)


def expected_max_normal(m_val: int) -> tuple[float, float]:
    """Mean and standard deviation of the largest of m_val independent standard normals (numerical integration):
    max_i cos(w_i^(0), v) ~ this / sqrt(d) for m_val Gaussian units in R^d and a fixed direction v."""
    from scipy import integrate, stats

    def moment(power):
        density = lambda t: m_val * stats.norm.pdf(t) * stats.norm.cdf(t) ** (m_val - 1) * t**power  # noqa: E731
        return integrate.quad(density, -10, 10)[0]

    mean = moment(1)
    return mean, math.sqrt(moment(2) - mean**2)


def mixture_cosine_and_sd(k_val: int, D_val, n_val, p=None, rho=None) -> tuple[float, float]:
    """The step-2 cosine of :func:`second_step_cosine_general` and its standard deviation over samples
    (:func:`second_step_cosine_sd`) for D_A^mix at these sizes, from :func:`second_step_moments` (background
    added), at p_o = ``p`` (default 1/2): floats."""
    p = sp.Rational(1, 2) if p is None else sp.nsimplify(p)
    mom = second_step_moments(k_val, p, None if rho is None else sp.nsimplify(rho))
    bg = mom.alpha_sq * p * (1 - p)
    t_perp = mom.t_perp + (D_val - k_val) * bg
    t_perp_sq = mom.t_perp_sq + (D_val - k_val) * bg**2
    cos = second_step_cosine_general(mom.g_sq, t_perp, n_val)
    return float(cos), float(second_step_cosine_sd(mom.g_sq, t_perp, t_perp_sq, n_val))


g_norm, t_perp = sp.symbols(r"\|g\| t_\perp", positive=True)
G_sq = g_norm**2


def second_step_cosine_general(g_sq=G_sq, trace_perp=t_perp, n_sym=n):
    """|cos(w_i^(2), M g)| for any law, g = E[y z] in pattern coordinates (derived from Lemma 20 as
    :func:`second_step_cosine`): the step-2 gradient is beta * (empirical E[y z]) = beta (g + eps) with
    E||eps_perp||^2 = t_perp / n, t_perp the trace of Cov(y z) orthogonal to g. With the parity mixture's
    ||g||^2 = k gamma^2/sigma~^2 and t_perp = (D - k) p_o (1 - p_o)/sigma~^2 it is :func:`second_step_cosine`."""
    return 1 / sp.sqrt(1 + trace_perp / (n_sym * g_sq))


def second_step_cosine_sd(g_sq=G_sq, trace_perp=t_perp, trace_perp_sq=None, n_sym=n):
    """Standard deviation of that cosine over samples (derived, Gaussian approximation): with
    x = ||eps_perp||^2/||g||^2, Var x = 2 tr(C_perp^2)/(n ||g||^2)^2, and sd(cos) = |d cos/dx| sd(x)."""
    x = sp.Symbol("x", positive=True)
    trace_perp_sq = sp.Symbol(r"\operatorname{tr}C_\perp^2", positive=True) if trace_perp_sq is None else trace_perp_sq
    sd_x = sp.sqrt(2 * trace_perp_sq) / (n_sym * g_sq)
    slope = sp.diff(1 / sp.sqrt(1 + x), x)
    return sp.simplify(-slope.subs(x, trace_perp / (n_sym * g_sq)) * sd_x)


def weighted_second_moment(rho):
    """E[alpha_y^2] for the class weights alpha_v = 1/(2 Pr[y = v]) of the general setting (eq. (A.293)) when a share
    ``rho`` of the samples is negative: the factor by which class weighting inflates the variance of the background
    coordinates of the empirical E[alpha_y y x] (derived). The weighted signal E[alpha_y y phi_j] = gamma/sigma~ is
    unchanged by class-conditional resampling (Lemma A.33), so the cosine after two steps is
    :func:`second_step_cosine` with n replaced by n / E[alpha_y^2] = 4 rho (1 - rho) n."""
    return sp.simplify((1 - rho) * (1 / (2 * (1 - rho))) ** 2 + rho * (1 / (2 * rho)) ** 2)


# -- interval labels (Appendix E.1.2) -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class IntervalConstants:
    """Pr[y = +1] and gamma of the interval labels (:func:`interval_constants`), exact rationals."""

    pos_rate: sp.Expr
    gamma: sp.Expr


def interval_constants(k_val: int, low: int, p_in) -> IntervalConstants:
    """Independent patterns with Pr[phi~_j = 1] = ``p_in`` on A and y = +1 iff sum_A phi~_j >= ``low`` (the interval
    [low, k] of E.1.2): Pr[y = +1] and gamma = E[y phi~_j] - E[y] E[phi~_j] (j in A), exactly (binomial sums).
    gamma > 0 even at p_in = 1/2 (no input structure): the label keeps a linear part."""
    p_in = sp.nsimplify(p_in)

    def tail(m_, t):  # Pr[Bin(m_, p_in) >= t]
        return sum(sp.binomial(m_, s_) * p_in**s_ * (1 - p_in) ** (m_ - s_) for s_ in range(max(t, 0), m_ + 1))

    pos = tail(k_val, low)
    Ey = 2 * pos - 1
    Eyphi = p_in * (2 * tail(k_val - 1, low - 1) - 1)  # E[y phi_j] = p_in E[y | phi_j = 1]
    return IntervalConstants(pos_rate=sp.nsimplify(pos), gamma=sp.nsimplify(Eyphi - Ey * p_in))


# -- the best halfspace on D_A^mix (derived; explains Theorem 2's gap at finite k) ----------------------------
def best_threshold_accuracy(k_val: int, p=None):
    """max over thresholds t of the accuracy of 'predict +1 iff S >= t' on D_A^mix with parity labels; linear
    models in x only see S along sum_A M_j, so this is the best accuracy of any halfspace that uses S."""
    law = parity_mixture_law(k_val, sp.Rational(1, 2) if p is None else p)
    best = 0
    for t in range(0, k_val + 2):
        acc = sum(pr for pr, S, _ in law if (1 if S >= t else -1) == (1 if S % 2 == 1 else -1))
        best = sp.Max(best, sp.nsimplify(sp.simplify(acc)))
    return sp.simplify(best)


# -- Lemma 5 (= Lemma 8 / A.2): an exact network with 3(k+1) neurons -----------------------------------------
def relu(u):
    return sp.Max(0, u)


def hat(u, center, height, half_width):
    """delta_{s,a,b}(z) = a relu(z-s+b) - 2a relu(z-s) + a relu(z-s-b) (Lemma 7 / A.1): a tent of peak a b."""
    return height * (relu(u - center + half_width) - 2 * relu(u - center) + relu(u - center - half_width))


def ground_truth_network(k_val: int, P: tuple[int, ...], mu):
    """Lemma 5's g*: (a_i, b_i) of 3(k+1) truncated-ReLU units on the scalar <w*, x> = (S - mu)/(4k), variant 2
    (hats centred at p - mu + 1/4, height 4, half width 1/2, rescaled by 4k). Returns the list of (a, b)."""
    units = []
    for p in range(0, k_val + 1):
        sign = 1 if p in P else -1
        center = p - mu + sp.Rational(1, 4)
        for coef, shift in ((4, sp.Rational(1, 2)), (-8, 0), (4, -sp.Rational(1, 2))):
            # coef * relu(u - center + shift) with u = 4k t: = coef*4k * relu(t + (shift - center)/(4k))
            units.append((sign * coef * 4 * k_val, (shift - center) / (4 * k_val)))
    return units


def evaluate_units(units, t):
    """sum_i a_i relu(t + b_i) -- equal to the truncated-ReLU network on |t + b_i| <= 1 (Lemma 5's range)."""
    return sum(a * relu(t + b) for a, b in units)


@dataclasses.dataclass
class Lemma5Case:
    """Lemma 5's network for one k and labelling P: its values g*(S) at every count S = 0..k (evaluated at
    <w*, x> = (S - k/2)/(4k), mu = k/2 as for D_A^mix), the labels y(S), and the extremes of |a*|, |b*|, and of
    |<w*, x> + b*| over the counts (the range where ReLU and truncated ReLU agree)."""

    k: int
    P: tuple[int, ...]
    values: list
    targets: list
    max_a: object
    min_b: object
    max_b: object
    max_pre: object


def lemma5_cases(k_values=(3, 4, 5, 7), every_labelling_at: int = 5) -> list[Lemma5Case]:
    """Lemma 5 exactly (SymPy rationals): every labelling P of {1..k} at k = ``every_labelling_at``, the parity
    labelling at the other k."""
    cases = []
    for k_val in k_values:
        if k_val == every_labelling_at:
            sets = [tuple(p for p in range(1, k_val + 1) if mask >> p & 1) for mask in range(0, 2 ** (k_val + 1), 2)]
        else:
            sets = [tuple(p for p in range(1, k_val + 1) if p % 2)]
        for P in sets:
            mu = sp.Rational(k_val, 2)
            units = ground_truth_network(k_val, P, mu)
            ts = [(S - mu) / (4 * k_val) for S in range(k_val + 1)]
            cases.append(Lemma5Case(
                k_val, P, [evaluate_units(units, t) for t in ts], [1 if S in P else -1 for S in range(k_val + 1)],
                max(abs(a) for a, _ in units), min(abs(b) for _, b in units), max(abs(b) for _, b in units),
                max(abs(t + b) for t in ts for _, b in units)))
    return cases


def parity_correlation_max(D_val: int, k_val: int) -> int:
    """max over distinct k-sets A != B of |sum_z chi_A(z) chi_B(z)| over z in {-1, +1}^D (exact integers): 0 means
    the parities are pairwise uncorrelated under the uniform law (the SQ dimension argument of Theorem 4)."""
    cube = list(itertools.product((-1, 1), repeat=D_val))
    sets = list(itertools.combinations(range(D_val), k_val))
    chi = {A: [math.prod(z[i] for i in A) for z in cube] for A in sets}
    return max(abs(sum(u * v for u, v in zip(chi[A], chi[B], strict=True))) for A in sets for B in sets if A != B)


# -- rates and lower bounds ------------------------------------------------------------------------------------
def theorem1_rate(k_sym=k, m_sym=m, T_sym=T):
    """The loss bound (279) of Theorem 26: k^8/m^(2/3) + k^3 T/m^2 + k^2 m^(2/3)/T (up to constants)."""
    two_thirds = sp.Rational(2, 3)
    return k_sym**8 / m_sym**two_thirds + k_sym**3 * T_sym / m_sym**2 + k_sym**2 * m_sym**two_thirds / T_sym


def theorem2_bound(N, B, k_sym=k, p=p_o):
    """Theorem 2: hinge loss >= p_o (1 - sqrt(2N) B / 2^k) for linear models on N fixed features, ||w|| <= B."""
    return p * (1 - sp.sqrt(2 * N) * B / 2**k_sym)


def sq_query_bound(D_val, k_val):
    """Theorem 4: queries or 1/tau >= C(D,k)^(1/3)/2 to reach error < 1/2 - C(D,k)^-3 without input structure."""
    return sp.binomial(D_val, k_val) ** sp.Rational(1, 3) / 2

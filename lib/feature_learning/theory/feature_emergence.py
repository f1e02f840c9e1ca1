"""Closed forms of Shi, Wei and Liang (ICLR 2022) = dissertation ch. 2, appendix A, computed with SymPy.

Each function names the statement it implements. Symbols: k (relevant patterns), D (patterns), p_o (background
probability), n (sample size), m (width), s (noise level sigma_xi).
"""

from __future__ import annotations

import itertools

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


def init_scales(k_sym=k, D_sym=D, p=p_o):
    """sigma_w = 1/k, sigma_b = 1/k^2, sigma_a = sigma~^2/(gamma k^2) with gamma = (1 - p_o)/2 (Section 3.1)."""
    k_sym, D_sym, p = sp.sympify(k_sym), sp.sympify(D_sym), sp.sympify(p)
    gamma = (1 - p) / 2
    sigma_a = sigma_tilde_sq(k_sym, D_sym, p) / (gamma * k_sym**2)
    return {"sigma_w": 1 / k_sym, "sigma_b": 1 / k_sym**2, "sigma_a": sigma_a}


def expected_label_correlation(k_sym=k, D_sym=D, p=p_o):
    """E[y x] = (gamma/sigma~) sum_{j in A} M_j: its coefficient gamma/sigma~ (Lemma 6 / 15 with beta = 1)."""
    return ((1 - p) / 2) / sp.sqrt(sigma_tilde_sq(k_sym, D_sym, p))


def first_step_weight(a0, beta, eta1, k_sym=k, D_sym=D, p=p_o):
    """w_i^(1) ~ eta^(1) a_i^(0) beta gamma/sigma~ sum_A M_j (Lemma 6 / 18): the coefficient of sum_A M_j."""
    return eta1 * a0 * beta * expected_label_correlation(k_sym, D_sym, p)


def second_step_cosine(k_sym=k, D_sym=D, p=p_o, n_sym=n):
    """|cos(w_i^(2), sum_A M_j)| when the step-2 gradient is beta * (empirical E[y x]) (derived from Lemma 20):
    signal k (gamma/sigma~)^2 against background (D - k) Var(phi_j)/n = (D-k) p_o(1-p_o)/(sigma~^2 n)."""
    gamma = (1 - p) / 2
    signal = k_sym * gamma**2
    noise = (D_sym - k_sym) * p * (1 - p) / n_sym
    return 1 / sp.sqrt(1 + noise / signal)


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

"""Closed forms of dissertation ch. 3 (Shi, Wei and Liang, NeurIPS 2023: gradient feature learning), with SymPy.

Each function names the statement it implements and returns expressions or exact values; none judges itself (the
chapter's claims and the tests do). Conventions as in the source: sigma(<w, x> - b), hinge loss l(z) = max(0, 1 - z)
with l'(0) = -1.

* the symmetric initialisation (3.9) and the first step with lambda = 1/eta (Lemma B.71, eqs. (B.16)-(B.17));
* Gaussian tails: where the probabilities p of the gradient-feature sets come from (Lemmas 3.17, 3.21, B.37, B.75);
* the ground-truth "bump" network of the structured parity (eq. (B.469)), checked exactly on every input;
* the error bookkeeping of Theorem 3.12 for the special cases, the width reading, the drift recurrence (Lemma B.9);
* the Majority Fourier coefficient (eq. (B.480), corrected), the first-step gradient of the uniform parity
  (Lemma B.63, corrected), E[y x] of the structured parity (Remark B.45, corrected);
* the table of special cases (p, gamma, B_G, g*, B_F, error) as the source states them.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import sympy as sp

from feature_learning.theory.feature_emergence import hat, relu

d, k, r, tau, C_b, sigma_B, sigma_w = sp.symbols("d k r tau C_b sigma_B sigma_w", positive=True)
eta, lam, m, p, eps, n = sp.symbols("eta lambda m p epsilon n", positive=True)
B_a1, B_a2, B_b, B_x1, B_x2, B_G = sp.symbols("B_a1 B_a2 B_b B_x1 B_x2 B_G", positive=True)
gamma, p_A = sp.symbols("gamma p_A", positive=True)


# -- the symmetric initialisation and the first step ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class InitIdentities:
    """Lemma B.71's identities (:func:`symmetric_init_identities`)."""

    output: sp.Expr  # the summed output of the four blocks (simplifies to 0)
    blocks_1_3: sp.Expr  # grad block 1 + grad block 3 (0)
    indicator: sp.Expr  # H(-z + b) + H(z - b) - 1 (0 away from z = b)
    indicator_points: list  # the indicator at z - b = -2, -1, 1, 2
    first_step: sp.Expr  # W^(1) = W0 - eta (g + lambda W0) at lambda = 1/eta, simplified
    gradient: sp.Symbol  # the symbol g of the gradient in ``first_step``
    init: sp.Symbol  # the symbol W0 of the initial weight in ``first_step``


def symmetric_init_identities() -> InitIdentities:
    """Lemma B.71 in one neuron's coordinates. With z = <w, x>, the four blocks of (3.9) contribute
    a s(z - b) - a s(-z + b) - a s(z - b) + a s(-z + b) (s = ReLU); their sum, the output at initialisation, is 0.
    The weight gradients of blocks 1 and 3 at the same (w, b) differ only by the sign of a, so after a step with
    lambda = 1/eta, w_1 = -w_3. And 1[-z > -b] = 1 - 1[z >= b] gives G(-w, -b) = E[y x] - G(w, b).

    The first step is returned with its symbols, so that a caller compares it with -eta g on its own."""
    a, z, b, x, y, lp = sp.symbols("a z b x y l'", real=True)
    w = sp.Symbol("w", real=True)
    s = sp.Function("sigma")
    output = a * s(z - b) - a * s(-z + b) - a * s(z - b) + a * s(-z + b)
    # gradient of l(y g) w.r.t. w for one unit a s(w x - b), at g = 0: l'(0) y a s'(w x - b) x
    unit = lambda a_: lp * y * a_ * sp.Heaviside(w * x - b) * x  # noqa: E731
    grad_w, W0 = sp.symbols("g W0", real=True)
    first = sp.simplify((W0 - eta * (grad_w + lam * W0)).subs(lam, 1 / eta))
    zz = sp.Symbol("z", real=True)  # a fresh real z (the indicator identity)
    indicator = sp.Heaviside(-zz + b) + sp.Heaviside(zz - b) - 1
    return InitIdentities(output=sp.simplify(output), blocks_1_3=sp.simplify(unit(a) + unit(-a)), indicator=indicator,
                          indicator_points=[indicator.subs({zz: v, b: 0}) for v in (-2, -1, 1, 2)], first_step=first,
                          gradient=grad_w, init=W0)


@dataclasses.dataclass(frozen=True)
class FirstStepBlocks:
    """Lemma B.71's first step, one sample at a time (:func:`symmetric_first_step`)."""

    steps: tuple  # the per-sample first-step weights of blocks 1-4 of one neuron, t = <w, x> - b
    opposite: tuple  # w_1 + w_3 and w_2 + w_4 (0 for every t)
    mirror: tuple  # w_2 - w_1 - eta l'(0) a y x at t > 0 and at t < 0 (0 on both sides of the kink)
    drift: sp.Expr  # eta l'(0) a y x: the per-sample w_2 - w_1, whose mean is eta l'(0) a E[y x]


def symmetric_first_step() -> FirstStepBlocks:
    """Lemma B.71's second and third statements, derived rather than checked on a run. One neuron of (3.9) has the
    four units (a, w, b), (-a, -w, -b), (-a, w, b), (a, -w, -b). At the symmetric initialisation g = 0, so the first
    step with lambda = 1/eta is W^(1) = -eta grad, and one sample's gradient for a unit (a_u, w_u, b_u) is
    l'(0) y a_u 1[<w_u, x> > b_u] x, with <w_u, x> - b_u = +-t, t = <w, x> - b. SymPy sums blocks 1 and 3 (and 2 and
    4) for a symbolic t, and evaluates w_2 - w_1 on both sides of the kink t = 0 (a positive symbol and its
    negative): it is eta l'(0) a y x there, so its mean is eta l'(0) a E[y x] whenever Pr[t = 0] = 0, and the blocks
    coincide when E[y x] = 0. Expectation is linear, so the per-sample identities carry over to the step."""
    a, eta_, lp, x, y, t = sp.symbols("a eta l' x y t", real=True)
    u = sp.Symbol("u", positive=True)
    units = ((a, 1), (-a, -1), (-a, 1), (a, -1))  # (output weight, sign of <w_u, x> - b_u in terms of t)
    steps = tuple(-eta_ * lp * y * a_u * sp.Heaviside(s_u * t) * x for a_u, s_u in units)
    opposite = (sp.simplify(steps[0] + steps[2]), sp.simplify(steps[1] + steps[3]))
    drift = eta_ * lp * a * y * x
    diff = steps[1] - steps[0] - drift
    mirror = (sp.simplify(diff.subs(t, u)), sp.simplify(diff.subs(t, -u)))
    return FirstStepBlocks(steps=steps, opposite=opposite, mirror=mirror, drift=drift)


# -- Gaussian tails: where p comes from --------------------------------------------------------------------------------
def gaussian_tail() -> sp.Expr:
    """Phi-bar(z) = Pr[N(0, 1) >= z]."""
    z = sp.Symbol("z", positive=True)
    return sp.Lambda(z, sp.erfc(z / sp.sqrt(2)) / 2)


@dataclasses.dataclass(frozen=True)
class TailExponent:
    """One case of :func:`tail_exponents`: z, log(e^{-z^2/2}) and the source's log of the printed power."""

    z: sp.Expr
    log_tail: sp.Expr
    source: sp.Expr


def tail_exponents() -> dict[str, TailExponent]:
    """The exponent e^{-z^2/2} of the Sure-set probabilities (Lemma B.75's Gaussian tail), as a power of d or log d.

    * structured parity (B.411): z = (3/2) C_b sqrt(tau r log d): e^{-z^2/2} = d^(-9 C_b^2 tau r / 8);
    * mixture of Gaussians (B.263): z = 3 C_b sqrt(tau log d) sigma_B / ||mu~|| (the factor 2 of ||mu^|| >= ||mu||/2):
      d^(-9 C_b^2 tau sigma_B^2 / (2 ||mu~||^2));
    * XOR mixture (B.37): z = (6/5) sqrt(tau log log d) sigma_B: (log d)^(-18 tau sigma_B^2 / 25).

    Returns, per case, z, log(e^{-z^2/2}) and the source's log of the printed power (equal after simplification)."""
    mu = sp.Symbol("mu_tilde", positive=True)
    L = sp.log(d)
    cases = {
        "parity": (sp.Rational(3, 2) * C_b * sp.sqrt(tau * r * L), -sp.Rational(9, 8) * C_b**2 * tau * r * L),
        "mixture": (3 * C_b * sp.sqrt(tau * L) * sigma_B / mu,
                    -sp.Rational(9, 2) * C_b**2 * tau * sigma_B**2 * L / mu**2),
        "xor": (sp.Rational(6, 5) * sp.sqrt(tau * sp.log(L)) * sigma_B,
                -sp.Rational(18, 25) * tau * sigma_B**2 * sp.log(L)),
    }
    return {name: TailExponent(z=z, log_tail=sp.expand(-(z**2) / 2), source=src) for name, (z, src) in cases.items()}


@dataclasses.dataclass(frozen=True)
class MillsBounds:
    """:func:`mills_bounds`: the lower bound, the tail and the upper bound as expressions in ``z``."""

    z: sp.Symbol
    lower: sp.Expr
    tail: sp.Expr
    upper: sp.Expr


def mills_bounds() -> MillsBounds:
    """Lemma B.75: z/(z^2 + 1) phi(z) < Phi-bar(z) < phi(z)/z for z > 0, phi the standard normal density."""
    z = sp.Symbol("z", positive=True)
    phi = sp.exp(-(z**2) / 2) / sp.sqrt(2 * sp.pi)
    return MillsBounds(z=z, lower=z / (z**2 + 1) * phi, tail=sp.erfc(z / sp.sqrt(2)) / 2, upper=phi / z)


def sure_probability(c_sure: float, b_tilde: float, k_val: int, sigma_w_val: float) -> float:
    """Pr[<w, D> >= C_Sure,1 b~ / sqrt(k)] for w ~ N(0, sigma_w^2 I) and a unit D:
    Phi-bar(C_Sure,1 b~ / (sqrt(k) sigma_w))
    (the first condition of Definition B.46)."""
    return 0.5 * math.erfc(c_sure * b_tilde / (math.sqrt(k_val) * sigma_w_val) / math.sqrt(2))


def parity_feature_probability(tau_val: float, r_val: int, d_val: int, C_b_val: float = 1.0) -> float:
    """Lemma 3.21's p = 1/(sqrt(tau r log d) d^(9 C_b^2 tau r / 8)) with the Theta constant 1 (the theory's
    worst case, to compare with the measured fraction of nice units)."""
    return 1.0 / (math.sqrt(tau_val * r_val * math.log(d_val)) * d_val ** (9 * C_b_val**2 * tau_val * r_val / 8))


# -- the structured parity -----------------------------------------------------------------------------------------
def bump_network_units(k_val: int, r_val: int = 1):
    """The ground truth of eq. (B.469) as a list of (block j, a_i, threshold t_i) for sum_i a_i sigma(<D_j, x> - t_i):
    for each block j and i = 0..k the bump (-1)^{i+1} sqrt(k) [s(v - (2i-k-1)/sqrt k) - 2 s(v - (2i-k)/sqrt k)
    + s(v - (2i-k+1)/sqrt k)] of height 1 at <D_j, x> = (2i - k)/sqrt(k): 3 r (k + 1) units."""
    rk = sp.sqrt(k_val)
    units = []
    for j in range(r_val):
        for i in range(k_val + 1):
            sign = (-1) ** (i + 1)
            for coef, off in ((1, -1), (-2, 0), (1, 1)):
                units.append((j, sign * coef * rk, sp.Rational(2 * i - k_val + off) / rk))
    return units


def bump_network_value(k_val: int, sums) -> sp.Expr:
    """g*(x) of eq. (B.469) where <D_j, x> = sums[j] / sqrt(k) (sums[j] = sum of phi over block A_j, an integer)."""
    rk = sp.sqrt(k_val)
    total = 0
    for s_j in sums:
        v = sp.Integer(s_j) / rk
        for i in range(k_val + 1):
            total += (-1) ** (i + 1) * hat(v, sp.Integer(2 * i - k_val) / rk, rk, 1 / rk)
    return sp.nsimplify(total)


def bump_network_integer(k_val: int, s_j: int) -> int:
    """Block j's part of eq. (B.469) at <D_j, x> = s_j/sqrt(k), in integers: by the positive homogeneity of the
    ReLU, sqrt(k) s((s_j - u)/sqrt(k)) = s(s_j - u), so it is
    sum_i (-1)^{i+1} [s(s_j - (2i-k-1)) - 2 s(s_j - (2i-k)) + s(s_j - (2i-k+1))] exactly (an integer)."""
    def s(u):
        return max(u, 0)

    return sum((-1) ** (i + 1) * (s(s_j - (2 * i - k_val - 1)) - 2 * s(s_j - (2 * i - k_val))
                                  + s(s_j - (2 * i - k_val + 1))) for i in range(k_val + 1))


@dataclasses.dataclass(frozen=True)
class BumpMargins:
    """:func:`bump_network_margins`: min y g* over the patterns, the largest hinge loss, the number of patterns."""

    min_margin: int
    max_hinge: int
    patterns: int


def bump_network_margins(k_val: int, r_val: int) -> BumpMargins:
    """y g*(x) on every input pattern of the structured parity: every phi_A in {-1, +1}^{rk} (X_U) and the 2r
    structured patterns (X_{j,+-}); the noise coordinates do not enter <D_j, x> (M orthonormal). Exact integers
    (:func:`bump_network_integer`). The source's claim is
    min y g* >= 1, hinge 0 (Lemma B.51)."""
    table = {s_j: bump_network_integer(k_val, s_j) for s_j in range(-k_val, k_val + 1)}
    margins = []
    for signs in itertools.product((-1, 1), repeat=r_val * k_val):
        blocks = [signs[j * k_val:(j + 1) * k_val] for j in range(r_val)]
        y = 1 if sum(math.prod(b) for b in blocks) > 0 else -1
        margins.append(y * sum(table[sum(b)] for b in blocks))
    for _ in range(r_val):  # X_{j,+-}: block j at +-k, the other blocks all zero (the same for every j)
        for sign in (1, -1):
            margins.append(sign * (table[sign * k_val] + (r_val - 1) * table[0]))
    return BumpMargins(min_margin=min(margins), max_hinge=max(max(0, 1 - v) for v in margins), patterns=len(margins))


def bump_homogeneity() -> tuple[sp.Expr, sp.Expr]:
    """sqrt(k) s(w/sqrt(k)) - s(w) for s = ReLU and k > 0, on w > 0 and on w < 0 (both simplify to 0): the identity
    behind :func:`bump_network_integer` (w = <D_j, x> sqrt(k) - u)."""
    pos, neg = sp.Symbol("w", positive=True), sp.Symbol("w", negative=True)
    return tuple(sp.simplify(sp.sqrt(k) * relu(w / sp.sqrt(k)) - relu(w)) for w in (pos, neg))


@dataclasses.dataclass(frozen=True)
class BumpNorms:
    """:func:`bump_network_norms`: (max |a_i|, ||a||_2, max |t_i|) as written, merged and as the source bounds them."""

    as_written: tuple
    merged: tuple
    merged_units: int
    units: int
    source: tuple


def bump_network_norms(k_val: int, r_val: int) -> BumpNorms:
    """(max |a_i|, ||a||_2, max |t_i|) of eq. (B.469) as written (3r(k+1) units) and after merging the units that
    share a threshold, against the source's B_F = (2 sqrt k, 2 sqrt(r k (k+1)), (k+1)/sqrt k) of Lemma B.51."""
    units = bump_network_units(k_val, r_val)
    merged: dict = {}
    for j, a_i, t_i in units:
        merged[(j, t_i)] = merged.get((j, t_i), 0) + a_i
    merged_a = [v for v in merged.values() if v != 0]

    def norms(coefs, thresholds):
        return (max(abs(c) for c in coefs), sp.sqrt(sum(c**2 for c in coefs)), max(abs(t) for t in thresholds))

    rk = sp.sqrt(k_val)
    return BumpNorms(as_written=norms([u[1] for u in units], [u[2] for u in units]),
                     merged=norms(merged_a, [t for (j, t), v in merged.items() if v != 0]),
                     merged_units=len(merged_a), units=len(units),
                     source=(2 * rk, 2 * sp.sqrt(r_val * k_val * (k_val + 1)), (k_val + 1) / rk))


def parity_mean_yx(k_val: int, r_val: int, p_A_val, p_o_val=None, extra: int = 1) -> list:
    """E[y phi] of the structured parity in the coordinates phi (x = M phi), by exact enumeration of the law with
    ``extra`` background coordinates: a list of r k + extra rationals. Remark B.45 says E[y x] = 0; the enumeration
    gives 2 p_A on every relevant coordinate (E[y x] = 2 p_A sqrt(k) sum_j D_j) and 0 on the background."""
    rk = r_val * k_val
    p_A_val = sp.nsimplify(p_A_val)
    p_o_val = sp.Rational(1, 2) if p_o_val is None else sp.nsimplify(p_o_val)
    mean = [sp.Integer(0)] * (rk + extra)
    bg_law = [(1, p_o_val), (-1, p_o_val), (0, 1 - 2 * p_o_val)]

    def label(phi_A):
        return sp.sign(sum(math.prod(phi_A[j * k_val:(j + 1) * k_val]) for j in range(r_val)))

    parts = [(signs, (1 - 2 * r_val * p_A_val) / 2**rk) for signs in itertools.product((-1, 1), repeat=rk)]
    for j in range(r_val):
        for s in (1, -1):
            parts.append((tuple(s if i // k_val == j else 0 for i in range(rk)), p_A_val))
    for phi_A, pr in parts:
        y = label(phi_A)
        for bg in itertools.product(bg_law, repeat=extra):
            prob = pr * math.prod(q for _, q in bg)
            phi = list(phi_A) + [v for v, _ in bg]
            for i, v in enumerate(phi):
                mean[i] += prob * y * v
    return [sp.simplify(v) for v in mean]


# -- the main theorem's bookkeeping ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ErrorTerms:
    """:func:`error_terms`: the parity term (simplified and as the source prints it), the XOR term and the width."""

    parity: sp.Expr
    parity_source: sp.Expr
    xor: sp.Expr
    width: sp.Expr


def error_terms() -> ErrorTerms:
    """The second term r B_a1 B_x1 sqrt(2 gamma) of (3.13) in each special case, simplified (C6 of the notes):
    parity (B.477), XOR mixture (B.394) and the Theorem 3.12 width m ~ (r B_a1 B_x1)^4 B_b^2 / (p eps^4 B_G^2)."""
    parity = r * 2 * sp.sqrt(k) * sp.sqrt(d) * sp.sqrt(2 * d ** (-(tau - 2)))
    tilde = sp.Symbol("tau_tilde", positive=True)
    xor_ba1 = 1 / (sp.sqrt(tilde * sp.log(d)) * sigma_B)
    xor = (4 * xor_ba1 * (1 + sigma_B) * sp.sqrt(d) * sp.sqrt(2 * sigma_B / sp.sqrt(d))).subs(
        sp.sqrt(tilde * sp.log(d)), sp.sqrt(d) / sigma_B)
    width = ((r * B_a1 * B_x1 * sp.sqrt(B_b / B_G)) ** 4 / (p * eps**4))
    return ErrorTerms(parity=sp.powsimp(sp.simplify(parity), force=True),
                      parity_source=2 * sp.sqrt(2) * r * sp.sqrt(k) / d ** ((tau - 3) / 2),
                      xor=sp.simplify(xor), width=sp.simplify(width))


@dataclasses.dataclass(frozen=True)
class DriftRecurrence:
    """:func:`drift_recurrence`: the closed form h(t), its recurrence residual and h(1) - A, h(2) - (2A + eta Z)."""

    h: sp.Expr
    residual: sp.Expr
    h1: sp.Expr
    h2: sp.Expr


def drift_recurrence() -> DriftRecurrence:
    """Lemma B.9 / B.77: h(t+2) = 2 h(t+1) - (1 - (eta B)^2) h(t) + eta Z with h(1) = A, h(2) = 2A + eta Z, and the
    source's solution h(t) = -Z/(eta B^2) + c1 (1 - eta B)^(t-1) + c2 (1 + eta B)^(t-1),
    c_{1,2} = (A + Z/(eta B^2) -+ (A + eta Z)/(eta B))/2 (B.72)-(B.74). Returns the recurrence residual of the
    closed form (with (1 -+ eta B)^(t-1) written as symbols) and its values at t = 1, 2 minus the initial conditions;
    all simplify to 0."""
    t, A, Z, B = sp.symbols("t A Z B", positive=True)
    q1, q2 = sp.symbols("q1 q2", positive=True)  # (1 - eta B)^(t-1), (1 + eta B)^(t-1)
    c1 = (A + Z / (eta * B**2) - (A + eta * Z) / (eta * B)) / 2
    c2 = (A + Z / (eta * B**2) + (A + eta * Z) / (eta * B)) / 2
    const = -Z / (eta * B**2)

    def h_shift(s_):  # h(t + s_) in terms of q1, q2
        return const + c1 * q1 * (1 - eta * B) ** s_ + c2 * q2 * (1 + eta * B) ** s_

    residual = h_shift(2) - 2 * h_shift(1) + (1 - (eta * B) ** 2) * h_shift(0) - eta * Z
    h = -Z / (eta * B**2) + c1 * (1 - eta * B) ** (t - 1) + c2 * (1 + eta * B) ** (t - 1)
    return DriftRecurrence(h=h, residual=sp.simplify(sp.expand(residual)), h1=sp.simplify(h.subs(t, 1) - A),
                           h2=sp.simplify(h.subs(t, 2) - (2 * A + eta * Z)))


def prop_323_floor(N, B, k_val):
    """Proposition 3.23 as printed: hinge loss >= 1/2 - sqrt(N B) / (2^k sqrt 2)."""
    return sp.Rational(1, 2) - sp.sqrt(N * B) / (2**k_val * sp.sqrt(2))


def prop_323_floor_corrected(N, B, k_val):
    """Proposition 3.23 linear in the norm bound B (h is linear in w): 1/2 - sqrt(N) B / (2^k sqrt 2), which is
    ch. 2's Theorem 2 (Daniely and Malach's bound) at p_o = 1/2."""
    return sp.Rational(1, 2) - sp.sqrt(N) * B / (2**k_val * sp.sqrt(2))


# -- the uniform parity (B.5.5-B.5.6) --------------------------------------------------------------------------------
def majority_coefficient(n_val: int, k_val: int) -> sp.Rational:
    """The Fourier coefficient of Maj_n on a set of odd size k (n odd), O'Donnell Thm 5.19, the corrected (B.480):
    (-1)^((k-1)/2) C((n-1)/2, (k-1)/2) / C(n-1, k-1) * 2^-(n-1) C(n-1, (n-1)/2); 0 for even k."""
    if n_val % 2 == 0:
        raise ValueError(f"Maj_n needs n odd, got {n_val}")
    if k_val % 2 == 0:
        return sp.Integer(0)
    h = (n_val - 1) // 2
    return ((-1) ** ((k_val - 1) // 2) * sp.binomial(h, (k_val - 1) // 2) / sp.binomial(n_val - 1, k_val - 1)
            * sp.Rational(sp.binomial(n_val - 1, h), 2 ** (n_val - 1)))


def majority_coefficient_as_printed(n_val: int, k_val: int) -> sp.Rational:
    """(B.480) as printed, with C((d-1)/2, (d-1)/2) = 1 in the numerator."""
    h = (n_val - 1) // 2
    return ((-1) ** ((k_val - 1) // 2) * 1 / sp.binomial(n_val - 1, k_val - 1)
            * sp.Rational(sp.binomial(n_val - 1, h), 2 ** (n_val - 1)))


def majority_coefficient_brute(n_val: int, k_val: int) -> Fraction:
    """E[Maj_n(x) prod_{i<=k} x_i] over x uniform in {-1, +1}^n, by enumeration (exact)."""
    total = 0
    for x in itertools.product((-1, 1), repeat=n_val):
        total += (1 if sum(x) > 0 else -1) * math.prod(x[:k_val])
    return Fraction(total, 2**n_val)


def uniform_parity_gradient(d_val: int, k_val: int, w) -> list[Fraction]:
    """G(w, 0) = E[y x 1[<w, x> > 0]] for y = prod_{i<=k} x_i, x uniform on {-1, +1}^d and w in {-1, +1}^d, by
    enumeration (exact). Lemma B.63 states G_j = xi_{k-1} prod_{A minus j} w (j in A) and xi_{k+1} prod_{A + j} w
    (j not in A), with xi the Majority coefficients of n = d; the enumeration has half of that (the indicator is
    (1 + Maj)/2)."""
    G = [0] * d_val
    for x in itertools.product((-1, 1), repeat=d_val):
        if sum(wi * xi for wi, xi in zip(w, x, strict=True)) > 0:
            y = math.prod(x[:k_val])
            for j in range(d_val):
                G[j] += y * x[j]
    return [Fraction(g, 2**d_val) for g in G]


def alternative_cone_distance(d_val: int, k_val: int, enumerate_: bool = True) -> tuple[float, float]:
    """Theorem B.65's gradient features (Lemma B.64, (B.555)-(B.556)): for a sign unit w in {-1, +1}^d with b = 0 whose
    relevant signs are w_j = sign(xi_{k-1}) (j in A = the first k coordinates; the event of probability 2^-k with
    sign(a) = +1; k even), the distance ||G/||G|| - D||_inf with D = 1_A/sqrt(k), and the source's cone width
    sqrt(k)/(d - k). G by enumeration of {-1, +1}^d (``enumerate_``) or from the Majority coefficients of Lemma
    B.63 (corrected: xi_{k-1}/2 on A, magnitude |xi_{k+1}|/2 off A). Returns (distance, width)."""
    if k_val % 2:
        raise ValueError("the sign condition of Lemma B.64 gives D for k even")
    sign = 1 if majority_coefficient(d_val, k_val - 1) > 0 else -1
    if enumerate_:
        w = [sign] * k_val + [(-1) ** j for j in range(d_val - k_val)]
        G = np.array([float(g) for g in uniform_parity_gradient(d_val, k_val, w)])
    else:
        s, t = (abs(float(majority_coefficient(d_val, k_val + j))) / 2 for j in (-1, 1))
        G = np.array([s] * k_val + [t] * (d_val - k_val))
    D = np.array([1.0] * k_val + [0.0] * (d_val - k_val)) / math.sqrt(k_val)
    return float(np.abs(G / np.linalg.norm(G) - D).max()), math.sqrt(k_val) / (d_val - k_val)


@dataclasses.dataclass(frozen=True)
class MajorityCheck:
    """:func:`majority_check`: table rows (n, k, corrected, enumeration, as printed) and the two verdicts."""

    rows: list
    corrected_equals_enumeration: bool
    printed_differs: bool


def majority_check(ns=(7, 9, 11), ks=(1, 3, 5)) -> MajorityCheck:
    """The corrected coefficient, the enumeration and (B.480) as printed, for each (n, k): ``rows`` of strings,
    ``corrected_equals_enumeration`` and ``printed_differs`` (for some k)."""
    rows, equal, differs = [], True, False
    for n_val in ns:
        for k_val in ks:
            exact, brute = majority_coefficient(n_val, k_val), majority_coefficient_brute(n_val, k_val)
            printed = majority_coefficient_as_printed(n_val, k_val)
            equal &= exact == sp.Rational(brute.numerator, brute.denominator)
            differs |= printed != exact
            rows.append([n_val, k_val, str(exact), str(brute), str(printed)])
    return MajorityCheck(rows=rows, corrected_equals_enumeration=equal, printed_differs=differs)


def lemma_b63_ratios(d_val: int, k_val: int, w) -> set:
    """The enumerated G_j (:func:`uniform_parity_gradient`) divided by Lemma B.63's formula, for every coordinate j:
    xi_{k-1} prod_{A minus j} w_l (j in A) or xi_{k+1} prod_{A + j} w_l (j not in A), xi of Maj_d. The set of ratios."""
    G = uniform_parity_gradient(d_val, k_val, w)
    xi_in, xi_out = majority_coefficient(d_val, k_val - 1), majority_coefficient(d_val, k_val + 1)
    ratios = set()
    for j in range(d_val):
        if j < k_val:
            formula = xi_in * math.prod(w[l_] for l_ in range(k_val) if l_ != j)
        else:
            formula = xi_out * math.prod(w[:k_val]) * w[j]
        ratios.add(sp.Rational(G[j].numerator, G[j].denominator) / formula)
    return ratios


def barak_sample_size(d_val: int, k_val: int, m_val: int, eps_val: float = 0.1, delta_val: float = 0.1) -> float:
    """Lemma B.54's first-step sample size n >= (2/tau^2) log(4 d m / delta) with
    tau = |xi_{k-1}| / (16 k sqrt(2 d log(32 k^3 d / eps))) (d odd: xi of Maj_d)."""
    xi = abs(float(majority_coefficient(d_val, k_val - 1)))
    t = xi / (16 * k_val * math.sqrt(2 * d_val * math.log(32 * k_val**3 * d_val / eps_val)))
    return 2 / t**2 * math.log(4 * d_val * m_val / delta_val)


def sign_rule_uniform_accuracy(k_val: int) -> sp.Rational:
    """The accuracy of y = sign(<D, x>) (the rule of the structured parts) on the uniform part of the k-parity, k odd:
    the share of the k + 1 levels i (plus-ones) where sign(2i - k) equals the parity (-1)^(k-i)."""
    return sum((sp.binomial(k_val, i) for i in range(k_val + 1)
                if (1 if 2 * i > k_val else -1) == (-1) ** (k_val - i)), sp.Integer(0)) / 2**k_val


# -- the XOR mixture -----------------------------------------------------------------------------------------------
def xor_bayes_accuracy() -> tuple[sp.Expr, sp.Lambda]:
    """The Bayes accuracy of the XOR mixture (Assumption B.36, equal weights, noise sigma per coordinate). The
    posterior of label +1 is proportional to cosh(<x, mu_1>/sigma^2), of -1 to cosh(<x, mu_3>/sigma^2), so the Bayes
    rule compares |<x, D_1>| with |<x, D_3>|; on a +1 cluster these are |sqrt(d) + sigma Z_1| and |sigma Z_2|:

        acc = Pr[|a + Z_1| > |Z_2|] = int phi(z) (2 Phi(|a + z|) - 1) dz,   a = sqrt(d)/sigma.

    Returns the integral (unevaluated, in a) and a numeric evaluator (d, sigma) -> accuracy."""
    a, z = sp.Symbol("a", positive=True), sp.Symbol("z", real=True)
    phi = sp.exp(-(z**2) / 2) / sp.sqrt(2 * sp.pi)
    cdf = lambda u: (1 + sp.erf(u / sp.sqrt(2))) / 2  # noqa: E731
    integral = sp.Integral(phi * (2 * cdf(sp.Abs(a + z)) - 1), (z, -sp.oo, sp.oo))

    def evaluate(d_val: float, sigma_val: float) -> float:
        from scipy import integrate, stats

        a_val = math.sqrt(d_val) / sigma_val
        f = lambda u: stats.norm.pdf(u) * (2 * stats.norm.cdf(abs(a_val + u)) - 1)  # noqa: E731
        return float(sum(integrate.quad(f, lo, hi, limit=200)[0] for lo, hi in ((-np.inf, -a_val), (-a_val, np.inf))))

    return integral, evaluate


# -- the special cases -----------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SpecialCase:
    """One row of the table of special cases: the source's (p, gamma, B_G), ground truth g*, B_F and error bound."""

    name: str
    where: str
    p: sp.Expr | str
    gamma: sp.Expr | str
    B_G: sp.Expr | str
    g_star: str
    B_F: tuple | str
    error: sp.Expr | str
    closed_form: bool  # whether the error is an explicit function we evaluate (not a poly(.)/O(.) statement)


def special_cases() -> list[SpecialCase]:
    """Sections B.5.1-B.5.7 (the O(.)s and Theta(.)s with constant 1; tau >= 8 where the source requires it)."""
    mu1, rho, beta, Bx2 = sp.symbols("B_mu1 rho beta B_x2", positive=True)
    sig = sp.Symbol("sigma_B+", positive=True)
    tl = sp.sqrt(tau * sp.log(d))
    return [
        SpecialCase("linear data", "B.5.1, Thm B.27", sp.Rational(1, 2),
                    sp.sqrt(Bx2) / (rho * d ** (tau / 2 - sp.Rational(1, 4))),
                    rho - sp.sqrt(Bx2) / d ** (tau / 2 - sp.Rational(1, 4)),
                    "(1/beta)(s(<w*,x>) - s(-<w*,x>)), r = 2, OPT = 0",
                    (1 / beta, sp.sqrt(2) / beta, 1 / B_x1**2),
                    B_x1 * Bx2 ** sp.Rational(1, 4) / (beta * sp.sqrt(rho) * d ** (tau / 4 - sp.Rational(1, 8))),
                    False),
        SpecialCase("mixture of Gaussians", "Lemma 3.17, Thm 3.18",
                    mu1 / (tl * sig * d ** (9 * tau * sig**2 / (2 * mu1**2))),
                    1 / d ** (sp.Rational(9, 10) * tau - sp.Rational(3, 2)),
                    "p_B B_mu1 sqrt(d) - O(sigma_B+ / d^(0.9 tau))",
                    "sum_j y_j s(<D_j,x> - 2 sqrt(tau log d) sigma_B+) / (sqrt(tau log d) sigma_B+)",
                    (1 / (tl * sig), sp.sqrt(r) / (tl * sig), 2 * tl * sig),
                    sp.sqrt(2) * r / d ** (sp.Rational(2, 5) * tau - sp.Rational(4, 5)), True),
        SpecialCase("XOR mixture (Refinetti et al.)", "Lemmas B.37, B.41, Thm B.42",
                    1 / (sp.sqrt(tau * sp.log(sp.log(d))) * sigma_B
                         * sp.log(d) ** (sp.Rational(18, 25) * tau * sigma_B**2)),
                    sigma_B / sp.sqrt(d), sp.sqrt(d) / 5, "MoG g* with tau = 1, four units",
                    "(1/(sqrt(tau~ log d) sigma_B), 2/(sqrt(tau~ log d) sigma_B), 2 sqrt(tau~ log d) sigma_B)",
                    sigma_B ** sp.Rational(3, 2) / d ** sp.Rational(1, 4), True),
        SpecialCase("structured parity", "Lemma 3.21, Thm 3.22",
                    1 / (sp.sqrt(tau * r * sp.log(d)) * d ** (9 * C_b**2 * tau * r / 8)), 1 / d ** (tau - 2),
                    sp.sqrt(k) * p_A, "bump network (B.469), 3r(k+1) units, hinge 0",
                    (2 * sp.sqrt(k), 2 * sp.sqrt(r * k * (k + 1)), (k + 1) / sp.sqrt(k)),
                    3 * r * sp.sqrt(k) / d ** ((tau - 3) / 2), True),
        SpecialCase("uniform sparse parity (Barak et al.)", "Lemmas B.54, B.64, Thm B.56",
                    2 ** -(k - 1), "sqrt(k)/(d - k) (infinity-norm cone)", "sqrt(k xi_{k-1}^2 + (d-k) xi_{k+1}^2)",
                    "bump network on <D, x>, 3(k+1) units", "(8k, 8k sqrt(k), -) on W^(1)",
                    "epsilon with m = k 2^O(k) log k, n = O(d^k)", False),
        SpecialCase("multi-index (Damian et al.)", "Lemma B.68, Thm B.69", "-", "-", "-",
                    "degree-tau polynomial of r projections, rank-r E[Hessian]", "-",
                    "O(1/n + r^tau kappa^(2 tau) polylog / m) (MSE)", False),
    ]


def special_cases_table() -> tuple[list[str], list[list[str]]]:
    """The special cases as a table: LaTeX cells ($...$) for expressions, text otherwise."""
    def cell(v):
        if isinstance(v, str):
            return v
        if isinstance(v, tuple):
            return "$(" + ", ".join(sp.latex(x) for x in v) + ")$"
        return f"${sp.latex(v)}$"

    columns = ["case", "where", "$p$", r"$\gamma$", "$B_G$", "$g^*$", "$B_F$", "error bound"]
    rows = [[c.name, c.where, cell(c.p), cell(c.gamma), cell(c.B_G), c.g_star, cell(c.B_F), cell(c.error)]
            for c in special_cases()]
    return columns, rows


@dataclasses.dataclass(frozen=True)
class CaseValues:
    """:func:`special_case_values`: p, gamma, B_G and the error bound of one special case, as floats."""

    p: float
    gamma: float
    B_G: float
    error: float

    def row(self) -> list[float]:
        return [self.p, self.gamma, self.B_G, self.error]


def special_case_values(name: str, values: dict) -> CaseValues:
    """p, gamma, B_G and the error bound of the special case ``name`` at the given symbol values (floats)."""
    case = next(c for c in special_cases() if c.name == name)
    return CaseValues(**{field: float(getattr(case, field).subs(values)) for field in ("p", "gamma", "B_G", "error")})


def theorem_width(name: str, values: dict, eps_val: float = 0.1) -> float:
    """The first term of the width (3.10), (r B_a1 B_x1 sqrt(B_b/B_G))^4 / (p eps^4), for the structured parity
    (Lemma B.51: B_a1 = 2 sqrt k, B_x1 = sqrt d, B_b = (k+1)/sqrt k, B_G = sqrt(k) p_A, r as given) or the XOR mixture
    (Lemma B.41 with sqrt(tau~ log d) = sqrt(d)/sigma_B: B_a1 = 1/sqrt d, B_x1 = (1 + sigma_B) sqrt d,
    B_b = 2 sqrt d, B_G = sqrt(d)/5, r = 4), with p of :func:`special_cases` at the given symbol values."""
    p_val = special_case_values(name, values).p
    if name == "structured parity":
        Ba1, Bx1, Bb, BG, r_val = 2 * sp.sqrt(k), sp.sqrt(d), (k + 1) / sp.sqrt(k), sp.sqrt(k) * p_A, r
    elif name.startswith("XOR mixture"):
        Ba1, Bx1, Bb, BG, r_val = 1 / sp.sqrt(d), (1 + sigma_B) * sp.sqrt(d), 2 * sp.sqrt(d), sp.sqrt(d) / 5, 4
    else:
        raise ValueError(f"no width for the special case {name!r}")
    first = (r_val * Ba1 * Bx1 * sp.sqrt(Bb / BG)) ** 4
    return float(first.subs(values)) / (p_val * eps_val**4)

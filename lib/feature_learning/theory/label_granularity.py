"""Closed forms of Hong et al., "How does pretraining label granularity affect generalization" (appendices B-G),
in SymPy, with the numeric companions the chapter checks them against. Item numbers C1-C32 are the seed notes'.

* :func:`cross_entropy_gradient` (C1, eqs. (4)-(6)): d/dF_c of -ln softmax_y(F) is logit_c - 1{y = c}.
* :func:`threshold_exponent` (C5), :func:`union_factor` (C6), :func:`lucky_set_exponent` (C7),
  :func:`sqrt_difference` (C9): the initialisation geometry of appendix C; :func:`expected_singly_lucky` is the
  expected size of S*(v) at a finite width, which the chapter compares with a Monte Carlo count.
* :func:`drift_rates` (C14 coarse, C26 fine): the expected per-step growth of <w, v> for the singly-activated
  neurons of a common and of a subclass feature in Phase I, from indicator counts over a balanced batch.
* :func:`log_time_law` (C18, Theorem E.1): the ODE A' = C e^-A and its solution ln(C t + t0), and
  :func:`recursion_gap_bound`, a bound on the gap between the discrete recursion A <- A + C e^-A and that solution.
* :func:`harmonic_remainder` (C24, Lemma E.4), :func:`finishing_threshold` (C27, Prop. 3's last step).
* Errata: :func:`gaussian_tail_bounds` (C4, eq. (8)), :func:`union_bound_exponent` (C10, eq. (18)),
  :func:`activation_margin_numerators` (C13, eqs. (30), (34)).
* :func:`log_time_constant`: the finite-size constant C of dF/dt = C / (1 + e^F) that the chapter fits.
"""

from __future__ import annotations

import dataclasses
import math

import sympy as sp

d, c0, k, eta, s, P = sp.symbols("d c_0 k eta s^* P", positive=True)
t, t0, C = sp.symbols("t t_0 C", positive=True)


# ---- C1: the gradient of the loss -----------------------------------------------------------------------------
def cross_entropy_gradient(n_classes: int = 3):
    """For F = (F_1, ..., F_C) and each label y: the SymPy gradient of -ln softmax_y(F) minus
    (softmax(F) - e_y), simplified (all zeros when eq. (5) is the gradient of eq. (4)), and the symbols.
    Returns (differences, F)."""
    F = sp.symbols(f"F_1:{n_classes + 1}", real=True)
    Z = sum(sp.exp(f) for f in F)
    diffs = []
    for y in range(n_classes):
        loss = -sp.log(sp.exp(F[y]) / Z)
        for c in range(n_classes):
            logit = sp.exp(F[c]) / Z
            diffs.append(sp.simplify(sp.diff(loss, F[c]) - (logit - (1 if c == y else 0))))
    return diffs, F


def sgd_step_formula():
    """The per-sample factor of eq. (5) for neuron (c, r): 1{y = c}(1 - logit_c) + 1{y != c}(-logit_c), as a
    displayable expression, and its form -dL/dF_c."""
    logit, ind = sp.symbols(r"\operatorname{logit}_c \mathbb{1}_{y=c}", real=True)
    return ind * (1 - logit) + (1 - ind) * (-logit), sp.expand(ind - logit)


# ---- C5-C9: the initialisation geometry -------------------------------------------------------------------------
def threshold_exponent():
    """C5: with eps^2 = (4 + 2 c0)(ln d +- 1/ln^5 d), exp(-eps^2/2) = d^(-2 - c0) exp(-+(2 + c0)/ln^5 d).
    Returns (exp(-eps^2/2) for the two signs, the claimed forms)."""
    out = []
    for sign in (1, -1):
        eps2 = (4 + 2 * c0) * (sp.log(d) + sign / sp.log(d) ** 5)
        out.append((sp.exp(-eps2 / 2), d ** (-2 - c0) * sp.exp(-sign * (2 + c0) / sp.log(d) ** 5)))
    return out


def union_factor():
    """C6: d (d - 1) ln(1 - d^(-2 - c0)) -> 0 as d -> infinity at c0 = 1/10, i.e. (1 - d^(-2-c0))^(d-1) =
    1 - O(1/d). Returns the limit."""
    expr = d * (d - 1) * sp.log(1 - d ** (-2 - sp.Rational(1, 10)))
    return sp.limit(expr, d, sp.oo)


def lucky_set_exponent():
    """C7: m p with m = d^(2 + 2 c0) neurons and p = d^(-2 - c0) / sqrt(ln d): the expected |S*(v)|, simplified
    (the source's Theta(d^c0 / sqrt(ln d)))."""
    return sp.simplify(sp.powsimp(d ** (2 + 2 * c0) * d ** (-2 - c0) / sp.sqrt(sp.log(d)), force=True))


def sqrt_difference():
    """C9: sqrt(a + h) - sqrt(a - h) - 2h / (sqrt(a + h) + sqrt(a - h)), simplified (zero)."""
    a, h = sp.symbols("a h", positive=True)
    lhs = sp.sqrt(a + h) - sp.sqrt(a - h)
    rhs = 2 * h / (sp.sqrt(a + h) + sp.sqrt(a - h))
    return sp.simplify(sp.radsimp(lhs - rhs)), lhs, rhs


def gaussian_q(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def expected_singly_lucky(m: int, tau: float, n_features: int) -> float:
    """E|S*(v)| = m Q(tau) (1 - Q(tau))^(n_features - 1) for m neurons with i.i.d. N(0, 1) projections (in units of
    sigma0) on orthonormal features and the threshold tau (C7 at finite size)."""
    q = gaussian_q(tau)
    return m * q * (1 - q) ** (n_features - 1)


# ---- C14, C26: Phase-I drift rates -------------------------------------------------------------------------------
@dataclasses.dataclass
class DriftRates:
    """Expected per-step growth of <w, v> in Phase I for a singly-activated neuron (exact patch counts)."""

    coarse_common: sp.Expr  # output +, feature v_+
    coarse_sub: sp.Expr  # output +, feature v_{+,c}
    fine_common: sp.Expr  # head (+, c), feature v_+
    fine_sub: sp.Expr  # head (+, c), feature v_{+,c}

    @property
    def coarse_ratio(self) -> sp.Expr:
        """common over subclass growth under coarse labels (k)."""
        return sp.simplify(self.coarse_common / self.coarse_sub)

    @property
    def fine_ratio(self) -> sp.Expr:
        """common over subclass growth within a fine head (k / (2k - 1))."""
        return sp.simplify(self.fine_common / self.fine_sub)


def drift_rates() -> DriftRates:
    """Eq. (5) in expectation over a batch of N samples, N/(2k) per subclass, s* patches of each feature per sample,
    with the Phase-I loss factors: uniform softmax over C outputs (1 - 1/C on the own output, -1/C on the others;
    C = 2 coarse, 2k fine; Lemma D.2, Lemma F.1). A neuron that fires on the s* patches of v in every sample that
    carries v gains (eta / (N P)) * sum over those samples of (loss factor) * s* along v."""
    N = sp.Symbol("N", positive=True)
    per_sub = N / (2 * k)
    step = eta / (N * P)
    # coarse: v_+ sits in all k subclasses of "+", v_{+,c} in one; the own-class factor is 1 - 1/2
    coarse_common = step * (1 - sp.Rational(1, 2)) * k * per_sub * s
    coarse_sub = step * (1 - sp.Rational(1, 2)) * per_sub * s
    # fine, head (+, c): own subclass (1 - 1/(2k)); v_+ also sits in the k - 1 sibling subclasses, which are
    # negatives of this head with factor -1/(2k)
    own = 1 - 1 / (2 * k)
    fine_sub = step * own * per_sub * s
    fine_common = step * (own * per_sub * s - (k - 1) * per_sub * s / (2 * k))
    return DriftRates(*(sp.simplify(e) for e in (coarse_common, coarse_sub, fine_common, fine_sub)))


# ---- C18: the log-time law ---------------------------------------------------------------------------------------
def log_time_law():
    """dsolve of A'(t) = C exp(-A(t)) with A(0) = ln t0 (Theorem E.1's driving recursion, eq. (60), without its
    (1 +- C1/ln^4 d) factor). Returns (the solution's right side, its t-derivative in ln t at large t)."""
    A = sp.Function("A")
    sol = sp.dsolve(sp.Eq(A(t).diff(t), C * sp.exp(-A(t))), A(t), ics={A(0): sp.log(t0)})
    rhs = sol.rhs
    u = sp.Symbol("u", positive=True)  # u = ln t
    slope = sp.limit(sp.diff(rhs.subs(t, sp.exp(u)), u), u, sp.oo)
    return sp.simplify(rhs), slope


def recursion_gap_bound(C_val: float, t0_val: float, T: int) -> float:
    """An upper bound on A_T - ln(C T + t0) for A_{t+1} = A_t + C exp(-A_t), A_0 = ln t0 [derived here]:
    with u = e^A, u_{t+1} = u_t exp(C/u_t) lies in [u_t + C, u_t + C + (C^2 / (2 u_t)) e^{C/u_t}], so
    0 <= A_T - ln(t0 + C T) <= delta / (t0 + C T), delta = (C/2) e^{C/t0} (C/t0 + ln(1 + C T / t0))."""
    delta = 0.5 * C_val * math.exp(C_val / t0_val) * (C_val / t0_val + math.log1p(C_val * T / t0_val))
    return delta / (t0_val + C_val * T)


def iterate_recursion(C_val: float, t0_val: float, T: int) -> list[float]:
    """A_0 = ln t0, A_{t+1} = A_t + C exp(-A_t): the discrete recursion of eq. (60), in float64."""
    A = [math.log(t0_val)]
    for _ in range(T):
        A.append(A[-1] + C_val * math.exp(-A[-1]))
    return A


def log_time_constant(lr: float, s_star: int, P: int, lam: float, n_common: float, n_sub: float, k_val: int) -> float:
    """The finite-size constant of the Phase-II law dF/dt = C / (1 + e^F) on a normal sample with exact counts
    [derived here from eqs. (5), (7)]: every common neuron that fires on the s* common patches gains
    eta s* (1 - logit) / (2P) along v_+ per step, its bias falls by 1/lambda of that, each of the s* patches adds the
    activation; subclass neurons gain 1/k as much. C = eta s*^2 (1 - 1/lambda)(n_common + n_sub / k) / (2P), with
    n the numbers of neurons that respond to a clean patch (the source's |S*(v_+)|)."""
    return lr * s_star**2 * (1 - 1 / lam) * (n_common + n_sub / k_val) / (2 * P)


# ---- C24, C27 --------------------------------------------------------------------------------------------------
def harmonic_remainder(order: int = 5):
    """Lemma E.4: H_{n-1} = ln n + E - 1/(2n) - eps_n. SymPy's asymptotic series of
    eps_n = ln n + E - 1/(2n) - (psi(n) + E) (H_{n-1} = psi(n) + E) at n -> infinity."""
    n = sp.Symbol("n", positive=True)
    eps = sp.log(n) - 1 / (2 * n) - sp.digamma(n)
    return sp.series(eps, n, sp.oo, order).removeO(), n


def finishing_threshold():
    """Prop. 3's last step: with the other 2k - 1 outputs at 0, logit_{+,c} = e^F / (e^F + 2k - 1) >= 1/(1.5 k) iff
    F >= ln(2(2k - 1)/(3k - 2)). Returns (the solved threshold, its limit k -> infinity, the source's ln(k) growth
    for comparison at k -> infinity as a ratio)."""
    F = sp.Symbol("F", real=True)
    sol = sp.solve(sp.Eq(sp.exp(F) / (sp.exp(F) + 2 * k - 1), 1 / (sp.Rational(3, 2) * k)), F)
    threshold = sp.simplify(sp.expand_log(sol[0], force=True))
    return threshold, sp.limit(threshold, k, sp.oo)


# ---- errata ----------------------------------------------------------------------------------------------------
def gaussian_tail_bounds(eps: float) -> dict[str, float]:
    """C4: the true tail Q(eps) against eq. (8) as printed, (1/2) phi(eps) (1/eps), and the standard bound
    phi(eps)/eps (Mills ratio), with the printed and the standard lower bounds."""
    phi = math.exp(-eps * eps / 2) / math.sqrt(2 * math.pi)
    return {"true": gaussian_q(eps), "printed_upper": 0.5 * phi / eps, "standard_upper": phi / eps,
            "printed_lower": 0.5 * phi * eps / (eps * eps + 1), "standard_lower": phi * eps / (eps * eps + 1)}


def union_bound_exponent():
    """C10: the union bound m d d^(-5) / sqrt(ln d) with m = d^(2 + 2 c0), divided by d^(-2): the source claims it
    is < 1; it is d^(2 c0) / sqrt(ln d), which diverges for c0 > 0. Returns (the ratio, its limit at c0 = 1/10)."""
    ratio = sp.powsimp(d ** (2 + 2 * c0) * d * d ** (-5) / sp.sqrt(sp.log(d)) / d ** (-2), force=True)
    return sp.simplify(ratio), sp.limit(ratio.subs(c0, sp.Rational(1, 10)), d, sp.oo)


def activation_margin_numerators():
    """C13: sigma0^-1 (<w, alpha v + zeta> + b) for a lucky neuron on its feature (eq. (30)) and on another feature
    (eq. (34)), before the noise term, as differences of square roots rationalised: returns
    (own patch: lhs, rationalised), (other feature: lhs, rationalised)."""
    iota, L = sp.symbols("iota L", positive=True)  # L = ln d
    a = 4 + 2 * c0
    own = sp.sqrt((1 - iota) * a * (L + 1 / L**5)) - sp.sqrt(a * L)
    own_rat = a * (-iota * L + (1 - iota) / L**5) / (sp.sqrt((1 - iota) * a * (L + 1 / L**5)) + sp.sqrt(a * L))
    other = sp.sqrt((1 + iota) * a * (L - 1 / L**5)) - sp.sqrt(a * L)
    other_rat = a * (iota * L - (1 + iota) / L**5) / (sp.sqrt((1 + iota) * a * (L - 1 / L**5)) + sp.sqrt(a * L))
    return (own, own_rat), (other, other_rat)


def chi_square_constant():
    """C30 (Lemma G.2): Laurent-Massart with a = 1, t = d gives the threshold d + 2 sqrt(d) sqrt(d) + 2 d."""
    return sp.simplify(d + 2 * sp.sqrt(d) * sp.sqrt(d) + 2 * d)

"""SymPy closed forms for "Simplicity Bias of Two-Layer Networks beyond Linearly Separable Data" (Tsoy &
Konstantinov, ICML 2024): the logistic constants (Sec. 2, Prop. B.5), the smoothed ReLU of Sec. 2 (Prop. B.2), G on
the circle for XOR and skewed-XOR data and its extrema (Lemma 5.2, Sec. 6), the Lemma 5.2 algebra, the max-margin
network theta^mm (Assumption 5.4, Prop. 5.8), the capture probability of Lemma 5.3, the exponent bookkeeping of
App. B.3 / C, the numerical constants of Prop. 5.7 (App. D.3) and the G-rates of the domino analogue (Sec. 7).

Functions return SymPy expressions or frozen dataclasses of them; they do not judge themselves: the chapter's
claims and the tests compare them with the source.

Also the numerical function G of eq. (2) on data (:func:`g_function`, :func:`g_on_circle`,
:func:`g_extrema_on_circle`): the width-independent drift of every neuron while the network is small (Thm 4.1).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import sympy as sp
import torch

z, a_, c_, phi, alpha = sp.symbols("z a c varphi alpha", real=True)
delta, xi = sp.symbols("delta xi", nonnegative=True)
x1, x2 = sp.symbols("x^1 x^2", real=True)
mu_s = sp.Symbol("mu_s", positive=True)


def relu(t):
    return sp.Max(t, 0)


# -- the loss ----------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LogisticConstants:
    """The logistic loss l(z) = ln(1 + e^{-z}) and the two constants of Prop. B.5: -l'(0), and sup_z |l''(z)|,
    found as the largest |l''| over the critical points of l'' and its limits at -oo and +oo (l'' is continuous
    with limits at both ends, so its supremum and infimum are among these candidates)."""

    loss: sp.Expr
    d2: sp.Expr  # l''(z), simplified
    minus_dl0: sp.Expr  # -l'(0)
    critical_points: tuple  # the real solutions of l'''(z) = 0
    limits: tuple  # l''(-oo), l''(+oo)
    sup_abs_d2: sp.Expr  # max |l''| over the candidates
    argsup: tuple  # the candidates where it is attained


def logistic_constants() -> LogisticConstants:
    """-l'(0) = 1/2 and sup |l''| = 1/4, attained at z = 0 (Sec. 2 and Prop. B.5 of the source), derived."""
    loss = sp.log(1 + sp.exp(-z))
    d1, d2 = sp.diff(loss, z), sp.simplify(sp.diff(loss, z, 2))
    crit = sp.solveset(sp.diff(d2, z), z, sp.S.Reals)
    if not isinstance(crit, sp.FiniteSet):
        raise ValueError(f"the critical points of l'' are not a finite set: {crit}")
    crit = tuple(sorted(crit, key=float))
    limits = (sp.limit(d2, z, -sp.oo), sp.limit(d2, z, sp.oo))
    candidates = [(p, sp.simplify(d2.subs(z, p))) for p in crit] + [(-sp.oo, limits[0]), (sp.oo, limits[1])]
    sup = max((sp.Abs(v) for _, v in candidates), key=float)
    argsup = tuple(p for p, v in candidates if sp.simplify(sp.Abs(v) - sup) == 0)
    return LogisticConstants(loss=loss, d2=d2, minus_dl0=sp.simplify(-d1.subs(z, 0)), critical_points=crit,
                             limits=limits, sup_abs_d2=sup, argsup=argsup)


# -- the smoothed ReLU (Prop. B.2) -------------------------------------------------------------------------------------
def ball_ratio(d: int):
    """kappa_d = Vol(D^{d-1}) / Vol(D^d)."""
    vol = lambda k: sp.pi ** sp.Rational(k, 2) / sp.gamma(sp.Rational(k, 2) + 1)  # noqa: E731
    return sp.simplify(vol(d - 1) / vol(d))


def smoothed_relu_profile(d: int):
    """q_d(c) with phi_{Q,xi}(v, x) = xi ||v|| q_d(c), c = v.x / (xi ||v||) in [-1, 1] (Prop. B.2):
    q_d(c) = kappa_d int_{-c}^{1} (c + a) (1 - a^2)^{(d-1)/2} da. Outside [-1, 1] phi is the plain ReLU."""
    kappa = ball_ratio(d)
    q = kappa * sp.integrate((c_ + a_) * (1 - a_**2) ** sp.Rational(d - 1, 2), (a_, -c_, 1))
    return sp.factor(sp.simplify(q))


@dataclasses.dataclass(frozen=True)
class SmoothedReluJoins:
    """Prop. B.2 for one odd d: the profile q_d, its six C^2 join residuals q(-1), q(1) - 1, q'(-1), q'(1) - 1,
    q''(-1), q''(1) (all zero when phi joins 0 at c = -1 and the ReLU at c = 1 with two derivatives), and the largest
    deviation from the ReLU, q_d(0), with kappa_d / (d + 1) beside it."""

    d: int
    q: sp.Expr
    join_residuals: tuple
    q_at_0: sp.Expr
    kappa_over_d_plus_1: sp.Expr


def smoothed_relu_joins(d: int) -> SmoothedReluJoins:
    q = smoothed_relu_profile(d)
    dq, d2q = sp.diff(q, c_), sp.diff(q, c_, 2)
    residuals = tuple(sp.simplify(e) for e in (q.subs(c_, -1), q.subs(c_, 1) - 1, dq.subs(c_, -1),
                                               dq.subs(c_, 1) - 1, d2q.subs(c_, -1), d2q.subs(c_, 1)))
    return SmoothedReluJoins(d=d, q=q, join_residuals=residuals, q_at_0=sp.nsimplify(q.subs(c_, 0)),
                             kappa_over_d_plus_1=sp.simplify(ball_ratio(d) / (d + 1)))


# -- G on the circle and its extrema (Lemma 5.2, Sec. 6) ---------------------------------------------------------------
def g_xor_circle():
    """G(cos phi, sin phi) for clean XOR data (equal masses at +-e_1 with y = +1 and +-e_2 with y = -1):
    (1/2) * (1/4) * (relu(cos) + relu(-cos) - relu(sin) - relu(-sin))."""
    c, s = sp.cos(phi), sp.sin(phi)
    return sp.Rational(1, 8) * (relu(c) + relu(-c) - relu(s) - relu(-s))


def g_skewed_circle(alpha_value):
    """G on the circle for clean skewed XOR (Sec. 6): y = -1 at +-e_1, y = +1 at +-(cos alpha, sin alpha)."""
    return sp.Rational(1, 8) * (sp.Abs(sp.cos(phi - alpha_value)) - sp.Abs(sp.cos(phi)))


def _freeze_signs(expr, at):
    """The smooth piece of a sum of |h| and max(h, 0) terms that is valid around phi = ``at``."""
    def abs_piece(e):
        return sp.sign(e.args[0].subs(phi, at)) * e.args[0]

    def max_piece(e):
        return max(e.args, key=lambda t: float(t.subs(phi, at)))

    return expr.replace(lambda e: isinstance(e, sp.Abs), abs_piece).replace(
        lambda e: isinstance(e, sp.Max), max_piece)


def kinks(g_expr) -> list:
    """Where the smooth pieces of a sum of |h(phi)| and max(h_1, h_2) terms change, on [-pi, pi): the zeros of
    every h and of every h_1 - h_2, solved by SymPy (so the breakpoints are derived, not listed by hand)."""
    args = [e.args[0] for e in g_expr.atoms(sp.Abs)]
    args += [e.args[0] - e.args[1] for e in g_expr.atoms(sp.Max) if len(e.args) == 2]
    points = set()
    for h in args:
        sol = sp.solveset(h, phi, sp.Interval.Ropen(-sp.pi, sp.pi))
        if not isinstance(sol, sp.FiniteSet):
            raise ValueError(f"the kinks of {h} on [-pi, pi) are not a finite set: {sol}")
        points |= set(sol)
    return sorted(points, key=float)


def circle_extrema(g_expr, breakpoints=None) -> list[tuple]:
    """Exact candidate extrema of a piecewise-smooth G(phi) on [-pi, pi) whose smooth pieces have the form
    A cos phi + B sin phi (true for G of clustered data with the ReLU): on each arc between consecutive
    ``breakpoints`` (default: the :func:`kinks` of G), the critical points atan2(B, A) and atan2(-B, -A) that lie
    inside the arc, plus the arc ends. Returns [(phi, G(phi))] sorted by phi, exact; the global extrema are among
    them."""
    breakpoints = kinks(g_expr) if breakpoints is None else breakpoints
    pts = sorted({sp.nsimplify(b) for b in breakpoints} | {-sp.pi, sp.pi}, key=float)
    cands = set()
    for lo, hi in zip(pts[:-1], pts[1:], strict=True):
        piece = sp.expand(sp.expand_trig(_freeze_signs(g_expr, (lo + hi) / 2)))
        A, B = piece.coeff(sp.cos(phi)), piece.coeff(sp.sin(phi))
        if sp.simplify(piece - A * sp.cos(phi) - B * sp.sin(phi)) != 0:
            raise ValueError("a piece of G is not of the form A cos(phi) + B sin(phi)")
        if A != 0 or B != 0:
            for crit in (sp.atan2(B, A), sp.atan2(-B, -A)):
                if float(lo) < float(crit) < float(hi):
                    cands.add(sp.simplify(crit))
        cands |= {lo, hi}
    cands.discard(sp.pi)
    return sorted(((p, sp.nsimplify(sp.simplify(g_expr.subs(phi, p)))) for p in cands), key=lambda t: float(t[0]))


@dataclasses.dataclass(frozen=True)
class CircleExtrema:
    """The global maximum and minimum of G on the circle, and every angle in [-pi, pi) where each is attained."""

    max: sp.Expr
    max_at: tuple
    min: sp.Expr
    min_at: tuple


def global_extrema(g_expr) -> CircleExtrema:
    """The global extrema of G(phi) among the exact candidates of :func:`circle_extrema` (ties compared exactly)."""
    cands = circle_extrema(g_expr)
    top = max((v for _, v in cands), key=float)
    bottom = min((v for _, v in cands), key=float)

    def where(value):
        return tuple(sorted({p for p, v in cands if sp.simplify(v - value) == 0}, key=float))

    return CircleExtrema(max=top, max_at=where(top), min=bottom, min_at=where(bottom))


@dataclasses.dataclass(frozen=True)
class Lemma52Chain:
    G_e1_lower: sp.Expr  # (1/8)(1 - 3 delta - 2 xi)
    v1_min: sp.Expr  # the lower bound on the first coordinate of a maximiser
    gap: sp.Expr  # v1_min - (delta + xi)


def lemma_5_2_chain() -> Lemma52Chain:
    """The algebra of Lemma 5.2's proof (App. D.1) with -l'(0) = 1/2: from G(e_1) >= (1/8)(1 - 3 delta - 2 xi) and
    G(v*) <= (1/8)(v*^1 + 2 xi + 2 delta) the maximiser has v*^1 >= 1 - 5 delta - 4 xi, which exceeds delta + xi
    (v* lies in e_1's cluster cone) when delta + xi < 1/6."""
    v1 = sp.symbols("v1", real=True)
    lower_e1 = sp.Rational(1, 8) * (1 - 3 * delta - 2 * xi)
    upper_v = sp.Rational(1, 8) * (v1 + 2 * xi + 2 * delta)
    v1_min = sp.solve(sp.Eq(upper_v, lower_e1), v1)[0]
    return Lemma52Chain(G_e1_lower=lower_e1, v1_min=v1_min, gap=sp.expand(v1_min - (delta + xi)))


# -- the max-margin network (Assumption 5.4, Prop. 5.8) ----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class MaxMarginNetwork:
    """theta^mm of Assumption 5.4 normalised to |u_k| = ||v_k|| = 1 on the four axes (App. D.4): its function as
    SymPy builds it from the four ReLU neurons, that function simplified, and ||theta^mm||^2."""

    f: sp.Expr  # sum_k u_k relu(v_k . x)
    f_simplified: sp.Expr
    norm_sq: sp.Expr


def max_margin_network() -> MaxMarginNetwork:
    """u = (1, -1, 1, -1), v = (e_1, e_2, -e_1, -e_2): f(x) = relu(x^1) - relu(x^2) + relu(-x^1) - relu(-x^2);
    relu(t) = (t + |t|)/2 turns it into |x^1| - |x^2|, and ||theta||^2 = sum u^2 + sum ||v||^2 = 8, so the
    normalised margin is gamma(theta^mm) = min_i y_i (|x_i^1| - |x_i^2|) / 8 (Prop. 5.8)."""
    u = (1, -1, 1, -1)
    V = (sp.Matrix([1, 0]), sp.Matrix([0, 1]), sp.Matrix([-1, 0]), sp.Matrix([0, -1]))
    x = sp.Matrix([x1, x2])
    f = sum(uk * relu(vk.dot(x)) for uk, vk in zip(u, V, strict=True))
    norm_sq = sum(sp.Integer(uk) ** 2 + vk.dot(vk) for uk, vk in zip(u, V, strict=True))
    return MaxMarginNetwork(f=f, f_simplified=sp.simplify(f.rewrite(sp.Abs)), norm_sq=norm_sq)


# -- capturing the extrema (Lemma 5.3) ---------------------------------------------------------------------------------
def capture_probability_exact(m):
    """Probability that m balanced isotropic neurons on clean XOR capture all four extrema, with the half-space
    basins (each extremum captures a neuron with probability 1/4): inclusion-exclusion over the missed extrema."""
    return sum(sp.binomial(4, k) * (-1) ** k * (1 - sp.Rational(k, 4)) ** m for k in range(5))


def capture_probability_enumerated(m: int):
    """The same probability by brute force: the share of the 4^m assignments of m neurons to the four basins (each
    equally likely) that leave no basin empty."""
    hits = sum(1 for basins in itertools.product(range(4), repeat=m) if len(set(basins)) == 4)
    return sp.Rational(hits, 4**m)


def capture_probability_paper(m):
    """The product bound (1 - (3/4)^m)^4 of Lemma 5.3 (App. D.2, h = 1/4 in the clean limit)."""
    return (1 - sp.Rational(3, 4) ** m) ** 4


# -- exponents and norm bounds (App. B.3, C, Lemma B.6) ----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ExponentBalance:
    kappa_star: sp.Expr  # the kappa balancing 2 - kappa (b_1/lambda - 2) = kappa (App. B.3)
    identity_residual: sp.Expr  # 3 - kappa* (b_1/lambda - 2) - (1 + kappa*)
    r_exp_lambda_t4: sp.Expr  # r e^{lambda t_4} (App. C)
    dscale_dr: sp.Expr  # its derivative in r


def exponent_balance() -> ExponentBalance:
    """App. B.3: kappa* balancing 2 - kappa (b_1/lambda - 2) = kappa, and the identity 3 - kappa*(b_1/lambda - 2)
    = 1 + kappa*; App. C: r e^{lambda t_4} does not depend on r."""
    kappa, b1, lam, r, eps, a, th = sp.symbols("kappa b_1 lambda r epsilon a Theta", positive=True)
    kstar = sp.solve(sp.Eq(2 - kappa * (b1 / lam - 2), kappa), kappa)[0]
    ident = sp.simplify(3 - kstar * (b1 / lam - 2) - (1 + kstar))
    t4 = sp.log(lam * eps / (2 * a * r**2 * th**2)) / (2 * lam)
    scale = sp.simplify(sp.expand_log(r * sp.exp(lam * t4), force=True))
    return ExponentBalance(kappa_star=sp.simplify(kstar), identity_residual=ident, r_exp_lambda_t4=scale,
                           dscale_dr=sp.simplify(sp.diff(scale, r)))


@dataclasses.dataclass(frozen=True)
class BernoulliBound:
    solution: sp.Expr  # y(t) of Lemma B.6
    residual: sp.Expr  # y' - 2 lam y - 2 a y^2
    ratio_at_t1: sp.Expr  # y(t_1) / (y0 e^{2 lam t_1})


def bernoulli_bound() -> BernoulliBound:
    """Lemma B.6: y(t) = y0 e^{2 lam t} / (1 - (a/lam) y0 (e^{2 lam t} - 1)) solves y' = 2 lam y + 2 a y^2, and at
    t_1 = ln(lam / (2 a y0)) / (2 lam) its ratio to y0 e^{2 lam t} is 2 lam / (lam + 2 a y0) <= 2."""
    t, y0, lam, a = sp.symbols("t y_0 lambda a", positive=True)
    y = y0 * sp.exp(2 * lam * t) / (1 - a / lam * y0 * (sp.exp(2 * lam * t) - 1))
    residual = sp.simplify(sp.diff(y, t) - 2 * lam * y - 2 * a * y**2)
    t1 = sp.log(lam / (2 * a * y0)) / (2 * lam)
    ratio = sp.simplify((y / (y0 * sp.exp(2 * lam * t))).subs(t, t1))
    return BernoulliBound(solution=y, residual=residual, ratio_at_t1=ratio)


# -- Prop. 5.7 (App. D.3) ----------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Prop57Constants:
    """Prop. 5.7's numbers (App. D.3) as ``digits``-digit SymPy floats, with the exact expressions of A and C and
    of the margin bound."""

    A: sp.Float
    B: sp.Float
    C: sp.Float
    h_YT: sp.Float  # h((1-2a) q^2)
    bound: sp.Float  # the lower bound on h(X(T))
    threshold: sp.Float  # h((1-2a)(9/4)^2), which the bound must clear
    margin_bound: sp.Expr  # (1-2a)(9/4)^2 - 4 q^2 a, exact
    x_at_bound: sp.Float  # the x with h((1-2a) x^2) = bound
    A_expr: sp.Expr
    C_expr: sp.Expr


def prop_5_7_constants(a="1/100", b="1/1000", c=1000, q="8/3", digits: int = 30) -> Prop57Constants:
    """Prop. 5.7 (App. D.3): A = ((1-2a) e^{-7 q^2 a} - 4a)/2, B = (1+a)/2, C = e^{-4 q^2 a},
    h(x) = ln x + C (Ei(x) - Ei(1)); the lower bound on h(X(T)), the threshold h((1-2a)(9/4)^2) it must clear,
    and the margin bound (1-2a)(9/4)^2 - 4 q^2 a."""
    a, b, c, q = (sp.Rational(v) for v in (a, b, c, q))
    A = ((1 - 2 * a) * sp.exp(-7 * q**2 * a) - 4 * a) / 2
    B = (1 + a) / 2
    C = sp.exp(-4 * q**2 * a)

    def h(x):
        return sp.log(x) + C * (sp.Ei(x) - sp.Ei(1))

    hYT = h((1 - 2 * a) * q**2)
    bound = A / B * hYT + (B - A) / B * (1 + C * sp.E) * sp.log((1 - 2 * a) * b**2) \
        - (1 + C * sp.exp((1 - 2 * a) / 4)) * sp.log(c**2)
    threshold = h((1 - 2 * a) * sp.Rational(9, 4) ** 2)
    margin = (1 - 2 * a) * sp.Rational(9, 4) ** 2 - 4 * q**2 * a
    ev = lambda e: sp.N(e, digits)  # noqa: E731
    xs = sp.symbols("x_s", positive=True)
    x_at_bound = sp.nsolve(h((1 - 2 * a) * xs**2) - ev(bound), xs, 2.2)
    return Prop57Constants(A=ev(A), B=ev(B), C=ev(C), h_YT=ev(hYT), bound=ev(bound), threshold=ev(threshold),
                           margin_bound=margin, x_at_bound=x_at_bound, A_expr=A, C_expr=C)


# -- the domino analogue (Sec. 7) --------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class DominoRates:
    """G on the simple direction e_s and on an XOR direction e_1 for the noise-free domino (the Sec. 7 analogue), and
    the simple-feature strength mu_s at which the two rates are equal."""

    g_simple: sp.Expr
    g_xor: sp.Expr
    crossover: sp.Expr


def domino_rates() -> DominoRates:
    """G(v) = -l'(0) E[relu(v . x) y] (eq. (2)) on the noise-free domino x = (s, c_1, c_2): y = +-1 and the XOR side
    +-1, each with probability 1/2; s = y mu_s; c = side e_1 for y = +1 and side e_2 for y = -1. The expectation is
    the sum over these four atoms, and -l'(0) comes from :func:`logistic_constants`."""
    minus_dl0 = logistic_constants().minus_dl0
    g_s = g_1 = sp.Integer(0)
    for y in (1, -1):
        for side in (1, -1):
            s, c1 = y * mu_s, (side if y == 1 else 0)
            g_s += sp.Rational(1, 4) * relu(s) * y
            g_1 += sp.Rational(1, 4) * relu(sp.Integer(c1)) * y
    g_s, g_1 = sp.simplify(minus_dl0 * g_s), sp.simplify(minus_dl0 * g_1)
    return DominoRates(g_simple=g_s, g_xor=g_1, crossover=sp.solve(sp.Eq(g_s, g_1), mu_s)[0])


# -- G of eq. (2) on a finite data set (torch) -------------------------------------------------------------------------
LOGISTIC_SLOPE_AT_ZERO = 0.5  # -l'(0) for l(z) = ln(1 + e^{-z})


def g_function(V: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """G(v) = (-l'(0)/n) sum_i relu(v . x_i) y_i (eq. (2), logistic loss: -l'(0) = 1/2) for every row of V:
    V (..., d), X (n, d), y (n,) -> (...)."""
    return LOGISTIC_SLOPE_AT_ZERO * (torch.relu(V @ X.T) * y).mean(-1)


def g_on_circle(X: torch.Tensor, y: torch.Tensor, n_grid: int = 20000) -> tuple[torch.Tensor, torch.Tensor]:
    """G(cos phi, sin phi) on a uniform grid of phi in [-pi, pi) for data in R^2: returns (phi, G)."""
    angle = torch.linspace(-math.pi, math.pi, n_grid + 1, dtype=X.dtype)[:-1]
    dirs = torch.stack([angle.cos(), angle.sin()], dim=-1)
    return angle, g_function(dirs, X, y)


def g_extrema_on_circle(X: torch.Tensor, y: torch.Tensor, n_grid: int = 20000, keep: float = 0.5):
    """Local maxima of G with G > 0 and local minima with G < 0 on the circle, keeping those with
    |G| >= keep * max|G|. Returns (phi, G-values, sign) sorted by angle; sign +1 marks maxima (the attractors of
    neurons with a > 0), -1 minima (attractors of a < 0). lambda = max|G| is the Phase-1 growth rate (Sec. 5)."""
    angle, g = g_on_circle(X, y, n_grid)
    left, right = g.roll(1), g.roll(-1)
    is_max = (g >= left) & (g > right) & (g > 0)
    is_min = (g <= left) & (g < right) & (g < 0)
    lam = g.abs().max()
    chosen = (is_max | is_min) & (g.abs() >= keep * lam)
    sign = torch.where(is_max, 1.0, -1.0).to(g.dtype)
    return angle[chosen], g[chosen], sign[chosen]

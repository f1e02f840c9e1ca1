"""The feature-contamination theory of Zhang et al. (ICML 2024), Sec. 4 and appendices A-D, in SymPy, and the source's
Tables 1-4 (Sec. 2, appendix E) as data.

The functions return expressions and frozen dataclasses; they never judge themselves. The chapter's claims and the
tests check them (against brute force, Monte Carlo or an independent computation).
"""

from __future__ import annotations

import dataclasses
import itertools

import sympy as sp

eta, lam, m = sp.symbols("eta lambda m", positive=True)


# ---- Lemma A.1 (Eq. 12) and Lemma C.1 (Eq. 49): the hinge gradient --------------------------------------------------
def indicator(u: sp.Expr) -> sp.Expr:
    """1{u >= 0} (SymPy's Heaviside with H(0) = 1; the source takes ReLU'(0) = 1)."""
    return sp.Heaviside(u, 1)


@dataclasses.dataclass(frozen=True)
class HingeGradient:
    """max{1 - y h(x), 0} for h(x) = sum_k a_k sigma(<w_k, x>) with ``width`` neurons in ``dim`` dimensions, its
    gradient in W by SymPy (``derivative``, width x dim), the gradient of Eq. (12) / (49) with the loss indicator
    1{y h <= 1} (``eq12``) and with the indicator 1{h <= 1} as the source prints it (``printed``, erratum E1)."""

    activation: str
    y: sp.Symbol
    x: tuple[sp.Symbol, ...]
    a: tuple[sp.Symbol, ...]
    W: tuple[tuple[sp.Symbol, ...], ...]
    pre: tuple[sp.Expr, ...]  # <w_k, x>
    h: sp.Expr
    loss: sp.Expr
    derivative: sp.Matrix
    eq12: sp.Matrix
    printed: sp.Matrix
    formula: sp.Expr  # Eq. (12) (ReLU) or (49) (identity) in the source's notation, for display


def hinge_gradient(activation: str = "relu", width: int = 2, dim: int = 2) -> HingeGradient:
    """Lemma A.1, Eq. (12): grad_{w_k} max{1 - y h, 0} = -a_k y 1{y h <= 1} 1{<w_k, x> >= 0} x for the ReLU network, and
    Lemma C.1, Eq. (49), without the activation indicator for the identity network. SymPy differentiates the loss;
    :func:`~feature_learning.theory.feature_contamination.region_points` gives points in every sign region to compare
    the two on."""
    if activation not in ("relu", "identity"):
        raise ValueError(f"activation must be 'relu' or 'identity', got {activation!r}")
    y = sp.Symbol("y", real=True)
    x = sp.symbols(f"x1:{dim + 1}", real=True)
    a = sp.symbols(f"a1:{width + 1}", real=True)
    W = tuple(tuple(sp.Symbol(f"w_{k + 1}{j + 1}", real=True) for j in range(dim)) for k in range(width))
    pre = tuple(sum(W[k][j] * x[j] for j in range(dim)) for k in range(width))
    relu = activation == "relu"
    h = sum(a[k] * (sp.Max(pre[k], 0) if relu else pre[k]) for k in range(width))
    loss = sp.Max(1 - y * h, 0)
    derivative = sp.Matrix(width, dim, lambda k, j: sp.diff(loss, W[k][j]))

    def gradient(loss_indicator):
        return sp.Matrix(width, dim, lambda k, j: -a[k] * y * loss_indicator * (indicator(pre[k]) if relu else 1)
                         * x[j])

    ak, xv, yy = sp.Symbol("a_k"), sp.Symbol(r"\mathbf{x}"), sp.Symbol("y")
    ind_loss = sp.Symbol(r"\mathbb{1}_{y h(\mathbf{x})\le 1}")
    ind_act = sp.Symbol(r"\mathbb{1}_{\langle \mathbf{w}_k,\mathbf{x}\rangle\ge 0}")
    formula = -ak * yy * ind_loss * (ind_act if relu else 1) * xv
    return HingeGradient(activation, y, x, a, W, pre, h, loss, derivative, gradient(indicator(1 - y * h)),
                         gradient(indicator(1 - h)), formula)


HALF = sp.Rational(1, 2)


def region_points(grad: HingeGradient, targets=(-3, HALF, 3)) -> list[dict]:
    """Exact rational points that visit every sign region of the loss: for each activation pattern
    (sign <w_k, x>), each label y and each target value of y h in ``targets`` (below 1: loss active, above 1:
    loss inactive; y h = -3 with y = -1 means h = 3 > 1, where the printed indicator 1{h <= 1} is wrong), one point.
    With no active ReLU neuron h = 0 and only y h = 0 is reached. Inputs and weights are generic (no ties)."""
    width, dim = len(grad.W), len(grad.x)
    x_val = [sp.Rational(1), *[sp.Rational(2, 3 + j) for j in range(dim - 1)]]
    points = []
    for signs in itertools.product((1, -1), repeat=width):
        rows = [[sp.Rational(signs[k] * (1 + k), 2)] + [sp.Rational(1, 5 + k + j) for j in range(dim - 1)]
                for k in range(width)]
        # make the first coordinate dominate so that sign <w_k, x> = signs[k]
        pre = [sum(r[j] * x_val[j] for j in range(dim)) for r in rows]
        assert all(sp.sign(p) == s for p, s in zip(pre, signs, strict=True))
        for yv in (1, -1):
            if grad.activation == "relu":
                active = [k for k in range(width) if signs[k] > 0]
                reached = targets if active else (0,)
            else:
                reached = targets
            for t in reached:
                a_val = [sp.Rational(7, 5 + k) for k in range(width)]
                if t != 0:
                    free = active[0] if grad.activation == "relu" else 0
                    feature = (lambda u: max(u, 0)) if grad.activation == "relu" else (lambda u: u)
                    rest = sum(a_val[k] * feature(pre[k]) for k in range(width) if k != free)
                    a_val[free] = (yv * t - rest) / feature(pre[free])  # then y h = t
                point = {grad.y: yv, **dict(zip(grad.x, x_val, strict=True)),
                         **dict(zip(grad.a, a_val, strict=True))}
                point.update({grad.W[k][j]: rows[k][j] for k in range(width) for j in range(dim)})
                points.append(point)
    return points


def region_of(grad: HingeGradient, point: dict) -> tuple:
    """(sign <w_1, x>, ..., sign <w_m, x>, y, loss active): the sign region of the loss that ``point`` lies in."""
    signs = tuple(int(sp.sign(p.subs(point))) for p in grad.pre)
    yh = (grad.y * grad.h).subs(point)
    return (*signs, int(point[grad.y]), bool(yh <= 1))


def at(matrix: sp.Matrix, point: dict) -> sp.Matrix:
    """The exact (rational) value of a matrix of piecewise expressions at a point off the region boundaries."""
    return matrix.xreplace(point)


# ---- Lemma A.3, Eq. (14), and Eq. (7): the feature-wise projections ------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FeatureProjections:
    """Eq. (14)'s projections of -grad_{w_k} on a core (``core``) and a background (``bg``) feature."""

    core: sp.Expr
    bg: sp.Expr


def feature_projections() -> FeatureProjections:
    """Eq. (14) (erratum E2): a_k y <x, m_j> with <x, m_j> = y z_j on a core feature and z_j on a background feature,
    simplified with y in {-1, +1} (y^2 = 1)."""
    yy = sp.Symbol("y")
    z, ak = sp.Symbol("z_j"), sp.Symbol("a_k")
    core = sp.expand(ak * yy * (yy * z)).subs(yy**2, 1)
    return FeatureProjections(core, ak * yy * z)


def label_sum(term, s: int) -> sp.Expr:
    """sum over y in {-1, +1} with probability 1/2 each of ``term(y, c)``, where c = +1 marks the neuron's positive
    class y = s = sign(a_k) and c = -1 its negative class."""
    return sum(sp.Rational(1, 2) * term(yv, 1 if yv == s else -1) for yv in (1, -1))


@dataclasses.dataclass(frozen=True)
class ContaminationGradient:
    """Eq. (7) in population form: the background gradient ``grad_bg`` (output sign +1), the same for both output signs
    (``by_sign``), in the class-conditional expectations ``q_plus``, ``q_minus``."""

    grad_bg: sp.Expr
    by_sign: dict
    q_plus: sp.Symbol
    q_minus: sp.Symbol


def contamination_gradient() -> ContaminationGradient:
    """Eq. (7) in population form, from Eq. (14) on a background feature: <-grad_{w_k} L, m_j> = a_k E[y 1{yh<=1}
    1{<w_k, x> >= 0} z_j] with a_k = sign(a_k)/m and q_{+-} = E[1{yh<=1} 1{<w_k,x> >= 0} z_j | y = +-sign(a_k)].
    SymPy sums over the label for both output signs (``by_sign``); both give (q_+ - q_-)/(2m)."""
    q_p, q_n = sp.symbols("q_+ q_-", nonnegative=True)
    by_sign = {s: sp.simplify(label_sum(lambda yv, c, s=s: sp.Integer(s) / m * yv * (q_p if c > 0 else q_n), s))
               for s in (1, -1)}
    return ContaminationGradient(by_sign[1], by_sign, q_p, q_n)


@dataclasses.dataclass(frozen=True)
class ContaminationRates:
    """The early-phase rates of an oriented core (``core``) and a background (``bg``) coordinate, their ``ratio``
    (and its value at rho_- = rho_+ and at rho_- = 0), per output sign (``by_sign``), in the symbols ``rho_plus``,
    ``rho_minus``, ``mu``."""

    core: sp.Expr
    bg: sp.Expr
    ratio: sp.Expr
    by_sign: dict
    rho_plus: sp.Symbol
    rho_minus: sp.Symbol
    mu: sp.Symbol
    at_symmetry: sp.Expr
    at_full_asymmetry: sp.Expr


def contamination_rates() -> ContaminationRates:
    """The early-phase rates (chapter notes F24), from Eq. (14) with E[1{yh<=1} 1{<w_k,x> >= 0} z_j | y] ~
    rho_{+-} mu_j, where rho_{+-} is the probability that neuron k is active and loss-active on its positive /
    negative class: one step of size eta moves an oriented core coordinate sign(a_k)<w_k, m_j> by
    (eta mu/2m)(rho_+ + rho_-) and a background coordinate by (eta mu/2m)(rho_+ - rho_-). Derived by summing
    over the label for both output signs (``by_sign``)."""
    r_p, r_n = sp.symbols(r"\rho_+ \rho_-", nonnegative=True)
    mu = sp.Symbol("mu", positive=True)

    def rho(c):
        return r_p if c > 0 else r_n

    by_sign = {}
    for s in (1, -1):
        a_k = sp.Integer(s) / m
        core = sp.simplify(s * eta * label_sum(lambda yv, c, a_k=a_k: a_k * yv * (yv * mu) * rho(c), s))
        bg = sp.simplify(eta * label_sum(lambda yv, c, a_k=a_k: a_k * yv * mu * rho(c), s))
        by_sign[s] = (core, bg)
    core, bg = by_sign[1]
    ratio = sp.simplify(bg / core)
    return ContaminationRates(core, bg, ratio, by_sign, r_p, r_n, mu, sp.simplify(ratio.subs(r_n, r_p)),
                              ratio.subs(r_n, 0))


def label_averaged_bg_gradient(activation: str, w_core, w_bg, a=1) -> sp.Rational:
    """The exact E[y 1{y h <= 1} 1{<w, x> >= 0} z_bg] (the label-averaged background gradient of Eq. (14) up to the
    factor a) for one neuron h(x) = a sigma(<w, x>) on the smallest structured-feature model: one core and one
    background feature, x = (y z_1, z_2), z_1, z_2 ~ U[0, 1], y = +-1 with probability 1/2; SymPy integrates the
    indicators exactly. For the identity activation and w_bg = 0, y h = a w_core z_1 does not depend on y and the
    two class terms cancel (Lemma C.3); a background weight, or the ReLU's activation indicator, breaks it."""
    z1, z2 = sp.symbols("z_1 z_2", real=True)
    total = sp.Integer(0)
    for yv in (1, -1):
        pre = w_core * yv * z1 + w_bg * z2
        h = a * (pre if activation == "identity" else sp.Max(pre, 0))
        ind = sp.Piecewise((1, yv * h <= 1), (0, True))
        if activation != "identity":
            ind = ind * sp.Piecewise((1, pre >= 0), (0, True))
        total += sp.Rational(1, 2) * yv * sp.integrate(sp.integrate(ind * z2, (z1, 0, 1)), (z2, 0, 1))
    return sp.nsimplify(sp.simplify(total))


# ---- Eqs. (32)-(33) and Lemma B.6: the recursions, their solution and time rescaling --------------------------------
@dataclasses.dataclass(frozen=True)
class Recursions:
    """Eqs. (32)-(33) combined (``combined``; the source's line ``printed``, erratum E6), the ``drift``, the solution
    for a constant drift (``solution``, ``continuous``) and the pure decay (1 - lambda eta)^t, with their symbols."""

    combined: sp.Expr
    printed: sp.Expr
    drift: sp.Expr
    C: sp.Symbol
    B: sp.Symbol
    y: sp.Symbol
    E_t: sp.Symbol
    solution: sp.Expr
    continuous: sp.Expr
    t: sp.Symbol
    tau: sp.Symbol
    g: sp.Symbol
    E0: sp.Symbol
    pure_decay: sp.Expr


def recursions() -> Recursions:
    """Eqs. (32)-(33): with C_t = <w_k, sum_core mu_j m_j> and B_t = <w_k, sum_bg mu_j m_j>::

        y C_{t+1} = (1 - lambda eta) y C_t + eta (g_{y,core} + g_{-y,core}),
        B_{t+1}   = (1 - lambda eta) B_t   + eta (g_{y,bg} - g_{-y,bg}).

    SymPy adds them and eliminates B_t = E_t - y C_t, where E_t = E_{x|y}<w_k, x> = y C_t + B_t (``combined``);
    ``printed`` is the source's combined line in Lemma B.6, which carries a factor y on (1 - lambda eta) E_t
    (erratum E6). For a constant drift g, ``solution`` is SymPy's rsolve of E_{t+1} = (1 - lambda eta) E_t + eta g,
    E_0 given, and ``continuous`` its limit eta -> 0 at fixed tau = eta t."""
    C, B, yy, E_t = sp.symbols("C_t B_t y E_t")
    gyc, gnc, gyb, gnb = sp.symbols(r"g_{y\,core} g_{-y\,core} g_{y\,bg} g_{-y\,bg}")
    yC_next = (1 - lam * eta) * yy * C + eta * (gyc + gnc)
    B_next = (1 - lam * eta) * B + eta * (gyb - gnb)
    combined = sp.collect(sp.expand((yC_next + B_next).subs(B, E_t - yy * C)), [E_t, eta])
    drift = eta * (gyc + gnc + gyb - gnb)
    printed = yy * (1 - lam * eta) * E_t + drift
    t = sp.Symbol("t", integer=True, nonnegative=True)
    E = sp.Function("E")
    g, E0, tau = sp.symbols("g E_0 tau", real=True)
    solution = sp.rsolve(E(t + 1) - (1 - lam * eta) * E(t) - eta * g, E(t), {E(0): E0})
    continuous = sp.simplify(sp.limit(solution.subs(t, tau / eta), eta, 0))
    return Recursions(combined, printed, drift, C, B, yy, E_t, solution, continuous, t, tau, g, E0,
                      (1 - lam * eta) ** t)


# ---- Lemma B.1 and the Berry-Esseen step: moments of U[0, 1] and the activation probability -----------------------
@dataclasses.dataclass(frozen=True)
class UniformMoments:
    """Moments of z ~ U[0, 1] (``mu1``, ``mu2``, ``mu3``, ``var``, ``abs3`` = E|z - mu|^3) and the Berry-Esseen ratio
    for ``n`` equal weights."""

    mu1: sp.Expr
    mu2: sp.Expr
    mu3: sp.Expr
    var: sp.Expr
    abs3: sp.Expr
    berry_esseen: sp.Expr
    n: sp.Symbol


def uniform_moments() -> UniformMoments:
    """Moments of z ~ U[0, 1] used by Lemma B.1 and its Berry-Esseen step: mu_1, mu_2, mu_3, sigma^2, E|z - mu|^3,
    and the Berry-Esseen ratio (sum rho_i)/(sum sigma_i^2)^{3/2} for n equal weights, all integrated by SymPy."""
    z = sp.Symbol("z")
    n = sp.Symbol("n", positive=True, integer=True)
    mom = [sp.integrate(z**p, (z, 0, 1)) for p in (1, 2, 3)]
    var = sp.simplify(mom[1] - mom[0] ** 2)
    abs3 = sp.integrate(sp.Abs(z - mom[0]) ** 3, (z, 0, 1))
    be = sp.simplify((n * abs3) / (n * var) ** sp.Rational(3, 2))
    return UniformMoments(mom[0], mom[1], mom[2], var, abs3, be, n)


@dataclasses.dataclass(frozen=True)
class ActivationProbability:
    """Lemma B.1 for U[0, 1] features: the ``mean`` and ``variance`` of <w, x> given y, ``sigma``, the normal
    approximation ``expr`` and the normal cdf ``Phi``."""

    mean: sp.Expr
    variance: sp.Expr
    sigma: sp.Expr
    expr: sp.Expr
    Phi: sp.Lambda


def activation_probability() -> ActivationProbability:
    """Lemma B.1 (Eq. 19) for U[0, 1] features: given y, <w, x> = sum_j y_j w_j z_j (y_j = y on the core, 1 on the
    background) is a sum of independent terms. SymPy integrates its mean and variance for two terms over the unit
    square (the cross term cancels: ``mean`` = mu (y_1 w_1 + y_2 w_2), ``variance`` = sigma^2 (w_1^2 + w_2^2)), and
    the normal approximation is Phi(E_{x|y}<w, x> / (sigma ||w||)) with sigma = 1/sqrt(12): the source's Theta(1)
    made explicit."""
    w1, w2, z1, z2 = sp.symbols("w_1 w_2 z_1 z_2", real=True)
    y1, y2 = sp.symbols("y_1 y_2", real=True)  # +-1
    total = y1 * w1 * z1 + y2 * w2 * z2
    mean = sp.integrate(total, (z1, 0, 1), (z2, 0, 1))
    second = sp.integrate(sp.expand(total**2), (z1, 0, 1), (z2, 0, 1))
    variance = sp.factor(sp.expand(second - mean**2).subs({y1**2: 1, y2**2: 1}))
    sigma = sp.sqrt(sp.simplify(variance / (w1**2 + w2**2)))
    E, norm = sp.symbols(r"\mathbb{E}_{\mathbf{x}|y}\langle\mathbf{w}\,\mathbf{x}\rangle \|\mathbf{w}\|", positive=True)
    u = sp.Symbol("u")
    Phi = sp.Lambda(u, (1 + sp.erf(u / sp.sqrt(2))) / 2)
    return ActivationProbability(mean, variance, sigma, sp.Function("Phi")(E / (sigma * norm)), Phi)


@dataclasses.dataclass(frozen=True)
class BothPositive:
    """The fraction of initial neurons positive on both classes, in ``d_core`` and ``d_bg``, and at d_bg = d_core."""

    fraction: sp.Expr
    d_core: sp.Symbol
    d_bg: sp.Symbol
    equal_sizes: sp.Expr


def both_positive_at_init() -> BothPositive:
    """At initialisation E_{x|y}<w_k, x> = y c + b with independent c ~ N(0, mu^2 d_core/d) and
    b ~ N(0, mu^2 d_bg/d) (Lemma A.8), so a neuron correlates positively with both classes iff b > |c|. With
    u = c/sd(c), v = b/sd(b) standard normal and rotation invariant, that is a wedge of the (u, v) plane around the
    v axis with half-angle atan(sqrt(d_bg/d_core)); SymPy integrates the density over it in polar coordinates."""
    d_core, d_bg = sp.symbols("d_core d_bg", positive=True)
    r, theta = sp.symbols("r theta", positive=True)
    half = sp.atan(sp.sqrt(d_bg / d_core))
    density = sp.exp(-r**2 / 2) / (2 * sp.pi) * r
    radial = sp.integrate(density, (r, 0, sp.oo))
    fraction = sp.simplify(sp.integrate(radial, (theta, sp.pi / 2 - half, sp.pi / 2 + half)))
    return BothPositive(fraction, d_core, d_bg, sp.simplify(fraction.subs(d_bg, d_core)))


@dataclasses.dataclass(frozen=True)
class MillsRatio:
    """Lemma D.3's bounds (``lower``, ``upper``) on Pr[N(0,1) >= delta], the derivatives of the differences, their
    limits at infinity and the sign-evident forms ``f_sign``, ``g_sign``."""

    lower: sp.Expr
    upper: sp.Expr
    f_prime: sp.Expr
    g_prime: sp.Expr
    delta: sp.Symbol
    limits: tuple
    f_sign: sp.Expr
    g_sign: sp.Expr


def mills_ratio() -> MillsRatio:
    """Lemma D.3 (Eq. 56): phi(d) d/(d^2+1) <= Pr[N(0,1) >= d] <= phi(d)/d for d > 0. The differences
    f = Q - lower and g = upper - Q vanish at infinity (``limits``) and decrease: ``f_sign`` and ``g_sign`` are
    f' and g' times positive factors, simplified by SymPy to expressions whose sign is evident."""
    d = sp.Symbol("delta", positive=True)
    phi = sp.exp(-d**2 / 2) / sp.sqrt(2 * sp.pi)
    Q = sp.erfc(d / sp.sqrt(2)) / 2
    f = Q - phi * d / (d**2 + 1)
    g = phi / d - Q
    fp, gp = sp.simplify(sp.diff(f, d)), sp.simplify(sp.diff(g, d))
    return MillsRatio(phi * d / (d**2 + 1), phi / d, fp, gp, d, (sp.limit(f, d, sp.oo), sp.limit(g, d, sp.oo)),
                      sp.simplify(fp * (d**2 + 1) ** 2 * sp.exp(d**2 / 2)), sp.simplify(gp * d**2 * sp.exp(d**2 / 2)))


@dataclasses.dataclass(frozen=True)
class OodHingeEstimate:
    """The OOD hinge-risk estimate: ``risk`` = 1 - r M, the margin ``ratio`` r, the bracket ``lower``, ``upper``, the
    unit-margin and equal-size forms, and the symbols."""

    risk: sp.Expr
    ratio: sp.Expr
    c: sp.Symbol
    b: sp.Symbol
    d_core: sp.Symbol
    d_bg: sp.Symbol
    M: sp.Symbol
    R_id: sp.Symbol
    r: sp.Symbol
    lower: sp.Expr
    upper: sp.Expr
    unit_margin: sp.Expr
    equal_sizes: sp.Expr


def ood_hinge_estimate() -> OodHingeEstimate:
    """An estimate of the OOD hinge risk at convergence (derived here, chapter notes F25). Let c be the mean
    oriented core weight and b the mean background weight per coordinate. For a neuron on its positive class the
    mean pre-activation is mu(d_core c + d_bg b) in distribution and mu(d_core c - d_bg b) after the background
    mean flips from +mu to -mu. If the positive neurons carry the output, h is proportional to this mean, so each
    OOD margin is r times the ID margin of the same core, r = (d_core c - d_bg b)/(d_core c + d_bg b)
    (``ratio``). With ID margins of mean M (1 in the notes) and every OOD margin below 1, the OOD hinge risk is
    ``risk`` = 1 - r M; ``unit_margin`` is the notes' M = 1.

    Without assuming the OOD margins below 1, the hinge's shape brackets it for 0 < r < 1: for every ID margin m,
    1 - r m <= max(0, 1 - r m) <= 1 - r min(m, 1), and E[min(m, 1)] = 1 - R_ID, so
    1 - r M <= R_OOD <= 1 - r (1 - R_ID) (``lower``, ``upper``)."""
    c, b, dc, db, mu, K, M = sp.symbols("c b d_core d_bg mu K M", positive=True)
    R_id, r = sp.Symbol(r"\mathcal{R}_{\mathrm{ID}}", nonnegative=True), sp.Symbol("r", positive=True)
    h_id = K * mu * (dc * c + db * b)
    h_ood = K * mu * (dc * c - db * b)
    K_fit = sp.solve(sp.Eq(h_id, M), K)[0]
    risk = sp.simplify(1 - h_ood.subs(K, K_fit))
    ratio = sp.simplify(h_ood / h_id)
    return OodHingeEstimate(risk, ratio, c, b, dc, db, M, R_id, r, 1 - r * M, 1 - r * (1 - R_id),
                            sp.simplify(risk.subs(M, 1)), sp.simplify(risk.subs({db: dc, M: 1})))


# ---- Sec. 2 / appendix E: the source's tables, kept as data (top-1 %, ImageNet and its shifts) ---------------------
TABLE1_COLUMNS = ("ImageNet", "OOD avg", "ImageNet-V2", "ImageNet-R", "ObjectNet", "ImageNet-Sketch", "ImageNet-A")
TABLE1 = {  # Table 1 (appendix E.2): CLIP teachers and their distilled students
    "CLIP-RN50": (70.37, 39.42, 59.03, 51.18, 37.72, 31.87, 17.31),
    "Distilled RN50": (69.85, 31.63, 57.97, 38.22, 32.72, 20.97, 8.25),
    "CLIP-RN101": (72.33, 45.27, 61.70, 59.92, 43.07, 37.93, 23.73),
    "Distilled RN101": (72.28, 35.18, 60.46, 44.09, 35.89, 23.88, 11.56),
    "CLIP-ViT-B/16": (79.40, 57.59, 69.72, 72.42, 51.85, 47.33, 46.64),
    "Distilled ViT-B/16": (73.58, 37.14, 62.45, 44.43, 35.52, 23.83, 19.47),
    "CLIP-RN50x4": (76.18, 51.45, 65.83, 64.80, 48.74, 42.19, 35.67),
    "Distilled RN50x4": (76.25, 41.40, 65.20, 49.22, 42.71, 29.23, 20.64),
    "CLIP-RN50x16": (80.24, 60.61, 70.13, 73.67, 56.92, 48.52, 53.79),
    "Distilled RN50x16": (79.65, 48.26, 68.49, 55.03, 48.90, 32.93, 35.97),
}
TABLES_2_TO_4 = {  # (ID, OOD) of teacher and distilled student: iWildCam (macro F1), Camelyon17, DomainNet (%)
    "iWildCam-WILDS (Table 2)": {"teacher": ("ImageNet RN50", 49.30, 32.46),
                                 "student": ("Distilled RN50", 32.32, 13.83)},
    "Camelyon17-WILDS (Table 3)": {"teacher": ("CLIP-ViT-B/16", 98.22, 92.88),
                                   "student": ("Distilled ViT-B/16", 98.28, 89.83)},
    "DomainNet (Table 4)": {"teacher": ("CLIP-RN50", 87.02, 82.58), "student": ("Distilled RN50", 77.91, 64.78)},
}


def table1_gaps() -> dict[str, dict[str, float]]:
    """Distilled minus CLIP teacher, per architecture, for every column of Table 1 (ID, OOD average, each OOD set)."""
    out = {}
    for name, student in TABLE1.items():
        if name.startswith("Distilled"):
            arch = name.removeprefix("Distilled ")
            teacher = TABLE1[f"CLIP-{arch}"]
            out[arch] = {col: s - t for col, s, t in zip(TABLE1_COLUMNS, student, teacher, strict=True)}
    return out


def table1_average_residuals() -> dict[str, float]:
    """Per row of Table 1, printed "OOD avg" minus the mean of the five printed OOD columns. Every entry is rounded
    to 0.01, so a consistent table has |residual| <= 0.005 + 0.005 (the average's rounding plus the mean of the
    columns' roundings)."""
    return {name: row[1] - sum(row[2:]) / 5 for name, row in TABLE1.items()}

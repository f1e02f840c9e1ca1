"""SymPy forms for the feature-contamination theory of Zhang et al. (ICML 2024), Sec. 4 and appendices A-D.

Each function returns SymPy expressions (for display) together with the check that they hold.
"""

from __future__ import annotations

import sympy as sp

eta, lam, m = sp.symbols("eta lambda m", positive=True)
y, y_pos = sp.symbols("y y_pos")


def _points(yy, xs, a, W, count: int = 12):
    """Deterministic pseudo-random rational points (y = +-1) for checking piecewise identities."""
    points, state = [], 12345
    symbols = [*xs, *a, *[w for row in W for w in row]]
    for i in range(count):
        values = {}
        for s in symbols:
            state = (1103515245 * state + 12345) % 2**31
            values[s] = sp.Rational(state % 2001 - 1000, 997)
        values[yy] = 1 if i % 2 == 0 else -1
        points.append(values)
    return points


def hinge_gradient(width: int = 2, dim: int = 2) -> dict:
    """Lemma A.1, Eq. (12): grad_{w_k} max{1 - y h(x), 0} = -a_k y 1{y h <= 1} 1{<w_k,x> >= 0} x for
    h = sum_k a_k ReLU(<w_k, x>), checked by SymPy differentiation (Heaviside = indicator) for a small net;
    and for the identity activation (Lemma C.1, Eq. (49)) without the activation indicator."""
    yy = sp.Symbol("y", real=True)
    xs = sp.symbols(f"x1:{dim + 1}", real=True)
    a = sp.symbols(f"a1:{width + 1}", real=True)
    W = [[sp.Symbol(f"w_{k + 1}{j + 1}", real=True) for j in range(dim)] for k in range(width)]
    pre = [sum(W[k][j] * xs[j] for j in range(dim)) for k in range(width)]
    out = {}
    for name, act, ind in [("relu", lambda u: sp.Max(u, 0), sp.Heaviside), ("identity", lambda u: u, lambda u: 1)]:
        h = sum(a[k] * act(pre[k]) for k in range(width))
        loss = sp.Max(1 - yy * h, 0)
        ok = True
        for k in range(width):
            for j in range(dim):
                auto = sp.diff(loss, W[k][j])
                formula = -a[k] * yy * sp.Heaviside(1 - yy * h) * ind(pre[k]) * xs[j]
                # compare on random rational points of every region (the boundaries have measure zero)
                for point in _points(yy, xs, a, W):
                    ok &= sp.simplify(auto.subs(point) - formula.subs(point)) == 0
        out[name] = ok
    ak, x_vec = sp.Symbol("a_k"), sp.Symbol(r"\mathbf{x}")
    ind_loss = sp.Symbol(r"\mathbb{1}_{y h(\mathbf{x})\le 1}")
    ind_act = sp.Symbol(r"\mathbb{1}_{\langle \mathbf{w}_k,\mathbf{x}\rangle\ge 0}")
    out["formula_relu"] = -ak * sp.Symbol("y") * ind_loss * ind_act * x_vec
    out["formula_linear"] = -ak * sp.Symbol("y") * ind_loss * x_vec
    return out


def sign_bookkeeping() -> dict:
    """Eq. (7): with a_k = y_pos/m, a_k y = (1/m)(1{y = y_pos} - 1{y = y_neg}), checked over y, y_pos in {+-1};
    and the feature-wise projections of Eq. (14) (erratum E2): <x, m_j> = y z_j on the core gives
    a_k y <x, m_j> = a_k z_j (since y^2 = 1), on the background a_k y z_j."""
    ok = True
    for yv in (-1, 1):
        for pv in (-1, 1):
            lhs = sp.Rational(pv) / m * yv
            rhs = (sp.Integer(int(yv == pv)) - sp.Integer(int(yv == -pv))) / m
            ok &= sp.simplify(lhs - rhs) == 0
    z = sp.Symbol("z_j")
    ak = sp.Symbol("a_k")
    core_ok = all(sp.simplify((ak * yv * (yv * z)) - ak * z) == 0 for yv in (-1, 1))
    return {"sign_identity": ok, "core_projection": core_ok,
            "core": ak * z, "bg": ak * sp.Symbol("y") * z}


def contamination_gradient() -> dict:
    """Eq. (7) in population form. With q_{+-} = E[1{yh<=1} 1{<w_k,x> >= 0} z_j | y = +-y_pos] (j in S_bg):
    <-grad_{w_k} L, m_j> = (1/m)(q_+ - q_-)/2. For a linear network the activation indicator is 1 and, when the
    loss indicator does not depend on y (the background part of the end-to-end predictor is zero, Lemma C.3), the
    two class terms are equal: the contamination gradient vanishes."""
    q_p, q_n = sp.symbols("q_+ q_-", nonnegative=True)
    grad_bg = sp.Rational(1, 2) * (q_p - q_n) / m
    # linear network, y independent of z and of the loss indicator: E[y G(z)] = sum_y P(y) y E[G] = 0
    G = sp.Symbol("G")
    linear = sum(sp.Rational(1, 2) * yv * G for yv in (-1, 1))
    return {"grad_bg": grad_bg, "linear": sp.simplify(linear), "q_plus": q_p, "q_minus": q_n}


def contamination_rate_ratio() -> dict:
    """Early-phase rates (derived from Eq. (14) with E[z_j | active] ~ mu_j; chapter notes F24):
    core (oriented) per coordinate (eta mu/2m)(p_+ + p_-), background (eta mu/2m)(p_+ - p_-); ratio
    (p_+ - p_-)/(p_+ + p_-), 0 at symmetric activation and 1 at full asymmetry."""
    p_p, p_n, mu = sp.symbols("p_+ p_-", nonnegative=True) + (sp.Symbol("mu", positive=True),)
    core = eta * mu / (2 * m) * (p_p + p_n)
    bg = eta * mu / (2 * m) * (p_p - p_n)
    ratio = sp.simplify(bg / core)
    return {"core": core, "bg": bg, "ratio": ratio, "p_plus": p_p, "p_minus": p_n,
            "at_symmetry": sp.simplify(ratio.subs(p_n, p_p)), "at_full_asymmetry": ratio.subs(p_n, 0)}


def recursions() -> dict:
    """Eqs. (32)-(33): with C_t = <w_k, sum_core mu_j m_j> and B_t = <w_k, sum_bg mu_j m_j>,
        y C_{t+1} = (1 - lambda eta) y C_t + eta (g_{y,core} + g_{-y,core}),
        B_{t+1}   = (1 - lambda eta) B_t   + eta (g_{y,bg} - g_{-y,bg}),
    so E_{x|y}<w_k, x> = y C + B obeys E_{t+1} = (1 - lambda eta) E_t + eta(g_{y,core}+g_{-y,core}+g_{y,bg}-g_{-y,bg})
    (erratum E6: no extra factor y). For constant drift g the solution (rsolve) is
    E_t = (1-lambda eta)^t E_0 + g (1 - (1-lambda eta)^t)/lambda, whose limit eta -> 0 at fixed eta t = tau is
    e^{-lambda tau} E_0 + g (1 - e^{-lambda tau})/lambda: the state depends on eta t only (time rescaling)."""
    C, B, yy = sp.symbols("C_t B_t y")
    gyc, gnc, gyb, gnb = sp.symbols("g_{y\\,core} g_{-y\\,core} g_{y\\,bg} g_{-y\\,bg}")
    yC_next = (1 - lam * eta) * yy * C + eta * (gyc + gnc)
    B_next = (1 - lam * eta) * B + eta * (gyb - gnb)
    E_next = sp.expand(yC_next + B_next)
    combined = (1 - lam * eta) * (yy * C + B) + eta * (gyc + gnc + gyb - gnb)
    combine_ok = sp.simplify(E_next - sp.expand(combined)) == 0
    t = sp.Symbol("t", integer=True, nonnegative=True)
    E = sp.Function("E")
    g, E0, tau = sp.symbols("g E_0 tau", real=True)
    sol = sp.rsolve(E(t + 1) - (1 - lam * eta) * E(t) - eta * g, E(t), {E(0): E0})
    closed = (1 - lam * eta) ** t * E0 + g * (1 - (1 - lam * eta) ** t) / lam
    solve_ok = sp.simplify(sol - closed) == 0
    continuous = sp.limit(closed.subs(t, tau / eta), eta, 0)
    continuous_target = sp.exp(-lam * tau) * E0 + g * (1 - sp.exp(-lam * tau)) / lam
    return {"combined": combined, "combine_ok": combine_ok, "solution": closed, "solve_ok": solve_ok,
            "continuous": continuous, "continuous_ok": sp.simplify(continuous - continuous_target) == 0,
            "pure_decay": (1 - lam * eta) ** t}


def uniform_moments() -> dict:
    """Moments of z ~ U[0, 1] used by Lemma B.1 and its Berry-Esseen step: mu_1, mu_2, mu_3, sigma^2, E|z - mu|^3,
    and the Berry-Esseen factor (sum rho_i)/(sum sigma_i^2)^{3/2} for n equal weights, 3 sqrt(3)/(4 sqrt(n))."""
    z = sp.Symbol("z")
    n = sp.Symbol("n", positive=True, integer=True)
    mom = [sp.integrate(z**p, (z, 0, 1)) for p in (1, 2, 3)]
    var = sp.simplify(mom[1] - mom[0] ** 2)
    abs3 = sp.integrate(sp.Abs(z - mom[0]) ** 3, (z, 0, 1))
    be = sp.simplify((n * abs3) / (n * var) ** sp.Rational(3, 2))
    return {"mu1": mom[0], "mu2": mom[1], "mu3": mom[2], "var": var, "abs3": abs3, "berry_esseen": be, "n": n}


def activation_probability() -> dict:
    """Lemma B.1 (Eq. 19) for U[0,1] features: Pr_{x|y}[<w,x> >= 0] ~ Phi(E_{x|y}<w,x> / (sigma ||w||)), sigma^2 = 1/12
    (the Theta(1) of the source made explicit by the CLT)."""
    E, norm = sp.symbols(r"\mathbb{E}_{\mathbf{x}|y}\langle\mathbf{w}\,\mathbf{x}\rangle \|\mathbf{w}\|", positive=True)
    sigma = sp.sqrt(uniform_moments()["var"])
    u = sp.Symbol("u")
    Phi = sp.Lambda(u, (1 + sp.erf(u / sp.sqrt(2))) / 2)
    return {"expr": sp.Function("Phi")(E / (sigma * norm)), "Phi": Phi, "sigma": sigma}


def mills_ratio() -> dict:
    """Lemma D.3 (Eq. 56): phi(d) d/(d^2+1) <= Pr[N(0,1) >= d] <= phi(d)/d for d > 0, proved by monotone differences
    vanishing at infinity."""
    d = sp.Symbol("delta", positive=True)
    phi = sp.exp(-d**2 / 2) / sp.sqrt(2 * sp.pi)
    Q = sp.erfc(d / sp.sqrt(2)) / 2
    f = Q - phi * d / (d**2 + 1)
    g = phi / d - Q
    fp, gp = sp.simplify(sp.diff(f, d)), sp.simplify(sp.diff(g, d))
    ok = (sp.limit(f, d, sp.oo) == 0 and sp.limit(g, d, sp.oo) == 0
          and sp.ask(sp.Q.negative(fp)) is not False and sp.simplify(fp * (d**2 + 1) ** 2 * sp.exp(d**2 / 2)) < 0
          and sp.simplify(gp * d**2 * sp.exp(d**2 / 2)) < 0)
    return {"lower": phi * d / (d**2 + 1), "upper": phi / d, "f_prime": fp, "g_prime": gp, "ok": bool(ok)}


def ood_hinge_estimate() -> dict:
    """An estimate of the OOD hinge risk at convergence (derived here, chapter notes F25). Let c be the mean
    oriented core weight and b the mean background weight per coordinate. For a neuron on its positive class the
    mean pre-activation is mu(d_core c + d_bg b) in distribution and mu(d_core c - d_bg b) after the background
    mean flips from +mu to -mu. If the positive neurons carry the output, h is proportional to this mean, and the
    ID margin is ~1, the OOD hinge is 1 - (d_core c - d_bg b)/(d_core c + d_bg b)."""
    c, b, dc, db, mu, K = sp.symbols("c b d_core d_bg mu K", positive=True)
    h_id = K * mu * (dc * c + db * b)
    h_ood = K * mu * (dc * c - db * b)
    K_fit = sp.solve(sp.Eq(h_id, 1), K)[0]
    risk = sp.simplify(1 - h_ood.subs(K, K_fit))
    return {"risk": risk, "c": c, "b": b, "d_core": dc, "d_bg": db,
            "equal_sizes": sp.simplify(risk.subs(db, dc))}

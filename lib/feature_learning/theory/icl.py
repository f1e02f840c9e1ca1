"""Closed forms of dissertation ch. 5 (model scale and in-context learning; appendix D), SymPy and torch.

Linear regression (section 5.4): the pretraining loss of Lemma 5.1 derived from Gaussian moments, the rank-r optimum
of Theorem 5.4.1, the evaluation risk of Theorem 5.4.2 (with the label-flip extension derived here), the gap of
Theorem 5.4.3. Sparse parity (section 5.5): the constructions g_1*, g_2* of Theorem 5.5.1 and their N = infinity
hinge losses and margins.
"""

from __future__ import annotations

import sympy as sp
import torch

from feature_learning.data.in_context import bit, parity_population_features

# ---------------------------------------------------------------------------------------------------------------
# Symbolic Gaussian moments


def gauss_expect(expr, xs, lams):
    """E[expr] for independent x_k ~ N(0, lams[k]) (expr polynomial in xs): Isserlis, E x^(2m) = (2m-1)!! lam^m."""
    poly = sp.Poly(sp.expand(expr), *xs)
    total = 0
    for powers, coeff in poly.terms():
        term = coeff
        for p, lam in zip(powers, lams, strict=True):
            term *= 0 if p % 2 else sp.factorial2(p - 1) * lam ** (p // 2)
        total += term
    return sp.expand(total)


def fourth_moment_check(d: int = 2) -> bool:
    """E[x x^T A x x^T] = Lam (A + A^T) Lam + tr(A Lam) Lam for x ~ N(0, Lam), Lam diagonal, generic A (proof of
    Lemma 5.1)."""
    lams = sp.symbols(f"lambda_1:{d + 1}", positive=True)
    xs = sp.symbols(f"x_1:{d + 1}")
    A = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"a_{i + 1}{j + 1}"))
    x = sp.Matrix(xs)
    Lam = sp.diag(*lams)
    lhs = (x * x.T * A * x * x.T).applyfunc(lambda e: gauss_expect(e, xs, lams))
    rhs = Lam * (A + A.T) * Lam + (A * Lam).trace() * Lam
    return sp.simplify(lhs - rhs) == sp.zeros(d, d)


def pretraining_loss_symbolic(d: int = 2):
    """Derive the population loss (1/2) E (u w^T S_hat U x_q - w^T x_q)^2 (rho = N, w ~ N(0, I), x ~ N(0, Lam))
    from Gaussian moments for a generic U, and Lemma 5.1's formula. Returns (derived, lemma_tilde_l, symbols)."""
    lams = sp.symbols(f"lambda_1:{d + 1}", positive=True)
    xs = sp.symbols(f"x_1:{d + 1}")
    N, u = sp.symbols("N u", positive=True)
    U = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"U_{i + 1}{j + 1}"))
    Lam = sp.diag(*lams)
    x = sp.Matrix(xs)
    B = U * Lam * U.T
    # E[S_hat B S_hat] = (1 - 1/N) Lam B Lam + (1/N) E[x x^T B x x^T]
    four = (x * x.T * B * x * x.T).applyfunc(lambda e: gauss_expect(e, xs, lams))
    ESBS = (1 - 1 / N) * Lam * B * Lam + four / N
    derived = sp.Rational(1, 2) * (u**2 * ESBS.trace() - 2 * u * (Lam * U * Lam).trace() + Lam.trace())
    Gamma = (1 + 1 / N) * Lam + Lam.trace() / N * sp.eye(d)
    tilde = (sp.Rational(1, 2) * u**2 * Gamma * Lam * U * Lam * U.T - u * Lam**2 * U.T).trace()
    return sp.expand(derived), sp.expand(tilde), (lams, N, u, U)


def rank_r_symbolic():
    """Theorem 5.4.1 in the eigenbasis: per direction the loss is (1/2) lam'_i lam_i^2 v^2 - lam_i^2 v (u = 1,
    lam'_i = (1 + 1/N) lam_i + trD / N). Returns v*, the loss reduction g(lam) = lam^2 / (2 lam') of keeping a
    direction, and dg/dlam (positive: the top-r directions are kept)."""
    lam, trD, N, v = sp.symbols(r"\lambda_i \mathrm{tr}D N v_i", positive=True)
    lam_p = (1 + 1 / N) * lam + trD / N
    per_dir = sp.Rational(1, 2) * lam_p * lam**2 * v**2 - lam**2 * v
    v_star = sp.solve(sp.diff(per_dir, v), v)[0]
    reduction = sp.simplify(-per_dir.subs(v, v_star))
    return {"v_star": sp.simplify(v_star), "reduction": reduction, "d_reduction": sp.simplify(sp.diff(reduction, lam)),
            "symbols": (lam, trD, N, v)}


def eval_risk_symbolic(d: int = 2):
    """Derive the evaluation risk E (y_hat_q - <w, x_q>)^2 (no 1/2, rho = M) of a diagonal U = diag(v) in the
    eigenbasis, fixed w = c, label noise sigma and exactly p M flipped context labels, from Gaussian moments.

    Returns (derived, closed_form, symbols); closed_form is Theorem 5.4.2 extended by the flip factor (1 - 2p).
    """
    lams = sp.symbols(f"lambda_1:{d + 1}", positive=True)
    cs = sp.symbols(f"c_1:{d + 1}", real=True)
    vs = sp.symbols(f"v_1:{d + 1}", real=True)
    xs = sp.symbols(f"x_1:{d + 1}")
    M, sigma, p = sp.symbols("M sigma p", positive=True)
    Lam, U, w, x = sp.diag(*lams), sp.diag(*vs), sp.Matrix(cs), sp.Matrix(xs)
    four = (x * x.T * w * w.T * x * x.T).applyfunc(lambda e: gauss_expect(e, xs, lams))
    # h = (1/M) sum_i s_i (x_i x_i^T w + eps_i x_i); sum_{i != j} s_i s_j = M^2 (1-2p)^2 - M
    Eh = (1 - 2 * p) * Lam * w
    Ehh = ((1 - 2 * p) ** 2 - 1 / M) * Lam * w * w.T * Lam + (four + sigma**2 * Lam) / M
    derived = (U * Lam * U.T * Ehh).trace() - 2 * (w.T * Lam * U.T * Eh)[0] + (w.T * Lam * w)[0]
    a = [lams[i] * vs[i] for i in range(d)]
    wnorm = sum(cs[i] ** 2 * lams[i] for i in range(d))
    closed = (sum(cs[i] ** 2 * lams[i] * a[i] ** 2 for i in range(d)) / M
              + (wnorm + sigma**2) / M * sum(a[i] ** 2 for i in range(d))
              + sum(cs[i] ** 2 * lams[i] * ((1 - 2 * p) * a[i] - 1) ** 2 for i in range(d)))
    return sp.expand(derived), sp.expand(closed), (lams, cs, vs, M, sigma, p)


def eval_risk_display():
    """Theorem 5.4.2 (c = 1, w = Q(s + xi)) as an indexed SymPy expression for display (p = 0)."""
    i, r, d = sp.symbols("i r d", integer=True, positive=True)
    s, lam, v, xi = sp.IndexedBase("s"), sp.IndexedBase(r"\lambda"), sp.IndexedBase("v^*"), sp.IndexedBase(r"\xi")
    M, sigma = sp.symbols("M sigma", positive=True)
    w2 = sp.Sum(s[i] ** 2 * lam[i], (i, 1, r)) + sp.Sum(xi[i] ** 2 * lam[i], (i, r + 1, d))
    return (sp.Sum(s[i] ** 2 * v[i] ** 2 * lam[i] ** 3, (i, 1, r)) / M
            + (w2 + sigma**2) / M * sp.Sum(v[i] ** 2 * lam[i] ** 2, (i, 1, r))
            + sp.Sum(xi[i] ** 2 * lam[i], (i, r + 1, d))
            + sp.Sum(s[i] ** 2 * lam[i] * (lam[i] * v[i] - 1) ** 2, (i, 1, r)))


def eval_risk_general_display():
    """The derived risk of :func:`eval_risk_symbolic` written for general d with indexed symbols (for display):
    (1/M) sum c_i^2 lam_i a_i^2 + (||w||_Lam^2 + sigma^2)/M sum a_i^2 + sum c_i^2 lam_i ((1-2p) a_i - 1)^2."""
    i, d = sp.symbols("i d", integer=True, positive=True)
    c, a, lam = sp.IndexedBase("c"), sp.IndexedBase("a"), sp.IndexedBase(r"\lambda")
    M, sigma, p = sp.symbols("M sigma p", positive=True)
    return (sp.Sum(c[i] ** 2 * lam[i] * a[i] ** 2, (i, 1, d)) / M
            + (sp.Sum(c[i] ** 2 * lam[i], (i, 1, d)) + sigma**2) / M * sp.Sum(a[i] ** 2, (i, 1, d))
            + sp.Sum(c[i] ** 2 * lam[i] * ((1 - 2 * p) * a[i] - 1) ** 2, (i, 1, d)))


def gap_symbolic(r: int = 1, r2: int = 3, d: int = 3):
    """Theorem 5.4.3 for w = Q s with s supported on the first r coordinates (s = (s_1, 0, ...), r = 1): the risk of
    the rank-r2 optimum minus the rank-r optimum (Theorem 5.4.2), the theorem's gap formula and the N -> oo limit
    of the gap. Returns (gap, formula, limit, symbols)."""
    lams = sp.symbols(f"lambda_1:{d + 1}", positive=True)
    s1, M, sigma, N = sp.symbols("s_1 M sigma N", positive=True)
    trD = sum(lams)

    def risk(rank):
        a = [lams[i] * N / ((N + 1) * lams[i] + trD) if i < rank else 0 for i in range(d)]
        c = [s1] + [0] * (d - 1)
        w2 = sum(c[i] ** 2 * lams[i] for i in range(d))
        return (sum(c[i] ** 2 * lams[i] * a[i] ** 2 for i in range(d)) / M
                + (w2 + sigma**2) / M * sum(x**2 for x in a)
                + sum(c[i] ** 2 * lams[i] * (a[i] - 1) ** 2 for i in range(d))), a

    (lo, _), (hi, a_hi) = risk(r), risk(r2)
    gap = sp.simplify(hi - lo)
    formula = (s1**2 * lams[0] + sigma**2) / M * sum(a_hi[i] ** 2 for i in range(r, r2))
    return gap, formula, sp.limit(gap, N, sp.oo), (lams, s1, M, sigma, N)


# ---------------------------------------------------------------------------------------------------------------
# Numeric closed forms (torch, float64)


def v_star(lam: torch.Tensor, N: int, r: int) -> torch.Tensor:
    """Theorem 5.4.1: v_i* = N / ((N+1) lam_i + tr D) for the top r directions (lam sorted descending), 0 after."""
    v = N / ((N + 1) * lam + lam.sum())
    return torch.where(torch.arange(len(lam)) < r, v, torch.zeros_like(v))


def optimal_U(Q: torch.Tensor, lam: torch.Tensor, N: int, r: int) -> torch.Tensor:
    """U* = Q diag(v*) Q^T (c = 1, u* = 1)."""
    return Q @ torch.diag(v_star(lam, N, r)) @ Q.T


def rank_r_pretraining_loss(lam: torch.Tensor, N: int, r: int) -> torch.Tensor:
    """L_r = tr(Lam)/2 - (1/2) sum_{i<=r} N lam_i^2 / ((N+1) lam_i + tr D) (Lemma 5.1 at U*, derived here)."""
    red = N * lam**2 / ((N + 1) * lam + lam.sum())
    return 0.5 * lam.sum() - 0.5 * red[:r].sum()


def eval_risk(c: torch.Tensor, lam: torch.Tensor, N: int, M: int, r: int, sigma: float = 0.0,
              p: float = 0.0) -> torch.Tensor:
    """Theorem 5.4.2 for w = Q c (c = s + xi relative to rank r), extended to a flipped fraction p of context labels:
    (1/M) sum c_i^2 lam_i a_i^2 + (||w||_Lam^2 + sigma^2)/M sum a_i^2 + sum c_i^2 lam_i ((1-2p) a_i - 1)^2,
    a_i = lam_i v_i*."""
    a = lam * v_star(lam, N, r)
    w2 = (c**2 * lam).sum()
    return ((c**2 * lam * a**2).sum() / M + (w2 + sigma**2) / M * (a**2).sum()
            + (c**2 * lam * ((1 - 2 * p) * a - 1) ** 2).sum())


# ---------------------------------------------------------------------------------------------------------------
# Sparse parity constructions (Theorem 5.5.1)


def parity_construction(nu2: int, gamma: float, nu_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The 2(nu2+1) neurons of g_2* (Theorem 5.5.1, example L1488-1496) with the positive pair at scale
    ``nu_scale`` / (4 gamma). Returns V (d, m) with the neurons' diagonals as columns and a (m,). Feature l
    (0-based) of bit-neuron i (1..nu2) has V = (2 digit(bin(l), i) - 1) / (4 gamma)."""
    d = 2**nu2
    cols, a = [], []
    for i in range(1, nu2 + 1):
        cols.append(torch.tensor([(2 * bit(f, i) - 1) / (4 * gamma) for f in range(d)], dtype=torch.float64))
        a.append(-1.0)
    cols.append(torch.full((d,), -nu_scale / (4 * gamma), dtype=torch.float64))
    a.append(1.0)
    cols = cols + [-c for c in cols]
    a = a + a
    return torch.stack(cols, dim=1), torch.tensor(a, dtype=torch.float64)


def small_construction(nu1: int, nu2: int, gamma: float, nu_scale: float | None = None):
    """g_1*: neurons {1..nu1, nu2+1} of g_2* and their mirrors, positive pair at scale nu1 / (4 gamma) (Thm 5.5.1)."""
    V, a = parity_construction(nu2, gamma, nu1 if nu_scale is None else nu_scale)
    keep = list(range(nu1)) + [nu2] + [nu2 + 1 + i for i in range(nu1)] + [2 * nu2 + 1]
    return V[:, keep], a[keep]


def parity_population(V: torch.Tensor, a: torch.Tensor, pairs, gamma: float):
    """N = infinity outputs of the diagonal multi-head model on every (task, query pattern): returns per-task hinge
    loss (T,), the margins y g (P,), and the task index (P,)."""
    d = V.shape[0]
    z, phi, y, wts, task = parity_population_features(d, pairs, gamma)
    g = torch.relu((z * phi) @ V) @ a
    margin = y * g
    hinge = torch.relu(1 - margin) * wts
    per_task = torch.zeros(len(pairs), dtype=torch.float64).index_add_(0, task, hinge)
    return per_task, margin, task


def projector(D: torch.Tensor) -> torch.Tensor:
    """Orthogonal projector onto the column span of D (pseudo-inverse; D has +- duplicate columns, Thm 5.5.2)."""
    return D @ torch.linalg.pinv(D)

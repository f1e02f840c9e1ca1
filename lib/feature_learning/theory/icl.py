"""Closed forms of dissertation ch. 5 (model scale and in-context learning; appendix D), SymPy and torch.

Linear regression (section 5.4): the pretraining loss of Lemma 5.1 derived from Gaussian moments, the rank-r optimum
of Theorem 5.4.1, the evaluation risk of Theorem 5.4.2 (with the label-flip extension derived here), the gap of
Theorem 5.4.3. Sparse parity (section 5.5): the constructions g_1*, g_2* of Theorem 5.5.1 and their N = infinity
hinge losses and margins.
"""

from __future__ import annotations

import dataclasses

import numpy as np
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


def lemma51_tilde(U: sp.Matrix, u, Lam: sp.Matrix, N) -> sp.Expr:
    """Lemma 5.1's tilde-l(U, u) = tr[u^2/2 Gamma Lambda U Lambda U^T - u Lambda^2 U^T] with
    Gamma = (1 + 1/N) Lambda + tr(Lambda)/N I (SymPy matrices)."""
    d = Lam.shape[0]
    Gamma = (1 + 1 / N) * Lam + Lam.trace() / N * sp.eye(d)
    return (sp.Rational(1, 2) * u**2 * Gamma * Lam * U * Lam * U.T - u * Lam**2 * U.T).trace()


def fourth_moment(d: int = 2) -> tuple[sp.Matrix, sp.Matrix]:
    """E[x x^T A x x^T] for x ~ N(0, Lam), Lam diagonal and a generic A, computed from Isserlis' theorem, and the
    identity the proof of Lemma 5.1 uses, Lam (A + A^T) Lam + tr(A Lam) Lam. Returns (computed, identity)."""
    lams = sp.symbols(f"lambda_1:{d + 1}", positive=True)
    xs = sp.symbols(f"x_1:{d + 1}")
    A = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"a_{i + 1}{j + 1}"))
    x = sp.Matrix(xs)
    Lam = sp.diag(*lams)
    computed = (x * x.T * A * x * x.T).applyfunc(lambda e: gauss_expect(e, xs, lams))
    return computed, Lam * (A + A.T) * Lam + (A * Lam).trace() * Lam


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
    return sp.expand(derived), sp.expand(lemma51_tilde(U, u, Lam, N)), (lams, N, u, U)


# ---------------------------------------------------------------------------------------------------------------
# Theorem 5.4.1 from Lemma 5.1's loss, step by step (proof in appendix D.2.1, with the notes' corrections)


def eigenbasis_reduction():
    """Step 1: the loss only sees V = u Q^T U Q in the eigenbasis. For d = 2 and every rotation
    Q = [[c, -s], [s, c]] (c^2 + s^2 = 1), Lambda = Q D Q^T and U = Q V Q^T / u give
    tilde-l(U, u; Lambda) = tilde-l(V, 1; D). Returns the difference of the two sides reduced modulo c^2 + s^2 - 1
    (zero when the reduction holds for every rotation) and the eigenbasis loss tilde-l(V, 1; D)."""
    c, s = sp.symbols("c s", real=True)
    N, u = sp.symbols("N u", positive=True)
    lams = sp.symbols("lambda_1:3", positive=True)
    V = sp.Matrix(2, 2, lambda i, j: sp.Symbol(f"V_{i + 1}{j + 1}"))
    Q, D = sp.Matrix([[c, -s], [s, c]]), sp.diag(*lams)
    rotated = lemma51_tilde(Q * V * Q.T / u, u, Q * D * Q.T, N)
    eigen = lemma51_tilde(V, 1, D, N)
    difference = sp.expand(sp.cancel(rotated - eigen))
    _, remainder = sp.reduced(difference, [c**2 + s**2 - 1], s, c)
    return sp.expand(remainder), sp.expand(eigen)


@dataclasses.dataclass(frozen=True)
class EigenbasisLoss:
    """The eigenbasis loss F(V) of :func:`eigenbasis_loss`, its completed square and their symbols."""

    F: sp.Expr
    square: sp.Expr
    T: sp.Matrix
    V: sp.Matrix
    lams: tuple
    N: sp.Symbol
    v_stationary: list


def eigenbasis_loss(d: int = 3) -> EigenbasisLoss:
    """Step 2: the eigenbasis loss F(V) = tilde-l(V, 1; D) for a generic V (derived, expanded), and its completed
    square 1/2 ||W - T||_F^2 - 1/2 sum_i T_ii^2 with W = D'^(1/2) D^(1/2) V D^(1/2) (entries
    sqrt(lam'_i lam_i lam_j) V_ij), T = diag(lam_i / sqrt(lam'_i)) and lam'_i = (1 + 1/N) lam_i + tr(D)/N (the
    notes' correction of eqs. D.1-D.3). rank W = rank V, so the rank-r problem is Eckart-Young's for the diagonal T.
    Also the stationary point of F over the diagonal of V."""
    N = sp.Symbol("N", positive=True)
    lams = sp.symbols(f"lambda_1:{d + 1}", positive=True)
    V = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"V_{i + 1}{j + 1}"))
    F = sp.expand(lemma51_tilde(V, 1, sp.diag(*lams), N))
    trD = sum(lams)
    lam_p = [(1 + 1 / N) * lam + trD / N for lam in lams]
    W = sp.Matrix(d, d, lambda i, j: sp.sqrt(lam_p[i] * lams[i] * lams[j]) * V[i, j])
    T = sp.diag(*[lams[i] / sp.sqrt(lam_p[i]) for i in range(d)])
    square = (sp.Rational(1, 2) * sum((W[i, j] - T[i, j]) ** 2 for i in range(d) for j in range(d))
              - sp.Rational(1, 2) * sum(T[i, i] ** 2 for i in range(d)))
    diagonal = [V[i, i] for i in range(d)]
    stationary = sp.solve([sp.diff(F, v) for v in diagonal], diagonal, dict=True)[0]
    return EigenbasisLoss(F, sp.expand(square), T, V, lams, N, [sp.simplify(stationary[v]) for v in diagonal])


def eigenbasis_loss_display():
    """F(V) written for general d (indexed, for display): 1/2 sum_ij lam'_i lam_i lam_j V_ij^2 - sum_i lam_i^2 V_ii."""
    i, j, d = sp.symbols("i j d", integer=True, positive=True)
    lam, lam_p, V = sp.IndexedBase(r"\lambda"), sp.IndexedBase(r"\lambda'"), sp.IndexedBase("V")
    return (sp.Rational(1, 2) * sp.Sum(lam_p[i] * lam[i] * lam[j] * V[i, j] ** 2, (i, 1, d), (j, 1, d))
            - sp.Sum(lam[i] ** 2 * V[i, i], (i, 1, d)))


@dataclasses.dataclass(frozen=True)
class RankROptimum:
    """Per eigen-direction (:func:`rank_r_optimum`): lam', T_ii, g, dg/dlam, v* and the symbols (lam, tr D, N)."""

    lam_p: sp.Expr
    T: sp.Expr
    g: sp.Expr
    dg: sp.Expr
    v_star: sp.Expr
    symbols: tuple


def rank_r_optimum() -> RankROptimum:
    """Step 3, per eigen-direction: T_ii = lam / sqrt(lam'), the loss reduction g(lam) = T_ii^2 of keeping the
    direction (twice the reduction; the source's g), its derivative (positive for lam > 0: Eckart-Young keeps the
    r largest lam), and the kept entry v* = T_ii / (sqrt(lam') lam), i.e. W = T on the kept directions."""
    lam, trD, N = sp.symbols(r"\lambda_i \mathrm{tr}D N", positive=True)
    lam_p = (1 + 1 / N) * lam + trD / N
    T = lam / sp.sqrt(lam_p)
    g = sp.simplify(T**2)
    return RankROptimum(lam_p, T, g, sp.factor(sp.diff(g, lam)), sp.simplify(T / (sp.sqrt(lam_p) * lam)),
                        (lam, trD, N))


def rank_r_loss_display():
    """L_r = tr(D)/2 - (1/2) sum_{i <= r} g(lambda_i): C plus the minimum of F (indexed, for display)."""
    i, r = sp.symbols("i r", integer=True, positive=True)
    opt = rank_r_optimum()
    lam, trD, _ = opt.symbols
    return sp.Rational(1, 2) * trD - sp.Rational(1, 2) * sp.Sum(opt.g.subs(lam, sp.IndexedBase(r"\lambda")[i]),
                                                              (i, 1, r))


def eigenbasis_loss_numeric(V: torch.Tensor, lam: torch.Tensor, N: int) -> torch.Tensor:
    """F(V) = 1/2 sum_ij lam'_i lam_i lam_j V_ij^2 - sum_i lam_i^2 V_ii for V (..., d, d) (float, the display's
    formula): Lemma 5.1's loss minus C at U = Q V Q^T."""
    lam_p = (1 + 1 / N) * lam + lam.sum() / N
    weight = (lam_p * lam)[:, None] * lam[None, :]
    return 0.5 * (weight * V**2).sum((-2, -1)) - (lam**2 * torch.diagonal(V, dim1=-2, dim2=-1)).sum(-1)


def eckart_young_U(Q: torch.Tensor, lam: torch.Tensor, N: int, r: int) -> torch.Tensor:
    """The rank-r minimiser built by the generic route: the best rank-r approximation of T = diag(lam / sqrt(lam'))
    by a truncated SVD (Eckart-Young), mapped back through W = D'^(1/2) D^(1/2) V D^(1/2) and U = Q V Q^T."""
    lam_p = (1 + 1 / N) * lam + lam.sum() / N
    T = torch.diag(lam / lam_p.sqrt())
    left, sing, right = torch.linalg.svd(T)
    W = left[:, :r] @ torch.diag(sing[:r]) @ right[:r]
    scale = (lam_p * lam).sqrt()[:, None] * lam.sqrt()[None, :]
    return Q @ (W / scale) @ Q.T


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


def score_energy_symbolic(d: int = 3) -> tuple[sp.Expr, sp.Expr]:
    """The notes' F10 from Gaussian moments: E[(a^T V z)^2] for V = diag(v) in the eigenbasis, a_i ~ N(0, A_i) and
    z_i ~ N(0, lam_i) independent (generic diagonal V, d dimensions). Returns (derived, sum_i A_i v_i^2 lam_i)."""
    a, z = sp.symbols(f"a1:{d + 1}", real=True), sp.symbols(f"z1:{d + 1}", real=True)
    v = sp.symbols(f"v1:{d + 1}", real=True)
    A, lam = sp.symbols(f"A1:{d + 1}", positive=True), sp.symbols(f"lambda1:{d + 1}", positive=True)
    score = sum(ai * vi * zi for ai, vi, zi in zip(a, v, z, strict=True))
    derived = gauss_expect(score**2, (*a, *z), (*A, *lam))
    return derived, sum(Ai * vi**2 * li for Ai, vi, li in zip(A, v, lam, strict=True))


def score_energy_display() -> sp.Sum:
    """sum_{i <= r} A_i v_i*^2 lam_i (indexed, for display; the left-hand side is the glue's label)."""
    i, r = sp.symbols("i r", integer=True, positive=True)
    A, v, lam = (sp.IndexedBase(n) for n in ("A", "v^*", "lambda"))
    return sp.Sum(A[i] * v[i] ** 2 * lam[i], (i, 1, r))


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


def risk_at_optimum(risk: sp.Expr, symbols, r: int) -> sp.Expr:
    """Substitute the rank-r optimum of Theorem 5.4.1 (v_i = N / ((N+1) lam_i + tr D) for i <= r, 0 after) into a
    risk of :func:`eval_risk_symbolic` (p = 0). Returns the expression in lams, cs, M, sigma and N."""
    lams, cs, vs, M, sigma, p = symbols
    N = sp.Symbol("N", positive=True)
    trD = sum(lams)
    values = {v: (N / ((N + 1) * lam + trD) if i < r else 0) for i, (v, lam) in enumerate(zip(vs, lams, strict=True))}
    return risk.subs(values).subs(p, 0)


def gap_symbolic(derived: sp.Expr, symbols, r: int = 1, r2: int = 3):
    """Theorem 5.4.3 from the derived risk (d = 3): w = Q s with s = (s_1, 0, 0) in the top-r span, the risk of the
    rank-r2 optimum minus the rank-r optimum, the theorem's gap (||s||_D^2 + sigma^2)/M sum_{r<i<=r2} a_i^2 and the
    N -> oo limit of the gap. Returns (gap, theorem, limit)."""
    lams, cs, vs, M, sigma, p = symbols
    N = sp.Symbol("N", positive=True)
    task = {cs[0]: sp.Symbol("s_1", positive=True), **{c: 0 for c in cs[1:]}}
    gap = sp.simplify((risk_at_optimum(derived, symbols, r2) - risk_at_optimum(derived, symbols, r)).subs(task))
    a = [N * lam / ((N + 1) * lam + sum(lams)) for lam in lams]
    theorem = (task[cs[0]] ** 2 * lams[0] + sigma**2) / M * sum(a[i] ** 2 for i in range(r, r2))
    return gap, theorem, sp.limit(gap, N, sp.oo)


def large_N_limit(derived: sp.Expr, symbols, r: int = 2):
    """The source's "Implications" formula after Theorem 5.4.2, from the derived risk (d = 3): the N -> oo limit of
    the risk of the rank-r optimum with w = Q (s + xi), and ||xi||_D^2 + ((r+1) ||s||_D^2 + r ||xi||_D^2 + r sigma^2)/M.
    Returns (limit, source_formula)."""
    lams, cs, vs, M, sigma, p = symbols
    N = sp.Symbol("N", positive=True)
    limit = sp.limit(risk_at_optimum(derived, symbols, r), N, sp.oo)
    s2 = sum(cs[i] ** 2 * lams[i] for i in range(r))
    xi2 = sum(cs[i] ** 2 * lams[i] for i in range(r, len(lams)))
    return sp.expand(limit), sp.expand(xi2 + ((r + 1) * s2 + r * xi2 + r * sigma**2) / M)


# ---------------------------------------------------------------------------------------------------------------
# Numeric closed forms (torch, float64)


def v_star(lam: torch.Tensor, N: int, r: int) -> torch.Tensor:
    """Theorem 5.4.1: v_i* = N / ((N+1) lam_i + tr D) for the top r directions (lam sorted descending), 0 after."""
    v = N / ((N + 1) * lam + lam.sum())
    return torch.where(torch.arange(len(lam)) < r, v, torch.zeros_like(v))


def optimal_U(Q: torch.Tensor, lam: torch.Tensor, N: int, r: int) -> torch.Tensor:
    """U* = Q diag(v*) Q^T (c = 1, u* = 1)."""
    return Q @ torch.diag(v_star(lam, N, r)) @ Q.T


def score_energy(lam: torch.Tensor, N: int, r: int, A: torch.Tensor) -> torch.Tensor:
    """Mean square key-query score E[(a^T U*_r x_q)^2] = sum_{i<=r} A_i v_i*^2 lam_i of a context component
    a ~ N(0, Q diag(A) Q^T) against a query x_q ~ N(0, Lambda) (the notes' F10, their analogue of the source's
    Figure 5.3: a component in span(q_{r+1..d}) gets score exactly 0)."""
    return (A * v_star(lam, N, r) ** 2 * lam).sum()


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


def eval_risk_large_N(c: torch.Tensor, lam: torch.Tensor, M: int, r: int, sigma: float = 0.0) -> torch.Tensor:
    """The source's large-N approximation after Theorem 5.4.2 (N lam_r >> tr D):
    ||xi||_D^2 + ((r+1) ||s||_D^2 + r ||xi||_D^2 + r sigma^2) / M, with s = c on the first r directions."""
    energy = c**2 * lam
    s2, xi2 = energy[:r].sum(), energy[r:].sum()
    return xi2 + ((r + 1) * s2 + r * xi2 + r * sigma**2) / M


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


def parity_construction_symbolic(nu2: int, nu_scale=None, gamma=None) -> tuple[sp.Matrix, list[int]]:
    """Theorem 5.5.1's g_2* in exact arithmetic (gamma a SymPy symbol by default): the same heads as
    :func:`parity_construction`, with the positive head at scale ``nu_scale`` (default nu2) / (4 gamma)."""
    gamma = sp.Symbol("gamma", positive=True) if gamma is None else gamma
    nu_scale = nu2 if nu_scale is None else nu_scale
    d = 2**nu2
    cols = [[(2 * bit(f, i) - 1) / (4 * gamma) for f in range(d)] for i in range(1, nu2 + 1)]
    cols.append([-nu_scale / (4 * gamma)] * d)
    a = [-1] * nu2 + [1]
    cols, a = cols + [[-x for x in c] for c in cols], a + a
    return sp.Matrix(cols).T, a


@dataclasses.dataclass
class PatternQP:
    """The minimum-norm model of the diagonal family with fixed signs a among those with a fixed activation pattern
    (which head is on at which N = infinity input): a convex QP, solved exactly. ``V`` (d, m) and ``norm`` are
    exact rationals; ``slack`` is the smallest of (constraint - bound) over every constraint (>= 0: feasible, so
    every margin is >= 1 exactly and the ReLU pattern is the one assumed); ``multipliers`` are the KKT multipliers of
    the active constraints used: all >= 0, with a zero ``residual`` and slack >= 0, make V the exact optimum."""

    V: sp.Matrix
    norm: sp.Rational
    slack: sp.Rational
    multipliers: list  # of the constraints in the KKT support
    residual: list  # 2 V - A_support^T multipliers, entry by entry (all zero: stationarity holds exactly)
    active: int  # number of active constraints


def pattern_qp(d: int, pairs, gamma, a, active: torch.Tensor, start: torch.Tensor | None = None) -> PatternQP:
    """Solve min ||V||_F^2 over diagonal heads V (d, m) with signs a, subject to: head h is on (pre-activation
    >= 0) exactly where ``active`` (P, m) says, off (<= 0) elsewhere, and every margin y g >= 1 at N = infinity
    (inputs 2 gamma (phi_i e_i + phi_j e_j) of every task (i, j) in ``pairs`` and pattern (phi_i, phi_j); proof of
    Thm 5.5.1). SciPy finds the active constraints; the KKT system on them is then solved in rational arithmetic
    and every constraint is checked exactly."""
    from scipy.optimize import linprog, minimize

    gamma = sp.nsimplify(gamma)
    m = len(a)
    rows, bounds = [], []
    for i, j in pairs:
        for pi, pj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            y = pi * pj
            p = len(bounds) // (m + 1)
            margin = [sp.Integer(0)] * (d * m)
            for h in range(m):
                pre = [sp.Integer(0)] * (d * m)
                pre[h * d + i], pre[h * d + j] = 2 * gamma * pi, 2 * gamma * pj
                on = bool(active[p, h])
                rows.append(pre if on else [-x for x in pre])
                bounds.append(sp.Integer(0))
                if on:
                    margin = [u + y * a[h] * x for u, x in zip(margin, pre, strict=True)]
            rows.append(margin)
            bounds.append(sp.Integer(1))
    A, b = sp.Matrix(rows), sp.Matrix(bounds)
    An, bn = np.array(A.tolist(), dtype=float), np.array(b.tolist(), dtype=float)[:, 0]
    x0 = np.zeros(d * m) if start is None else start.T.reshape(-1).numpy()
    res = minimize(lambda x: x @ x, x0, jac=lambda x: 2 * x, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda x: An @ x - bn, "jac": lambda x: An}],
                   options={"maxiter": 500, "ftol": 1e-15})
    tight = [k for k in range(len(bn)) if An[k] @ res.x - bn[k] < 1e-7]
    basis = sp.Matrix([list(A.row(k)) for k in tight]).T.rref()[1]  # independent active rows
    AS, bS = sp.Matrix([list(A.row(k)) for k in (tight[k] for k in basis)]), sp.Matrix([b[tight[k]] for k in basis])
    x = AS.T * (AS * AS.T).LUsolve(bS)  # the least-norm solution of the active constraints, exactly
    # KKT of min ||x||^2 s.t. A x >= b: 2 x = A^T lambda, lambda >= 0 and zero off the active rows. A vertex of
    # {lambda >= 0 : A_T^T lambda = 2 x} (HiGHS) picks independent rows; its values are then solved exactly
    xn = np.array([float(v) for v in x])
    lp = linprog(np.zeros(len(tight)), A_eq=An[tight].T, b_eq=2 * xn, bounds=(0, None), method="highs")
    support = [tight[k] for k in np.flatnonzero(lp.x > 1e-9)] if lp.status == 0 else []
    AL = sp.Matrix([list(A.row(k)) for k in support]) if support else sp.zeros(0, d * m)
    lam = (AL * AL.T).LUsolve(AL * 2 * x) if support else sp.zeros(0, 1)
    V = sp.Matrix(m, d, list(x)).T
    return PatternQP(V, sum(v**2 for v in x), min(A * x - b), list(lam), list(2 * x - AL.T * lam), len(tight))

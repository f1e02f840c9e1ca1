"""Closed forms of dissertation ch. 8 (looped transformers run multi-step gradient descent), SymPy and torch.

* :func:`one_loop_symbolic`: Lemma 8.13 / Theorem 8.14 on a symbolic prompt: one loop of the constructed looped
  transformer maps q = -alpha theta to -alpha theta' with theta' one GD step, and leaves X, y unchanged.
* :func:`exact_prediction_error`: the exact error |alpha| theta*^T (I - eta X^T X)^T theta* of the prediction
  (derived here; Theorem 8.16 bounds it by |alpha| exp(-T / (2 kappa))).
* :func:`gatmiry_min_n`: the sample size (8 T d^2 4^T)^2 that Theorem 8.17's condition asks for.
"""

from __future__ import annotations

import math

import sympy as sp
import torch

from feature_learning.models.linear_attention import gd_construction

kappa, T, t = sp.symbols("kappa T t", positive=True)


def one_loop_symbolic(n: int = 3, d: int = 2):
    """Symbolic Z^(0) with entries x_ij, y_i, theta_j, alpha, eta; returns (Attn, Z^(1), theta^(1) by GD, Z^(0)).

    Q, P are Lemma 8.13's construction and q^(0) = -alpha theta^(0) (Theorem 8.14).
    """
    X = sp.Matrix(n, d, lambda i, j: sp.Symbol(f"x_{i + 1}{j + 1}"))
    y = sp.Matrix(n, 1, lambda i, j: sp.Symbol(f"y_{i + 1}"))
    theta = sp.Matrix(d, 1, lambda i, j: sp.Symbol(f"theta_{i + 1}"))
    alpha, eta = sp.symbols("alpha eta", nonzero=True)
    q = -alpha * theta
    Z = sp.Matrix(sp.BlockMatrix([[X, y], [q.T, sp.Matrix([[alpha]])]]))
    Qt, Pt = gd_construction(d)
    Qs, Ps = sp.Matrix(Qt.int().tolist()), sp.Matrix(Pt.int().tolist())
    M = sp.zeros(n + 1, n + 1)
    for j in range(n):
        M[n, j] = 1
    attn = sp.matrix_multiply_elementwise(M, Z * Qs * Z.T) * Z * Ps
    Z1 = (Z - eta * attn).applyfunc(sp.expand)
    theta1 = (theta - eta * (X.T * X * theta - X.T * y)).applyfunc(sp.expand)
    return attn, Z1, theta1, Z, (X, y, theta, alpha, eta)


def exact_prediction_error(X: torch.Tensor, theta_star: torch.Tensor, alpha: torch.Tensor, T: int,
                           eta: torch.Tensor | None = None) -> torch.Tensor:
    """|<TF, theta*> - alpha| = |alpha| sum_i c_i^2 (1 - eta lambda_i)^T, c = eigen-coordinates of theta* in X^T X.

    With q^(0) = 0 and step eta (default the per-prompt 1/L, L = lambda_max(X^T X)). Computed from the
    eigen-decomposition, so it does not hit the float floor of the iteration. Returns (B,).
    """
    evals, evecs = torch.linalg.eigh(X.transpose(1, 2) @ X)
    eta = 1 / evals[:, -1] if eta is None else torch.as_tensor(eta, dtype=X.dtype).expand(X.shape[0])
    c = torch.einsum("bij,bi->bj", evecs, theta_star)
    return alpha.abs() * (c**2 * (1 - eta[:, None] * evals) ** T).sum(-1)


def log_squared_distance_exact(X: torch.Tensor, theta_star: torch.Tensor, ts, eta=None) -> torch.Tensor:
    """ln(||theta^(t) - theta*||^2 / ||theta^(0) - theta*||^2) with theta^(0) = 0, exactly via the eigenbasis.

    Returns (len(ts), B); the log-sum-exp avoids the float64 floor of the iterated error.
    """
    evals, evecs = torch.linalg.eigh(X.transpose(1, 2) @ X)
    eta = 1 / evals[:, -1] if eta is None else torch.as_tensor(eta, dtype=X.dtype).expand(X.shape[0])
    c2 = torch.einsum("bij,bi->bj", evecs, theta_star) ** 2
    factor = (1 - eta[:, None] * evals).abs().clamp_min(1e-300).log()  # (B, d)
    out = [torch.logsumexp(c2.log() + 2 * t_ * factor, dim=-1) - c2.sum(-1).log() for t_ in ts]
    return torch.stack(out)


def condition_numbers(X: torch.Tensor) -> torch.Tensor:
    """kappa = lambda_max / lambda_min of X^T X (Definition 8.12), per prompt."""
    evals = torch.linalg.eigvalsh(X.transpose(1, 2) @ X)
    return evals[:, -1] / evals[:, 0]


def thesis_bound_sq():
    """Theorem 8.25 with R = 1: ||theta^(T) - theta*||^2 <= exp(-T / kappa)."""
    return sp.exp(-T / kappa)


def tight_bound_sq():
    """For a quadratic, every eigen-factor of I - X^T X / L lies in [0, 1 - 1/kappa]: ||.||^2 <= (1 - 1/kappa)^(2T)."""
    return (1 - 1 / kappa) ** (2 * T)


def gatmiry_min_n(T_val, d_val) -> sp.Expr:
    """Smallest n with 8 T d^2 / sqrt(n) <= 2^(-2T) (Theorem 8.17's condition), solved by SymPy."""
    n = sp.symbols("n", positive=True)
    Ts, ds = sp.symbols("T d", positive=True)
    sol = sp.solve(sp.Eq(8 * Ts * ds**2 / sp.sqrt(n), 2 ** (-2 * Ts)), n)[0]
    return sp.simplify(sol.subs({Ts: T_val, ds: d_val}))


def gd_error_step(n: int = 3, d: int = 2):
    """One GD step (eq. 8.2) in error coordinates, symbolically: with y = X theta* (Definition 8.4),
    theta^(1) - theta* = (I - eta X^T X)(theta^(0) - theta*). Returns (left side, right side) as d x 1 matrices."""
    X = sp.Matrix(n, d, lambda i, j: sp.Symbol(f"x_{i + 1}{j + 1}"))
    theta = sp.Matrix(d, 1, lambda i, j: sp.Symbol(f"theta_{i + 1}"))
    star = sp.Matrix(d, 1, lambda i, j: sp.Symbol(f"theta^*_{i + 1}"))
    eta = sp.Symbol("eta", positive=True)
    y = X * star
    step = theta - eta * (X.T * X * theta - X.T * y)
    return (step - star).applyfunc(sp.expand), ((sp.eye(d) - eta * X.T * X) * (theta - star)).applyfunc(sp.expand)


def prediction_error_in_eigenbasis(loops: int):
    """The looped transformer's error <TF, theta*> - alpha after ``loops`` loops, two ways, in the eigenbasis of
    X^T X = diag(lambda_1, lambda_2) with lambda_1 the largest, theta* = (c_1, c_2), c_1^2 + c_2^2 = 1, q^(0) = 0 and
    eta = 1/lambda_1: iterating GD symbolically (TF = alpha theta^(T), Theorem 8.14), and the closed form
    -alpha sum_i c_i^2 (1 - lambda_i / lambda_1)^T derived in the chapter. Returns (iterated, closed form)."""
    lam1, lam2, alpha = sp.symbols("lambda_1 lambda_2 alpha", positive=True)
    c1, c2 = sp.symbols("c_1 c_2", real=True)
    A, star = sp.diag(lam1, lam2), sp.Matrix([c1, c2])
    theta = sp.zeros(2, 1)
    for _ in range(loops):
        theta = theta - (A * theta - A * star) / lam1  # X^T y = X^T X theta*
    unit = {c2: sp.sqrt(1 - c1**2)}  # ||theta*|| = 1; both sides depend on c_2 through c_2^2 only
    iterated = (alpha * theta.dot(star) - alpha).subs(unit)
    closed = -alpha * (c1**2 * (1 - lam1 / lam1) ** loops + c2**2 * (1 - lam2 / lam1) ** loops)
    return sp.expand(iterated), sp.expand(closed.subs(unit))


def log_rate_ratio():
    """(1/T) ln of the tight squared-distance rate (1 - 1/kappa)^(2T) over the source's exp(-T/kappa), as a function
    of x = 1/kappa in (0, 1]: 2 ln(1 - x) + x. Returns (x, expression)."""
    x = sp.symbols("x", positive=True)
    ratio = sp.expand_log(sp.log(tight_bound_sq() / thesis_bound_sq()).subs(kappa, 1 / x), force=True) / T
    return x, sp.simplify(ratio)


# -- Marchenko-Pastur limits (the notes' F23) ------------------------------------------------------------------------
def mp_kappa(n: int, d: int) -> float:
    """The condition number of X^T X at the Marchenko-Pastur edges for Gaussian X (n x d, d/n = y < 1):
    ((1 + sqrt(y)) / (1 - sqrt(y)))^2, about 1 + 4 sqrt(d/n) for n >> d: the d -> infinity limit at fixed n/d."""
    root = math.sqrt(d / n)
    return ((1 + root) / (1 - root)) ** 2


def mp_median_error(ratio: float, loops: int) -> float:
    """The d -> infinity limit, at n = ratio * d, of the looped transformer's median prediction error with eta = 1/L,
    q^(0) = 0 and alpha ~ N(0, 1): |alpha| sum_i c_i^2 (1 - lambda_i/lambda_max)^T (the exact error) tends to
    |alpha| times the integral of (1 - lambda/lambda_+)^T against the Marchenko-Pastur law of X^T X / n, whose median
    over alpha is the median of |alpha|, Phi^{-1}(3/4)."""
    from scipy import integrate, stats

    y = 1 / ratio
    a, b = (1 - math.sqrt(y)) ** 2, (1 + math.sqrt(y)) ** 2

    def density(lam: float) -> float:
        return math.sqrt(max((b - lam) * (lam - a), 0.0)) / (2 * math.pi * y * lam)

    integral = integrate.quad(lambda lam: density(lam) * (1 - lam / b) ** loops, a, b, limit=200)[0]
    return float(stats.norm.ppf(0.75)) * integral


def mp_needed_ratio(loops: int, target: float) -> float:
    """The d -> infinity limit of n/d at which the median prediction error after ``loops`` loops reaches ``target``
    (:func:`mp_median_error` solved for the ratio): a finite limit is n = O(d)."""
    from scipy import optimize

    return float(optimize.brentq(lambda r: math.log(mp_median_error(r, loops) / target), 1.01, 1e4))

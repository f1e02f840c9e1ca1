"""Closed forms of dissertation ch. 7 and appendix F (Shi et al., ICLR 2023: the trade-off between universality and
label efficiency of representations from contrastive learning), SymPy and torch.

* :func:`pca_identity_discrete`: Theorem 7.1 (= F.1) on a discrete hidden-representation model: with the linear
  loss l(t) = -t the contrastive loss equals minus the PCA objective of the z_U-smoothed representation, for an
  arbitrary symbolic table phi(z_R, z_U).
* :func:`xor_table_loss`, :func:`best_unit_table_loss`: the XOR example of App. F.1.1 (its logistic contrastive
  loss and the best loss over unit-norm tables, found numerically).
* :func:`mixture_weights`, :func:`specific_weights`: the squared feature weights of Propositions 7.3 / F.8 and 7.4.
* :func:`allocation_loss`, :func:`solve_allocation`: the reduced problem of Lemma F.3 / Proposition 7.3,
  min_alpha E[l(alpha Z + beta(alpha) Z_1)] with beta(alpha) = min(1, (r - alpha s) / (T (r - s))).
* :func:`min_norm_predictor`: Lemma F.5's predictor u = A^{-1} u* and B^2 = v1 / alpha + v2 / beta.
* :func:`bound_terms`: Proposition F.8's main terms, universal against specific, and their ratio.
* :func:`f24_identity`: (1/alpha + 1/beta)(alpha + beta) = 2 + alpha/beta + beta/alpha (App. F.2.4).
* :func:`finetune_private_weight`: Proposition F.9's new private weight, solved from the Frobenius budget (F.112).
* :func:`cka_diagonal`, :func:`cka_mixtures`: population linear CKA of two rotated diagonal representations on
  isotropic data (derived for the book: the cosine of the squared-weight vectors).

Nothing here judges itself: the notebook's claims and the tests compare.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import sympy as sp
import torch

alpha, beta, gamma = sp.symbols("alpha beta gamma", positive=True)
s, r, T, m = sp.symbols("s r T m", positive=True)
v1, v2 = sp.symbols("v_1 v_2", positive=True)


# ---------------------------------------------------------------------------------------------------------------
# Theorem 7.1 on a discrete model


@dataclass
class PCAIdentity:
    contrastive: sp.Expr      # E[l(phi(x)^T (phi(x+) - phi(x-)))] with l(t) = -t
    pca: sp.Expr              # -E ||phi_{z_R} - phi_0||^2
    table: dict               # (z_R, z_U) -> symbolic k-vector phi(g(z))
    probabilities: tuple      # (P[z_R = 1], P[z_U = 1])


P_R, P_U = sp.Rational(1, 3), sp.Rational(2, 5)  # the notes' check (C7-2): z_R ~ Ber(1/3), z_U ~ Ber(2/5)


def pca_identity_discrete(p_R=P_R, p_U=P_U, k: int = 2) -> PCAIdentity:
    """Both sides of (7.5) for z_R ~ Ber(p_R), z_U ~ Ber(p_U) independent and phi(g(z)) an arbitrary symbolic table
    h(z_R, z_U) in R^k. The positive pair shares z_R and redraws z_U (7.3); the negative is an independent copy.
    Expectations are exact finite sums."""
    h = {(a, b): sp.Matrix([sp.Symbol(f"h_{a}{b}_{i + 1}") for i in range(k)]) for a in (0, 1) for b in (0, 1)}

    def pr(v, p):
        return p if v == 1 else 1 - p

    P = {(a, b): pr(a, p_R) * pr(b, p_U) for a in (0, 1) for b in (0, 1)}
    lhs = 0
    for (a, b), (b_plus,), (a_n, b_n) in itertools.product(P, [(0,), (1,)], P):
        weight = P[(a, b)] * pr(b_plus, p_U) * P[(a_n, b_n)]
        t = (h[(a, b)].T * (h[(a, b_plus)] - h[(a_n, b_n)]))[0]
        lhs += weight * (-t)
    phi0 = sum((P[z] * h[z] for z in P), sp.zeros(k, 1))
    rhs = 0
    for a in (0, 1):
        smoothed = pr(0, p_U) * h[(a, 0)] + pr(1, p_U) * h[(a, 1)]
        diff = smoothed - phi0
        rhs += -pr(a, p_R) * (diff.T * diff)[0]
    return PCAIdentity(sp.expand(lhs), sp.expand(rhs), h, (p_R, p_U))


# ---------------------------------------------------------------------------------------------------------------
# The XOR example of App. F.1.1

XOR_TABLE = {(-1, -1): (-1.0, 0.0), (-1, 1): (1.0, 0.0), (1, -1): (0.0, -1.0), (1, 1): (0.0, 1.0)}


def logistic_loss(t):
    """l(t) = ln(1 + e^{-t}) (SymPy for symbolic input, torch otherwise)."""
    if isinstance(t, (sp.Expr, int)):
        return sp.log(1 + sp.exp(-t))
    return torch.nn.functional.softplus(-t)


def xor_table_loss() -> sp.Expr:
    """Exact logistic contrastive loss E[l(h(z)^T (h(z) - h(z-)))] of the XOR table, z_R uniform on {-1, 1}^2 with
    no spurious coordinates (so x+ = x): (l(0) + 2 l(1) + l(2)) / 4."""
    total = 0
    for z, zn in itertools.product(XOR_TABLE, XOR_TABLE):
        h, hn = sp.Matrix(XOR_TABLE[z]), sp.Matrix(XOR_TABLE[zn])
        total += logistic_loss(sp.nsimplify((h.T * (h - hn))[0]))
    return sp.simplify(total / 16)


def unit_table_loss(angles: torch.Tensor) -> torch.Tensor:
    """Logistic contrastive loss of tables of 4 unit vectors in R^2 given by their angles (..., 4), z_R uniform."""
    h = torch.stack([angles.cos(), angles.sin()], -1)                       # (..., 4, 2)
    gram = h @ h.transpose(-1, -2)                                           # (..., 4, 4)
    t = gram.diagonal(dim1=-2, dim2=-1).unsqueeze(-1) - gram                 # h_i^T (h_i - h_j)
    return logistic_loss(t).mean((-1, -2))


def best_unit_table_loss(restarts: int, generator: torch.Generator, steps: int = 400, lr: float = 0.5) -> float:
    """The smallest loss over unit-norm tables h: {-1, 1}^2 -> S^1 found by gradient descent on the angles from
    ``restarts`` random starts (float64): a numeric check that the XOR table is optimal."""
    theta = (2 * math.pi * torch.rand(restarts, 4, generator=generator, dtype=torch.float64)).requires_grad_()
    opt = torch.optim.SGD([theta], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        unit_table_loss(theta).sum().backward()
        opt.step()
    with torch.no_grad():
        return float(unit_table_loss(theta).min())


# ---------------------------------------------------------------------------------------------------------------
# The linear multi-task model: the weights of Propositions 7.3, F.8 and 7.4


def mixture_weights(s_: int, r_: int, T_: int, alpha_: float = 1.0) -> tuple[float, float]:
    """(alpha, beta) of Proposition 7.3: beta = min(1, (r - alpha s) / (T (r - s))); alpha = 1 by Prop. F.8."""
    return alpha_, min(1.0, (r_ - alpha_ * s_) / (T_ * (r_ - s_)))


def specific_weights() -> tuple[float, float]:
    """(alpha, beta) of Proposition 7.4: weight 1 on S and on the target task's P_t (0 on the other tasks)."""
    return 1.0, 1.0


def budget_beta() -> sp.Expr:
    """beta saturating the Frobenius budget alpha s + T beta (r - s) <= r (Prop. 7.3)."""
    return sp.solve(sp.Eq(alpha * s + T * beta * (r - s), r), beta)[0]


ALLOCATION_CHUNK_ELEMENTS = 2**23  # (alpha, sample) pairs per temporary: 64 MB in float64


def allocation_loss(alphas: torch.Tensor, Z: torch.Tensor, Z1: torch.Tensor, s_: int, r_: int,
                    T_: int) -> torch.Tensor:
    """Monte-Carlo E[l(alpha Z + beta(alpha) Z_1)] of the reduced problem (F.101-F.102), Z ~ chi2_s and
    Z_1 ~ chi2_{r-s} given as samples (common random numbers across alpha). Returns one value per alpha.

    The (alphas x samples) grid is evaluated a block of alphas at a time (``ALLOCATION_CHUNK_ELEMENTS`` pairs), so
    memory stays bounded at any grid and sample size; each alpha's mean is the same reduction over the same row."""
    betas = torch.clamp((r_ - alphas * s_) / (T_ * (r_ - s_)), max=1.0)
    rows = max(1, ALLOCATION_CHUNK_ELEMENTS // max(1, Z.shape[-1]))
    return torch.cat([logistic_loss(alphas[i:i + rows, None] * Z[None] + betas[i:i + rows, None] * Z1[None]).mean(-1)
                      for i in range(0, len(alphas), rows)])


@dataclass
class Allocation:
    alpha: torch.Tensor    # (B,) minimiser over the grid, one per replica
    beta: torch.Tensor     # (B,) beta(alpha)
    grid: torch.Tensor     # (G,)
    loss: torch.Tensor     # (B, G)


def solve_allocation(s_: int, r_: int, T_: int, n: int, replicas: int, generator: torch.Generator,
                     grid_points: int = 1001, device: torch.device | str | None = None) -> Allocation:
    """Minimise the reduced problem over alpha on a uniform grid of [0, 1] for ``replicas`` independent Monte-Carlo
    samples of size n (float64); beta follows from the budget. The samples are drawn with ``generator`` (on the
    CPU: the same numbers on every device); the losses are evaluated on ``device`` (default: the CPU) and returned
    on the CPU."""
    Z = torch.randn(replicas, n, s_, generator=generator, dtype=torch.float64).pow(2).sum(-1)
    Z1 = torch.randn(replicas, n, r_ - s_, generator=generator, dtype=torch.float64).pow(2).sum(-1)
    grid = torch.linspace(0, 1, grid_points, dtype=torch.float64)
    if device is not None:
        Z, Z1, grid_on = Z.to(device), Z1.to(device), grid.to(device)
    else:
        grid_on = grid
    loss = torch.stack([allocation_loss(grid_on, Z[b], Z1[b], s_, r_, T_) for b in range(replicas)]).cpu()
    a = grid[loss.argmin(-1)]
    b = torch.clamp((r_ - a * s_) / (T_ * (r_ - s_)), max=1.0)
    return Allocation(a, b, grid, loss)


# ---------------------------------------------------------------------------------------------------------------
# Lemma F.5, Proposition F.8, App. F.2.4, Proposition F.9


@dataclass
class MinNormPredictor:
    u: sp.Matrix          # the solution of A u = u*
    norm_sq: sp.Expr      # ||u||^2, simplified
    u_star: sp.Matrix


def min_norm_predictor(n_shared: int = 2, n_private: int = 2) -> MinNormPredictor:
    """Solve diag(sqrt(alpha) on S, sqrt(beta) on P_t) u = u* for a symbolic u* (Lemma F.5, F.64-F.68); ||u||^2
    is then sum_S u*_j^2 / alpha + sum_P u*_j^2 / beta = v1 / alpha + v2 / beta."""
    u_star = sp.Matrix([sp.Symbol(f"u_{j + 1}", real=True) for j in range(n_shared + n_private)])
    A = sp.diag(*([sp.sqrt(alpha)] * n_shared + [sp.sqrt(beta)] * n_private))
    u = A.LUsolve(u_star)
    return MinNormPredictor(u, sp.simplify((u.T * u)[0]), u_star)


@dataclass
class BoundTerms:
    universal_sq: sp.Expr   # (1/m)(v1/alpha + v2/beta)(s alpha + (r - s) beta) at Prop. F.8's alpha, beta
    specific_sq: sp.Expr    # (r/m) ||u*||^2 (Prop. 7.4)
    ratio_sq: sp.Expr       # universal_sq / specific_sq, simplified
    ratio: sp.Expr          # its square root


def bound_terms() -> BoundTerms:
    """Proposition F.8 against Proposition 7.4: r = 2s, v1 = v2 = v/2, alpha = 1, beta = 1/T (the O(1) terms and
    the common factors 4L and the confidence term dropped)."""
    v = sp.Symbol("v", positive=True)
    a, b = sp.Integer(1), 1 / T
    universal = (1 / m) * ((v / 2) / a + (v / 2) / b) * (s * a + (2 * s - s) * b)
    specific = (2 * s / m) * v
    ratio_sq = sp.factor(sp.simplify(universal / specific))
    return BoundTerms(sp.simplify(universal), specific, ratio_sq, sp.sqrt(ratio_sq))


def bound_ratio(T_) -> float:
    """(T + 1) / (2 sqrt T): the universal main term over the specific one (Prop. F.8 / 7.4)."""
    return (T_ + 1) / (2 * math.sqrt(T_))


def f24_identity() -> tuple[sp.Expr, sp.Expr]:
    """The two sides of App. F.2.4's step (1/alpha + 1/beta)(alpha + beta) = 2 + alpha/beta + beta/alpha."""
    return (1 / alpha + 1 / beta) * (alpha + beta), 2 + alpha / beta + beta / alpha


@dataclass
class FinetuneWeight:
    sqrt_beta: sp.Expr        # the root of s (sqrt(beta) - 1/sqrt(T))^2 = gamma^2 above 1/sqrt(T)
    beta: sp.Expr             # its square (before the cap at 1)
    saturation_gamma: sp.Expr  # the gamma at which sqrt(beta) reaches 1: sqrt(s) (1 - 1/sqrt(T))


def finetune_private_weight() -> FinetuneWeight:
    """Proposition F.9: with alpha = 1 and the other tasks' weights unchanged, the Frobenius budget (F.112) is spent on
    the target's private weight, s (sqrt(beta') - sqrt(1/T))^2 = gamma^2; SymPy solves for sqrt(beta')."""
    sb = sp.Symbol("b", positive=True)
    roots = sp.solve(sp.Eq(s * (sb - 1 / sp.sqrt(T)) ** 2, gamma**2), sb)
    root = [x for x in roots if sp.simplify(x - 1 / sp.sqrt(T)).could_extract_minus_sign() is False][0]
    sat = sp.solve(sp.Eq(root, 1), gamma)[0]
    return FinetuneWeight(sp.simplify(root), sp.expand(root**2), sp.simplify(sat))


def finetune_beta(s_: int, T_: int, gamma_: float) -> float:
    """beta' = min(1, 1/sqrt(T) + gamma/sqrt(s))^2 (Proposition F.9)."""
    return min(1.0, 1 / math.sqrt(T_) + gamma_ / math.sqrt(s_)) ** 2


# ---------------------------------------------------------------------------------------------------------------
# CKA of diagonal representations


def cka_diagonal(a_sq, b_sq, rotation_a=None, rotation_b=None) -> sp.Expr:
    """Population linear CKA (Kornblith et al. 2019) of phi_A(z) = Q_A diag(a) z and phi_B(z) = Q_B diag(b) z for
    isotropic z: ||Cov(A, B)||_F^2 / (||Cov(A)||_F ||Cov(B)||_F), computed from the matrices (SymPy). a_sq, b_sq
    are the squared weights; the rotations default to the identity."""
    a = sp.diag(*[sp.sqrt(x) for x in a_sq])
    b = sp.diag(*[sp.sqrt(x) for x in b_sq])
    QA = sp.eye(len(a_sq)) if rotation_a is None else rotation_a
    QB = sp.eye(len(b_sq)) if rotation_b is None else rotation_b
    cross = QA * a * b * QB.T
    ca, cb = QA * a * a * QA.T, QB * b * b * QB.T

    def fro_sq(X):
        return sum(x**2 for x in X)

    return sp.simplify(fro_sq(cross) / sp.sqrt(fro_sq(ca) * fro_sq(cb)))


def cka_mixtures(T1, T2, s_=s, r_=r) -> sp.Expr:
    """CKA on the target task between representations pre-trained on the first T1 and the first T2 tasks (both
    containing the target): (s + (r-s)/(T1 T2)) / sqrt((s + (r-s)/T1^2)(s + (r-s)/T2^2))."""
    return (s_ + (r_ - s_) / (T1 * T2)) / sp.sqrt((s_ + (r_ - s_) / T1**2) * (s_ + (r_ - s_) / T2**2))


def cka_cosine(a_sq, b_sq) -> float:
    """The closed form: cosine of the squared-weight vectors, sum a_j^2 b_j^2 / (||a^2|| ||b^2||)."""
    num = sum(x * y for x, y in zip(a_sq, b_sq, strict=True))
    return num / math.sqrt(sum(x * x for x in a_sq) * sum(y * y for y in b_sq))


# ---------------------------------------------------------------------------------------------------------------
# The source's tables, carried as data (test accuracy, %)

PRETRAIN_SETS = ("CINIC-10", "+SVHN", "+GTSRB", "+ImageNet32")
TABLE_7_1 = {  # MoCo v2 ResNet18, CIFAR-10 with all labels (Table 7.1 = the 100% column of Table F.5)
    "LP": (88.41, 85.18, 82.07, 75.64),
    "FT": (93.58, 93.35, 93.42, 92.92),
    "Ours": (94.51, 94.26, 94.32, 93.66),
}
TABLE_7_2_COLUMNS = ("CLIP ImageNet", "CLIP SVHN", "CLIP GTSRB", "MoCo v3 CIFAR-10", "MoCo v3 SVHN", "MoCo v3 GTSRB",
                     "SimCSE IMDB", "SimCSE AGNews")
TABLE_7_2 = {  # foundation models, all labels; FT and Ours with the same augmentations
    "LP": (77.84, 63.44, 86.56, 95.82, 61.92, 75.37, 86.49, 87.76),
    "FT": (83.65, 78.22, 90.74, 96.17, 65.36, 76.45, 92.31, 93.57),
    "Ours": (84.94, 78.72, 92.01, 96.71, 66.29, 81.28, 92.85, 93.94),
}
TABLE_F_9 = {  # CIFAR-10 linear probing after contrastive regularisation on the target (Table F.9)
    "LP": (88.41, 85.18, 82.07, 75.64),
    "contrastive regularisation, then LP": (88.38, 86.91, 85.95, 82.43),
}
FIG_7_1 = {"average": (18.3, 20.1), "target": (88.5, 76.4)}  # the text of Sec. 7.1: first and last point
OURS_OVER_FT_TEXT = (0.4, 4.8)  # "by about 0.4% - 4.8%" (Sec. 7.3.3) for Table 7.2

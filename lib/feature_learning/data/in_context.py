"""In-context learning prompts: linear regression, sparse parity, and the Gaussian design of looped transformers.

Dissertation ch. 5 (section 5.3-5.5, appendix D) and ch. 8 (Definitions 8.2-8.5). Every generator takes an explicit
``torch.Generator`` and returns tensors with a leading batch (prompt) dimension B.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import torch

from feature_learning.data.bases import unit_sphere


def gaussian_design(B: int, n: int, d: int, generator: torch.Generator, dtype: torch.dtype = torch.float64):
    """Chapter 8's data (Definitions 8.2-8.4, section 8.6): X_ij ~ N(0,1), theta* uniform on S^{d-1}, y = X theta*.

    Returns X (B, n, d), y (B, n), theta_star (B, d).
    """
    X = torch.randn(B, n, d, generator=generator, dtype=dtype)
    theta = unit_sphere(B, d, generator, dtype)
    return X, torch.einsum("bnd,bd->bn", X, theta), theta


def flip_labels(y: torch.Tensor, fraction: float, generator: torch.Generator) -> torch.Tensor:
    """Flip the signs of exactly round(fraction * M) context labels of each prompt, chosen uniformly (the protocol of
    Figures 5.1-5.2): y (B, M). Draws nothing when no label is flipped."""
    B, M = y.shape
    flips = round(fraction * M)
    if not flips:
        return y
    order = torch.rand(B, M, generator=generator).argsort(dim=1)[:, :flips]
    sign = torch.ones(B, M, dtype=y.dtype)
    sign.scatter_(1, order, -1.0)
    return y * sign


@dataclasses.dataclass
class RegressionPrompts:
    X: torch.Tensor  # (B, N, d) context inputs
    y: torch.Tensor  # (B, N) context labels (noisy / flipped at evaluation)
    xq: torch.Tensor  # (B, d) query input
    yq: torch.Tensor  # (B,) clean query label <w, x_q>
    w: torch.Tensor  # (B, d) task weights

    def embedding(self) -> torch.Tensor:
        """The prompt matrix E of section 5.3, shape (B, d+1, N+1): columns (x_i; y_i) and (x_q; 0)."""
        top = torch.cat([self.X, self.xq[:, None]], dim=1)
        bottom = torch.cat([self.y, torch.zeros_like(self.yq)[:, None]], dim=1)
        return torch.cat([top, bottom[:, :, None]], dim=2).transpose(1, 2)


def icl_regression_prompts(
    B: int,
    N: int,
    Q: torch.Tensor,
    lam: torch.Tensor,
    generator: torch.Generator,
    *,
    w: torch.Tensor | None = None,
    sigma: float = 0.0,
    flip_frac: float = 0.0,
) -> RegressionPrompts:
    """In-context linear regression (section 5.4): x ~ N(0, Lambda) with Lambda = Q diag(lam) Q^T.

    Pretraining (section 5.4.1): ``w=None`` draws w_tau ~ N(0, I_d) per prompt, labels are noiseless.
    Evaluation (section 5.4.2): a fixed ``w`` (d,), labels y_i = <w, x_i> + eps_i with eps_i ~ N(0, sigma^2); and,
    for the label-flip analogue of Figure 5.1, the signs of exactly round(flip_frac * N) randomly chosen context
    labels are flipped. The query label is always clean.
    """
    d = lam.shape[0]
    dtype = lam.dtype
    root = Q * lam.clamp(min=0).sqrt()  # x = Q diag(sqrt(lam)) z
    X = torch.randn(B, N, d, generator=generator, dtype=dtype) @ root.T
    xq = torch.randn(B, d, generator=generator, dtype=dtype) @ root.T
    W = torch.randn(B, d, generator=generator, dtype=dtype) if w is None else w.to(dtype).expand(B, d).clone()
    y = torch.einsum("bnd,bd->bn", X, W)
    if sigma:
        y = y + sigma * torch.randn(B, N, generator=generator, dtype=dtype)
    y = flip_labels(y, flip_frac, generator)
    return RegressionPrompts(X=X, y=y, xq=xq, yq=(W * xq).sum(-1), w=W)


# ---------------------------------------------------------------------------------------------------------------
# In-context sparse parity (section 5.5)


def parity_task_sets(d: int, k: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """S1 = ordered pairs of distinct important features in [k]; S2 = the other ordered off-diagonal pairs of [d].

    Features are 0-based here (feature l of the source is index l-1).
    """
    S1 = [(i, j) for i, j in itertools.permutations(range(k), 2)]
    S2 = [(i, j) for i, j in itertools.permutations(range(d), 2) if not (i < k and j < k)]
    return S1, S2


def pair_distribution(gamma: float) -> dict[tuple[int, int], float]:
    """Joint law of (phi_i, phi_j) of the task's pair (section 5.5): (1,1) w.p. 1/4+gamma, (-1,-1) w.p. 1/4-gamma."""
    return {(1, 1): 0.25 + gamma, (1, -1): 0.25, (-1, 1): 0.25, (-1, -1): 0.25 - gamma}


def sparse_parity_prompts(
    B: int, M: int, d: int, pairs: torch.Tensor, gamma: float, generator: torch.Generator,
    *, flip_frac: float = 0.0, dtype: torch.dtype = torch.float64,
):
    """Finite-context sparse-parity prompts with G = I (the model only sees G through V = G^T W G, section 5.5).

    ``pairs`` (B, 2) holds each prompt's task (i, j). Returns phi (B, M, d), y (B, M), phi_q (B, d), y_q (B,);
    the context labels of exactly round(flip_frac * M) examples are flipped (query clean).
    """
    def draw(shape):
        phi = torch.randint(0, 2, (*shape, d), generator=generator).to(dtype) * 2 - 1
        u = torch.rand(shape, generator=generator, dtype=dtype)
        p11, p1m, pm1 = 0.25 + gamma, 0.25, 0.25
        a = torch.where(u < p11 + p1m, 1.0, -1.0).to(dtype)
        b = torch.where(u < p11, 1.0, torch.where(u < p11 + p1m, -1.0, torch.where(u < p11 + p1m + pm1, 1.0, -1.0)))
        idx_i = pairs[:, 0].view(B, *([1] * (len(shape) - 1))).expand(shape)
        idx_j = pairs[:, 1].view(B, *([1] * (len(shape) - 1))).expand(shape)
        phi.scatter_(-1, idx_i[..., None], a[..., None])
        phi.scatter_(-1, idx_j[..., None], b.to(dtype)[..., None])
        return phi, a * b.to(dtype)

    phi, y = draw((B, M))
    phi_q, y_q = draw((B,))
    y = flip_labels(y, flip_frac, generator)
    return phi, y, phi_q, y_q


def parity_population_features(d: int, pairs: list[tuple[int, int]], gamma: float):
    """N = infinity reduction (proof of Thm 5.5.1): the context average y^T X / N -> z_tau = 2 gamma (e_i + e_j).

    For every task (i, j) and every pattern (phi_i, phi_j) of the query, returns z (P, d), the query's relevant part
    phi_hat (P, d) (other coordinates average out of the ReLU argument only after the diagonal V; see below), the
    query label (P,), the pattern weight within the task (P,) and the task index (P,). Because V is diagonal in the
    constructions, z^T V phi_q depends on phi_q only through phi_i and phi_j.
    """
    rows_z, rows_phi, labels, weights, task = [], [], [], [], []
    for t, (i, j) in enumerate(pairs):
        for (a, b), p in pair_distribution(gamma).items():
            z = torch.zeros(d, dtype=torch.float64)
            z[i] = z[j] = 2 * gamma
            ph = torch.zeros(d, dtype=torch.float64)
            ph[i], ph[j] = a, b
            rows_z.append(z), rows_phi.append(ph), labels.append(a * b), weights.append(p), task.append(t)
    return (torch.stack(rows_z), torch.stack(rows_phi), torch.tensor(labels, dtype=torch.float64),
            torch.tensor(weights, dtype=torch.float64), torch.tensor(task))


def bit(value: int, i: int) -> int:
    """digit(bin(value), i): the i-th binary digit of ``value`` counted from the right, i = 1, 2, ... (section 5.5)."""
    return (value >> (i - 1)) & 1


def icl_classification_tokens(B: int, M: int, d: int, prior: torch.Tensor, tau: float, generator: torch.Generator,
                              *, flip_frac: float = 0.0, dtype: torch.dtype = torch.float32):
    """Synthetic stand-in for the binary ICL tasks of section 5.6 (not in the source): the task weight is
    w = prior + tau * g / sqrt(d), g ~ N(0, I), so a fixed ``prior`` direction plays the role of the semantic prior of
    a pretrained LLM and the in-context examples tell the rest. x ~ N(0, I_d), y = sign(<w, x>) in {-1, +1}.

    Tokens (B, M+1, d+1): rows [x_i; y_i] then the query [x_q; 0]; the context labels of exactly round(flip_frac M)
    examples are flipped (the protocol of Figures 5.1-5.2). Returns tokens and the clean query label (B,).
    """
    w = prior.to(dtype) + tau * torch.randn(B, d, generator=generator, dtype=dtype) / math.sqrt(d)
    X = torch.randn(B, M + 1, d, generator=generator, dtype=dtype)
    y = torch.sign(torch.einsum("bmd,bd->bm", X, w))
    y = torch.where(y == 0, torch.ones_like(y), y)
    ctx = y[:, :M].clone()
    ctx = flip_labels(ctx, flip_frac, generator)
    labels = torch.cat([ctx, torch.zeros(B, 1, dtype=dtype)], dim=1)
    return torch.cat([X, labels[..., None]], dim=2), y[:, M]

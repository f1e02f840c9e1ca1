"""Linear self-attention for in-context learning (dissertation ch. 5 and ch. 8).

* :func:`lsa_forward`: the one-layer linear self-attention f(E) = E + W^PV E (E^T W^KQ E) / rho of eq. (5.1);
  the prediction is entry (d+1, N+1).
* :func:`reduced_lsa_predict`: its reduced form y_hat = u (1/rho) sum_i y_i x_i^T U x_q (W^KQ_11 = U, w^PV_22 = u,
  the other blocks zero), batched over replicas.
* :func:`lsa_population_loss`: the exact pretraining loss of Lemma 5.1 (with the constant C = tr(Lambda)/2).
* :func:`parity_heads`: the two-layer multi-head ReLU reduced-LSA g = sum_i a_i ReLU(y^T X W^(i) x_q / rho)
  of section 5.5.
* :func:`linear_attention` and :func:`looped_transformer`: the masked linear attention and the looped linear
  transformer of Definitions 8.6 and 8.7, and :func:`gd_construction`, the weights of Lemma 8.13.
"""

from __future__ import annotations

import torch

# ---------------------------------------------------------------------------------------------------------------
# Chapter 5: one-layer linear self-attention


def lsa_forward(E: torch.Tensor, W_PV: torch.Tensor, W_KQ: torch.Tensor, rho: float) -> torch.Tensor:
    """Eq. (5.1): E + W^PV E (E^T W^KQ E) / rho for prompts E (B, d+1, N+1); returns the prediction (B,)."""
    out = E + W_PV @ E @ (E.transpose(1, 2) @ W_KQ @ E) / rho
    return out[:, -1, -1]


def reduced_lsa_predict(X, y, xq, U, u, rho: float) -> torch.Tensor:
    """Reduced LSA (section 5.3 with the corrected eq. 5.2): u (1/rho) sum_i y_i x_i^T U x_q.

    X (B, N, d), y (B, N), xq (B, d); U (R, d, d) and u (R,) for R replicas. Returns (R, B).
    """
    s = torch.einsum("bn,bnd->bd", y, X) / rho  # (B, d) = y^T X / rho
    return u[:, None] * torch.einsum("bd,rde,be->rb", s, U, xq)


def icl_gamma(Lam: torch.Tensor, N: int) -> torch.Tensor:
    """Gamma = (1 + 1/N) Lambda + tr(Lambda)/N I (Lemma 5.1)."""
    d = Lam.shape[-1]
    return (1 + 1 / N) * Lam + torch.trace(Lam) / N * torch.eye(d, dtype=Lam.dtype)


def lsa_population_loss(U: torch.Tensor, u: torch.Tensor, Lam: torch.Tensor, N: int) -> torch.Tensor:
    """Lemma 5.1: L = tr[u^2/2 Gamma Lambda U Lambda U^T - u Lambda^2 U^T] + tr(Lambda)/2 (the constant derived here).

    U (R, d, d), u (R,); returns (R,). The population pretraining loss (1/2) E (y_hat_q - <w, x_q>)^2 with rho = N.
    """
    G = icl_gamma(Lam, N)
    quad = ((G @ Lam) @ U @ Lam * U).sum((-2, -1))  # tr(G Lam U Lam U^T) = sum_ij (G Lam U Lam)_ij U_ij
    lin = ((Lam @ Lam) * U).sum((-2, -1))
    return 0.5 * u**2 * quad - u * lin + 0.5 * torch.trace(Lam)


def parity_heads(s: torch.Tensor, xq: torch.Tensor, W: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """Section 5.5: g = sum_i a_i ReLU(s^T W^(i) x_q) with s = y^T X / rho the context average.

    s (B, d), xq (B, d), W (m, d, d), a (m,). Returns (B,).
    """
    pre = torch.einsum("bd,mde,be->bm", s, W, xq)
    return torch.relu(pre) @ a


def parity_heads_diagonal(s: torch.Tensor, xq: torch.Tensor, V: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """As :func:`parity_heads` with diagonal W^(i) = diag(V[:, i]); V is (d, m), the matrix D_j of Thm 5.5.2."""
    return torch.relu((s * xq) @ V) @ a


# ---------------------------------------------------------------------------------------------------------------
# Chapter 8: the looped linear transformer


def query_mask(n: int, dtype=torch.float64) -> torch.Tensor:
    """M of Definition 8.6, (n+1) x (n+1): the query row attends to the n examples; everything else is masked."""
    M = torch.zeros(n + 1, n + 1, dtype=dtype)
    M[n, :n] = 1
    return M


def linear_attention(Z: torch.Tensor, Q: torch.Tensor, P: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Attn(Z; Q, P) = (M o (Z Q Z^T)) Z P (Definition 8.6) for Z (B, n+1, d+1); ``scale`` multiplies the scores."""
    n = Z.shape[1] - 1
    scores = query_mask(n, Z.dtype).to(Z.device) * (Z @ Q @ Z.transpose(1, 2))
    return scale * scores @ Z @ P


def prompt_matrix(X: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor, q0: torch.Tensor | None = None):
    """Z^(0) = [[X, y], [q0^T, alpha]] (Definition 8.5), shape (B, n+1, d+1); q0 = 0 by default."""
    B, n, d = X.shape
    q0 = torch.zeros(B, d, dtype=X.dtype, device=X.device) if q0 is None else q0
    top = torch.cat([X, y[..., None]], dim=2)
    bottom = torch.cat([q0, alpha[:, None]], dim=1)[:, None]
    return torch.cat([top, bottom], dim=1)


def looped_transformer(Z0: torch.Tensor, Q: torch.Tensor, P: torch.Tensor, etas, scale: float = 1.0,
                       return_path: bool = False):
    """Definition 8.7: Z^(t) = Z^(t-1) - eta^(t-1) Attn(Z^(t-1); Q, P); TF = -Z^(T)_{n+1, 1:d}.

    ``etas`` is a sequence of T step sizes, each a scalar or a (B,) tensor (the per-prompt 1/L of Thm 8.16).
    Returns TF (B, d), and with ``return_path`` also the list of query rows q^(t) = Z^(t)_{n+1, 1:d}, t = 0..T.
    """
    Z = Z0
    d = Z0.shape[2] - 1
    path = [Z[:, -1, :d]]
    for eta in etas:
        eta = torch.as_tensor(eta, dtype=Z.dtype, device=Z.device)
        eta = eta.view(-1, 1, 1) if eta.ndim else eta
        Z = Z - eta * linear_attention(Z, Q, P, scale)
        path.append(Z[:, -1, :d])
    tf = -Z[:, -1, :d]
    return (tf, path) if return_path else tf


def looped_query_rows(S: torch.Tensor, z0: torch.Tensor, Q: torch.Tensor, P: torch.Tensor, etas,
                      scale: float = 1.0, return_path: bool = False):
    """The looped transformer of Definition 8.7 computed on the query row alone.

    Under the mask of Definition 8.6 the example rows never change, so with S = [X y]^T [X y] (B, d+1, d+1) the query
    row z = (q^T, alpha) evolves as z <- z - eta * scale * z Q S P. Same output as :func:`looped_transformer` (TF =
    -q^(T)) at a cost independent of n. ``z0`` is (B, d+1); a step is a scalar or a (B,) / (B, 1) tensor. With
    ``return_path`` also the query rows q^(t) = z^(t)_{1:d}, t = 0..T.
    """
    z = z0
    path = [z[:, :-1]]
    for eta in etas:
        eta = torch.as_tensor(eta, dtype=z.dtype, device=z.device)
        eta = eta.reshape(-1, 1) if eta.ndim else eta
        z = z - eta * scale * torch.einsum("bi,ij,bjk,kl->bl", z, Q, S, P)
        path.append(z[:, :-1])
    return (-z[:, :-1], path) if return_path else -z[:, :-1]


def gd_construction(d: int, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Lemma 8.13: Q = I_{d+1}, P = diag(I_d, 0)."""
    P = torch.eye(d + 1, dtype=dtype)
    P[d, d] = 0
    return torch.eye(d + 1, dtype=dtype), P


def gd_iterates(X: torch.Tensor, y: torch.Tensor, etas, theta0: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Gradient descent on l(theta) = ||y - X theta||^2 / 2 (Definition 8.9, eq. 8.2); returns theta^(0..T)."""
    B, n, d = X.shape
    theta = torch.zeros(B, d, dtype=X.dtype, device=X.device) if theta0 is None else theta0
    H, b = X.transpose(1, 2) @ X, torch.einsum("bnd,bn->bd", X, y)
    path = [theta]
    for eta in etas:
        eta = torch.as_tensor(eta, dtype=X.dtype, device=X.device)
        eta = eta.view(-1, 1) if eta.ndim else eta
        theta = theta - eta * (torch.einsum("bij,bj->bi", H, theta) - b)
        path.append(theta)
    return path

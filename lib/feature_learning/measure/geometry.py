"""The geometry of first-layer weights: cosines with target directions, pairwise cosines and their
multidimensional scaling, signal-to-background ratios of gradients, and where the weight mass sits on the circle.

Weights are batched over replicas: W (R, m, d) with one unit per row. From Shi, Wei and Liang (ICLR 2022, Figure 2,
Lemma 15, App. E.3.2) and Tsoy & Konstantinov (ICML 2024, Fig. 2, Sec. 6).
"""

from __future__ import annotations

import math

import torch


def cosine_to(W: torch.Tensor, v: torch.Tensor, perp_sq: torch.Tensor | None = None) -> torch.Tensor:
    """cos(w_i, v) for every unit, shape (R, m) (signed; Shi et al. report the max over i). ``v`` is (d,) or one
    direction per replica (R, d). ``perp_sq`` (R, m), if given, is the squared norm of a part of each w_i
    orthogonal to every coordinate of W and v (the weights' component outside span(M) when W is in pattern
    coordinates, see :func:`feature_learning.data.sparse_coding.pattern_coordinates`); it enters the norm only."""
    num = torch.einsum("rid,d->ri", W, v) if v.dim() == 1 else torch.einsum("rid,rd->ri", W, v)
    norm_sq = W.pow(2).sum(-1) if perp_sq is None else W.pow(2).sum(-1) + perp_sq
    return num / (norm_sq.sqrt().clamp_min(1e-300) * v.norm(dim=-1, keepdim=v.dim() == 2))


def best_cosine_per_target(W: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """max_i cos(w_i, c) for each target direction c: W (R, m, d), targets (R, K, d) -> (R, K) in float64. "Each
    Gaussian centre is covered by some neuron" (Shi, Wei and Liang 2022, App. E.3.2) reads min_c of this is large."""
    Wn = W.double() / W.double().norm(dim=-1, keepdim=True).clamp_min(1e-300)
    Cn = targets.double() / targets.double().norm(dim=-1, keepdim=True).clamp_min(1e-300)
    return torch.einsum("rid,rcd->ric", Wn, Cn).max(1).values


def pairwise_cosines(W: torch.Tensor) -> torch.Tensor:
    """Cosine similarities among the units of one network, (m, m) for W (m, d): Figure 2's input to MDS."""
    U = W / W.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    return U @ U.T


def classical_mds(dissimilarity: torch.Tensor, dim: int = 2) -> torch.Tensor:
    """Classical (Torgerson) multidimensional scaling of a symmetric dissimilarity matrix, coordinates (n, dim)."""
    D2 = dissimilarity.double() ** 2
    n = D2.shape[0]
    J = torch.eye(n, dtype=D2.dtype) - 1.0 / n
    B = -0.5 * J @ D2 @ J
    vals, vecs = torch.linalg.eigh(B)
    order = torch.argsort(vals, descending=True)[:dim]
    return vecs[:, order] * vals[order].clamp_min(0).sqrt()


def feature_snr(grad_W: torch.Tensor, M: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """Coordinates T_j of gradients (R, m, d) in the dictionary basis M (d, D) (Shi et al., Lemma 15): returns
    |T_A| mean over A divided by the root-mean-square T_j over j not in A, per replica (R,)."""
    T = torch.einsum("rid,dj->rij", grad_W, M).abs()
    mask = torch.zeros(M.shape[1], dtype=torch.bool)
    mask[A] = True
    return T[..., mask].mean((-1, -2)) / T[..., ~mask].pow(2).mean((-1, -2)).sqrt().clamp_min(1e-300)


# -- neurons on the circle (inputs in R^2; Tsoy & Konstantinov, Fig. 2 and Sec. 6) -----------------------------------
def neuron_angles(V: torch.Tensor) -> torch.Tensor:
    """atan2(v^2, v^1) of each neuron (the source's Fig. 2 angle): (..., m, 2) -> (..., m)."""
    return torch.atan2(V[..., 1], V[..., 0])


def angle_gap(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a - b| wrapped to [0, pi]."""
    return torch.remainder(a - b + math.pi, 2 * math.pi).sub(math.pi).abs()


def mass_near(V: torch.Tensor, targets: torch.Tensor, tol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Share of sum_j ||v_j||^2 within ``tol`` rad of each target angle, and in total.

    V (R, m, 2), targets (k,) -> (per-target share (R, k), total share (R,)). The relative scale of the source's
    Fig. 2 is ||v_j||^2 / sum_i ||v_i||^2."""
    mass = V.pow(2).sum(-1)
    rel = mass / mass.sum(-1, keepdim=True)
    gaps = angle_gap(neuron_angles(V).unsqueeze(-1), targets.to(V.dtype))  # (R, m, k)
    nearest = gaps.argmin(-1)
    close = gaps.min(-1).values <= tol
    per = torch.stack([(rel * (close & (nearest == k))).sum(-1) for k in range(targets.shape[0])], dim=-1)
    return per, per.sum(-1)


def weighted_centres(V: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mass-weighted circular mean angle of the neurons nearest to each target: (R, m, 2) -> (R, k)."""
    mass = V.pow(2).sum(-1)
    ang = neuron_angles(V)
    nearest = angle_gap(ang.unsqueeze(-1), targets.to(V.dtype)).argmin(-1)
    out = []
    for k in range(targets.shape[0]):
        w = mass * (nearest == k)
        out.append(torch.atan2((w * ang.sin()).sum(-1), (w * ang.cos()).sum(-1)))
    return torch.stack(out, dim=-1)


def subspace_alignment(W: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """||P_U W||_F / ||W||_F per replica for first-layer weights W (R, m, d) and an orthonormal U (d, r), or one per
    replica (R, d, r): 1 when every
    unit lies in span(U), about sqrt(r/d) for isotropic random weights (the alignment after one step on a
    multi-index target, Damian et al. 2022; dissertation ch. 3, B.5.7)."""
    inside = (W @ U).pow(2).sum((-1, -2))
    return (inside / W.pow(2).sum((-1, -2))).sqrt()

"""Gradient features of a two-layer network with fixed biases (Shi, Wei and Liang, NeurIPS 2023 = dissertation ch. 3,
Sec. 3.3): the simplified gradient vector, the cone around a direction, the nice set and where a neuron's kink lies.

Networks are :class:`~feature_learning.models.two_layer.TwoLayerNet` with a ReLU, batched over replicas R; the
source writes sigma(<w, x> - b) where the net adds its bias, so the source's b is ``-net.b``.
"""

from __future__ import annotations

import torch


def simplified_gradient(net, x: torch.Tensor, y: torch.Tensor, chunk_elements: int = 2**22) -> torch.Tensor:
    """G(w_i, b_i) = E[y x 1[<w_i, x> > b_i]] (Definition 3.5, eq. (3.4)) for every unit, estimated on the sample
    (x (n, d), y (n,)), or on one sample per replica (x (R, n, d), y (R, n)): shape (R, m, d). With the hinge or
    logistic loss at the symmetric initialisation, grad_{w_i} L = l'(0) a_i G(w_i, b_i) (eq. (B.17)). Summed over
    chunks of examples (about ``chunk_elements`` examples x replicas x units each)."""
    n = x.shape[-2]
    chunk = max(1, chunk_elements // (net.replicas * net.width))
    G = 0
    for start in range(0, n, chunk):
        xs, ys = x[..., start:start + chunk, :], y[..., start:start + chunk]
        active = (net.preactivation(xs) > 0).to(x.dtype)  # (R, chunk, m)
        G = G + (active * ys.unsqueeze(-1)).transpose(1, 2) @ xs
    return G / n


def abs_cosine(W: torch.Tensor, D: torch.Tensor) -> torch.Tensor:
    """|<w_i, D>| / ||w_i|| for rows of W (R, m, d) and a unit direction D (d,) or one per replica (R, d): (R, m).
    A zero row has cosine 0."""
    num = torch.einsum("rid,d->ri", W, D) if D.dim() == 1 else torch.einsum("rid,rd->ri", W, D)
    return num.abs() / W.norm(dim=-1).clamp_min(1e-300)


def in_cone(W: torch.Tensor, D: torch.Tensor, gamma: float) -> torch.Tensor:
    """Membership of each row of W in the cone C_{D, gamma} = {w : |<w, D>| / ||w|| > 1 - gamma} (eq. (3.5))."""
    return abs_cosine(W, D) > 1 - gamma


def cone_fractions(W: torch.Tensor, D: torch.Tensor, gammas) -> torch.Tensor:
    """The fraction of the rows of W (R, m, d) in C_{D, gamma} for each gamma: shape (R, len(gammas))."""
    cos = abs_cosine(W, D)
    return torch.stack([(cos > 1 - g).to(W.dtype).mean(-1) for g in gammas], -1)


def nice_mask(G: torch.Tensor, D: torch.Tensor, gamma: float, B_G: float) -> torch.Tensor:
    """The units whose simplified gradient lies in C_{D, gamma} with ||G|| >= B_G: (R, m) booleans. This is the
    nice set of eq. (3.14) / Definition B.4 read through G (grad_i = l'(0) a_i G, so ||grad_i|| >= |a_i| B_G iff
    ||G|| >= B_G, and the sign of a_i only flips the direction, which the absolute cosine ignores); intersect with
    the bias sign s = b_i/|b_i| for the set of one feature (D, s)."""
    return in_cone(G, D, gamma) & (G.norm(dim=-1) >= B_G)


def kinks(net, D: torch.Tensor) -> torch.Tensor:
    """Where unit i's ReLU turns on along the direction D: sigma(<w_i, x> + b_i) with w_i ~ c D kinks at
    <D, x> = -b_i / <w_i, D>; shape (R, m) (inf where <w_i, D> = 0). For a unit in a thin cone around +-D this is
    the threshold of the ground-truth neuron sigma(<D, x> - t) it can stand in for (Lemma 3.14's matching)."""
    proj = torch.einsum("rid,d->ri", net.W, D) if D.dim() == 1 else torch.einsum("rid,rd->ri", net.W, D)
    return -net.b / proj

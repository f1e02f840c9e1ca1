"""Neurons that a feature "lucks into" at a thresholded small initialisation, and the responses read off them
(Hong et al., "How does pretraining label granularity affect generalization", Definition C.1 and Theorems D.1, E.1).

At initialisation w ~ N(0, sigma0^2 I) with bias -tau sigma0, a neuron fires on a clean patch of feature v only if
<w, v> is above the threshold. The *singly activated* set S*(v) holds the neurons above it on v and below it on
every other data feature; the proofs follow A*(v) = <w_r, v> for r in S*(v), identical for all its members
(Theorem D.1, point 3). Here A* is the mean over the set, per replica.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def singly_activated(proj0: torch.Tensor, threshold: float) -> torch.Tensor:
    """proj0 (..., n_features) initial projections <w_r(0), v_j>: a boolean (..., n_features) that is true where
    the neuron is at or above ``threshold`` on feature j and below it on every other feature (S*(v_j))."""
    above = proj0 >= threshold
    return above & (above.sum(-1, keepdim=True) == 1)


def set_mean(proj: torch.Tensor, members: torch.Tensor, pairs: Sequence[tuple[int, int]]) -> torch.Tensor:
    """The mean of <w_{c,r}, v_j> over the neurons of S*_c(v_j), pooled over the (output c, feature j) ``pairs``.

    proj (R, C, m, n_features) projections now; members (R, C, m, n_features) from :func:`singly_activated`.
    Returns (R,); nan for a replica with no member in any pair."""
    total = torch.zeros(proj.shape[0], dtype=torch.float64, device=proj.device)
    count = torch.zeros_like(total)
    for c, j in pairs:
        mask = members[:, c, :, j]
        total += (proj[:, c, :, j].double() * mask).sum(-1)
        count += mask.sum(-1)
    return total / count


def set_sizes(members: torch.Tensor, pairs: Sequence[tuple[int, int]]) -> torch.Tensor:
    """|S*_c(v_j)| for each pair: (R, len(pairs))."""
    return torch.stack([members[:, c, :, j].sum(-1) for c, j in pairs], dim=-1)


def responding(W: torch.Tensor, b: torch.Tensor, feature: int, owner: int, amplitude: float = 1.0) -> torch.Tensor:
    """How many neurons of output ``owner`` fire on a clean patch ``amplitude * v_feature`` (R,): the n of the
    log-time law's constant C."""
    pre = amplitude * W[:, owner, :, feature] + b[:, owner]
    return (pre > 0).sum(-1)


def level_crossing(x: torch.Tensor, curve: torch.Tensor, level: float) -> torch.Tensor:
    """The first x at which ``curve`` (..., len(x)), starting at or above ``level``, falls below it, by linear
    interpolation between grid points; x[-1] if it never does, x[0] if it starts below. Returns (...)."""
    x = torch.as_tensor(x, dtype=torch.float64)
    curve = curve.double()
    below = curve < level
    first = torch.where(below.any(-1), below.double().argmax(-1), torch.full(curve.shape[:-1], len(x) - 1))
    out = x[first].clone()
    inner = below.any(-1) & (first > 0)
    j = first.clamp_min(1)
    y0 = curve.gather(-1, (j - 1).unsqueeze(-1)).squeeze(-1)
    y1 = curve.gather(-1, j.unsqueeze(-1)).squeeze(-1)
    frac = (y0 - level) / (y0 - y1).clamp_min(1e-12)
    interp = x[j - 1] + frac * (x[j] - x[j - 1])
    return torch.where(inner, interp, out)

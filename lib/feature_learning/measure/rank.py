"""Rank surrogates of a feature matrix (dissertation ch. 6, Shi et al., CPAL 2024), batched over leading axes.

* :func:`nuclear_norm`: ||M||_* = sum_i sigma_i(M), the convex envelope of rank(M) on {||M||_2 <= 1} (Recht et al.
  2010; Sec. 6.2, line 1632). ERM-NU adds lambda ||Phi(X)||_* of the batch feature matrix to the loss; the source's
  code uses ``torch.svd``, here ``torch.linalg.svdvals``, whose gradient is U V^T (distinct nonzero singular values).
* :func:`stable_rank`: ||M||_F^2 / ||M||_2^2 = sum_i sigma_i^2 / sigma_1^2, in [1, rank M]. The source prints
  ||M||_F^2 / ||M||_2 (line 1753), which is not scale-invariant: a typo.
"""

from __future__ import annotations

import torch


def nuclear_norm(features: torch.Tensor) -> torch.Tensor:
    """Sum of the singular values of the last two axes: (..., n, d) -> (...). Differentiable (gradient U V^T)."""
    return torch.linalg.svdvals(features).sum(-1)


def stable_rank(features: torch.Tensor) -> torch.Tensor:
    """||M||_F^2 / ||M||_2^2 of the last two axes: (..., n, d) -> (...); 0 for a zero matrix."""
    s = torch.linalg.svdvals(features)
    top = s[..., 0] ** 2
    return torch.where(top > 0, (s**2).sum(-1) / top.clamp_min(torch.finfo(s.dtype).tiny), torch.zeros_like(top))

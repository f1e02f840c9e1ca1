"""Random orthonormal bases and directions: the dictionary M of the sparse-coding and structured-feature data
models (Shi, Wei and Liang, ICLR 2022, Sec. 3; Zhang et al., ICML 2024, Definition 3.1), Haar-random rotations
(dissertation ch. 5) and uniform directions on the sphere (dissertation ch. 8, Definition 8.3).

Gaussian matrices are drawn in float64 whatever ``dtype`` is asked for, and the result is cast: the same generator
gives the same basis in every precision.
"""

from __future__ import annotations

import torch


def orthonormal_dictionary(d: int, D: int, generator: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """A random d x D matrix with orthonormal columns (M^T M = I_D), Haar distributed: the QR factor of a Gaussian
    matrix with the signs of R's diagonal moved into Q."""
    if D > d:
        raise ValueError(f"an orthonormal dictionary needs D <= d, got D={D}, d={d}")
    g = torch.randn(d, D, generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    q = q * torch.sign(torch.diagonal(r))
    return q.to(dtype)


def random_orthogonal(d: int, generator: torch.Generator, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A Haar-random orthogonal d x d matrix: :func:`orthonormal_dictionary` with D = d."""
    return orthonormal_dictionary(d, d, generator, dtype)


def unit_sphere(B: int, d: int, generator: torch.Generator, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """B vectors uniform on the unit sphere S^{d-1} (normalised Gaussians; Definition 8.3, the source writes S^d).
    Drawn in ``dtype`` (as the in-context data models always did)."""
    v = torch.randn(B, d, generator=generator, dtype=dtype)
    return v / v.norm(dim=-1, keepdim=True)

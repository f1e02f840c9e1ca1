"""Exact Euclidean projections onto norm-constrained sets of weight matrices, for projected gradient descent.

* :func:`project_spectral_frobenius`: onto {||W|| <= spectral, ||W||_F <= frobenius}, the representation class of
  dissertation ch. 7 (Shi et al., ICLR 2023, Sec. 7.2.2: ||W|| <= 1, ||W||_F <= sqrt(r)). The set is unitarily
  invariant, so the projection keeps the singular vectors and projects the singular values onto the box-and-ball
  {0 <= sigma_i <= spectral, sum sigma_i^2 <= frobenius^2}; by the KKT conditions that projection is
  sigma_i <- clip(sigma_i / (1 + mu), 0, spectral) with mu >= 0 the smallest value meeting the ball, found by
  bisection (to float precision).
* :func:`project_frobenius_ball`: onto {||W - W0||_F <= radius}.
* :func:`dykstra`: the exact projection onto an intersection of convex sets from the projections onto each
  (Dykstra's algorithm); App. F.2.4's fine-tuning set {||W - W*||_F <= gamma, ||W|| <= 1} is one.

All functions take a leading batch of matrices (..., k, d). A batch of small matrices on an accelerator is
projected onto the spectral-Frobenius set on the CPU and the result moved back (``CPU_SVD_MAX_SIDE``): cuSOLVER
takes their SVDs one by one (80 float64 matrices 25 x 35: the SVD took 69 ms on an H200, the projection 79 ms,
against 22 ms for the projection through the CPU, both copies included; 64 matrices 85 x 95: 292 ms against 79 ms).
On the CPU nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

CPU_SVD_MAX_SIDE = 128  # matrices of at most this many rows and columns are projected on the CPU (module docstring)


def project_singular_values(sigma: torch.Tensor, spectral: float, frobenius: float,
                            iterations: int = 100) -> torch.Tensor:
    """Projection of nonnegative vectors sigma (..., n) onto {0 <= x <= spectral, ||x|| <= frobenius}
    (``frobenius=math.inf``: the box alone). 100 halvings of the bracket reach float64 resolution."""
    box = sigma.clamp(0, spectral)
    inside = box.pow(2).sum(-1) <= frobenius**2
    if bool(inside.all()):
        return box
    n = sigma.shape[-1]
    lo = torch.zeros(sigma.shape[:-1], dtype=sigma.dtype, device=sigma.device)
    hi = sigma.amax(-1).clamp_min(0) * (n**0.5) / frobenius + 1.0  # there every sigma_i / (1 + mu) <= fro / sqrt(n)
    for _ in range(iterations):
        mid = (lo + hi) / 2
        over = (sigma / (1 + mid[..., None])).clamp(0, spectral).pow(2).sum(-1) > frobenius**2
        lo, hi = torch.where(over, mid, lo), torch.where(over, hi, mid)
    shrunk = (sigma / (1 + hi[..., None])).clamp(0, spectral)
    return torch.where(inside[..., None], box, shrunk)


def project_spectral_frobenius(W: torch.Tensor, spectral: float = 1.0, frobenius: float = 1.0) -> torch.Tensor:
    """Euclidean projection of W (..., k, d) onto {||W||_2 <= spectral, ||W||_F <= frobenius} (module docstring).
    Small matrices off the CPU are projected on the CPU and returned on W's device (module docstring)."""
    if W.device.type != "cpu" and max(W.shape[-2:]) <= CPU_SVD_MAX_SIDE:
        return project_spectral_frobenius(W.cpu(), spectral, frobenius).to(W.device)
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    return U @ torch.diag_embed(project_singular_values(S, spectral, frobenius)) @ Vh


def project_frobenius_ball(W: torch.Tensor, center: torch.Tensor, radius: float) -> torch.Tensor:
    """Euclidean projection of W onto {||W - center||_F <= radius} (per leading batch entry)."""
    diff = W - center
    norm = diff.pow(2).sum((-1, -2), keepdim=True).sqrt()
    return center + diff * torch.clamp(radius / norm.clamp_min(1e-300), max=1.0)


def dykstra(W: torch.Tensor, projections: Sequence[Callable[[torch.Tensor], torch.Tensor]],
            iterations: int = 50, tol: float = 0.0) -> torch.Tensor:
    """Dykstra's alternating projections: converges to the Euclidean projection of W onto the intersection of the
    convex sets whose projections are given (plain alternating projections only reach *a* point of it). Stops
    early once a sweep moves no entry by more than ``tol``."""
    x = W
    corrections = [torch.zeros_like(W) for _ in projections]
    for _ in range(iterations):
        start = x
        for i, project in enumerate(projections):
            y = project(x + corrections[i])
            corrections[i] = x + corrections[i] - y
            x = y
        if float((x - start).abs().max()) <= tol:
            break
    return x

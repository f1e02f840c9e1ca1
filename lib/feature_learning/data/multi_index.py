"""Multi-index targets on Gaussian inputs: dissertation ch. 3, Sec. B.5.7 (after Damian, Lee and Soltanolkotabi 2022).

x ~ N(0, I_d) and y = g*(x) = g(<x, u_1>, ..., <x, u_r>) for orthonormal u_1, ..., u_r (the columns of U, d x r),
a polynomial of degree tau with E g*^2 = 1 whose expected Hessian H = E nabla^2 g*(x) has rank r.

The preset :func:`quadratic_two_index` is the degree-2, rank-2 target

    g*(x) = ( z_1 z_2 + (z_1^2 - 1)/sqrt(2) ) / sqrt(2),    z = U^T x,

with E g* = 0, E g*^2 = 1, E[g* x] = 0 and H = U [[1, 1/sqrt 2], [1/sqrt 2, 0]] U^T (its 2 x 2 core has determinant
-1/2, so rank 2). By Stein's lemma E[g* x x^T] = H, which is what one gradient step finds (Damian et al., Lemma 25).
"""

from __future__ import annotations

import math

import torch

SQRT2 = math.sqrt(2.0)


def quadratic_two_index(z: torch.Tensor) -> torch.Tensor:
    """g(z_1, z_2) = (z_1 z_2 + (z_1^2 - 1)/sqrt 2)/sqrt 2 for z (..., 2)."""
    z1, z2 = z[..., 0], z[..., 1]
    return (z1 * z2 + (z1 * z1 - 1) / SQRT2) / SQRT2


def quadratic_two_index_hessian(dtype=torch.float64) -> torch.Tensor:
    """The (constant) Hessian of :func:`quadratic_two_index` in z: [[1, 1/sqrt 2], [1/sqrt 2, 0]]."""
    return torch.tensor([[1.0, 1 / SQRT2], [1 / SQRT2, 0.0]], dtype=dtype)


def multi_index_sample(n: int, U: torch.Tensor, generator: torch.Generator, link=quadratic_two_index):
    """(x, y): x ~ N(0, I_d) (n, d) and y = link(x U) (n,), in the dtype of U (d x r, orthonormal columns)."""
    x = torch.randn(n, U.shape[0], generator=generator, dtype=U.dtype)
    return x, link(x @ U)


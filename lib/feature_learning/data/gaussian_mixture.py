"""Gaussian clusters at the vertices of a hypercube with a parity label: Appendix E.3.2 of Shi, Wei and Liang (ICLR
2022), eq. (290) (= eq. (A.288) of the dissertation, ch. 2).

``M`` (d x k) has orthonormal columns, ``eps_i`` are i.i.d. symmetric signs, ``g ~ N(0, sigma_r^2 (k/d) I_d)`` and

    x = sum_{i=1}^k eps_i M_{:,i} + g,     y = prod_{i=1}^k eps_i.

There are 2^k clusters, centred at ``sum_i +-M_{:,i}`` (norm sqrt(k)); the noise has E||g||^2 = sigma_r^2 k, the same
scale as the centres. The label of a cluster is the parity of its vertex.
"""

from __future__ import annotations

import itertools

import torch


def hypercube_mixture(n: int, M: torch.Tensor, sigma_r: float, generator: torch.Generator):
    """n samples of eq. (290): inputs (n, d), labels (n,) in {-1, +1} and the signs eps (n, k), dtype of M."""
    d, k = M.shape
    eps = (torch.randint(0, 2, (n, k), generator=generator) * 2 - 1).to(M.dtype)
    noise = torch.randn(n, d, generator=generator, dtype=M.dtype) * (sigma_r * (k / d) ** 0.5)
    return eps @ M.T + noise, eps.prod(-1), eps


def hypercube_centres(M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The 2^k cluster centres sum_i eps_i M_{:,i} (2^k, d) and their parity labels (2^k,)."""
    k = M.shape[1]
    signs = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=k)), dtype=M.dtype)
    return signs @ M.T, signs.prod(-1)

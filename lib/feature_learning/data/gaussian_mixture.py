"""Mixtures of Gaussians with labelled components.

* Gaussian clusters at the vertices of a hypercube with a parity label: Appendix E.3.2 of Shi, Wei and Liang (ICLR
  2022), eq. (290) (= eq. (A.288) of the dissertation, ch. 2), :func:`hypercube_mixture`;
* a general labelled mixture q(x, y) = q(y) sum_{j in S(y)} p_j N(mu_j, sigma_j^2 I) (dissertation ch. 3, Sec. 3.4.1,
  after Refinetti et al. 2021), :func:`labelled_mixture`, and its four-cluster XOR preset (Assumption B.36),
  :func:`xor_mixture_means`.

The hypercube mixture:

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


# -- dissertation ch. 3: a labelled mixture and the XOR mixture of Refinetti et al. ---------------------------------
XOR_WEIGHTS = (0.25, 0.25, 0.25, 0.25)
XOR_LABELS = (1.0, 1.0, -1.0, -1.0)


def labelled_mixture(n: int, means: torch.Tensor, sigmas, weights, labels, generator: torch.Generator):
    """n draws of component j with probability ``weights[j]``, x = mu_j + sigma_j g (g ~ N(0, I_d)) and y = labels[j].

    The source writes Sigma_j = sigma_j I (Assumption 3.15) but its proofs use sigma_j^2 I (eqs. (B.279)-(B.283)); we
    follow the proofs: ``sigma_j`` is the standard deviation per coordinate. Returns (x (n, d), y (n,), component
    (n,) long) in the dtype of ``means``."""
    dtype = means.dtype
    weights = torch.as_tensor(weights, dtype=torch.float64)
    sigmas, labels = (torch.as_tensor(v, dtype=dtype) for v in (sigmas, labels))
    if not (len(weights) == len(sigmas) == len(labels) == means.shape[0]):
        raise ValueError("means, sigmas, weights and labels need one entry per component")
    comp = torch.multinomial(weights / weights.sum(), n, replacement=True, generator=generator)
    noise = torch.randn(n, means.shape[1], generator=generator, dtype=dtype)
    return means[comp] + sigmas[comp, None] * noise, labels[comp], comp


def xor_mixture_means(d: int, generator: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    """The four XOR centres of Assumption B.36 (Refinetti et al. 2021): mu_1 = -mu_2, mu_3 = -mu_4, ||mu_j|| = sqrt(d)
    and <mu_1, mu_3> = 0, from a random orthonormal pair; shape (4, d), labels ``XOR_LABELS``."""
    g = torch.randn(d, 2, generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(g)
    q = (q * torch.sign(torch.diagonal(r))).T * d**0.5
    return torch.stack([q[0], -q[0], q[1], -q[1]]).to(dtype)


def antithetic(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The sample with every point also reflected, (x, y) and (-x, y): for a law with (x, y) and (-x, y) equally
    likely (the XOR mixture) it has the same law and an empirical E[y x] that is 0 (in exact arithmetic; to
    summation rounding in floating point), the condition of Lemma B.71 (dissertation ch. 3)."""
    return torch.cat([x, -x], -2), torch.cat([y, y], -1)

"""XOR-like cluster data: Assumption 5.1 of Tsoy & Konstantinov (ICML 2024), its skewed variant (their Sec. 6)
and a "simple plus complex" feature model for out-of-distribution probes (an analogue of their Sec. 7 dominoes).

Conventions follow the paper, not its replication code: the clusters at +-e_1 carry label +1 and those at +-e_2
label -1 (the replication code swaps the classes). Every generator takes an explicit ``torch.Generator``.
"""

from __future__ import annotations

import math

import torch


def _truncated_gaussian(count: int, dim: int, sigma: float, radius: float, generator: torch.Generator,
                        dtype=torch.float64) -> torch.Tensor:
    """``count`` draws of N(0, sigma^2 I_dim) kept only if their norm is below ``radius`` (redrawn until full)."""
    out = torch.empty(0, dim, dtype=dtype)
    while out.shape[0] < count:
        z = sigma * torch.randn(2 * count + 8, dim, generator=generator, dtype=dtype)
        out = torch.cat([out, z[z.norm(dim=1) < radius]])
    return out[:count]


def xor_cluster_data(n_base: int, d: int = 2, *, delta: float = 0.01, sigma: float = 0.005,
                     generator: torch.Generator, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Data satisfying Assumption 5.1 (items 1-3): ``n_base`` noise draws (N(0, sigma^2 I), kept inside radius
    ``delta``) around e_1, closed under the reflections R_1, R_2, R_r and the swap P of coordinates 1 and 2.

    Returns ``(X, y)`` with X of shape (16 n_base, d) (in d = 2, R_r is the identity and duplicates every point, as
    in the source's generator) and y = +1 near +-e_1, -1 near +-e_2.
    """
    if d < 2:
        raise ValueError("xor_cluster_data needs d >= 2")
    z = _truncated_gaussian(n_base, d, sigma, delta, generator, dtype)
    x = z.clone()
    x[:, 0] += 1.0
    for flip in ("R1", "R2", "Rr"):
        xr = x.clone()
        if flip == "R1":
            xr[:, 0] = -xr[:, 0]
        elif flip == "R2":
            xr[:, 1] = -xr[:, 1]
        else:
            xr[:, 2:] = -xr[:, 2:]
        x = torch.cat([x, xr])
    swapped = x.clone()
    swapped[:, [0, 1]] = x[:, [1, 0]]
    X = torch.cat([x, swapped])
    y = torch.cat([torch.ones(x.shape[0], dtype=dtype), -torch.ones(x.shape[0], dtype=dtype)])
    return X, y


def skewed_xor_data(n_base: int, alpha: float, *, delta: float = 0.2, sigma: float = 0.1 / math.sqrt(2),
                    generator: torch.Generator, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Skewed XOR in R^2 (Sec. 6 of the source): clusters at +-e_1 with label -1 and at +-w, w = (cos a, sin a),
    with label +1; each cluster is ``n_base`` draws of N(0, sigma^2 I) kept inside radius ``delta``. The +-w
    clusters are the mirror images of the +-e_1 clusters under the reflection [[cos a, sin a], [sin a, -cos a]]
    (the source's construction). alpha = pi/2 is the plain (rotated) XOR.
    """
    z = _truncated_gaussian(n_base, 2, sigma, delta, generator, dtype)
    a = z.clone()
    a[:, 0] += 1.0
    a = torch.cat([a, -a])
    c, s = math.cos(alpha), math.sin(alpha)
    reflect = torch.tensor([[c, s], [s, -c]], dtype=dtype)
    X = torch.cat([a, a @ reflect])
    y = torch.cat([-torch.ones(a.shape[0], dtype=dtype), torch.ones(a.shape[0], dtype=dtype)])
    return X, y


def simple_plus_complex_data(n: int, *, mu_simple: float = 0.3, sigma_simple: float = 0.05, sigma_complex: float = 0.35,
                             d_noise: int = 20, ood: bool = False, generator: torch.Generator,
                             dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """A synthetic "domino": x = (s, c_1, c_2, noise) in R^{3 + d_noise} with label y in {-1, +1}.

    * s = y mu_simple + N(0, sigma_simple^2) is the *simple* (linearly separable) feature, the MNIST half of the
      source's MNIST-CIFAR dominoes; with ``ood=True`` its sign is an independent coin (the test dominoes' random
      pairing), so only the complex feature predicts y;
    * (c_1, c_2) is the *complex* XOR feature: the cluster centre is +-e_1 for y = +1 and +-e_2 for y = -1 (random
      sign), plus N(0, sigma_complex^2 I);
    * the remaining ``d_noise`` coordinates are N(0, sigma_complex^2).
    """
    y = torch.where(torch.rand(n, generator=generator) < 0.5, 1.0, -1.0).to(dtype)
    sign_s = torch.where(torch.rand(n, generator=generator) < 0.5, 1.0, -1.0).to(dtype) if ood else y
    s = sign_s * mu_simple + sigma_simple * torch.randn(n, generator=generator, dtype=dtype)
    side = torch.where(torch.rand(n, generator=generator) < 0.5, 1.0, -1.0).to(dtype)
    c = torch.zeros(n, 2, dtype=dtype)
    c[:, 0] = torch.where(y > 0, side, 0.0)
    c[:, 1] = torch.where(y < 0, side, 0.0)
    c = c + sigma_complex * torch.randn(n, 2, generator=generator, dtype=dtype)
    noise = sigma_complex * torch.randn(n, d_noise, generator=generator, dtype=dtype)
    return torch.cat([s[:, None], c, noise], dim=1), y

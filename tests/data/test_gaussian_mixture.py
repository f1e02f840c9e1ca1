"""data/gaussian_mixture.py: the hypercube Gaussian mixture of Shi, Wei and Liang (ICLR 2022), eq. (290)."""

import itertools
import math

import torch

from feature_learning.data.bases import orthonormal_dictionary
from feature_learning.data.gaussian_mixture import hypercube_centres, hypercube_mixture


def test_hypercube_mixture_follows_eq_290():
    g = torch.Generator().manual_seed(3)
    d, k, sigma_r = 20, 3, 0.7
    M = orthonormal_dictionary(d, k, g)
    x, y, eps = hypercube_mixture(100_000, M, sigma_r, g)
    assert torch.equal(y, eps.prod(-1))
    noise = x - eps @ M.T
    assert abs(noise.var().item() - sigma_r**2 * k / d) < 0.01 * sigma_r**2 * k / d + 1e-3
    assert abs(y.mean().item()) < 0.02 and (eps.mean(0).abs() < 0.02).all()
    centres, labels = hypercube_centres(M)
    assert centres.shape == (8, d)
    assert torch.allclose(centres.norm(dim=-1), torch.full((8,), math.sqrt(k), dtype=M.dtype))
    signs = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=k)), dtype=M.dtype)
    assert torch.allclose(centres @ M, signs) and torch.equal(labels, signs.prod(-1))

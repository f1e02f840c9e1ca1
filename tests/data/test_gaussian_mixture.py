"""data/gaussian_mixture.py: the hypercube Gaussian mixture of Shi, Wei and Liang (ICLR 2022), eq. (290), and the
labelled mixture with the XOR preset of dissertation ch. 3 (Assumption B.36)."""

import itertools
import math

import torch

from feature_learning.data.bases import orthonormal_dictionary
from feature_learning.data.gaussian_mixture import (
    XOR_LABELS,
    XOR_WEIGHTS,
    antithetic,
    hypercube_centres,
    hypercube_mixture,
    labelled_mixture,
    xor_mixture_means,
)


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


def test_xor_means_geometry(gen):
    mu = xor_mixture_means(50, gen())
    assert torch.allclose(mu[0], -mu[1]) and torch.allclose(mu[2], -mu[3])
    assert torch.allclose(mu.norm(dim=-1), torch.full((4,), 50**0.5, dtype=mu.dtype))
    assert abs(float(mu[0] @ mu[2])) < 1e-10


def test_labelled_mixture_law(gen):
    means = xor_mixture_means(8, gen(1))
    x, y, comp = labelled_mixture(80_000, means, [1.0, 2.0, 3.0, 0.5], XOR_WEIGHTS, XOR_LABELS, gen(2))
    freq = torch.bincount(comp, minlength=4).double() / len(comp)
    assert (freq - 0.25).abs().max() < 0.01
    assert torch.equal(y, torch.tensor(XOR_LABELS, dtype=y.dtype)[comp])
    for j, s in enumerate((1.0, 2.0, 3.0, 0.5)):
        xj = x[comp == j]
        assert (xj.mean(0) - means[j]).abs().max() < 6 * s / len(xj) ** 0.5
        assert abs(float(xj.var(0).mean()) / s**2 - 1) < 0.03  # sigma_j is the per-coordinate standard deviation


def test_antithetic_sample_has_zero_mean_yx(gen):
    means = xor_mixture_means(6, gen(3))
    x, y, _ = labelled_mixture(101, means, [2.0] * 4, XOR_WEIGHTS, XOR_LABELS, gen(4))
    xa, ya = antithetic(x, y)
    assert xa.shape == (202, 6) and (ya[:, None] * xa).mean(0).abs().max() < 1e-14  # 0 up to summation rounding

"""Injected-input protocol of Appendix E.5 (Algorithm 1) of Shi, Wei and Liang (ICLR 2022) on bundled data.

The source mixes real images (MNIST, CIFAR-10, SVHN) with "injected" inputs without the real input structure
(Gaussian noise, Tiny ImageNet), labels both with a teacher network trained on the real data, and trains a
student on the mixture. Here the real data are scikit-learn's bundled 8x8 digits (no download) and the injected
inputs are Gaussian with the digits' mean and covariance, so that any difference between the two parts comes from
structure beyond the second moments.
"""

from __future__ import annotations

import torch


def load_digits_tensor(dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """The 1797 digits as (n, 64) inputs scaled to [0, 1] and (n,) integer labels 0..9 (scikit-learn, bundled)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return torch.tensor(bunch.data / 16.0, dtype=dtype), torch.tensor(bunch.target, dtype=torch.long)


def gaussian_like(x: torch.Tensor, n: int, generator: torch.Generator, jitter: float = 1e-6) -> torch.Tensor:
    """n samples of N(mean(x), cov(x)): Gaussian inputs with the same first two moments as the rows of x."""
    mean = x.mean(0)
    centred = x - mean
    cov = centred.T @ centred / (x.shape[0] - 1)
    chol = torch.linalg.cholesky(cov + jitter * torch.eye(x.shape[1], dtype=x.dtype))
    z = torch.randn(n, x.shape[1], generator=generator, dtype=x.dtype)
    return mean + z @ chol.T


def split(n: int, n_first: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    perm = torch.randperm(n, generator=generator)
    return perm[:n_first], perm[n_first:]

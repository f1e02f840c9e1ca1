"""scikit-learn's bundled 8x8 handwritten digits (1797 images, shipped with the package: nothing is downloaded), the
one stand-in for image data in the two-layer chapters.

* Zhang et al. (ICML 2024), Sec. 2 and appendix F.4: the digits padded to 10x10 with a one-pixel border that
  carries a label-independent *background*, U[0, 1] in distribution and U[-1, 0] out of distribution
  (:func:`with_border`), the analogue of the red padding of F.4 and of Definition 3.1's background features.
* Shi, Wei and Liang (ICLR 2022), Appendix E.5 (Algorithm 1): "injected" inputs without the real input structure,
  here Gaussian with the digits' mean and covariance (:func:`gaussian_like`).
"""

from __future__ import annotations

import dataclasses

import torch
from sklearn import datasets

SIDE = 10  # side of the padded image


def load_digits(dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """The 1797 digits as (n, 64) pixels scaled to [0, 1] (pixel / 16, exact in every precision) and (n,) integer
    labels 0..9, in scikit-learn's order."""
    bunch = datasets.load_digits()
    return torch.tensor(bunch.data / 16.0, dtype=dtype), torch.tensor(bunch.target, dtype=torch.long)


@dataclasses.dataclass
class DigitsSplit:
    digits: torch.Tensor  # (n, 64) digit pixels in [0, 1]
    labels: torch.Tensor  # (n,) in 0..9


def digit_splits(n_train: int, generator: torch.Generator,
                 dtype=torch.float32) -> tuple[DigitsSplit, DigitsSplit]:
    """The digits shuffled (one ``randperm``) and split into train (the first ``n_train``) and test (the rest)."""
    x, labels = load_digits(dtype)
    order = torch.randperm(len(labels), generator=generator)
    x, labels = x[order], labels[order]
    return DigitsSplit(x[:n_train], labels[:n_train]), DigitsSplit(x[n_train:], labels[n_train:])


def border_mask(side: int = SIDE) -> torch.Tensor:
    """Boolean (side*side,) mask of the one-pixel frame."""
    mask = torch.ones(side, side, dtype=torch.bool)
    mask[1:-1, 1:-1] = False
    return mask.flatten()


def with_border(digits: torch.Tensor, *, split: str, generator: torch.Generator) -> torch.Tensor:
    """Images of shape (n, 100): the digit in the 8x8 centre and a fresh random border (ID U[0,1], OOD U[-1,0])."""
    if split not in ("id", "ood"):
        raise ValueError(f"split must be 'id' or 'ood', got {split!r}")
    n = digits.shape[0]
    mask = border_mask()
    out = torch.zeros(n, SIDE * SIDE, dtype=digits.dtype)
    out[:, ~mask] = digits
    u = torch.rand(n, int(mask.sum()), generator=generator, dtype=digits.dtype)
    out[:, mask] = u if split == "id" else u - 1.0
    return out


def gaussian_like(x: torch.Tensor, n: int, generator: torch.Generator, jitter: float = 1e-6) -> torch.Tensor:
    """n samples of N(mean(x), cov(x)): Gaussian inputs with the same first two moments as the rows of x (the
    injected inputs of Shi et al., E.5, without the digits' structure beyond second moments)."""
    mean = x.mean(0)
    centred = x - mean
    cov = centred.T @ centred / (x.shape[0] - 1)
    chol = torch.linalg.cholesky(cov + jitter * torch.eye(x.shape[1], dtype=x.dtype))
    z = torch.randn(n, x.shape[1], generator=generator, dtype=x.dtype)
    return mean + z @ chol.T


def random_split(n: int, n_first: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A random partition of 0..n-1 (one ``randperm``): the first ``n_first`` indices and the rest."""
    perm = torch.randperm(n, generator=generator)
    return perm[:n_first], perm[n_first:]

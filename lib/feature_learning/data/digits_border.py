"""A bundled-data stand-in for the distribution shifts of Zhang et al. (ICML 2024), Sec. 2 and appendix F.4.

scikit-learn's 8x8 handwritten digits (shipped with the package, nothing is downloaded), scaled to [0, 1] and padded
to 10x10. The 36 border pixels carry a *background* that is independent of the label: U[0, 1] in distribution and
U[-1, 0] out of distribution, the analogue of the red padding of appendix F.4 and of Definition 3.1's background
features. The digit pixels (the core) are unchanged by the shift.
"""

from __future__ import annotations

import dataclasses

import torch

SIDE = 10


def border_mask(side: int = SIDE) -> torch.Tensor:
    """Boolean (side*side,) mask of the one-pixel frame."""
    mask = torch.ones(side, side, dtype=torch.bool)
    mask[1:-1, 1:-1] = False
    return mask.flatten()


@dataclasses.dataclass
class DigitsSplit:
    digits: torch.Tensor  # (n, 64) digit pixels in [0, 1]
    labels: torch.Tensor  # (n,) in 0..9


def load_digit_splits(n_train: int, generator: torch.Generator) -> tuple[DigitsSplit, DigitsSplit]:
    """The 1797 digits of ``sklearn.datasets.load_digits`` shuffled and split into train (n_train) and test."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    labels = torch.tensor(data.target)
    order = torch.randperm(len(labels), generator=generator)
    x, labels = x[order], labels[order]
    return DigitsSplit(x[:n_train], labels[:n_train]), DigitsSplit(x[n_train:], labels[n_train:])


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

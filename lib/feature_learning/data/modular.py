"""k-input modular addition: inputs (a_1..a_k) in Z_p^k, label (a_1 + ... + a_k) mod p.

Dissertation ch. 4, eq. (4.1): the theory uses the full data set D_p = Z_p^k; the experiments split it 50/50
uniformly at random (appendix C.10).
"""

from __future__ import annotations

import dataclasses

import torch


def all_tuples(k: int, p: int) -> torch.Tensor:
    """All p^k inputs as a (p^k, k) long tensor, in lexicographic order."""
    if k < 1 or p < 2:
        raise ValueError(f"need k >= 1 and p >= 2, got k={k}, p={p}")
    grids = torch.meshgrid(*[torch.arange(p)] * k, indexing="ij")
    return torch.stack([g.reshape(-1) for g in grids], dim=1)


def modular_sum(a: torch.Tensor, p: int) -> torch.Tensor:
    """Labels (a_1 + ... + a_k) mod p for inputs of shape (N, k)."""
    return a.sum(dim=1) % p


@dataclasses.dataclass(frozen=True)
class ModularAddition:
    """The whole data set Z_p^k with labels, and a random train/test split of it."""

    k: int
    p: int
    inputs: torch.Tensor  # (p^k, k) long
    labels: torch.Tensor  # (p^k,) long
    train_idx: torch.Tensor  # indices into inputs
    test_idx: torch.Tensor

    @property
    def n(self) -> int:
        return self.inputs.shape[0]


def modular_addition(k: int, p: int, train_fraction: float = 1.0, generator: torch.Generator | None = None):
    """Z_p^k with labels; ``train_fraction`` of it (uniformly at random) for training, the rest for testing.

    With ``train_fraction=1`` the training set is the full D_p of the theory and the test set is empty.
    """
    if not 0.0 < train_fraction <= 1.0:
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction}")
    inputs = all_tuples(k, p)
    labels = modular_sum(inputs, p)
    n = inputs.shape[0]
    order = torch.randperm(n, generator=generator)
    n_train = round(train_fraction * n)
    return ModularAddition(k, p, inputs, labels, order[:n_train].sort().values, order[n_train:].sort().values)


def token_sequences(inputs: torch.Tensor, p: int) -> torch.Tensor:
    """Transformer prompts ``a_1 + a_2 + ... + a_k =`` as tokens (N, 2k): numbers 0..p-1, '+' = p, '=' = p+1.

    The source does not give its token format; this is the k-input version of the format of the grokking code it
    builds on (``a o b =``), stated as an assumption in the chapter.
    """
    n, k = inputs.shape
    seq = torch.full((n, 2 * k), p, dtype=torch.long)
    seq[:, 0::2] = inputs
    seq[:, -1] = p + 1
    return seq

"""Multi-class margins (dissertation ch. 4, Definitions 4.2-4.6)."""

from __future__ import annotations

import torch


def margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """g(theta, x, y) = f[y] - max_{y' != y} f[y'] (Definition 4.2), for logits (..., N, C) -> (..., N)."""
    correct = logits.gather(-1, labels.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    others = logits.scatter(-1, labels.expand(*logits.shape[:-1]).unsqueeze(-1), float("-inf"))
    return correct - others.max(dim=-1).values


def class_weighted_margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """g'(theta, x, y) with the uniform class weighting tau = 1/(C-1) on every wrong label (Definition 4.6)."""
    c = logits.shape[-1]
    correct = logits.gather(-1, labels.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)
    return correct - (logits.sum(dim=-1) - correct) / (c - 1)


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Fraction of argmax hits, over the N axis: (..., N, C) -> (...)."""
    return (logits.argmax(dim=-1) == labels).double().mean(dim=-1)

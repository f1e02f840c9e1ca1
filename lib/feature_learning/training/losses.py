"""Per-example losses used by the two-layer chapters; each returns a tensor of the shape of its first argument's
batch dimensions (the caller averages over examples and sums over replicas)."""

from __future__ import annotations

import torch


def hinge(h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """max{1 - y h, 0} (Zhang et al., ICML 2024, Sec. 3.2)."""
    return torch.clamp(1 - y * h, min=0)


def logistic(h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """log(1 + exp(-y h)) for labels in {-1, +1}."""
    return torch.nn.functional.softplus(-y * h)


def half_squared_error(h: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(1/2) ||h - target||^2 over the last axis."""
    return 0.5 * ((h - target) ** 2).sum(-1)


def replica_mean(per_example: torch.Tensor) -> torch.Tensor:
    """Mean over the examples (last axis) for each replica: shape (R,)."""
    return per_example.mean(-1)

"""FC(m): one hidden layer of m units with quadratic activation, the teacher and student of Appendix E.5
(Algorithm 1) of Shi, Wei and Liang (ICLR 2022). Parameters carry a leading replica dimension R."""

from __future__ import annotations

import dataclasses
import math

import torch

from feature_learning.training.losses import balance_and_confidence  # noqa: F401  (kept importable from here)


@dataclasses.dataclass
class FCParams:
    W: torch.Tensor  # (R, m, d)
    b: torch.Tensor  # (R, m)
    V: torch.Tensor  # (R, c, m)
    c: torch.Tensor  # (R, c)

    def tensors(self) -> list[torch.Tensor]:
        return [self.W, self.b, self.V, self.c]


def init_fc(replicas: int, d: int, m: int, classes: int, generator: torch.Generator,
            dtype=torch.float64) -> FCParams:
    """Standard Gaussian (LeCun) initialisation: W ~ N(0, 1/d), V ~ N(0, 1/m), zero biases."""
    W = torch.randn(replicas, m, d, generator=generator, dtype=dtype) / math.sqrt(d)
    V = torch.randn(replicas, classes, m, generator=generator, dtype=dtype) / math.sqrt(m)
    return FCParams(W, torch.zeros(replicas, m, dtype=dtype), V, torch.zeros(replicas, classes, dtype=dtype))


def fc_quadratic(params: FCParams, x: torch.Tensor) -> torch.Tensor:
    """Logits V (W x + b)^2 + c, shape (R, n, classes); x is (n, d) or (R, n, d)."""
    h = (torch.matmul(x, params.W.transpose(1, 2)) + params.b[:, None, :]) ** 2
    return torch.matmul(h, params.V.transpose(1, 2)) + params.c[:, None, :]

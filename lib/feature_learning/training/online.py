"""Online SGD with fresh i.i.d. batches (Zhang et al., ICML 2024, Eqs. (3)-(4)) on top of the shared loop.

Each step draws a new batch {(x_i, y_i)}_{i<=N} ~ D_train^N and updates

    w_k <- w_k - eta * grad_{w_k} [ (1/N) sum_i loss(h(x_i), y_i) + (lambda/2) sum_k ||w_k||^2 ]
         = (1 - eta*lambda) w_k - eta * grad_{w_k} (1/N) sum_i loss(h(x_i), y_i),

which is plain SGD with (coupled) weight decay lambda: ``OptimConfig(optimizer="sgd", weight_decay=lambda)``.
Replicas see independent batches; their losses are summed, so they train independently.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from feature_learning.training.loop import OptimConfig, fresh_batches, train


def online_sgd(steps: int, lr: float, weight_decay: float) -> OptimConfig:
    """Constant step size, no warm-up, weight decay on the trained parameters (Eq. (4))."""
    return OptimConfig(steps=steps, lr=lr, optimizer="sgd", weight_decay=weight_decay, warmup=0)


def train_online(
    net,
    sample: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    config: OptimConfig,
    *,
    log_every: int = 0,
    log_fn: Callable[[int], dict] | None = None,
) -> dict[str, torch.Tensor]:
    """Train ``net`` (anything with ``parameters()`` and ``__call__``) on fresh batches ``sample(step)`` =
    (inputs, targets) of shape (R, N, ...); ``loss(outputs, targets)`` is per example, shape (R, N)
    (:func:`feature_learning.training.loop.fresh_batches`)."""
    return train(net.parameters(), fresh_batches(net, sample, loss), config, log_every=log_every, log_fn=log_fn)

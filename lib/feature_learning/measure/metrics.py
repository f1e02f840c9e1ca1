"""Metrics of predictions, one argument order: ``metric(prediction, target)``.

Accuracies (of signs, of argmaxes, of whole generated sequences), multi-class margins (dissertation ch. 4,
Definitions 4.2-4.6), the empirical risk of a per-example loss and the first step at which a logged curve reaches a
level. Pure functions of tensors: this module imports nothing
from the package, so both ``training`` and ``measure`` may use it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def sign_accuracy(scores: torch.Tensor, y: torch.Tensor, ties: float = 0.0) -> torch.Tensor:
    """Fraction of examples (last axis) with sign(score) = y, y in {-1, +1}; a score of 0 counts as ``ties`` of a
    hit (default wrong, as at a symmetric initialisation; 0.5 scores a silent network as a coin). (..., n) -> (...),
    float64."""
    hits = (y * scores > 0).double()
    if ties:
        hits = hits + ties * (scores == 0).double()
    return hits.mean(-1)


def argmax_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Fraction of argmax hits over the example axis: logits (..., N, C), labels (..., N) or (N,) -> (...), float64."""
    return (logits.argmax(dim=-1) == labels).double().mean(dim=-1)


def exact_match(sequences: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B,) True where a generated sequence begins with the whole target sequence (B, L): every token right, as for
    the answer of a needle prompt."""
    return (sequences[:, : targets.shape[1]] == targets).all(dim=1)


def _correct(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return logits.gather(-1, labels.expand(*logits.shape[:-1]).unsqueeze(-1)).squeeze(-1)


def margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """g(theta, x, y) = f[y] - max_{y' != y} f[y'] (Definition 4.2), for logits (..., N, C) -> (..., N)."""
    others = logits.scatter(-1, labels.expand(*logits.shape[:-1]).unsqueeze(-1), float("-inf"))
    return _correct(logits, labels) - others.max(dim=-1).values


def class_weighted_margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """g'(theta, x, y) with the uniform class weighting tau = 1/(C-1) on every wrong label (Definition 4.6)."""
    c = logits.shape[-1]
    correct = _correct(logits, labels)
    return correct - (logits.sum(dim=-1) - correct) / (c - 1)


def risk(prediction: torch.Tensor, target: torch.Tensor,
         loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """The empirical risk: the mean over the examples of the per-example ``loss(prediction, target)`` (e.g.
    :func:`feature_learning.training.losses.hinge`), one value per replica."""
    return loss(prediction, target).mean(-1)


def steps_to_reach(curve: torch.Tensor, steps: torch.Tensor, threshold: float) -> torch.Tensor:
    """First logged step at which ``curve`` (T, ...) reaches ``threshold``; inf where it never does."""
    reached = curve >= threshold
    first = torch.where(reached.any(dim=0), reached.float().argmax(dim=0), torch.tensor(-1))
    out = steps[first.clamp_min(0)].double()
    return torch.where(first >= 0, out, torch.tensor(float("inf"), dtype=torch.float64))

"""Per-example losses, one argument order: ``loss(prediction, target)``.

Each returns one value per example, with the batch shape of ``prediction`` (without its class or output axis);
the caller averages over examples and sums over replicas, e.g. ``hinge(net(x), y).mean(-1).sum()``. Labels of the
binary losses are in {-1, +1}. This module imports nothing from the package (``measure`` and ``training`` both use
it).
"""

from __future__ import annotations

import torch


def hinge(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """max{1 - y h, 0} (Zhang et al., ICML 2024, Sec. 3.2; Shi, Wei and Liang, ICLR 2022, eq. (2))."""
    return torch.clamp(1 - target * prediction, min=0)


def weighted_hinge(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The class-balanced hinge alpha_y max{1 - y h, 0} of the general setting of Shi et al. (Appendix A.8,
    eq. (A.293)), alpha_y = 1/(2 Pr[y]) with Pr[y] the share of class y among the examples (last axis, per
    replica): its mean over the examples weighs both classes equally."""
    pos = (target > 0).to(prediction.dtype)
    frac = pos.mean(-1, keepdim=True)
    alpha = pos / (2 * frac) + (1 - pos) / (2 * (1 - frac))
    return alpha * hinge(prediction, target)


def logistic(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """log(1 + exp(-y h)) (Tsoy & Konstantinov, ICML 2024, Sec. 2)."""
    return torch.nn.functional.softplus(-target * prediction)


def logistic_contrastive(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
    """l(phi(x)^T (phi(x+) - phi(x-))) with l(t) = log(1 + exp(-t)), eq. (7.1) of dissertation ch. 7 (Shi et al.,
    ICLR 2023); with ``negative`` the batch mean of phi it is the "multiple negatives" loss (F.38). Features on the
    last axis: (..., n, k) each (``negative`` may broadcast, e.g. (..., 1, k)) -> (..., n)."""
    return torch.nn.functional.softplus(-(anchor * (positive - negative)).sum(-1))


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """-log softmax(logits)[label]: logits (..., C), integer labels (...) -> (...)."""
    flat = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                             reduction="none")
    return flat.reshape(labels.shape)


def squared(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(1/2)(h - y)^2 for a scalar output (the mean squared error of dissertation ch. 3, Sec. B.5.7)."""
    return 0.5 * (prediction - target) ** 2


def half_squared_error(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(1/2) ||h - target||^2 over the last (output) axis."""
    return 0.5 * ((prediction - target) ** 2).sum(-1)


def balance_and_confidence(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The teacher's regulariser R1 + R2 of Shi et al., Appendix E.5, eqs. (291)-(293), per replica, for logits
    (R, n, C): R1 = sum_j pbar_j log pbar_j (negative entropy of the mean prediction: minimising it balances the
    classes), R2 = mean per-sample entropy (minimising it makes each prediction confident). Returns (R1, R2)."""
    prob = torch.softmax(logits, -1)
    logp = torch.log_softmax(logits, -1)
    pbar = prob.mean(-2)
    r1 = (pbar * torch.log(pbar.clamp_min(1e-300))).sum(-1)
    r2 = -(prob * logp).sum(-1).mean(-1)
    return r1, r2

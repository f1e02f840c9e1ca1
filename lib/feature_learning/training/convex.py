"""Exact minimisers of small convex problems: L2-penalised logistic regression on fixed features, and the hard
thresholding projection of iterative hard thresholding (IHT).

Dissertation ch. 6 (Shi et al., CPAL 2024) reduces the population ERM-l2 problem of Sec. 6.4 to two parameters
(eq. E.10): the margin of a block-constant w is alpha S_R + beta S_U, so the population objective is a logistic
regression on the two block sums with the penalty (lambda/2)(r alpha^2 + (d - r) beta^2); a Monte-Carlo sample of the
sums with Newton's method gives its minimiser to float64 accuracy.
"""

from __future__ import annotations

import torch


def logistic_ridge_objective(features: torch.Tensor, penalty: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """mean_i ln(1 + exp(-<w, f_i>)) + (1/2) sum_k penalty_k w_k^2 (every row of ``features`` is a margin: the label
    is already multiplied in)."""
    return torch.nn.functional.softplus(-(features @ w)).mean() + 0.5 * (penalty * w * w).sum()


def logistic_ridge_newton(features: torch.Tensor, penalty: torch.Tensor, iterations: int = 50,
                          tol: float = 1e-13) -> torch.Tensor:
    """Minimise :func:`logistic_ridge_objective` over w in R^k by damped Newton steps (backtracking on the objective);
    for small k (the Hessian is k x k). Strictly convex for penalty > 0. Returns w (k,)."""
    n, k = features.shape
    w = torch.zeros(k, dtype=features.dtype, device=features.device)
    value = logistic_ridge_objective(features, penalty, w)
    for _ in range(iterations):
        margin = features @ w
        p = torch.sigmoid(-margin)  # -l'(margin)
        grad = -(features * p[:, None]).mean(0) + penalty * w
        curvature = p * (1 - p)
        hess = (features * curvature[:, None]).T @ features / n + torch.diag(penalty)
        step = torch.linalg.solve(hess, grad)
        size = 1.0
        while True:
            candidate = w - size * step
            new = logistic_ridge_objective(features, penalty, candidate)
            if new <= value or size < 1e-8:
                break
            size /= 2
        w, decrease, value = candidate, float(value - new), new
        if decrease <= tol * max(1.0, abs(float(value))) and float(grad.abs().max()) < 1e-10:
            break
    return w


def keep_top_k(w: torch.Tensor, k: int) -> torch.Tensor:
    """IHT's projection onto {||w||_0 <= k} along the last axis: keep the k entries of largest |w|, zero the rest."""
    if k >= w.shape[-1]:
        return w
    keep = torch.zeros_like(w, dtype=torch.bool).scatter(-1, w.abs().topk(k, dim=-1).indices, True)
    return torch.where(keep, w, torch.zeros_like(w))


def soft_threshold(w: torch.Tensor, threshold) -> torch.Tensor:
    """The proximal map of threshold * ||w||_1: sign(w) max(|w| - threshold, 0)."""
    return torch.sign(w) * (w.abs() - threshold).clamp_min(0.0)

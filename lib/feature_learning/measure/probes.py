"""Linear probes: "train the best linear classifier on top of the features" (Shi, Wei and Liang, ICLR 2022,
App. E.1; Tsoy & Konstantinov, ICML 2024, Sec. 7; Zhang et al., ICML 2024, Sec. 2).

* :func:`logistic_probe`: binary logistic regression, batched over a leading axis, solved by damped Newton steps
  to the optimum of scikit-learn's objective (so the probe is the best classifier of its family, not a
  fixed number of gradient steps);
* :func:`multiclass_probe`: multinomial logistic regression by scikit-learn (a handful of probes on CPU);
* :func:`ridge_probe`: least squares with a ridge, batched (the second-layer fit of a regression, dissertation ch. 3,
  Algorithm 7);
* :func:`rms_normalize`: the feature scaling of Tsoy & Konstantinov, Sec. 7.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression


def rms_normalize(F_fit: torch.Tensor, F_eval: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Divide both feature sets by the root mean square entry of ``F_fit`` (per leading batch entry), as Tsoy &
    Konstantinov normalise features before their probes (Sec. 7)."""
    rms = F_fit.pow(2).mean((-1, -2), keepdim=True).sqrt().clamp_min(1e-300)
    return F_fit / rms, F_eval / rms


def logistic_probe(F_fit: torch.Tensor, y_fit: torch.Tensor, F_eval: torch.Tensor, y_eval: torch.Tensor,
                   C: float | None, *, iterations: int = 60, standardize: bool = False) -> dict[str, torch.Tensor]:
    """Binary logistic-regression probes, batched over the leading axis B: F (B, n, k), y in {-1, +1} (B, n).

    Minimises 1/2 ||w||^2 + C sum_i ln(1 + exp(-y_i (w . f_i + b))) (scikit-learn's convention; the intercept b is
    not penalised) by ``iterations`` damped Newton steps (step halving until the objective does not increase);
    ``C=None`` is the unpenalised fit (a 1e-10 ridge keeps the Newton system solvable). ``standardize`` first
    rescales each feature by its mean and standard deviation on the fit set (w and b are then in those units).

    Returns eval ``accuracy`` (B,), ``fit_accuracy`` (B,), coefficient ``rms`` (B,), ``w`` (B, k) and ``b`` (B,)."""
    if standardize:
        mu = F_fit.mean(-2, keepdim=True)
        sd = F_fit.std(-2, keepdim=True).clamp_min(1e-300)
        F_fit, F_eval = (F_fit - mu) / sd, (F_eval - mu) / sd
    B, n, k = F_fit.shape
    Z = torch.cat([F_fit, torch.ones(B, n, 1, dtype=F_fit.dtype, device=F_fit.device)], dim=-1)
    ridge = torch.ones(k + 1, dtype=F_fit.dtype, device=F_fit.device)
    ridge[-1] = 0.0
    c = 1.0 if C is None else float(C)
    ridge = ridge * (1e-10 if C is None else 1.0) + 1e-12
    zero = torch.zeros((), dtype=F_fit.dtype, device=F_fit.device)

    def objective(w):
        z = (Z @ w.unsqueeze(-1)).squeeze(-1) * y_fit
        return 0.5 * (ridge * w * w).sum(-1) + c * torch.logaddexp(zero, -z).sum(-1)

    w = torch.zeros(B, k + 1, dtype=F_fit.dtype, device=F_fit.device)
    obj = objective(w)
    for _ in range(iterations):
        z = (Z @ w.unsqueeze(-1)).squeeze(-1) * y_fit
        p = torch.sigmoid(-z)  # -l'(z)
        grad = ridge * w - c * (Z * (p * y_fit).unsqueeze(-1)).sum(1)
        hess = torch.diag_embed(ridge) + c * Z.transpose(-1, -2) @ (Z * (p * (1 - p)).unsqueeze(-1))
        step = torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
        t = torch.ones(B, dtype=w.dtype, device=w.device)
        new = w - step
        new_obj = objective(new)
        for _ in range(30):  # step halving where the objective did not decrease
            bad = new_obj > obj
            if not bad.any():
                break
            t = torch.where(bad, t / 2, t)
            new = w - t.unsqueeze(-1) * step
            new_obj = objective(new)
        w = torch.where((new_obj <= obj).unsqueeze(-1), new, w)
        obj = torch.minimum(new_obj, obj)

    def accuracy(F, y):
        logits = F @ w[:, :k].unsqueeze(-1)
        return ((logits.squeeze(-1) + w[:, k:]) * y > 0).to(F_fit.dtype).mean(-1)

    return {"accuracy": accuracy(F_eval, y_eval), "fit_accuracy": accuracy(F_fit, y_fit),
            "rms": w[:, :k].pow(2).mean(-1).sqrt(), "w": w[:, :k], "b": w[:, k]}


def ridge_probe(F_fit: torch.Tensor, y_fit: torch.Tensor, F_eval: torch.Tensor, y_eval: torch.Tensor,
                ridge: float) -> dict[str, torch.Tensor]:
    """Least-squares probes with an unpenalised intercept, batched over the leading axis B: F (B, n, k), y (B, n).

    Minimises (1/n) ||F w + b - y||^2 + ridge * s ||w||^2 with s the mean squared feature entry on the fit set (so
    ``ridge`` does not depend on the features' scale), by solving the normal equations. Returns the eval and fit
    mean squared errors ``mse`` and ``fit_mse`` (B,), ``w`` (B, k) and ``b`` (B,)."""
    B, n, k = F_fit.shape
    Z = torch.cat([F_fit, torch.ones(B, n, 1, dtype=F_fit.dtype, device=F_fit.device)], dim=-1)
    gram = Z.transpose(-1, -2) @ Z / n
    scale = F_fit.pow(2).mean((-1, -2))
    penalty = torch.ones(k + 1, dtype=F_fit.dtype, device=F_fit.device)
    penalty[-1] = 0.0
    gram = gram + torch.diag_embed(ridge * scale[:, None] * penalty)
    coef = torch.linalg.solve(gram, (Z.transpose(-1, -2) @ y_fit.unsqueeze(-1)).squeeze(-1) / n)
    w, b = coef[:, :k], coef[:, k]

    def mse(F, y):
        return ((F @ w.unsqueeze(-1)).squeeze(-1) + b[:, None] - y).pow(2).mean(-1)

    return {"mse": mse(F_eval, y_eval), "fit_mse": mse(F_fit, y_fit), "w": w, "b": b}


def _numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def multiclass_probe(F_fit, labels_fit, evals: Mapping[str, tuple], *, C: float = 1.0,
                     max_iter: int = 3000) -> dict[str, float | np.ndarray]:
    """Multinomial logistic regression (scikit-learn ``LogisticRegression(C=C, max_iter=max_iter)``, L2 penalty
    1/2 ||W||^2 + C sum_i cross-entropy) fitted on (F_fit (n, k), labels_fit (n,)) and scored (accuracy) on each
    ``name: (F, labels)`` of ``evals``. With a leading batch axis, F_fit (B, n, k) and every eval F (B, n', k), one
    probe per batch entry and arrays (B,) of accuracies (labels shared or (B, n)). Tensors or arrays."""
    F_fit, labels_fit = _numpy(F_fit), _numpy(labels_fit)
    evals = {name: (_numpy(F), _numpy(y)) for name, (F, y) in evals.items()}

    def one(F, y, evaluations):
        clf = LogisticRegression(C=C, max_iter=max_iter).fit(F, y)
        return {name: float(clf.score(Fe, ye)) for name, (Fe, ye) in evaluations.items()}

    if F_fit.ndim == 2:
        return one(F_fit, labels_fit, evals)

    def pick(y, b):
        return y[b] if y.ndim == 2 else y

    rows = [one(F_fit[b], pick(labels_fit, b), {name: (F[b], pick(y, b)) for name, (F, y) in evals.items()})
            for b in range(F_fit.shape[0])]
    return {name: np.array([row[name] for row in rows]) for name in evals}

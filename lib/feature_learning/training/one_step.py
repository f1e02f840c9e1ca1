"""One gradient step that erases the initialisation, then gradient descent on the second layer over the frozen
features: the first step of Algorithm 1 with lambda^(1) = 1/eta^(1) and the later steps of Algorithms 4, 6 and 7
of dissertation ch. 3 (Shi, Wei and Liang, NeurIPS 2023; Barak et al. 2022; Damian et al. 2022).

With weight decay lambda = 1/eta the update W - eta (grad + lambda W) is exactly -eta grad: the first step replaces
the weights by the scaled negative gradient (eqs. (B.16)-(B.17)) and forgets the initialisation (Remark B.13).
:func:`erasing_step` writes it as W <- -eta grad, never as a decay factor (1 - eta lambda), whose rounding can leave
a trace of W^(0) in floating point (for eta = 49, (1/49) * 49 = 0.9999999999999999).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from feature_learning.training.loop import OptimConfig, train
from feature_learning.training.losses import hinge, squared

CHUNK_ELEMENTS = 2**22  # examples per chunk x replicas x units: bounds the memory of a first step on a large sample


def erasing_step(net, x: torch.Tensor, y: torch.Tensor, eta, loss: Callable, *, groups=("W", "a")):
    """One step of the regularised empirical risk (eq. (3.2)) with lambda = 1/eta on the sample (x, y): each group in
    ``groups`` becomes -eta times its gradient of the mean ``loss(net(x), y)``; the other tensors (the fixed biases,
    and ``a`` in Algorithm 7) are kept. ``eta`` is a number or one value per replica (R,). x is (n, d) shared by the
    replicas or (R, n, d) with y (n,) or (R, n). Returns the new network (same ``trained`` groups) and the
    gradients {group: tensor} at the old one, computed by autograd in the net's dtype, over chunks of examples
    (``CHUNK_ELEMENTS``) whose gradients are summed with weights chunk size / n."""
    work = dataclasses.replace(net, trained=tuple(groups)).detached()
    tensors = [getattr(work, g) for g in groups]
    n = x.shape[-2]
    chunk = max(1, CHUNK_ELEMENTS // (net.replicas * net.width))
    total = [torch.zeros_like(t) for t in tensors]
    for start in range(0, n, chunk):
        xs, ys = x[..., start:start + chunk, :], y[..., start:start + chunk]
        # replicas are independent: the sum over replicas trains each on its own
        objective = loss(work(xs), ys).sum(-1).sum() / n
        for acc, g in zip(total, torch.autograd.grad(objective, tensors), strict=True):
            acc += g
    grads = dict(zip(groups, total, strict=True))
    eta = torch.as_tensor(eta, dtype=net.W.dtype, device=net.W.device)
    new = {}
    for g, grad in grads.items():
        scale = eta.reshape(-1, *([1] * (grad.dim() - 1))) if eta.dim() else eta
        new[g] = (-scale * grad).detach().requires_grad_(g in net.trained)
    return dataclasses.replace(net, **new), grads


LOSSES = {
    # name: (per-example loss, -dl/df): the hinge's subgradient y 1[y f < 1] (0 at y f = 1), the square's y - f
    "hinge": (hinge, lambda f, y: y * (y * f < 1).to(f.dtype)),
    "squared": (squared, lambda f, y: y - f),
}


def second_layer_gd(features: torch.Tensor, y: torch.Tensor, a: torch.Tensor, *, steps: int, lr, loss: str = "hinge",
                    log_at=(), log_fn=None) -> tuple[torch.Tensor, dict]:
    """Gradient descent on the second layer over frozen features (Algorithm 4 / Theorem 3.4, the later steps of
    Algorithms 6 and 7): the mean ``loss`` of f = features @ a on one sample, features (R, n, m) and targets (R, n)
    or (n,), from ``a`` (R, m), with analytic (sub)gradients (``LOSSES``). ``lr``: a number or one step size
    per replica (R,) (replica r's gradient is scaled by lr_r / max lr).

    Theorem 3.4 bounds the loss at some t in [T]; we return, per replica, the iterate a^(t) with the smallest loss on
    the sample (the loss is computed at every step anyway, for the gradient), and the history: ``log_fn(step, a)``
    at the steps in ``log_at`` and the sample loss of the returned iterate, ``best_loss`` (R,)."""
    value, slope = LOSSES[loss]
    lr = torch.as_tensor(lr, dtype=features.dtype, device=features.device)
    top = float(lr.max())
    scale = (lr / top).reshape(-1, 1) if lr.dim() else 1.0
    a = a.detach().clone()
    best = a.clone()
    best_loss = torch.full(a.shape[:1], float("inf"), dtype=features.dtype, device=features.device)
    n = features.shape[-2]
    Ft = features.transpose(-1, -2)

    def grad(step):
        f = (features @ a.unsqueeze(-1)).squeeze(-1)
        current = value(f, y).mean(-1)
        better = current < best_loss
        best.copy_(torch.where(better[:, None], a, best))
        best_loss.copy_(torch.where(better, current, best_loss))
        return [-(Ft @ slope(f, y).unsqueeze(-1)).squeeze(-1) / n * scale]

    history = train([a], None, OptimConfig(steps=steps, lr=top, optimizer="gd"), grad_fn=grad,
                    log_at=log_at, log_fn=None if log_fn is None else (lambda step: log_fn(step, a)))
    f = (features @ a.unsqueeze(-1)).squeeze(-1)  # the last iterate is a candidate too
    current = value(f, y).mean(-1)
    better = current < best_loss
    best = torch.where(better[:, None], a, best)
    history["best_loss"] = torch.where(better, current, best_loss)
    return best, history

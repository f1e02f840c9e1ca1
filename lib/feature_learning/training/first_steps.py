"""The first steps that erase the initialisation, in one place: the one gradient step of dissertation ch. 3
(Algorithm 1 with lambda^(1) = 1/eta^(1), Shi, Wei and Liang, NeurIPS 2023) followed by gradient descent on the
second layer over the frozen features (Algorithms 4, 6 and 7; Barak et al. 2022; Damian et al. 2022), and the two
full-batch steps of eq. (4) of Shi, Wei and Liang (ICLR 2022 = dissertation ch. 2, Theorem 26): step 1's weight
decay lambda_w = 1/(2 eta) erases the initialisation exactly, then the hinge gradients of the noise-smoothed network
(Lemma 12), written out and batched over replicas.

With weight decay lambda = 1/eta the update W - eta (grad + lambda W) is exactly -eta grad: the first step replaces
the weights by the scaled negative gradient (eqs. (B.16)-(B.17)) and forgets the initialisation (Remark B.13).
:func:`erasing_step` writes it as W <- -eta grad, never as a decay factor (1 - eta lambda), whose rounding can leave
a trace of W^(0) in floating point (for eta = 49, (1/49) * 49 = 0.9999999999999999); eq. (4)'s steps set a decay
factor within 1e-12 of zero to exactly zero (``_decay``).
"""


from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from feature_learning.models.two_layer import (
    TwoLayerNet,
    smoothed_trunc_relu,
    smoothed_trunc_relu_grad,
)
from feature_learning.training.loop import OptimConfig, train
from feature_learning.training.losses import hinge, squared

CHUNK_ELEMENTS = 2**22  # examples per chunk x replicas x units: bounds the memory of a first step on a large sample
DRAW_CHUNK = 2**20  # examples per replica drawn at once by a streamed first step (erasing_step_streamed)


def erasing_step(net, x: torch.Tensor, y: torch.Tensor, eta, loss: Callable, *, groups=("W", "a")):
    """One step of the regularised empirical risk (eq. (3.2)) with lambda = 1/eta on the sample (x, y): each group in
    ``groups`` becomes -eta times its gradient of the mean ``loss(net(x), y)``; the other tensors (the fixed biases,
    and ``a`` in Algorithm 7) are kept. ``eta`` is a number or one value per replica (R,). x is (n, d) shared by the
    replicas or (R, n, d) with y (n,) or (R, n). Returns the new network (same ``trained`` groups) and the
    gradients {group: tensor} at the old one, computed by autograd in the net's dtype, over chunks of examples
    (``CHUNK_ELEMENTS``) whose gradients are summed with weights chunk size / n."""
    return erasing_step_streamed(net, lambda count: (x, y), x.shape[-2], eta, loss, groups=groups, draw_chunk=None)


def erasing_step_streamed(net, draw: Callable, n: int, eta, loss: Callable, *, groups=("W", "a"),
                          draw_chunk: int | None = DRAW_CHUNK):
    """:func:`erasing_step` on a sample of n examples that is never held whole: ``draw(count)`` returns the next
    ``count`` examples (x, y) of every replica (shapes as in :func:`erasing_step`), called with counts of at most
    ``draw_chunk`` (all n at once where ``draw_chunk`` is None or at least n) in order. Memory stays at one drawn
    chunk whatever n. Where one call draws the whole sample, the arithmetic is that of the materialised step on the
    same draws, operation for operation."""
    work = dataclasses.replace(net, trained=tuple(groups)).detached()
    tensors = [getattr(work, g) for g in groups]
    chunk = max(1, CHUNK_ELEMENTS // (net.replicas * net.width))
    total = [torch.zeros_like(t) for t in tensors]
    block = n if draw_chunk is None else draw_chunk
    for first in range(0, n, block):
        x, y = draw(min(block, n - first))
        for start in range(0, x.shape[-2], chunk):
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

    def scores(w):
        # row vector times matrix: on the CPU, torch's batched matrix-vector product is 2-7 times slower
        return (w.unsqueeze(-2) @ Ft).squeeze(-2)

    def grad(step):
        f = scores(a)
        current = value(f, y).mean(-1)
        better = current < best_loss
        best.copy_(torch.where(better[:, None], a, best))
        best_loss.copy_(torch.where(better, current, best_loss))
        return [-(slope(f, y).unsqueeze(-2) @ features).squeeze(-2) / n * scale]

    history = train([a], None, OptimConfig(steps=steps, lr=top, optimizer="gd"), grad_fn=grad,
                    log_at=log_at, log_fn=None if log_fn is None else (lambda step: log_fn(step, a)))
    f = scores(a)  # the last iterate is a candidate too
    current = value(f, y).mean(-1)
    better = current < best_loss
    best = torch.where(better[:, None], a, best)
    history["best_loss"] = torch.where(better, current, best_loss)
    return best, history


# -- the two full-batch steps (eq. (4), Theorem 26) -----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class StepConfig:
    """One full-batch step of eq. (4): step size, penalties lambda_a and lambda_w, noise level sigma_xi."""

    eta: float
    lam_a: float
    lam_w: float
    noise_std: float



def _decay(eta: float, lam: float) -> float:
    factor = 1.0 - 2.0 * eta * lam
    return 0.0 if abs(factor) < 1e-12 else factor  # lambda = 1/(2 eta): exact erasure


def class_weights(y: torch.Tensor, weighted: torch.Tensor | None = None) -> torch.Tensor:
    """alpha_n = 1/(2 Pr[y = y_n]) with Pr the share of the class in the sample (the class-weighted hinge of the
    general setting, A.293) for the replicas flagged in ``weighted`` (R,), 1 for the others: shape of y (R, n)."""
    alpha = torch.ones_like(y)
    if weighted is not None and bool(weighted.any()):
        pos = (y > 0).to(y.dtype)
        frac = pos.mean(-1, keepdim=True)
        alpha = torch.where(weighted[:, None], pos / (2 * frac) + (1 - pos) / (2 * (1 - frac)), alpha)
    return alpha


def hinge_gradients(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor | None = None,
                    chunk: int = 2048) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (W, b, a) of the mean (class-weighted) hinge loss of the noise-smoothed network (eq. (3),
    ``net.noise_std``) by Lemma 12's formulas, summed over chunks of samples (so that a full batch of 50,000
    samples never needs its (R, n, 2m) activations at once): with c_n = -alpha_n y_n 1[y_n g(x_n) < 1]/n,
    dL/da_i = sum_n c_n sigma~(z_ni), dL/dw_i = a_i sum_n c_n sigma~'(z_ni) x_n, dL/db_i = a_i sum_n c_n
    sigma~'(z_ni), where sigma~' = Pr_xi[z + xi in (0, 1)] (the indicator expectation, with xi in it). ``alpha``
    (R, n): the class weights of :func:`class_weights` (default 1). Checked against autograd in the tests."""
    n = x.shape[-2]
    alpha = torch.ones_like(y) if alpha is None else alpha
    gW, gb, ga = torch.zeros_like(net.W), torch.zeros_like(net.b), torch.zeros_like(net.a)
    for start in range(0, n, chunk):
        xc, yc = x[:, start:start + chunk], y[:, start:start + chunk]
        z = net.preactivation(xc)
        act = smoothed_trunc_relu(z, net.noise_std)
        out = (act * net.a[:, None, :]).sum(-1)
        c = -(alpha[:, start:start + chunk] * yc) * (yc * out < 1).to(z.dtype) / n  # (R, chunk)
        ga += torch.einsum("rn,rni->ri", c, act)
        G = c[..., None] * smoothed_trunc_relu_grad(z, net.noise_std)  # (R, chunk, 2m), times a_i below
        gW += torch.einsum("rni,rnd->rid", G, xc)
        gb += G.sum(1)
    return gW * net.a[..., None], gb * net.a, ga


def full_batch_step(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, step: StepConfig,
                    alpha: torch.Tensor | None = None) -> TwoLayerNet:
    """One step of eq. (4) on the whole sample (the "approximate full gradient" of E.1), replicas independent:
    theta <- (1 - 2 eta lambda) theta - eta grad L(theta; sigma_xi), with b unpenalised and the decay set to exactly
    0 where lambda = 1/(2 eta) (the erasure of Theorem 26). L is the mean hinge loss of the noise-smoothed network
    (eq. (3), :func:`hinge_gradients`), class-weighted with ``alpha`` (:func:`class_weights`) where given."""
    with torch.no_grad():
        gW, gb, ga = hinge_gradients(dataclasses.replace(net, noise_std=step.noise_std), x, y, alpha)
        return dataclasses.replace(net, W=_decay(step.eta, step.lam_w) * net.W - step.eta * gW,
                                   b=net.b - step.eta * gb, a=_decay(step.eta, step.lam_a) * net.a - step.eta * ga)


def two_steps(init: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, steps: tuple[StepConfig, StepConfig],
              alpha: torch.Tensor | None = None) -> tuple[TwoLayerNet, TwoLayerNet]:
    """The networks after steps 1 and 2 (full batch, in the dtype of ``init``: float32 in
    :func:`~.runs.parity_program`)."""
    one = full_batch_step(init, x, y, steps[0], alpha)
    return one, full_batch_step(one, x, y, steps[1], alpha)

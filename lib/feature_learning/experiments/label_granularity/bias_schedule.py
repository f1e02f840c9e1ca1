"""Online SGD on the weights with a hand-set bias schedule (Hong et al., "How does pretraining label granularity
affect generalization", appendix B.3 and F.1), on top of the shared loop.

At every step a fresh batch (X^(t), y^(t)) gives the weight step of eq. (5), Delta w = -eta grad, and the bias
follows, not a gradient, but

* eq. (7) (coarse labels):  b <- b - ||Delta w||_2 / lambda,
* eq. (93) (fine labels):   b <- b - min(||Delta w||_2 / lambda, 0.1 max_{n,p} <Delta w, x^(t+1)_{n,p}>),
  a look-ahead on the next batch,

with lambda = ln^5(d) in the source (a knob here: at d of a few dozen ln^5 d is about 10^3). Both are written as
gradient-descent steps with step size eta on a pseudo-gradient of b (||grad|| / lambda, resp. the min of eq. (93)
divided by eta), so the loop is :func:`feature_learning.training.loop.train` with ``optimizer="gd"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from feature_learning.models.patch_conv import MAX_PRE_ELEMENTS, PatchConvNet, chunk_ranges, scratch
from feature_learning.training.loop import OptimConfig, train

BIAS_RULES = ("eq7", "eq93")


def bias_pseudo_gradient(grad_W: torch.Tensor, lam: float, rule: str = "eq7",
                         X_next: torch.Tensor | None = None, workspace: dict | None = None,
                         max_elements: int = MAX_PRE_ELEMENTS) -> torch.Tensor:
    """The b-"gradient" whose step -eta * it is eq. (7) or eq. (93) for the weight step Delta w = -eta grad_W.

    grad_W (R, C, m, d); X_next (R, N, P, d) the next batch (eq. (93) only); ``workspace`` reused scratch memory for
    the (R, moved, N P) look-ahead products (:func:`feature_learning.models.patch_conv.scratch`), computed in chunks
    of patches when they exceed ``max_elements`` elements (the max over chunks is the max: the same values).
    Returns (R, C, m)."""
    norm = grad_W.norm(dim=-1) / lam
    if rule == "eq7":
        return norm
    if rule != "eq93":
        raise ValueError(f"unknown bias rule {rule!r}; use one of {BIAS_RULES}")
    if X_next is None:
        raise ValueError("eq. (93) looks ahead: give the next batch X_next")
    R, C, m, d = grad_W.shape
    # max over the next batch's patches of <Delta w, x> / eta = max of <-grad, x>, for the neurons that moved
    moved = (norm.reshape(R, C * m) > 0).any(0).nonzero().squeeze(-1)
    rows = -grad_W.reshape(R, C * m, d).index_select(1, moved)
    lhs, rhs = rows, X_next.reshape(R, -1, d).transpose(1, 2)
    parts = chunk_ranges(rhs.shape[2], R * lhs.shape[1], max_elements)
    top = None
    for lo, hi in parts:
        part = rhs if len(parts) == 1 else rhs[..., lo:hi]
        if workspace is None:
            inner = torch.bmm(lhs, part)
        else:
            inner = torch.bmm(lhs, part, out=scratch(workspace, "look_ahead", (R, lhs.shape[1], part.shape[2]),
                                                     grad_W.dtype, grad_W.device))
        top = inner.amax(dim=-1) if top is None else torch.maximum(top, inner.amax(dim=-1))
    look = torch.zeros(R, C * m, dtype=grad_W.dtype, device=grad_W.device)
    look.index_copy_(1, moved, 0.1 * top)
    look = look.view(R, C, m)
    return torch.minimum(norm, look)


def train_bias_schedule(net: PatchConvNet, sample: Callable[[int], tuple[torch.Tensor, torch.Tensor]], *,
                        steps: int, lr: float, lam: float, rule: str = "eq7", log_at: Iterable[int] = (),
                        log_fn: Callable[[int], dict] | None = None, progress: bool | None = None,
                        description: str = "") -> dict[str, torch.Tensor]:
    """Train ``net`` in place for ``steps`` steps on fresh batches ``sample(step)`` = (X (R, N, P, d), labels
    (R, N)); eq. (5) for W and ``rule`` ("eq7" or "eq93") for b. ``sample`` is called once per step, in order
    (eq. (93) draws batch t + 1 during step t and trains on it at step t + 1). Returns the loop's history, with
    ``log_fn(step)`` recorded before the update of each step in ``log_at`` and after the last step."""
    if rule not in BIAS_RULES:
        raise ValueError(f"unknown bias rule {rule!r}; use one of {BIAS_RULES}")
    cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def batch(step: int):
        if step not in cache:
            cache[step] = sample(step)
        return cache[step]

    def grad_fn(step: int):
        X, labels = batch(step)
        grad_W, _ = net.gradient(X, labels)
        X_next = batch(step + 1)[0] if rule == "eq93" else None
        grad_b = bias_pseudo_gradient(grad_W, lam, rule, X_next, net.workspace, net.max_elements)
        cache.pop(step, None)
        return grad_W, grad_b

    config = OptimConfig(steps=steps, lr=lr, optimizer="gd")
    return train(net.parameters(), None, config, log_at=log_at, log_fn=log_fn, grad_fn=grad_fn, progress=progress,
                 description=description)

"""Full-batch gradient descent on the logistic loss of a batched two-layer network (the discretised gradient flow
of eq. (1) in Tsoy & Konstantinov, ICML 2024), with an epoch-dependent step size and snapshots at chosen epochs.

Replicas (seeds, widths padded to one m, data sets) share nothing: every replica takes its own GD step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from feature_learning.models.bias_free_relu import logistic_loss_and_grads


def four_neuron_schedule(epoch: int) -> float:
    """The step size of the source's four-neuron experiment (Sec. 5.4.2, decoded from the text and the authors'
    replication code): 4 for 12 epochs, then 2^-7 until 2^13, a linear ramp to 2^-2 at 2^14, then doubling every
    2^9 epochs (about 2^30 at 2^15) to offset the exponentially vanishing gradients. Needs float64."""
    base = 2.0**-7
    if epoch < 12:
        return 4.0
    if epoch < 2**13:
        return base
    if epoch < 2**14:
        return base * (1 + 2**5 * (epoch / 2**13 - 1))
    return base * (1 + 2 ** (5 + (epoch - 2**14) / 2**9))


def gradient_descent(u: torch.Tensor, V: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, epochs: int,
                     lr: float | Callable[[int], float], snapshot_epochs: Sequence[int] = (),
                     log_every: int = 0) -> dict[str, torch.Tensor]:
    """Run ``epochs`` full-batch GD steps from (u, V) (not modified). Returns a dict with the final ``u``, ``V``,
    the ``loss`` (T, R) at every ``log_every`` epochs (and the last) with their ``epoch`` (T,), and snapshots of
    ``u`` (S, R, m) and ``V`` (S, R, m, d) at ``snapshot_epochs`` (epoch e = the weights after e steps)."""
    u, V = u.clone(), V.clone()
    rate = lr if callable(lr) else (lambda _e, value=float(lr): value)
    wanted = set(int(e) for e in snapshot_epochs)
    snaps_u, snaps_V, snap_e, losses, loss_e = [], [], [], [], []
    for epoch in range(epochs + 1):
        if epoch in wanted:
            snaps_u.append(u.clone())
            snaps_V.append(V.clone())
            snap_e.append(epoch)
        if epoch == epochs:
            loss, _, _ = logistic_loss_and_grads(u, V, X, y)
            losses.append(loss)
            loss_e.append(epoch)
            break
        loss, gu, gV = logistic_loss_and_grads(u, V, X, y)
        if log_every and epoch % log_every == 0:
            losses.append(loss)
            loss_e.append(epoch)
        step = rate(epoch)
        u -= step * gu
        V -= step * gV
    out = {"u": u, "V": V, "loss": torch.stack(losses), "epoch": torch.tensor(loss_e)}
    if snap_e:
        out.update(snap_u=torch.stack(snaps_u), snap_V=torch.stack(snaps_V), snap_epoch=torch.tensor(snap_e))
    return out


def linearized_flow(u: torch.Tensor, V: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, epochs: int,
                    lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Euler steps of the linearised ("disentangled") dynamics, eq. (2) of the source: du/dt = G(v),
    dv/dt = u grad G(v), i.e. gradient flow with -l'(f y) frozen at -l'(0) = 1/2. Neurons are independent."""
    u, V = u.clone(), V.clone()
    Xb = X.unsqueeze(0).expand(V.shape[0], *X.shape)
    w = 0.5 * y / y.shape[-1]
    for _ in range(epochs):
        pre = Xb @ V.transpose(-1, -2)
        du = (torch.relu(pre) * w[None, :, None]).sum(1)
        dV = u.unsqueeze(-1) * (((pre > 0).to(pre.dtype) * w[None, :, None]).transpose(-1, -2) @ Xb)
        u += lr * du
        V += lr * dV
    return u, V

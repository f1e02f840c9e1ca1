"""The looped-transformer trainer (dissertation ch. 8); the ICL trainers of ch. 5 live in
:mod:`feature_learning.experiments.icl_model_scale`."""

from __future__ import annotations

import torch

from feature_learning.data.in_context import gaussian_design
from feature_learning.training.loop import OptimConfig, train


def train_looped_transformer(d: int, n: int, loops: int, steps: int, batch: int, generator: torch.Generator,
                             restarts: int = 4, lr: float = 3e-3, init_scale: float = 0.01, dtype=torch.float64):
    """Train looped linear transformers from scratch (not in the source; an extension of ch. 8).

    Q, P in R^{(d+1) x (d+1)} are shared by all loops, each loop has its own learnable step eta_t, scores are scaled
    by 1/n, and the loss is E (<TF(Z^(0)), theta*> - alpha)^2 over fresh prompts (Gaussian X, theta* on the sphere,
    alpha ~ N(0, 1)) with Adam. ``restarts`` independent initialisations train as one batched program (replica
    dimension R, losses summed) on the same prompts. The forward pass is :func:`looped_query_rows` (exactly the
    looped transformer, on the only row that changes). Returns (Q (R, d+1, d+1), P, etas (R, T), history).
    """
    R = restarts
    Q = (init_scale * torch.randn(R, d + 1, d + 1, generator=generator, dtype=dtype)).requires_grad_()
    P = (init_scale * torch.randn(R, d + 1, d + 1, generator=generator, dtype=dtype)).requires_grad_()
    etas = torch.full((R, loops), 0.5, dtype=dtype).requires_grad_()

    def replica_losses(step: int) -> torch.Tensor:
        X, y, theta = gaussian_design(batch, n, d, generator, dtype)
        alpha = torch.randn(batch, generator=generator, dtype=dtype)
        Xy = torch.cat([X, y[..., None]], dim=2)
        S = Xy.transpose(1, 2) @ Xy
        z = torch.cat([torch.zeros(batch, d, dtype=dtype), alpha[:, None]], dim=1).expand(R, batch, d + 1)
        for t in range(loops):
            z = z - etas[:, t, None, None] / n * torch.einsum("rbi,rij,bjk,rkl->rbl", z, Q, S, P)
        tf = -z[..., :d]
        return (((tf * theta).sum(-1) - alpha) ** 2).mean(-1)

    history = train([Q, P, etas], lambda s: replica_losses(s).sum(),
                    OptimConfig(steps=steps, lr=lr, warmup=20, schedule="cosine"),
                    log_every=max(1, steps // 20), log_fn=lambda s: {"loss": replica_losses(s)})
    return Q.detach(), P.detach(), etas.detach(), history


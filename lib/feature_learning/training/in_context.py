"""Training loops for the in-context-learning chapters (dissertation ch. 5 and ch. 8)."""

from __future__ import annotations

import torch

from feature_learning.data.in_context import gaussian_design
from feature_learning.models.linear_attention import lsa_population_loss
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


def train_rank_r_lsa(Lam: torch.Tensor, N: int, ranks, steps: int, generator: torch.Generator,
                     lr: float = 0.05, init_scale: float = 0.01):
    """Gradient training (Adam) of rank-r factorised reduced LSAs U = A B^T (A, B in R^{d x r}), u = 1, on the exact
    population loss of Lemma 5.1, whose minimiser Theorem 5.4.1 gives. All ranks train as one batched program:
    replica k holds d x d factors whose columns beyond ranks[k] are masked to zero. Returns (U (K, d, d), history)."""
    d, K = Lam.shape[0], len(ranks)
    mask = (torch.arange(d)[None, None, :] < torch.tensor(ranks)[:, None, None]).to(Lam.dtype)  # (K, 1, d)
    A = (init_scale * torch.randn(K, d, d, generator=generator, dtype=Lam.dtype)).requires_grad_()
    B = (init_scale * torch.randn(K, d, d, generator=generator, dtype=Lam.dtype)).requires_grad_()
    ones = torch.ones(K, dtype=Lam.dtype)

    def U_of() -> torch.Tensor:
        return (A * mask) @ (B * mask).transpose(1, 2)

    def loss_fn(step: int) -> torch.Tensor:
        return lsa_population_loss(U_of(), ones, Lam, N).sum()

    history = train([A, B], loss_fn, OptimConfig(steps=steps, lr=lr, warmup=10, schedule="cosine",
                                                 betas=(0.9, 0.999)),
                    log_every=max(1, steps // 100),
                    log_fn=lambda s: {"loss": lsa_population_loss(U_of(), ones, Lam, N)})
    return U_of().detach(), history


def min_norm_diagonal_heads(V0: torch.Tensor, a: torch.Tensor, pairs, gamma: float, steps: int,
                            penalty: float = 1e3, lr: float = 1e-2):
    """Search for a smaller-norm zero-loss model in the diagonal family of Theorem 5.5.1 with the same a: minimise
    ||V||_F^2 + penalty * sum relu(1 - margin)^2 over every (task, query pattern) at N = infinity (Adam from V0),
    then rescale so that the minimum margin is exactly 1 (g is 1-homogeneous in V), which makes the result feasible.
    A check of the min-norm claim, not the exact lambda -> 0+ optimum. Returns (V, squared norm, min margin)."""
    from feature_learning.data.in_context import parity_population_features

    d = V0.shape[0]
    z, phi, y, _, _ = parity_population_features(d, pairs, gamma)
    feats = z * phi
    V = V0.clone().requires_grad_()

    def loss_fn(step: int) -> torch.Tensor:
        margin = y * (torch.relu(feats @ V) @ a)
        return (V**2).sum() + penalty * (torch.relu(1 - margin) ** 2).sum()

    train([V], loss_fn, OptimConfig(steps=steps, lr=lr, warmup=10, schedule="cosine", betas=(0.9, 0.999)))
    with torch.no_grad():
        margin = y * (torch.relu(feats @ V) @ a)
        V = V / margin.min()
        margin = y * (torch.relu(feats @ V) @ a)
    return V.detach(), float((V**2).sum()), float(margin.min())


def train_icl_transformer(config, prior: torch.Tensor, tau: float, M: int, steps: int, batch: int,
                          generator: torch.Generator, replicas: int = 1, lr: float = 1e-3, weight_decay: float = 1e-4,
                          device: torch.device | str = "cpu"):
    """Train small softmax transformers (:class:`~feature_learning.models.transformer.Transformer` on real-valued
    tokens) on the synthetic binary ICL task of :func:`icl_classification_tokens` with the logistic loss on fresh
    batches (AdamW). ``config.vocab`` must be d+1 and ``config.n_out`` 1. The ``replicas`` (seeds) differ in their
    initialisation and see the same batches; weights and prompts are drawn on the CPU from ``generator`` and moved to
    ``device``, so CPU and CUDA runs see the same numbers. Returns (model, history)."""
    from feature_learning.data.in_context import icl_classification_tokens
    from feature_learning.models.transformer import init_transformer

    d = prior.shape[0]
    model = init_transformer(config, replicas=replicas, generator=generator, device=device)

    def loss_fn(step: int) -> torch.Tensor:
        tokens, yq = icl_classification_tokens(batch, M, d, prior, tau, generator)
        tokens, yq = tokens.to(device), yq.to(device)
        logit = model.forward_continuous(tokens)[..., 0]  # (R, B)
        return torch.nn.functional.softplus(-yq * logit).mean(-1).sum()

    history = train(model.parameters(), loss_fn, OptimConfig(steps=steps, lr=lr, weight_decay=weight_decay,
                                                             warmup=20, schedule="cosine"),
                    log_every=max(1, steps // 10), log_fn=lambda s: {"loss": loss_fn(s)})
    return model, history

"""Training the k-th power network on k-input modular addition (dissertation ch. 4, section 4.5, appendix C.10)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from feature_learning.data.modular import ModularAddition, token_sequences
from feature_learning.measure.metrics import argmax_accuracy, margins
from feature_learning.models.poly_net import PolyNet, init_poly_net
from feature_learning.models.transformer import Transformer, TransformerConfig, init_transformer
from feature_learning.training.loop import OptimConfig, minibatches, train

EVAL_CHUNK = 65536  # rows per forward pass when evaluating on all of Z_p^k (p^k reaches millions at `full`)


def logits_in_chunks(model, inputs: torch.Tensor, chunk: int = EVAL_CHUNK) -> torch.Tensor:
    """model(inputs) as (R, N, C), computed ``chunk`` rows at a time so that the hidden layer fits in memory."""
    with torch.no_grad():
        return torch.cat([model(inputs[i : i + chunk]) for i in range(0, len(inputs), chunk)], dim=1)


def regularized_objective(net: PolyNet, inputs: torch.Tensor, labels: torch.Tensor, lam: float) -> torch.Tensor:
    """Definition 4.1: mean cross-entropy + lambda ||theta||_{2,k+1} (the norm is not squared), summed over replicas."""
    logits = net(inputs)  # (R, N, p)
    ce = F.cross_entropy(logits.flatten(0, 1), labels.repeat(net.replicas), reduction="none")
    per_replica = ce.view(net.replicas, -1).mean(dim=1)
    return (per_replica + lam * net.group_norm()).sum()


def train_poly_net(
    data: ModularAddition,
    width: int,
    config: OptimConfig,
    *,
    norm_penalty: float = 0.0,
    batch_size: int = 1024,
    replicas: int = 1,
    init_scale: float = 0.1,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float64,
    log_every: int = 100,
) -> tuple[PolyNet, dict[str, torch.Tensor]]:
    """Train ``replicas`` independent networks as one tensor program.

    ``norm_penalty`` > 0 is the source's objective (Definition 4.1); the experiments' recipe (AdamW weight decay,
    C.10.1) is ``config.weight_decay`` with ``norm_penalty=0``. Logged: train/test accuracy and the normalised
    margin over the whole of Z_p^k (Definition 4.4), per replica.
    """
    net = init_poly_net(data.k, data.p, width, replicas, init_scale, generator, dtype, device)
    inputs, labels = data.inputs.to(device), data.labels.to(device)
    train_idx, test_idx = data.train_idx.to(device), data.test_idx.to(device)
    batch = minibatches(train_idx, batch_size, generator)

    def loss(step: int) -> torch.Tensor:
        idx = batch(step)
        return regularized_objective(net, inputs[idx], labels[idx], norm_penalty)

    def log(step: int) -> dict[str, torch.Tensor]:
        logits = logits_in_chunks(net, inputs)
        norm = net.group_norm()
        out = {
            "train_acc": argmax_accuracy(logits[:, train_idx], labels[train_idx]),
            # normalised margin over all of Z_p^k (Definition 4.4): min g(theta) / ||theta||^(k+1)
            "margin": margins(logits, labels).min(dim=-1).values / norm.pow(net.homogeneity),
            "norm": norm,
        }
        if len(test_idx):
            out["test_acc"] = argmax_accuracy(logits[:, test_idx], labels[test_idx])
        return out

    history = train(net.parameters(), loss, config, log_every=log_every, log_fn=log)
    return net.detached(), history


def train_transformer(
    data: ModularAddition,
    model_config: TransformerConfig,
    config: OptimConfig,
    *,
    batch_size: int = 1024,
    replicas: int = 1,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
    log_every: int = 100,
) -> tuple[Transformer, dict[str, torch.Tensor]]:
    """Train ``replicas`` transformers on the prompts ``a_1 + ... + a_k =`` with cross-entropy on the answer.

    Logged per replica: train and test accuracy.
    """
    model = init_transformer(model_config, replicas, generator, device=device)
    tokens = token_sequences(data.inputs, data.p).to(device)
    labels = data.labels.to(device)
    train_idx, test_idx = data.train_idx.to(device), data.test_idx.to(device)
    batch = minibatches(train_idx, batch_size, generator)

    def loss(step: int) -> torch.Tensor:
        idx = batch(step)
        logits = model(tokens[idx])
        return F.cross_entropy(logits.flatten(0, 1), labels[idx].repeat(replicas), reduction="sum") / len(idx)

    def log(step: int) -> dict[str, torch.Tensor]:
        logits = logits_in_chunks(model, tokens)
        out = {"train_acc": argmax_accuracy(logits[:, train_idx], labels[train_idx])}
        if len(test_idx):
            out["test_acc"] = argmax_accuracy(logits[:, test_idx], labels[test_idx])
        return out

    history = train(model.parameters(), loss, config, log_every=log_every, log_fn=log)
    return model, history

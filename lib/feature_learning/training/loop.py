"""One optimisation loop for every chapter: AdamW (or SGD) with linear warm-up and an optional cosine decay.

The loss is a closure of the step number, so full-batch, mini-batch and online training share the loop; models
with a leading replica dimension return the sum of the replicas' losses, which trains the replicas independently
(Adam's update is element-wise, and the replicas share no parameter).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    steps: int
    lr: float
    optimizer: str = "adamw"  # "adamw" or "sgd"
    weight_decay: float = 0.0  # decoupled (AdamW) weight decay
    betas: tuple[float, float] = (0.9, 0.98)  # the source's AdamW betas (dissertation C.10.1)
    warmup: int = 10
    schedule: str = "constant"  # "constant" or "cosine" (decay to 0 after the warm-up)
    clip_norm: float | None = None  # clip the global gradient norm to this value before each step

    def lr_factor(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.schedule == "cosine":
            progress = (step - self.warmup) / max(1, self.steps - self.warmup)
            return 0.5 * (1 + math.cos(math.pi * progress))
        if self.schedule != "constant":
            raise ValueError(f"unknown schedule {self.schedule!r}; use 'constant' or 'cosine'")
        return 1.0


def make_optimizer(params: list[torch.Tensor], config: OptimConfig) -> torch.optim.Optimizer:
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay)
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, weight_decay=config.weight_decay)
    raise ValueError(f"unknown optimizer {config.optimizer!r}; use 'adamw' or 'sgd'")


def train(
    params: list[torch.Tensor],
    loss_fn: Callable[[int], torch.Tensor],
    config: OptimConfig,
    *,
    log_every: int = 0,
    log_fn: Callable[[int], dict[str, torch.Tensor | float]] | None = None,
) -> dict[str, torch.Tensor]:
    """Run ``config.steps`` steps of ``loss_fn``; every ``log_every`` steps (and at the end) record ``log_fn(step)``.

    Returns the history: ``step`` (T,) and each logged quantity stacked along a new first axis (T, ...).
    """
    optimizer = make_optimizer(params, config)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, config.lr_factor)
    history: dict[str, list] = {"step": []}

    def record(step: int) -> None:
        if log_fn is None:
            return
        history["step"].append(step)
        with torch.no_grad():
            for name, value in log_fn(step).items():
                history.setdefault(name, []).append(torch.as_tensor(value).detach().cpu())

    for step in range(config.steps):
        if log_every and step % log_every == 0:
            record(step)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(step)
        loss.backward()
        if config.clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, config.clip_norm)
        optimizer.step()
        scheduler.step()
    record(config.steps)
    return {name: torch.stack(values) if name != "step" else torch.tensor(values) for name, values in history.items()}


def minibatches(indices: torch.Tensor, batch_size: int, generator: torch.Generator) -> Callable[[int], torch.Tensor]:
    """Step -> a batch of ``indices``: epochs of random permutations (the whole set when it is smaller)."""
    if batch_size >= len(indices):
        return lambda step: indices
    state = {"order": torch.empty(0, dtype=torch.long), "pos": 0}

    def batch(step: int) -> torch.Tensor:
        if state["pos"] + batch_size > len(state["order"]):
            state["order"] = indices[torch.randperm(len(indices), generator=generator)]
            state["pos"] = 0
        out = state["order"][state["pos"] : state["pos"] + batch_size]
        state["pos"] += batch_size
        return out

    return batch


def steps_to_reach(curve: torch.Tensor, steps: torch.Tensor, threshold: float) -> torch.Tensor:
    """First logged step at which ``curve`` (T, ...) reaches ``threshold``; inf where it never does."""
    reached = curve >= threshold
    first = torch.where(reached.any(dim=0), reached.float().argmax(dim=0), torch.tensor(-1))
    out = steps[first.clamp_min(0)].double()
    return torch.where(first >= 0, out, torch.tensor(float("inf"), dtype=torch.float64))

"""One optimisation loop for every chapter: AdamW, SGD or plain gradient descent, per-group step sizes and weight
decay, a warm-up and a schedule, autograd or analytic gradients.

The loss is a closure of the step number, so full-batch, mini-batch and online training share the loop; models
with a leading replica dimension return the sum of the replicas' losses, which trains the replicas independently
(every optimiser here updates element-wise, and the replicas share no parameter).

Parameter groups: ``params`` is a list of tensors or of groups ``{"params": [...], "lr": ..., "weight_decay": ...}``
(missing keys take :class:`OptimConfig`'s values; :meth:`feature_learning.models.two_layer.TwoLayerNet.param_groups`
builds them). With ``optimizer="gd"`` a step is w <- (1 - lr wd) w - lr g, so weight decay 2 lambda is the penalty
lambda ||w||^2 of eq. (4) of Shi, Wei and Liang (ICLR 2022) and of eqs. (3)-(4) of Zhang et al. (ICML 2024); a
group with lr 0 stays where it is.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence

import torch

GROUP_KEYS = {"params", "lr", "weight_decay", "name"}


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """``optimizer``: "adamw" (decoupled weight decay), "sgd" (``torch.optim.SGD``: coupled decay, the gradient
    plus wd * w) or "gd" (the same update written out, w <- (1 - lr wd) w - lr g, which is bit for bit the
    hand-written steps of the former trainers). ``schedule``: "constant", "cosine" (decay to 0 after the warm-up)
    or a callable step -> factor of ``lr`` (e.g. the four-neuron schedule of Tsoy & Konstantinov, Sec. 5.4.2)."""

    steps: int
    lr: float
    optimizer: str = "adamw"  # "adamw", "sgd" or "gd"
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)  # PyTorch's; a chapter writes its source's values out
    warmup: int = 0  # steps of linear warm-up
    schedule: str | Callable[[int], float] = "constant"
    clip_norm: float | None = None  # clip the global gradient norm to this value before each step

    def __post_init__(self):
        if self.optimizer not in ("adamw", "sgd", "gd"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; use 'adamw', 'sgd' or 'gd'")
        if not callable(self.schedule) and self.schedule not in ("constant", "cosine"):
            raise ValueError(f"unknown schedule {self.schedule!r}; use 'constant', 'cosine' or a callable")

    def lr_factor(self, step: int) -> float:
        """The factor of every group's lr at ``step``: a linear warm-up, then the schedule (called with the step)."""
        if step < self.warmup:
            return (step + 1) / self.warmup
        if callable(self.schedule):
            return float(self.schedule(step))
        if self.schedule == "cosine":
            progress = (step - self.warmup) / max(1, self.steps - self.warmup)
            return 0.5 * (1 + math.cos(math.pi * progress))
        return 1.0


class GradientDescent(torch.optim.Optimizer):
    """w <- (1 - lr wd) w - lr g per group, the decay and the step as two separate products (no fused
    multiply-add), so that it reproduces hand-written loops exactly. No momentum."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, wd = group["lr"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if wd:
                    p.mul_(1.0 - lr * wd)
                p.sub_(lr * p.grad)


def _check_groups(params: list) -> None:
    for group in params:
        if isinstance(group, dict):
            unknown = set(group) - GROUP_KEYS
            if unknown or "params" not in group:
                raise ValueError(f"a parameter group has keys {sorted(GROUP_KEYS)} ('params' required), got "
                                 f"{sorted(group)}")


def flat_parameters(params: list) -> list[torch.Tensor]:
    """The tensors of a list of tensors or of parameter groups, in order."""
    out = []
    for group in params:
        out.extend(group["params"] if isinstance(group, dict) else [group])
    return out


def make_optimizer(params: list, config: OptimConfig) -> torch.optim.Optimizer:
    _check_groups(params)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay)
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, weight_decay=config.weight_decay)
    return GradientDescent(params, lr=config.lr, weight_decay=config.weight_decay)


# -- progress display -----------------------------------------------------------------------------------------------
PROGRESS_ENV = "FEATURE_LEARNING_PROGRESS"


def progress_wanted(progress: bool | None = None) -> bool:
    """Whether :func:`train` shows its progress line: ``progress`` if given; else the environment variable
    FEATURE_LEARNING_PROGRESS ("1" on, "0" off); else when a person is watching: stderr is a terminal, or the code runs
    in a Jupyter kernel whose current request allows input (an interactive notebook; papermill, nbval and the book's
    execution send requests without input, so CI runs and the built HTML stay quiet)."""
    if progress is not None:
        return bool(progress)
    env = os.environ.get(PROGRESS_ENV)
    if env is not None:
        return env.strip() not in ("", "0", "false", "no", "off")
    try:
        if sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):
        pass
    return _interactive_kernel()


def _interactive_kernel() -> bool:
    """True inside an IPython kernel serving an interactive frontend (its execute request allows stdin)."""
    shell = sys.modules.get("IPython")
    shell = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    kernel = getattr(shell, "kernel", None)
    return bool(getattr(kernel, "_allow_stdin", False))


class _Progress:
    """A one-line ``\\r`` progress report on stderr, redrawn at most every ``interval`` seconds."""

    def __init__(self, total: int, description: str, interval: float = 0.5):
        self.total, self.description, self.interval = total, description, interval
        self.start = self.last = time.perf_counter()

    def update(self, step: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        label = f"{self.description}: " if self.description else ""
        sys.stderr.write(f"\r{label}step {step}/{self.total} ({100 * step / max(1, self.total):.0f}%), "
                         f"{now - self.start:.1f} s")
        sys.stderr.flush()

    def close(self) -> None:
        self.update(self.total, force=True)
        sys.stderr.write("\n")
        sys.stderr.flush()


# -- the loop -------------------------------------------------------------------------------------------------------
def train(
    params: list,
    loss_fn: Callable[[int], torch.Tensor] | None,
    config: OptimConfig,
    *,
    log_every: int = 0,
    log_at: Iterable[int] = (),
    log_fn: Callable[[int], dict[str, torch.Tensor | float]] | None = None,
    grad_fn: Callable[[int], Sequence[torch.Tensor]] | None = None,
    stop: Callable[[int], bool] | None = None,
    project: Callable[[], None] | None = None,
    progress: bool | None = None,
    description: str = "",
) -> dict[str, torch.Tensor]:
    """Run ``config.steps`` steps. Each step takes the gradients of ``loss_fn(step)`` by autograd, or, when
    ``grad_fn`` is given (and ``loss_fn`` is None), the analytic gradients ``grad_fn(step)``, one per tensor of
    ``params`` in order (computed without autograd). ``params``: tensors or parameter groups (module docstring).

    ``log_fn(step)`` is recorded (before the update of that step) at every step that is a multiple of
    ``log_every`` or listed in ``log_at``, and always after the last step (step = ``config.steps``). ``stop(s)``,
    when given, is asked after each step with the number s of steps done; if it answers True the loop ends there
    (a convergence criterion: ``config.steps`` is then the most steps) and the final record is at step s. Returns the
    history: ``step`` (T,) and each logged quantity stacked along a new first axis (T, ...). ``project()``, when
    given, runs after every update without autograd and may write the parameters in place (projected gradient
    descent: e.g. :func:`feature_learning.training.constraints.project_spectral_frobenius`). ``progress``: see
    :func:`progress_wanted`."""
    if (loss_fn is None) == (grad_fn is None):
        raise ValueError("give exactly one of loss_fn (autograd) and grad_fn (analytic gradients)")
    log_at = {int(s) for s in log_at}
    if any(s < 0 or s > config.steps for s in log_at):
        raise ValueError(f"log_at steps must lie in [0, {config.steps}], got {sorted(log_at)}")
    tensors = flat_parameters(params)
    optimizer = make_optimizer(params, config)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, config.lr_factor)
    history: dict[str, list] = {"step": []}
    bar = _Progress(config.steps, description) if progress_wanted(progress) else None

    def record(step: int) -> None:
        if log_fn is None:
            return
        history["step"].append(step)
        with torch.no_grad():
            for name, value in log_fn(step).items():
                history.setdefault(name, []).append(torch.as_tensor(value).detach().cpu())

    done = config.steps
    for step in range(config.steps):
        if (log_every and step % log_every == 0) or step in log_at:
            record(step)
        optimizer.zero_grad(set_to_none=True)
        if grad_fn is None:
            loss_fn(step).backward()
        else:
            with torch.no_grad():
                grads = list(grad_fn(step))
            if len(grads) != len(tensors):
                raise ValueError(f"grad_fn returned {len(grads)} gradients for {len(tensors)} parameters")
            for p, g in zip(tensors, grads, strict=True):
                p.grad = g.detach()
        if config.clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(tensors, config.clip_norm)
        optimizer.step()
        if project is not None:
            with torch.no_grad():
                project()
        scheduler.step()
        if bar is not None:
            bar.update(step + 1)
        if stop is not None and stop(step + 1):
            done = step + 1
            break
    if bar is not None:
        bar.close()
    record(done)
    return {name: torch.stack(values) if name != "step" else torch.tensor(values) for name, values in history.items()}


# -- where the examples of a step come from -------------------------------------------------------------------------
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


def batches_with_replacement(n: int, batch_size: int, generator: torch.Generator,
                             device=None) -> Callable[[int], torch.Tensor]:
    """Step -> ``min(batch_size, n)`` indices drawn uniformly from 0..n-1 with replacement, one ``randint`` per
    step (the sampler of the feature-emergence recipes)."""
    size = (min(batch_size, n),)
    return lambda step: torch.randint(0, n, size, generator=generator).to(device)


def fresh_batches(model: Callable[[torch.Tensor], torch.Tensor],
                  sample: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
                  loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[[int], torch.Tensor]:
    """The loss closure of online training on fresh i.i.d. batches (Zhang et al., ICML 2024, eqs. (3)-(4)):
    step -> sum over replicas of the mean over the batch of ``loss(model(x), target)``, with
    (x, target) = ``sample(step)`` of shape (R, N, ...) and ``loss`` per example (R, N)."""

    def loss_fn(step: int) -> torch.Tensor:
        x, target = sample(step)
        return loss(model(x), target).mean(-1).sum()

    return loss_fn

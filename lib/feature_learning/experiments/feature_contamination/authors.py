"""The authors' toy recipe (the public ``toy.py`` of the paper's repository, its linear task with the hinge loss and
SGD) run as the source's setting, and the table that sets it beside the paper's appendix F.1 and this chapter.

The script trains an ``nn.Linear(256, 256)`` and an ``nn.Linear(256, 1)`` on inputs x = z V, V a random 64 x 256
matrix with orthonormal rows. Every input lies in the row space of V, so the part of each weight vector orthogonal to
it gets only weight decay and never changes the output: we train the reduced weights W V^T (m x 64) exactly, drawn
as PyTorch's default uniform weights times V^T."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from feature_learning.book.profiles import Run
from feature_learning.data.structured_features import StructuredFeatures
from feature_learning.experiments.feature_contamination.runs import reached
from feature_learning.experiments.feature_contamination.sizes import (
    SOURCE_LR,
    WEIGHT_DECAY,
    AuthorsRecipe,
    ContaminationSizes,
)
from feature_learning.measure.metrics import risk
from feature_learning.models.two_layer import TwoLayerNet
from feature_learning.training.losses import hinge


def init_authors(recipe: AuthorsRecipe, activation: str, generator: torch.Generator, device=None, *,
                 zero_output_bias: bool = False) -> TwoLayerNet:
    """PyTorch's default ``nn.Linear`` initialisation in the ambient dimension, reduced to the d0 feature coordinates
    by a random orthogonal map per replica: W ~ U(+-1/sqrt(d)) (m x d) times V^T, hidden biases U(+-1/sqrt(d))
    (trained), output weights +-1/m (the first half +) and an output bias U(+-1/sqrt(m)) (both frozen).
    ``zero_output_bias``: the same draws, with the output bias then set to 0 (the control of the chapter)."""
    R, m, d = recipe.seeds, recipe.width, recipe.d
    V = torch.linalg.svd(torch.randn(R, recipe.d0, d, generator=generator), full_matrices=False)[2]  # (R, d0, d)
    W = ((torch.rand(R, m, d, generator=generator) * 2 - 1) / math.sqrt(d)) @ V.transpose(1, 2)
    b = (torch.rand(R, m, generator=generator) * 2 - 1) / math.sqrt(d)
    a = torch.cat([torch.ones(m // 2), -torch.ones(m - m // 2)]).div(m).expand(R, m).clone()
    c = (torch.rand(R, generator=generator) * 2 - 1) / math.sqrt(m)
    if zero_output_bias:
        c = torch.zeros_like(c)
    net = TwoLayerNet(W=W, a=a, b=b, c=c, activation=activation, trained=("W", "b"))
    return net.to(device=device)


def training_set(recipe: AuthorsRecipe, generator: torch.Generator, device=None):
    """One fixed training set per replica: n/2 points of class +1 then n/2 of class -1, core y U[0,1], background
    U[0,1] (Definition 3.1 with the F.1 laws), in reduced coordinates: x (R, n, d0), y (n,)."""
    pos = recipe.n // 2
    y = torch.cat([torch.ones(pos), -torch.ones(recipe.n - pos)])
    z = torch.rand(recipe.seeds, recipe.n, recipe.d0, generator=generator)
    x = torch.cat([y[:, None] * z[..., :recipe.d_core], z[..., recipe.d_core:]], -1)
    return x.to(device), y.to(device)


@dataclasses.dataclass
class AuthorsRun:
    """Per replica: the training hinge at the start and the end, the held-out ID and OOD hinge risks of the trained
    and the untrained network, and the mean background weight (and its initial standard deviation)."""

    activation: str
    train_loss: np.ndarray  # (2, R): at initialisation and at the end
    id_hinge: np.ndarray  # (2, R): untrained, trained
    ood_hinge: np.ndarray  # (2, R)
    bg_mean: np.ndarray  # (2, R): mean background weight per replica
    bg_init_sd: float  # standard deviation of a replica's mean background weight at initialisation

    def reached(self) -> tuple[int, int]:
        """(runs that reached their training target, runs)."""
        return reached(self.train_loss[0], self.train_loss[1])


def run_authors(recipe: AuthorsRecipe, activation: str, generator: torch.Generator, tests, device=None, *,
                zero_output_bias: bool = False) -> AuthorsRun:
    """Full-batch SGD (momentum, coupled weight decay on W and the hidden biases) on the hinge loss, all replicas at
    once (their losses summed: each replica's gradient is its own). Draws the network, then the training set."""
    net = init_authors(recipe, activation, generator, device, zero_output_bias=zero_output_bias)
    x, y = training_set(recipe, generator, device)
    (x_id, y_id), (x_ood, y_ood) = tests
    opt = torch.optim.SGD(net.parameters(), lr=recipe.step_size, momentum=recipe.momentum,
                          weight_decay=recipe.weight_decay)

    @torch.no_grad()
    def measure():
        bg = net.W[..., recipe.d_core:].mean((-1, -2))
        return (risk(net(x), y, hinge), risk(net(x_id), y_id, hinge), risk(net(x_ood), y_ood, hinge), bg)

    start = measure()
    for _ in range(recipe.steps):
        opt.zero_grad(set_to_none=True)
        risk(net(x), y, hinge).sum().backward()
        opt.step()
    end = measure()
    rows = [np.stack([s.double().cpu().numpy(), e.double().cpu().numpy()]) for s, e in zip(start, end, strict=True)]
    return AuthorsRun(activation, *rows, 1 / math.sqrt(3 * recipe.d * recipe.width * recipe.d_bg))


def authors_recipe(size: ContaminationSizes, run: Run) -> dict[str, AuthorsRun]:
    """The ReLU and the linear network under the authors' recipe, on the same held-out ID and OOD sets (F.1's laws:
    background U[0,1] in distribution, U[-1,0] out of it), and ``"identity_zero_bias"``: the linear network from the
    same draws (initialisation, orthogonal map, training set) with its frozen output bias set to 0."""
    a = size.authors
    data = StructuredFeatures(d_core=a.d_core, d_bg=a.d_bg)
    gen = run.generator("authors", "tests")
    x_id, y_id, _ = data.sample(a.n_test, split="id", generator=gen, device=run.device)
    x_ood, y_ood, _ = data.sample(a.n_test, split="ood", generator=gen, device=run.device)
    tests = ((x_id, y_id), (x_ood, y_ood))
    out = {act: run_authors(a, act, run.generator("authors", act), tests, run.device) for act in ("relu", "identity")}
    out["identity_zero_bias"] = run_authors(a, "identity", run.generator("authors", "identity"), tests, run.device,
                                            zero_output_bias=True)
    return out


# ---- the recipes side by side ---------------------------------------------------------------------------------------
PAPER = {  # appendix F.1 and Sec. 3.2 of the paper; None where it states nothing
    "data": "fresh batch of N = 1000 each step (Eq. 4)", "dims": (32, 32, 256), "width": 256, "lr": SOURCE_LR,
    "iterations": None, "momentum": None, "time": None, "weight decay": WEIGHT_DECAY, "hidden biases": "none (Eq. 2)",
    "output layer": "a_k = ±1/m, fixed", "output bias": "none", "initialisation": "N(0, 1/d)", "replicas": None,
}


def recipe_table(size: ContaminationSizes) -> list[list[str]]:
    """Rows (parameter, the paper, the authors' script, this chapter's classification runs, this chapter's run of
    the authors' recipe, why the classification runs differ), from the recipe objects of ``size``."""
    c, a, script = size.classification, size.authors, AuthorsRecipe()

    def show(v):
        return "not stated" if v is None else (", ".join(map(str, v)) if isinstance(v, tuple) else str(v))

    def recipe(r):  # the columns of the script and of our run of it
        return {"data": f"one fixed set of n = {r.n}, full batch", "dims": show((r.d_core, r.d_bg, r.d)),
                "width": str(r.width), "lr": str(r.step_size), "iterations": str(r.steps), "momentum": str(r.momentum),
                "time": f"{r.effective_time:g}", "weight decay": f"{r.weight_decay} (coupled, W and b)",
                "hidden biases": "trained, U(±1/√d) at init", "output layer": f"±1/{r.width}, first half +, frozen",
                "output bias": "U(±1/√m) at init, frozen", "initialisation": "U(±1/√d) (PyTorch default)",
                "replicas": str(r.seeds)}

    ours = {"data": f"fresh batch of N = {c.batch} each step", "dims": show((c.d_core, c.d_bg, c.d)),
            "width": str(c.width), "lr": str(c.lr), "iterations": str(c.steps), "momentum": "0",
            "time": f"{c.lr * c.steps:g}", "weight decay": f"{WEIGHT_DECAY} (coupled, W)", "hidden biases": "none",
            "output layer": f"±1/{c.width}, random signs, frozen", "output bias": "none",
            "initialisation": "N(0, 1/d)", "replicas": str(c.seeds)}
    rows = [  # (key, label, why Experiment 1 differs from the script)
        ("data", "data", "Eq. (4) is online SGD: the theorems assume fresh samples"),
        ("dims", "d_core, d_bg, d", "same"), ("width", "width m", "same"),
        ("lr", "step size", "time rescaling (Step 4): the state depends on eta t / (1 - momentum)"),
        ("iterations", "iterations", "the same time in fewer steps"),
        ("momentum", "momentum", "Eq. (4) is plain SGD"),
        ("time", "eta t / (1 - momentum)", "ours ends on the plateau of the OOD risk"),
        ("weight decay", "weight decay", "the same on W"),
        ("hidden biases", "hidden biases", "the theorems' network (Eq. 2) has none"),
        ("output layer", "output layer", "the theorems draw the signs at random"),
        ("output bias", "output bias", "the theorems' network has none"),
        ("initialisation", "initialisation of W", "Sec. 3.2"),
        ("replicas", "replicas", "the seed-level spread"),
    ]
    script_col, run_col = recipe(script), recipe(a)
    script_col["replicas"] = "1 (seed 2024)"
    return [[label, show(PAPER[key]), script_col[key], ours[key], run_col[key], why] for key, label, why in rows]

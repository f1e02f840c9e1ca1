"""Experiments 3-4 and the digits analogue of the chapter "Feature contamination": regression
(representation distillation, Fig. 9), other activations with AdamW on concentric balls (Figs. 3d, 10), and the
bundled-data analogue of Sec. 2."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from feature_learning.book.claims import trained_runs
from feature_learning.book.profiles import Run
from feature_learning.data.digits import border_mask, digit_splits, with_border
from feature_learning.data.structured_features import ConcentricBalls, StructuredFeatures
from feature_learning.experiments.feature_contamination.runs import Stat, final, initial, reached
from feature_learning.experiments.feature_contamination.sizes import (
    EXTENSION_ACTIVATIONS,
    SOURCE_LR,
    WEIGHT_DECAY,
    ContaminationSizes,
)
from feature_learning.measure.metrics import risk, sign_accuracy
from feature_learning.measure.probes import multiclass_probe
from feature_learning.models.two_layer import init_fixed_output, init_torch_default
from feature_learning.training.loop import OptimConfig, fresh_batches, train
from feature_learning.training.losses import cross_entropy, half_squared_error, logistic


# ---- Experiment 3: regression ("representation distillation", Fig. 9) -----------------------------------------------
@dataclasses.dataclass
class RegressionRun:
    history: dict[str, torch.Tensor]
    d_core: int


def run_regression(size: ContaminationSizes, activation: str, generator: torch.Generator,
                   device=None) -> RegressionRun:
    """Appendix F.1 "regression (representation distillation)": the net regresses the OOD-optimal representation
    (y z_j)_{j in S_core} with (1/2)||h - t||^2; both layers trained (output layer initialised at +-1/m), online SGD
    with the source's weight decay on both, at the sizes of ``size.regression``."""
    c, r = size.classification, size.regression
    data = StructuredFeatures(d_core=r.d_half, d_bg=r.d_half)
    net = init_fixed_output(r.seeds, data.d0, r.width, d_ambient=r.d, activation=activation, generator=generator,
                            device=device, d_out=r.d_half, trained=("W", "a"))
    x_id, _, _ = data.sample(c.n_test, split="id", generator=generator, device=device)
    x_ood, _, _ = data.sample(c.n_test, split="ood", generator=generator, device=device)
    u_bg = torch.ones(r.d_half, device=device) / r.d_half**0.5

    def sample(step):
        x, _, _ = data.sample(r.batch, replicas=r.seeds, generator=generator, device=device)
        return x, data.regression_target(x)

    def log(step):
        W = net.W.detach()
        return {"id_mse": risk(net(x_id), data.regression_target(x_id), half_squared_error),
                "ood_mse": risk(net(x_ood), data.regression_target(x_ood), half_squared_error),
                "bg_direction": (W[..., r.d_half:] @ u_bg).abs().mean(-1),
                "bg_norm": W[..., r.d_half:].norm(dim=-1).mean(-1)}

    config = OptimConfig(steps=r.steps, lr=r.lr, optimizer="sgd", weight_decay=WEIGHT_DECAY, warmup=0)
    history = train(net.parameters(), fresh_batches(net, sample, half_squared_error), config,
                    log_every=c.log_every, log_fn=log)
    return RegressionRun(history, r.d_half)


@dataclasses.dataclass
class Distillation:
    relu: RegressionRun
    linear: RegressionRun
    time: np.ndarray  # in the source's steps


def regression(size: ContaminationSizes, run: Run) -> Distillation:
    relu = run_regression(size, "relu", run.generator("regression", "relu"), run.device)
    linear = run_regression(size, "identity", run.generator("regression", "linear"), run.device)
    steps = relu.history["step"].numpy()
    return Distillation(relu, linear, steps * size.regression.lr / SOURCE_LR)


# ---- Experiment 4: other activations, AdamW, concentric balls (Figs. 3d, 10) ----------------------------------------
def run_extension(size: ContaminationSizes, activation: str, generator: torch.Generator,
                  device=None) -> dict[str, torch.Tensor]:
    """Fig. 3d / 10: concentric balls (radii 1 and 2) for the core, U[0,1] -> U[-1,0] background, a two-layer net with
    biases and both layers trained (PyTorch default init), AdamW, logistic loss (the source names no loss, step size or
    decay: ours are in :class:`~.sizes.ExtensionSizes`). Returns the
    history (per replica)."""
    c, e = size.classification, size.extension
    data = ConcentricBalls(d_core=e.d_core, d_bg=e.d_bg)
    net = init_torch_default(e.seeds, data.d0, e.width, activation=activation, generator=generator, device=device)
    x_id, y_id = data.sample(c.n_test, split="id", generator=generator, device=device)
    x_ood, y_ood = data.sample(c.n_test, split="ood", generator=generator, device=device)
    W0 = net.W.detach().clone()
    u_bg = torch.ones(e.d_bg, device=device) / e.d_bg**0.5

    def core_norm(W):  # mean over neurons of ||P_core w_k||
        return W[..., :e.d_core].norm(dim=-1).mean(-1)

    def bg_direction(W):  # mean over neurons of |<w_k, u_bg>|, u_bg the unit background-mean direction
        return (W[..., e.d_core:] @ u_bg).abs().mean(-1)

    def sample(step):
        return data.sample(e.batch, replicas=e.seeds, generator=generator, device=device)

    def log(step):
        out_id, out_ood = net(x_id), net(x_ood)
        return {"id_loss": risk(out_id, y_id, logistic), "ood_loss": risk(out_ood, y_ood, logistic),
                "id_acc": sign_accuracy(out_id, y_id), "ood_acc": sign_accuracy(out_ood, y_ood),
                "bg_direction": bg_direction(net.W) / bg_direction(W0), "core_norm": core_norm(net.W) / core_norm(W0)}

    config = OptimConfig(steps=e.steps, lr=e.lr, weight_decay=e.weight_decay, betas=(0.9, 0.999), warmup=0)
    return train(net.parameters(), fresh_batches(net, sample, logistic), config,
                 log_every=max(1, e.steps // 20), log_fn=log)


@dataclasses.dataclass
class ExtensionResult:
    final: dict[str, dict[str, np.ndarray]]  # activation -> quantity -> per replica
    n_test: int
    initial: dict[str, dict[str, np.ndarray]] | None = None  # the same at step 0 (the untrained networks)

    def worst(self, key: str, pick=max) -> float:
        """``pick`` over activations of the mean over replicas."""
        return float(pick(v[key].mean() for v in self.final.values()))

    def worst_stat(self, key: str, pick=max) -> Stat:
        """Mean and standard error over seeds of ``key`` for the activation whose mean is ``pick`` over them."""
        values = pick(self.final.values(), key=lambda v: v[key].mean())
        return Stat.of(values[key])

    def gap_stats(self) -> dict:
        """OOD minus ID logistic loss and ID minus OOD accuracy. Trained (``"loss"``, ``"acc"``): mean and standard
        error over replicas of the activation whose mean gap is smallest. Untrained (``"loss_untrained"``,
        ``"acc_untrained"``, the null): the largest mean gap over the activations at step 0."""
        def gaps(runs, a, b):
            return [v[a] - v[b] for v in runs.values()]
        out = {}
        for name, (a, b) in {"loss": ("ood_loss", "id_loss"), "acc": ("id_acc", "ood_acc")}.items():
            out[name] = Stat.of(min(gaps(self.final, a, b), key=np.mean))
            out[f"{name}_untrained"] = float(max(np.mean(g) for g in gaps(self.initial, a, b)))
        return out

    def reached(self) -> tuple[int, int]:
        """(runs that reached their training target, runs), over every activation's replicas: the ID logistic loss
        at most half its initial value."""
        return trained_runs(*(reached(self.initial[a]["id_loss"], v["id_loss"]) for a, v in self.final.items()))


def extension(size: ContaminationSizes, run: Run) -> ExtensionResult:
    out, start = {}, {}
    keys = ("id_loss", "ood_loss", "id_acc", "ood_acc", "bg_direction", "core_norm")
    for a in EXTENSION_ACTIVATIONS:
        h = run_extension(size, a, run.generator("extension", a), run.device)
        out[a], start[a] = {k: final(h, k) for k in keys}, {k: initial(h, k) for k in keys}
    return ExtensionResult(out, size.classification.n_test, start)


# ---- a bundled-data analogue of Sec. 2: distil an OOD-robust teacher on digits with a random border -------------
@dataclasses.dataclass
class DigitsRun:
    teacher: dict[str, float]  # probe accuracy {"id", "ood"}
    student: dict[str, np.ndarray]  # probe accuracy per replica {"id", "ood"}
    mse_id: np.ndarray  # per replica, distillation error
    mse_ood: np.ndarray
    n_test: int
    net: object = None  # the trained students (a TwoLayerNet with a replica axis)
    init: object = None  # the same students at initialisation
    test_images: dict = dataclasses.field(default_factory=dict)  # {"id", "ood"}: (n_test, 100) images
    test_labels: torch.Tensor | None = None
    mse_id_init: np.ndarray | None = None  # per replica, the untrained student's ID distillation error

    def reached(self) -> tuple[int, int]:
        """(students that reached their training target, students): ID distillation error at most half the
        untrained student's."""
        return reached(self.mse_id_init, self.mse_id)


def run_digits_distillation(size: ContaminationSizes, activation: str, splits, generator: torch.Generator,
                            device=None) -> DigitsRun:
    """Teacher: PCA (``teacher_dim`` components) of the 64 digit pixels, fitted on the training digits; it ignores the
    border, so it is exactly invariant to the background shift (the role of the OOD-robust CLIP teacher). Student: a
    two-layer net 100 -> width -> teacher_dim (``activation``, biases, PyTorch init) trained by MSE to the teacher
    on ID images (fresh border noise each batch; AdamW). Multinomial logistic probes
    (:func:`~feature_learning.measure.probes.multiclass_probe`) are fitted on ID training representations and scored
    on ID and OOD test images. ``splits``: the (train, test) digits of
    :func:`~feature_learning.data.digits.digit_splits`; ``generator`` draws the student, its batches and the borders."""
    dg = size.digits
    train_split, test_split = splits
    mean = train_split.digits.mean(0)
    _, _, vh = torch.linalg.svd(train_split.digits - mean, full_matrices=False)
    basis = vh[:dg.teacher_dim].T  # (64, teacher_dim)
    core = ~border_mask()

    def teacher(images):
        return (images[:, core] - mean) @ basis

    net = init_torch_default(dg.seeds, 100, dg.width, d_out=dg.teacher_dim, activation=activation,
                             generator=generator, device=device)
    init = net.detached()

    def loss_fn(step):
        idx = torch.randint(0, dg.n_train, (dg.seeds, dg.batch), generator=generator)
        images = with_border(train_split.digits[idx.flatten()], split="id", generator=generator)
        target = teacher(images).view(dg.seeds, dg.batch, dg.teacher_dim)
        return half_squared_error(net(images.view(dg.seeds, dg.batch, -1).to(device)),
                                  target.to(device)).mean(-1).sum()

    train(net.parameters(), loss_fn, OptimConfig(steps=dg.steps, lr=dg.lr, weight_decay=dg.weight_decay,
                                                 betas=(0.9, 0.999), warmup=0))
    images = {name: with_border(split.digits, split=shift, generator=generator)
              for name, split, shift in (("train", train_split, "id"), ("id", test_split, "id"),
                                         ("ood", test_split, "ood"))}
    ytr, yte = train_split.labels, test_split.labels
    reps_t = {name: teacher(img) for name, img in images.items()}
    teacher_acc = multiclass_probe(reps_t["train"], ytr, {k: (reps_t[k], yte) for k in ("id", "ood")})
    with torch.no_grad():
        reps = {name: net(img.to(device)).cpu() for name, img in images.items()}
        start = half_squared_error(init(images["id"].to(device)).cpu(), reps_t["id"]).mean(-1).double().numpy()
    student_acc = multiclass_probe(reps["train"], ytr, {k: (reps[k], yte) for k in ("id", "ood")})
    return DigitsRun(teacher_acc, student_acc,
                     half_squared_error(reps["id"], reps_t["id"]).mean(-1).double().numpy(),
                     half_squared_error(reps["ood"], reps_t["ood"]).mean(-1).double().numpy(), len(yte), net, init,
                     {k: images[k] for k in ("id", "ood")}, yte, start)


def digits(size: ContaminationSizes, run: Run) -> dict[str, DigitsRun]:
    """The ReLU and the linear student of the same teacher, on the same split of the digits."""
    splits = digit_splits(size.digits.n_train, run.generator("digits", "split"))
    return {a: run_digits_distillation(size, a, splits, run.generator("digits", a), run.device)
            for a in ("relu", "identity")}


# ---- Figs. 4 and 1 on the digits analogue: class-wise activation rates, and effective robustness --------------------
@torch.no_grad()
def class_rates(net, images: torch.Tensor, labels: torch.Tensor, classes: int = 10) -> torch.Tensor:
    """Per replica, neuron and class, the fraction of the class's images on which the neuron's pre-activation is
    positive (the class-averaged activation rates of Fig. 4): (R, m, classes)."""
    active = (net.preactivation(images.to(net.W)) > 0).double()  # (R, n, m)
    onehot = torch.nn.functional.one_hot(labels.long(), classes).double().to(active)  # (n, C)
    return torch.einsum("rnm,nc->rmc", active, onehot) / onehot.sum(0)


def near_zero_share(rates: torch.Tensor, level: float = 0.1) -> np.ndarray:
    """Per replica, the share of (neuron, class) activation rates at most ``level``."""
    return (rates <= level).double().mean((1, 2)).cpu().numpy()


@dataclasses.dataclass
class StandardModels:
    """The "standard models" of Fig. 1 on the digits: classifiers 100 -> width -> 10 (ReLU, biases, PyTorch init)
    trained by cross-entropy on ID images with AdamW, the student's recipe; every logged step of every replica is
    one model of the family (its ID and OOD test accuracy)."""

    id_acc: np.ndarray  # (T, R)
    ood_acc: np.ndarray  # (T, R)

    def reached(self, lowest: float = 0.5) -> tuple[int, int]:
        """(models that reached their training target, models): final ID accuracy at least ``lowest``, the floor of
        the models the line of :func:`effective_robustness` is fitted on."""
        last = self.id_acc[-1]
        return int((np.isfinite(last) & (last >= lowest)).sum()), int(last.size)


def run_standard_models(size: ContaminationSizes, splits, generator: torch.Generator, device=None,
                        checkpoints: int = 30) -> StandardModels:
    dg = size.digits
    train_split, test_split = splits
    net = init_torch_default(dg.seeds, 100, dg.width, d_out=10, activation="relu", generator=generator,
                             device=device)
    labels = train_split.labels.long()
    tests = {k: with_border(test_split.digits, split=k, generator=generator).to(device) for k in ("id", "ood")}
    yte = test_split.labels.long().to(device)

    def loss_fn(step):
        idx = torch.randint(0, dg.n_train, (dg.seeds, dg.batch), generator=generator)
        images = with_border(train_split.digits[idx.flatten()], split="id", generator=generator)
        logits = net(images.view(dg.seeds, dg.batch, -1).to(device))
        return cross_entropy(logits, labels[idx].to(device)).mean(-1).sum()

    @torch.no_grad()
    def log(step):
        return {k: (net(x).argmax(-1) == yte).double().mean(-1) for k, x in tests.items()}

    every = max(dg.steps // checkpoints, 1)
    history = train(net.parameters(), loss_fn, OptimConfig(steps=dg.steps, lr=dg.lr, weight_decay=dg.weight_decay,
                                                           betas=(0.9, 0.999), warmup=0),
                    log_every=every, log_at=range(0, 4 * every, max(every // 4, 1)), log_fn=log)
    return StandardModels(history["id"].cpu().numpy(), history["ood"].cpu().numpy())


def logit(p):
    p = np.clip(np.asarray(p, dtype=float), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def effective_robustness(models: StandardModels, id_acc, ood_acc, lowest: float = 0.5) -> np.ndarray:
    """OOD accuracy above the standard models' line at the same ID accuracy (Taori et al. 2020, as in Fig. 1): the
    line is the least-squares fit of logit(OOD) on logit(ID) over the standard models with ID accuracy at least
    ``lowest``, evaluated at ``id_acc``."""
    keep = models.id_acc >= lowest
    slope, intercept = np.polyfit(logit(models.id_acc[keep]), logit(models.ood_acc[keep]), 1)
    line = 1 / (1 + np.exp(-(intercept + slope * logit(id_acc))))
    return np.asarray(ood_acc, dtype=float) - line


def gain_over_standard(students, standard) -> Stat:
    """Fig. 1's comparison: the mean effective robustness of the students minus that of the standard models at the end
    of their training (each an array over its models, at least two), with the standard error of the difference
    (Welch: each group's variance over its size)."""
    students, standard = (np.asarray(g, dtype=float).ravel() for g in (students, standard))
    if min(students.size, standard.size) < 2:
        raise ValueError("the standard error of the gain needs at least two students and two standard models")
    var = sum(g.var(ddof=1) / g.size for g in (students, standard))
    return Stat(float(students.mean() - standard.mean()), float(np.sqrt(var)))


def standard_models(size: ContaminationSizes, run: Run) -> StandardModels:
    """Fig. 1's standard models on the split of :func:`digits`."""
    splits = digit_splits(size.digits.n_train, run.generator("digits", "split"))
    return run_standard_models(size, splits, run.generator("digits", "standard"), run.device)


def border_projection(net) -> np.ndarray:
    """Per replica, the mean over hidden neurons of |<w_k, u>|, u the unit vector along the border pixels (the
    direction of the border's mean; the learned-feature colour of Fig. 13 in the analogue)."""
    mask = border_mask()
    return (net.W.detach()[..., mask].sum(-1).abs().mean(-1) / mask.sum() ** 0.5).double().cpu().numpy()

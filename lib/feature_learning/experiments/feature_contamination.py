"""Sizes and recipes of the chapter "Feature contamination" (Zhang et al., ICML 2024).

The source's numerical configuration (appendix F.1) is d_core = d_bg = 32, d = 256, m = 256, N = 1000, SGD with
step size 0.001 and weight decay 0.001; it does not state the number of steps. The state of the dynamics depends on
eta * t (the weight-decay factor is (1 - eta lambda)^t ~ e^{-lambda eta t}, the gradient term is eta times a
smooth drift; the chapter checks this with SymPy and a run), so we run eta = 0.1 (book, full) or 0.4 (ci) and report
time as the equivalent number of the source's steps, eta t / 0.001.
"""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.book.profiles import by_profile
from feature_learning.data.structured_features import ConcentricBalls, StructuredFeatures
from feature_learning.measure import contamination as measure
from feature_learning.models.two_layer import init_fixed_output, init_torch_default
from feature_learning.training.loop import OptimConfig, train
from feature_learning.training.losses import half_squared_error, hinge, logistic
from feature_learning.training.online import online_sgd, train_online

SOURCE_LR = 1e-3  # appendix F.1
WEIGHT_DECAY = 1e-3  # appendix F.1


@dataclasses.dataclass(frozen=True)
class ContaminationSizes:
    d_core: int
    d_bg: int
    d: int  # ambient dimension: enters only through the initialisation variance 1/d
    width: int
    batch: int  # N, the fresh batch of each online-SGD step
    lr: float
    steps: int
    seeds: int
    log_every: int
    n_test: int
    # regression ("representation distillation") variant
    reg_lr: float
    reg_steps: int
    reg_shape: tuple[int, int, int]  # (d_core = d_bg, width, batch) of the regression runs
    # extension: activations, AdamW, concentric balls
    ext_width: int
    ext_batch: int
    ext_steps: int
    ext_lr: float
    # digits analogue of the distillation experiment
    digits_width: int
    digits_steps: int
    digits_seeds: int

    @property
    def d0(self) -> int:
        return self.d_core + self.d_bg

    def source_steps(self, steps) -> float:
        """The number of the source's steps (eta = 0.001) with the same eta * t."""
        return steps * self.lr / SOURCE_LR


SIZES = {
    "ci": ContaminationSizes(d_core=16, d_bg=16, d=128, width=64, batch=256, lr=0.4, steps=400, seeds=2,
                             log_every=20, n_test=4000, reg_lr=0.2, reg_steps=1000, reg_shape=(16, 64, 256),
                             ext_width=64, ext_batch=256, ext_steps=600, ext_lr=1e-2,
                             digits_width=128, digits_steps=1500, digits_seeds=1),
    "book": ContaminationSizes(d_core=32, d_bg=32, d=256, width=256, batch=1000, lr=0.4, steps=500, seeds=2,
                               log_every=25, n_test=4000, reg_lr=0.2, reg_steps=1500, reg_shape=(16, 64, 256),
                               ext_width=128, ext_batch=512, ext_steps=1000, ext_lr=3e-3,
                               digits_width=256, digits_steps=2000, digits_seeds=2),
    "full": ContaminationSizes(d_core=32, d_bg=32, d=256, width=256, batch=1000, lr=0.1, steps=4000, seeds=5,
                               log_every=50, n_test=20000, reg_lr=0.1, reg_steps=4000, reg_shape=(32, 256, 1000),
                               ext_width=256, ext_batch=1000, ext_steps=3000, ext_lr=3e-3,
                               digits_width=256, digits_steps=4000, digits_seeds=3),
}


def sizes(profile: str) -> ContaminationSizes:
    return by_profile(profile, SIZES)


def model_of(size: ContaminationSizes) -> StructuredFeatures:
    return StructuredFeatures(d_core=size.d_core, d_bg=size.d_bg)


def test_sets(size: ContaminationSizes, generator: torch.Generator, device=None,
              data: StructuredFeatures | None = None):
    """Fixed ID and OOD test sets (x, y), shared by all replicas."""
    data = model_of(size) if data is None else data
    x_id, y_id, _ = data.sample(size.n_test, split="id", generator=generator, device=device)
    x_ood, y_ood, _ = data.sample(size.n_test, split="ood", generator=generator, device=device)
    return (x_id, y_id), (x_ood, y_ood)


def run_classification(size: ContaminationSizes, activation: str, generator: torch.Generator, device=None,
                       tracked_neurons: int = 10, snapshots: tuple[int, ...] = (),
                       data: StructuredFeatures | None = None):
    """The theory's setting (Sec. 3.2, appendix F.1): fixed +-1/m output layer, hinge loss, online SGD with weight
    decay, batched over ``size.seeds`` replicas. Returns the trained net and the logged history; the first-layer
    weights at the logged steps listed in ``snapshots`` are in ``history["snapshots"]`` ({step: W}). ``data``
    replaces the feature model of F.1 (e.g. by one whose background has mean zero in training)."""
    data = model_of(size) if data is None else data
    net = init_fixed_output(size.seeds, size.d0, size.width, d_ambient=size.d, activation=activation,
                            generator=generator, device=device)
    (x_id, y_id), (x_ood, y_ood) = test_sets(size, generator, device, data)
    mu = data.mu_core()

    def sample(step):
        x, y, _ = data.sample(size.batch, replicas=size.seeds, generator=generator, device=device)
        return x, y

    saved = {}

    def log(step):
        if step in snapshots:
            saved[step] = net.W.detach().clone()
        p_pos, p_neg = measure.class_activation_rates(net, x_id, y_id)
        fw = measure.feature_weights(net, size.d_core)
        corr_pos, corr_neg = measure.class_correlations(net, size.d_core, mu, data.mu_bg("id"))
        return {
            "id_hinge": measure.hinge_risk(net, x_id, y_id), "ood_hinge": measure.hinge_risk(net, x_ood, y_ood),
            "id_acc": measure.accuracy(net, x_id, y_id), "ood_acc": measure.accuracy(net, x_ood, y_ood),
            "p_pos": p_pos.mean(-1), "p_neg": p_neg.mean(-1),
            "core": fw.core, "bg": fw.bg, "core_norm": fw.core_norm, "bg_norm": fw.bg_norm,
            "corr_pos": corr_pos[0, :tracked_neurons], "corr_neg": corr_neg[0, :tracked_neurons],
            "both_positive": ((corr_pos > 0) & (corr_neg > 0)).float().mean(-1),
        }

    history = train_online(net, sample, hinge, online_sgd(size.steps, size.lr, WEIGHT_DECAY),
                           log_every=size.log_every, log_fn=log)
    history["snapshots"] = saved
    return net, history


def run_regression(size: ContaminationSizes, activation: str, generator: torch.Generator, device=None):
    """Appendix F.1 "regression (representation distillation)": the net regresses the OOD-optimal representation
    (y z_j)_{j in S_core} with (1/2)||h - t||^2; both layers trained (output layer initialised at +-1/m), online SGD
    with the source's weight decay, at the sizes ``size.reg_shape`` (d = 4 (d_core + d_bg) as in F.1).
    Returns (net, history) with the ID/OOD squared error and the background weights."""
    d_half, width, batch = size.reg_shape
    size = dataclasses.replace(size, d_core=d_half, d_bg=d_half, d=d_half * size.d // size.d_core, width=width,
                               batch=batch)
    data = model_of(size)
    net = init_fixed_output(size.seeds, size.d0, size.width, d_ambient=size.d, activation=activation,
                            generator=generator, device=device, d_out=size.d_core, trained=("W", "a"))
    x_id, _, _ = data.sample(size.n_test, split="id", generator=generator, device=device)
    x_ood, _, _ = data.sample(size.n_test, split="ood", generator=generator, device=device)
    u_bg = torch.ones(size.d_bg, device=device) / size.d_bg**0.5

    def sample(step):
        x, _, _ = data.sample(size.batch, replicas=size.seeds, generator=generator, device=device)
        return x, data.regression_target(x)

    @torch.no_grad()
    def log(step):
        err_id = half_squared_error(net(x_id), data.regression_target(x_id)).mean(-1)
        err_ood = half_squared_error(net(x_ood), data.regression_target(x_ood)).mean(-1)
        W = net.W.detach()
        return {"id_mse": err_id, "ood_mse": err_ood, "bg_direction": (W[..., size.d_core:] @ u_bg).abs().mean(-1),
                "bg_norm": W[..., size.d_core:].norm(dim=-1).mean(-1)}

    history = train_online(net, sample, half_squared_error,
                           online_sgd(size.reg_steps, size.reg_lr, WEIGHT_DECAY), log_every=size.log_every, log_fn=log)
    return net, history


EXTENSION_ACTIVATIONS = ("relu", "gelu", "sigmoid", "tanh")


def run_extension(size: ContaminationSizes, activation: str, generator: torch.Generator, device=None):
    """Fig. 3d / 10: concentric balls (radii 1 and 2) for the core, U[0,1] -> U[-1,0] background, a two-layer net
    with biases and both layers trained (PyTorch default init), AdamW, logistic loss (the source names no loss,
    step size or decay: ours are in :class:`ContaminationSizes` and weight decay 1e-2)."""
    data = ConcentricBalls(d_core=size.d_core, d_bg=size.d_bg)
    net = init_torch_default(size.seeds, data.d0, size.ext_width, activation=activation, generator=generator,
                             device=device)
    x_id, y_id = data.sample(size.n_test, split="id", generator=generator, device=device)
    x_ood, y_ood = data.sample(size.n_test, split="ood", generator=generator, device=device)
    W0 = net.W.detach().clone()
    u_bg = torch.ones(size.d_bg, device=device) / size.d_bg**0.5

    def core_norm(W):  # mean over neurons of ||P_core w_k||
        return W[..., :size.d_core].norm(dim=-1).mean(-1)

    def bg_direction(W):  # mean over neurons of |<w_k, u_bg>|, u_bg the unit background-mean direction
        return (W[..., size.d_core:] @ u_bg).abs().mean(-1)

    def loss_fn(step):
        x, y = data.sample(size.ext_batch, replicas=size.seeds, generator=generator, device=device)
        return logistic(net(x), y).mean(-1).sum()

    @torch.no_grad()
    def log(step):
        return {"id_loss": logistic(net(x_id), y_id).mean(-1), "ood_loss": logistic(net(x_ood), y_ood).mean(-1),
                "id_acc": measure.accuracy(net, x_id, y_id), "ood_acc": measure.accuracy(net, x_ood, y_ood),
                "bg_direction": bg_direction(net.W) / bg_direction(W0),
                "core_norm": core_norm(net.W) / core_norm(W0)}

    config = OptimConfig(steps=size.ext_steps, lr=size.ext_lr, weight_decay=1e-2, betas=(0.9, 0.999), warmup=0)
    history = train(net.parameters(), loss_fn, config, log_every=max(1, size.ext_steps // 20), log_fn=log)
    return net, history


# ---- Sec. 2 / appendix E: the source's tables, kept as data (top-1 %, ImageNet and its shifts) -----------------
TABLE1_COLUMNS = ("ImageNet", "OOD avg", "ImageNet-V2", "ImageNet-R", "ObjectNet", "ImageNet-Sketch", "ImageNet-A")
TABLE1 = {  # Table 1 (appendix E.2): CLIP teachers and their distilled students
    "CLIP-RN50": (70.37, 39.42, 59.03, 51.18, 37.72, 31.87, 17.31),
    "Distilled RN50": (69.85, 31.63, 57.97, 38.22, 32.72, 20.97, 8.25),
    "CLIP-RN101": (72.33, 45.27, 61.70, 59.92, 43.07, 37.93, 23.73),
    "Distilled RN101": (72.28, 35.18, 60.46, 44.09, 35.89, 23.88, 11.56),
    "CLIP-ViT-B/16": (79.40, 57.59, 69.72, 72.42, 51.85, 47.33, 46.64),
    "Distilled ViT-B/16": (73.58, 37.14, 62.45, 44.43, 35.52, 23.83, 19.47),
    "CLIP-RN50x4": (76.18, 51.45, 65.83, 64.80, 48.74, 42.19, 35.67),
    "Distilled RN50x4": (76.25, 41.40, 65.20, 49.22, 42.71, 29.23, 20.64),
    "CLIP-RN50x16": (80.24, 60.61, 70.13, 73.67, 56.92, 48.52, 53.79),
    "Distilled RN50x16": (79.65, 48.26, 68.49, 55.03, 48.90, 32.93, 35.97),
}
TABLES_2_TO_4 = {  # (ID, OOD) of teacher and distilled student: iWildCam (macro F1), Camelyon17, DomainNet (%)
    "iWildCam-WILDS (Table 2)": {"teacher": ("ImageNet RN50", 49.30, 32.46),
                                 "student": ("Distilled RN50", 32.32, 13.83)},
    "Camelyon17-WILDS (Table 3)": {"teacher": ("CLIP-ViT-B/16", 98.22, 92.88),
                                   "student": ("Distilled ViT-B/16", 98.28, 89.83)},
    "DomainNet (Table 4)": {"teacher": ("CLIP-RN50", 87.02, 82.58), "student": ("Distilled RN50", 77.91, 64.78)},
}


def table1_gaps() -> dict[str, dict[str, float]]:
    """Distilled minus CLIP teacher, per architecture: ID, OOD average, and each OOD set; plus the check that the
    printed OOD average is the mean of the five OOD columns (returned as ``avg_error``)."""
    out = {}
    for name, student in TABLE1.items():
        if not name.startswith("Distilled"):
            continue
        arch = name.removeprefix("Distilled ")
        teacher = TABLE1[f"CLIP-{arch}"]
        out[arch] = {col: s - t for col, s, t in zip(TABLE1_COLUMNS, student, teacher, strict=True)}
        out[arch]["avg_error"] = max(abs(row[1] - sum(row[2:]) / 5) for row in (student, teacher))
    return out


# ---- a bundled-data analogue of Sec. 2: distil an OOD-robust teacher on digits with a random border -------------
def run_digits_distillation(size: ContaminationSizes, activation: str, generator: torch.Generator, device=None,
                            n_train: int = 1200, teacher_dim: int = 32):
    """Teacher: PCA (``teacher_dim`` components) of the 64 digit pixels, fitted on the training digits; it ignores the
    border, so it is exactly invariant to the background shift (the role of the OOD-robust CLIP teacher). Student: a
    two-layer net 100 -> width -> teacher_dim (``activation``, biases, PyTorch init) trained by MSE to the teacher
    on ID images (fresh border noise each batch of 128; AdamW lr 1e-3, weight decay 1e-4). Linear probes
    (multinomial logistic regression) are fitted on ID training representations and evaluated on ID and OOD test
    images. Returns a dict of accuracies (teacher, student per replica) and the student's ID/OOD distillation error."""
    from sklearn.linear_model import LogisticRegression

    from feature_learning.data.digits_border import load_digit_splits, with_border

    size = dataclasses.replace(size, seeds=size.digits_seeds)
    train_split, test_split = load_digit_splits(n_train, generator)
    mean = train_split.digits.mean(0)
    _, _, vh = torch.linalg.svd(train_split.digits - mean, full_matrices=False)
    basis = vh[:teacher_dim].T  # (64, teacher_dim)
    from feature_learning.data.digits_border import border_mask
    core = ~border_mask()

    def teacher(images):
        return (images[:, core] - mean) @ basis

    net = init_torch_default(size.seeds, 100, size.digits_width, d_out=teacher_dim, activation=activation,
                             generator=generator, device=device)

    def loss_fn(step):
        idx = torch.randint(0, n_train, (size.seeds, 128), generator=generator)
        images = with_border(train_split.digits[idx.flatten()], split="id", generator=generator)
        target = teacher(images).view(size.seeds, 128, teacher_dim)
        return half_squared_error(net(images.view(size.seeds, 128, -1).to(device)), target.to(device)).mean(-1).sum()

    train(net.parameters(), loss_fn, OptimConfig(steps=size.digits_steps, lr=1e-3, weight_decay=1e-4,
                                                 betas=(0.9, 0.999), warmup=0))
    img_train = with_border(train_split.digits, split="id", generator=generator)
    img_id = with_border(test_split.digits, split="id", generator=generator)
    img_ood = with_border(test_split.digits, split="ood", generator=generator)
    ytr, yte = train_split.labels.numpy(), test_split.labels.numpy()

    def probe(rep_train, rep_id, rep_ood):
        clf = LogisticRegression(max_iter=3000).fit(rep_train, ytr)
        return clf.score(rep_id, yte), clf.score(rep_ood, yte)

    out = {"teacher": probe(teacher(img_train).numpy(), teacher(img_id).numpy(), teacher(img_ood).numpy()),
           "student": [], "mse_id": [], "mse_ood": []}
    with torch.no_grad():
        reps = [net(img.to(device)).cpu() for img in (img_train, img_id, img_ood)]
        for r in range(size.seeds):
            out["student"].append(probe(*(rep[r].numpy() for rep in reps)))
        out["mse_id"] = half_squared_error(reps[1], teacher(img_id)).mean(-1)
        out["mse_ood"] = half_squared_error(reps[2], teacher(img_ood)).mean(-1)
    return out

"""The classifier stage after the two full-batch steps (steps t = 3..T), the fixed-feature baselines trained
beside it, the probes, and the chapter's data and initialisation in pattern coordinates z = M^T x (exact, see
:func:`sample_patterns`)."""

from __future__ import annotations

import dataclasses
import math

import torch

from feature_learning.data.sparse_coding import (
    SparseCodingTask,
)
from feature_learning.experiments.feature_emergence.sizes import (
    FIRST_LAYER_FACTOR,
    NTK_STEP,
    PROBE_C,
    PROBE_FIT,
    PROBE_ITERATIONS,
    RF_STEP,
    SECOND_LAYER_STEP,
    UNSCALED_PROBE_FIT,
)
from feature_learning.measure.geometry import cosine_to
from feature_learning.measure.metrics import sign_accuracy
from feature_learning.measure.probes import logistic_probe
from feature_learning.models.two_layer import (
    TwoLayerNet,
    init_symmetric_gaussian,
    ntk_forward,
    paper_init_scales,
    zeros_like,
)
from feature_learning.training.loop import OptimConfig, batches_with_replacement, train
from feature_learning.training.losses import (
    hinge,
)


# -- the classifier stage and the fixed-feature baselines -----------------------------------------------------------
def stage_step(k: int, m: int, steps: int) -> float:
    """eta = k^2/(T m^(1/3)) for t > 2 (Theorem 26)."""
    return k**2 / (steps * m ** (1 / 3))


def stage_schedule(steps: int):
    """The factor of every step size at mini-batch step t of the classifier stage: a cosine decay from 1 to 0 over
    the stage (our choice; the source gives none), so that the stage ends at rest instead of in an oscillation."""
    return lambda t: 0.5 * (1 + math.cos(math.pi * t / steps))


@dataclasses.dataclass
class StageResult:
    net: TwoLayerNet  # the trained network
    rf: TwoLayerNet  # the random-feature model (first layer frozen at initialisation)
    ntk: TwoLayerNet  # the NTK model's displacement from the initialisation
    history: dict[str, torch.Tensor]  # "step" (L,) and the test accuracy of "net", "rf", "ntk", each (L, R)
    test_acc: dict[str, torch.Tensor]  # (R,) float64
    test_hinge: dict[str, torch.Tensor]  # (R,) float64


def _hinge_slope(out: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """d/d out of the mean class-weighted hinge loss over the batch: -alpha y 1[y out < 1] / B."""
    return -alpha * y * (y * out < 1).to(out.dtype) / y.shape[-1]


def network_gradients(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor) -> list[torch.Tensor]:
    """The network's part of :func:`stage_gradients`: the hinge-loss gradients of W, b and a."""
    z = net.preactivation(x)
    h = z.clamp(0.0, 1.0)
    c = _hinge_slope((h * net.a[:, None, :]).sum(-1), y, alpha)
    G = c[..., None] * ((z > 0) & (z < 1)).to(z.dtype)
    return [net.a[..., None] * torch.einsum("rni,rnd->rid", G, x), net.a * G.sum(1), torch.einsum("rn,rni->ri", c, h)]


def stage_gradients(net: TwoLayerNet, rf: TwoLayerNet, init: TwoLayerNet, ntk: TwoLayerNet, x: torch.Tensor,
                    y: torch.Tensor, alpha: torch.Tensor) -> list[torch.Tensor]:
    """The hinge-loss gradients of a mini-batch for the three models of the classifier stage, in the order
    (net W, b, a; random-feature a; NTK W, b, a), written out (sigma_xi = 0, so sigma' = 1[0 < z < 1]): for an
    output sum_i a_i h_i with slope c_n = dL/d out_n, dL/da = sum_n c_n h_n and the first layer's gradients are
    a_i sum_n c_n sigma'(z_ni) (x_n, 1). The NTK model is sum_i da_i sigma(z0_i) + a0_i sigma'(z0_i)(<dw_i, x> +
    db_i) (:func:`feature_learning.models.two_layer.ntk_forward`). Checked against autograd in the tests."""
    grads = network_gradients(net, x, y, alpha)
    z0 = init.preactivation(x)
    h0 = z0.clamp(0.0, 1.0)
    grads.append(torch.einsum("rn,rni->ri", _hinge_slope((h0 * rf.a[:, None, :]).sum(-1), y, alpha), h0))
    slope0 = ((z0 > 0) & (z0 < 1)).to(z0.dtype) * init.a[:, None, :]
    moved = torch.matmul(x, ntk.W.transpose(1, 2)) + ntk.b[:, None, :]
    c0 = _hinge_slope((h0 * ntk.a[:, None, :] + slope0 * moved).sum(-1), y, alpha)
    G0 = c0[..., None] * slope0
    grads += [torch.einsum("rni,rnd->rid", G0, x), G0.sum(1), torch.einsum("rn,rni->ri", c0, h0)]
    return grads


def classifier_stage(two: TwoLayerNet, init: TwoLayerNet, data: dict[str, torch.Tensor], *, k: int, steps: int,
                     batch: int, log_every: int, generator: torch.Generator, eta_a: float = SECOND_LAYER_STEP,
                     decay: bool = True, baselines: bool = True,
                     first_layer_factor: float = FIRST_LAYER_FACTOR, ntk_step: float = NTK_STEP,
                     rf_step: float = RF_STEP) -> StageResult:
    """Steps t = 3..T of the network (mini-batch SGD of the hinge loss, sigma_xi = 0, lambda = 0) and, side by side,
    the same number of SGD steps of the two fixed-feature models of Appendix E.1 on the same mini-batches: random
    features (the second layer of the initial network) and the NTK model (the network linearised at initialisation,
    trained in parameter space). Step sizes: ``eta_a`` (default ``SECOND_LAYER_STEP``) for the network's a,
    ``first_layer_factor`` (default ``FIRST_LAYER_FACTOR``) times the theorem's eta = k^2/(T m^(1/3)) for its W
    and b, ``rf_step`` and ``ntk_step`` (default ``RF_STEP`` and ``NTK_STEP``) for the baselines (trained only
    with ``baselines``), all times :func:`stage_schedule` (constant without ``decay``). Runs in float32; ``data``
    has x, y (train) and x_test, y_test, each batched over the replicas R, and optionally the class weights
    ``alpha`` (R, n) of the training samples (:func:`~.first_steps.class_weights`: the class-weighted hinge, for
    imbalanced classes; default 1)."""
    x, y, xt, yt = (data[key].float() for key in ("x", "y", "x_test", "y_test"))
    alpha = data["alpha"].float() if "alpha" in data else torch.ones_like(y)
    eta = first_layer_factor * stage_step(k, init.width // 2, steps)
    net = two.to(torch.float32)
    init32 = dataclasses.replace(init, trained=()).to(torch.float32)
    rf = dataclasses.replace(init32, trained=("a",)).detached()
    ntk = dataclasses.replace(zeros_like(init32), trained=("W", "b", "a")).detached()
    models = {"net": net, "rf": rf, "ntk": lambda inputs: ntk_forward(init32, ntk, inputs)}
    if not baselines:
        models = {"net": net}
    sample = batches_with_replacement(x.shape[1], batch, generator, x.device)

    def grads(step):
        idx = sample(step)
        if not baselines:
            return network_gradients(net, x[:, idx], y[:, idx], alpha[:, idx])
        return stage_gradients(net, rf, init32, ntk, x[:, idx], y[:, idx], alpha[:, idx])

    def log(step):
        return {name: sign_accuracy(model(xt), yt) for name, model in models.items()}

    groups = net.param_groups(lr={"W": eta, "b": eta, "a": eta_a})
    if baselines:
        groups += rf.param_groups(lr={"a": rf_step}) + ntk.param_groups(lr={"W": ntk_step, "b": ntk_step,
                                                                            "a": ntk_step})
    stage = steps - 2
    with torch.no_grad():
        history = train(groups, None, OptimConfig(stage, 1.0, optimizer="gd", warmup=0,
                                                  schedule=stage_schedule(stage) if decay else lambda t: 1.0),
                        grad_fn=grads, log_every=log_every, log_fn=log, description="classifier stage")
        history["step"] = history["step"] + 2  # the stage starts after the two full-batch steps
        outputs = {name: model(xt) for name, model in models.items()}
    return StageResult(net=net, rf=rf, ntk=ntk, history=history,
                       test_acc={name: sign_accuracy(out, yt).cpu() for name, out in outputs.items()},
                       test_hinge={name: hinge(out, yt).mean(-1).double().cpu() for name, out in outputs.items()})


def probe(features: torch.Tensor, y: torch.Tensor, features_test: torch.Tensor, y_test: torch.Tensor,
          n_fit: int | None = None) -> torch.Tensor:
    """"Train the best classifier on top" of frozen features (Appendix E.1): logistic regression on standardised
    features, penalty 1/2 ||w||^2 with C = ``PROBE_C``, solved by Newton's method
    (:func:`feature_learning.measure.probes.logistic_probe`); fitted on the first ``n_fit`` training samples
    (default ``PROBE_FIT``).
    Returns the test accuracy per replica (R,). Standardising makes the probe blind to the features' scale (the
    step-one features vary at the 1e-10 scale), so it is the best linear classifier of their directions."""
    n_fit = min(n_fit or PROBE_FIT, features.shape[1])
    out = logistic_probe(features[:, :n_fit].double(), y[:, :n_fit].double(), features_test.double(),
                         y_test.double(), PROBE_C, iterations=PROBE_ITERATIONS, standardize=True)
    return out["accuracy"].cpu()


def unscaled_probe(features: torch.Tensor, y: torch.Tensor, features_test: torch.Tensor, y_test: torch.Tensor,
                   n_fit: int = UNSCALED_PROBE_FIT, lr: float = 0.5, iterations: int = 1000) -> torch.Tensor:
    """A probe at the features' own scale, the chapter notes' readout: logistic regression with a bias, by
    full-batch gradient descent (step ``lr``, ``iterations`` steps from zero) on the raw features, float64, fitted
    on the first ``n_fit`` training samples. Returns the test accuracy per replica (R,). Where the features vary at
    1e-10 of their value only the bias can move, so it predicts one class."""
    F, yf = features[:, :n_fit].double(), y[:, :n_fit].double()
    w = torch.zeros(F.shape[0], F.shape[-1], dtype=F.dtype, device=F.device)
    b = torch.zeros(F.shape[0], 1, dtype=F.dtype, device=F.device)
    for _ in range(iterations):
        margin = yf * ((F @ w.unsqueeze(-1)).squeeze(-1) + b)
        c = -yf * torch.sigmoid(-margin) / yf.shape[-1]  # d(mean log(1 + e^-margin))/d output
        w -= lr * (c.unsqueeze(-2) @ F).squeeze(-2)
        b -= lr * c.sum(-1, keepdim=True)
    out = (features_test.double() @ w.unsqueeze(-1)).squeeze(-1) + b
    return ((out > 0) == (y_test > 0)).double().mean(-1).cpu()


# -- sparse-coding data in pattern coordinates ----------------------------------------------------------------------
def sample_patterns(task: SparseCodingTask, n: int, A: torch.Tensor, generator: torch.Generator,
                    negative_ratio: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """n samples (z, y) of ``task`` in pattern coordinates z = M^T x = (phi~ - E phi~)/sigma~ (n, D), float64.

    This is exact, not an approximation: with orthonormal M every input x = M z lies in span(M), so
    <w, x> = <M^T w, z>, and every gradient with respect to w is a combination of inputs, so it lies in span(M) too.
    The part of w orthogonal to span(M) is erased by step 1's decay in the network and never moved in the
    random-feature and NTK models; it enters only the cosines, through its norm. (The law of M^T w^(0) is
    N(0, sigma_w^2 I_D) whatever M is, so M itself never needs to be drawn.) ``negative_ratio`` resamples to that
    share of class -1 (Appendix E.2.2,
    :meth:`feature_learning.data.sparse_coding.SparseCodingTask.sample_class_ratio`)."""
    eye = torch.eye(task.D, dtype=torch.float64)
    if negative_ratio is None:
        z, y, _ = task.sample(n, eye, A, generator)
    else:
        z, y, _ = task.sample_class_ratio(n, eye, A, negative_ratio, generator)
    return z, y


def paired_samples(task: SparseCodingTask, A: torch.Tensor, n: int, n_test: int, generator: torch.Generator,
                   negative_ratio: float | None = None) -> dict[str, torch.Tensor]:
    """Training and test sets with input structure (replica 0) and without it (replica 1, phi~ uniform: the family
    F_Xi0), the same A and labelling: x, y, x_test, y_test of shapes (2, n, D), (2, n), ..."""
    parts = {"x": [], "y": [], "x_test": [], "y_test": []}
    for member in (task, task.without_structure()):
        for count, xs, ys in ((n, "x", "y"), (n_test, "x_test", "y_test")):
            z, y = sample_patterns(member, count, A, generator, negative_ratio)
            parts[xs].append(z), parts[ys].append(y)
    return {key: torch.stack(value) for key, value in parts.items()}


def symmetric_init(k: int, d_pattern: int, d: int, m: int, sigma_tilde: float, gamma: float,
                   generator: torch.Generator) -> tuple[TwoLayerNet, torch.Tensor]:
    """The unbiased initialisation of Section 3.1 with the scales of Theorem 26 (one replica, 2m units), in
    pattern coordinates, and the units' component orthogonal to span(M) (1, 2m, d - D): w_{m+i} = w_i there too."""
    net = init_symmetric_gaussian(1, d_pattern, 2 * m, **paper_init_scales(k, sigma_tilde, gamma),
                                  activation="trunc_relu", generator=generator)
    perp = torch.randn(1, m, d - d_pattern, generator=generator, dtype=torch.float64) / k
    return net, torch.cat([perp, perp], 1)


def _stack_nets(nets: list[TwoLayerNet], repeat: int = 1) -> TwoLayerNet:
    """Replicas of several one-replica networks side by side, each repeated ``repeat`` times."""
    def cat(name):
        return torch.cat([getattr(net, name).detach().repeat_interleave(repeat, 0) for net in nets])

    return dataclasses.replace(nets[0], W=cat("W"), b=cat("b"), a=cat("a"))


def _unit_direction(D: int, A: torch.Tensor) -> torch.Tensor:
    v = torch.zeros(D, dtype=torch.float64)
    v[A] = 1.0  # sum_A M_j in pattern coordinates
    return v


def max_cosine(W: torch.Tensor, v: torch.Tensor, perp_sq: torch.Tensor | None = None) -> torch.Tensor:
    """max_i cos(w_i, v) per replica (R,) (the "Cos Similarity" of the source's tables), float64."""
    return cosine_to(W.double(), v.double(), perp_sq).max(-1).values.cpu()

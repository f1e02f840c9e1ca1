"""Training the two-layer network of :mod:`feature_learning.models.truncated_relu` as in Shi, Wei and Liang (ICLR 2022).

eq. (4): theta^(t) = theta^(t-1) - eta^(t) grad( L_D(g^(t-1); sigma_xi^(t)) + R(g^(t-1); lambda_a^(t), lambda_w^(t)) )
with R = sum_i lambda_a a_i^2 + lambda_w ||w_i||^2 (b is not regularised). The schedule of Theorem 26 / A.20:

* t = 1: tiny eta^(1), lambda_a = 0, lambda_w = 1/(2 eta^(1)) -- the decay erases w^(0), so
  w^(1) = -eta^(1) grad_w L: the features *emerge* from the gradient alone;
* t = 2: eta = 1, lambda_a = lambda_w = 1/2 -- erases w^(1) and a^(1) in turn;
* t > 2: mini-batch steps with sigma_xi = 0 (the classifier stage).

The same loop trains the random-feature model (first layer frozen: step sizes 0 for W and b) and the NTK model
(:func:`train_ntk`). Linear probes ("train the best classifier on top", Appendix E.1) are logistic regressions by
full-batch gradient descent (:func:`linear_probe`).
"""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.measure.geometry import (  # noqa: F401  (kept importable from here)
    classical_mds,
    cosine_to,
    feature_snr,
    pairwise_cosines,
)
from feature_learning.models.truncated_relu import (
    TwoLayerParams,
    accuracy,
    forward,
    hinge,
    ntk_forward,
    zeros_like,
)


@dataclasses.dataclass(frozen=True)
class StepConfig:
    """One full-batch step of eq. (4)."""

    eta: float
    lam_a: float
    lam_w: float
    noise_std: float


def paper_first_steps(k: int, m: int, sigma_tilde: float, gamma: float, *, eta1: str = "theorem",
                      noise: str = "lemma") -> tuple[StepConfig, StepConfig]:
    """Steps 1 and 2 of Theorem 26 (= Thm A.20). The source states two variants (an inconsistency, see the chapter):
    eta^(1) = gamma^2 sigma~^2/(k m^3) ("theorem", Thm A.20) or gamma^2 sigma~/(k m^3) ("lemma", Lemma 23 / A.17);
    sigma_xi = 1/k^2 ("theorem") or 1/k^{3/2} ("lemma", Lemmas 18, 20, 23)."""
    power = 2 if eta1 == "theorem" else 1
    eta_1 = gamma**2 * sigma_tilde**power / (k * m**3)
    s = 1 / k**2 if noise == "theorem" else 1 / k**1.5
    return StepConfig(eta_1, 0.0, 1 / (2 * eta_1), s), StepConfig(1.0, 0.5, 0.5, s)


def _decay(eta: float, lam: float) -> float:
    factor = 1.0 - 2.0 * eta * lam
    return 0.0 if abs(factor) < 1e-12 else factor  # lambda = 1/(2 eta): exact erasure


def full_batch_step(params: TwoLayerParams, x: torch.Tensor, y: torch.Tensor, step: StepConfig,
                    loss=hinge) -> TwoLayerParams:
    """One step of eq. (4) on the whole sample (the "approximate full gradient" of E.1); replicas independent."""
    p = TwoLayerParams(*(t.detach().clone().requires_grad_(True) for t in params.tensors()))
    total = loss(y, forward(p, x, step.noise_std)).sum()
    gW, gb, ga = torch.autograd.grad(total, p.tensors())
    return TwoLayerParams(
        _decay(step.eta, step.lam_w) * params.W - step.eta * gW,
        params.b - step.eta * gb,
        _decay(step.eta, step.lam_a) * params.a - step.eta * ga,
    )


@dataclasses.dataclass(frozen=True)
class StageConfig:
    """Mini-batch steps t > 2 (sigma_xi = 0), with one step size per parameter group (0 freezes the group)."""

    steps: int
    batch: int
    eta_w: float
    eta_b: float
    eta_a: float
    lam: float = 0.0
    log_every: int = 0


def _minibatch(n: int, batch: int, generator: torch.Generator, device) -> torch.Tensor:
    return torch.randint(0, n, (min(batch, n),), generator=generator).to(device)


def _hinge_sgd(start: TwoLayerParams, predict, update, x, y, config: StageConfig, generator: torch.Generator,
               x_test=None, y_test=None) -> tuple[TwoLayerParams, dict]:
    """The SGD loop shared by :func:`train_stage` and :func:`train_ntk`: mini-batches of the summed hinge loss of
    ``predict(params, x)``, parameters replaced by ``update(params, grads)``; logs the test accuracy every
    ``log_every`` steps (and at the end) when test data are given."""
    p = start
    history = {"step": [], "test_acc": []}
    n = x.shape[-2]

    def log(t):
        if x_test is not None and config.log_every and (t % config.log_every == 0 or t == config.steps):
            with torch.no_grad():
                history["step"].append(t)
                history["test_acc"].append(accuracy(y_test, predict(p, x_test)).cpu())

    log(0)
    for t in range(1, config.steps + 1):
        idx = _minibatch(n, config.batch, generator, x.device)
        q = TwoLayerParams(*(v.detach().requires_grad_(True) for v in p.tensors()))
        total = hinge(y[..., idx], predict(q, x[..., idx, :])).sum()
        grads = torch.autograd.grad(total, q.tensors())
        with torch.no_grad():
            p = update(q, grads)
        log(t)
    if history["step"]:
        history = {"step": torch.tensor(history["step"]), "test_acc": torch.stack(history["test_acc"])}
    return p, history


def train_stage(params: TwoLayerParams, x: torch.Tensor, y: torch.Tensor, config: StageConfig,
                generator: torch.Generator, *, x_test=None, y_test=None) -> tuple[TwoLayerParams, dict]:
    """Plain SGD of the regularised hinge loss (eq. (4) with sigma_xi = 0); x (n, d) or (R, n, d), y (n,) or (R, n).
    Logs the test accuracy every ``log_every`` steps (and at the end) when test data are given."""

    def update(q, grads):
        gW, gb, ga = grads
        return TwoLayerParams(
            _decay(config.eta_w, config.lam) * q.W - config.eta_w * gW,
            q.b - config.eta_b * gb,
            _decay(config.eta_a, config.lam) * q.a - config.eta_a * ga,
        )

    start = TwoLayerParams(*(t.detach().clone() for t in params.tensors()))
    return _hinge_sgd(start, forward, update, x, y, config, generator, x_test, y_test)


def train_ntk(init: TwoLayerParams, x: torch.Tensor, y: torch.Tensor, config: StageConfig,
              generator: torch.Generator, *, x_test=None, y_test=None) -> tuple[TwoLayerParams, dict]:
    """SGD on the hinge loss of the network linearised at ``init`` (:func:`ntk_forward`); returns the displacement."""

    def update(q, grads):
        gW, gb, ga = grads
        return TwoLayerParams(q.W - config.eta_w * gW, q.b - config.eta_b * gb, q.a - config.eta_a * ga)

    def predict(delta, inputs):
        return ntk_forward(init, delta, inputs)

    return _hinge_sgd(zeros_like(init), predict, update, x, y, config, generator, x_test, y_test)


def linear_probe(f_train: torch.Tensor, y_train: torch.Tensor, f_test: torch.Tensor, y_test: torch.Tensor, *,
                 standardize: bool, steps: int = 1000, lr: float = 0.5,
                 curvature_step: bool = False) -> dict[str, torch.Tensor]:
    """Logistic regression (with bias) by full-batch gradient descent on features (R, n, p); per-replica train and
    test accuracy. ``standardize`` rescales each feature by its training mean and standard deviation first;
    without it the probe sees the features at their own scale, as a network's next layer would. With
    ``curvature_step`` the step is ``lr`` divided by the largest eigenvalue of the (uncentred) second-moment matrix
    of [features, 1] (stable for nearly collinear features); otherwise it is ``lr`` (the notes' recipe, 0.5)."""
    if standardize:
        mu = f_train.mean(-2, keepdim=True)
        sd = f_train.std(-2, keepdim=True).clamp_min(1e-300)
        f_train, f_test = (f_train - mu) / sd, (f_test - mu) / sd
    R, _, p = f_train.shape
    ones = torch.ones(*f_train.shape[:-1], 1, dtype=f_train.dtype, device=f_train.device)
    aug = torch.cat([f_train, ones], -1)
    top = torch.linalg.eigvalsh(aug.transpose(1, 2) @ aug / f_train.shape[1])[:, -1]  # (R,)
    lr = lr / top[:, None] if curvature_step else torch.full_like(top[:, None], lr)
    w = torch.zeros(R, p, dtype=f_train.dtype, device=f_train.device)
    c = torch.zeros(R, 1, dtype=f_train.dtype, device=f_train.device)
    for _ in range(steps):
        margin = y_train * (torch.einsum("rnp,rp->rn", f_train, w) + c)
        coef = -y_train * torch.sigmoid(-margin)  # d/dz log(1 + e^{-y z})
        w = w - lr * torch.einsum("rn,rnp->rp", coef, f_train) / f_train.shape[1]
        c = c - lr * coef.mean(-1, keepdim=True)

    def acc(f, yy):
        return accuracy(yy, torch.einsum("rnp,rp->rn", f, w) + c)

    return {"train_acc": acc(f_train, y_train), "test_acc": acc(f_test, y_test)}

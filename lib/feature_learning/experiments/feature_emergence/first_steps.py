"""The two full-batch steps of eq. (4) (Theorem 26 of Shi, Wei and Liang = dissertation ch. 2): the exact
erasure of the initialisation by step 1's weight decay, and the hinge gradients of the noise-smoothed network
(Lemma 12), written out and batched over replicas."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.models.two_layer import (
    TwoLayerNet,
    smoothed_trunc_relu,
    smoothed_trunc_relu_grad,
)


# -- the two full-batch steps (eq. (4), Theorem 26) -----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class StepConfig:
    """One full-batch step of eq. (4): step size, penalties lambda_a and lambda_w, noise level sigma_xi."""

    eta: float
    lam_a: float
    lam_w: float
    noise_std: float


def first_steps(k: int, m: int, sigma_tilde: float, gamma: float) -> tuple[StepConfig, StepConfig]:
    """Steps 1 and 2 of Theorem 26 (= Thm A.20): eta^(1) = gamma^2 sigma~^2/(k m^3), lambda_a = 0,
    lambda_w = 1/(2 eta^(1)); then eta = 1, lambda_a = lambda_w = 1/2. The noise level is the lemmas'
    sigma_xi = 1/k^(3/2) (Lemmas 18, 20, 23; Theorem 26 writes 1/k^2, an inconsistency the chapter notes)."""
    eta_1 = gamma**2 * sigma_tilde**2 / (k * m**3)
    s = 1 / k**1.5
    return StepConfig(eta_1, 0.0, 1 / (2 * eta_1), s), StepConfig(1.0, 0.5, 0.5, s)


def _decay(eta: float, lam: float) -> float:
    factor = 1.0 - 2.0 * eta * lam
    return 0.0 if abs(factor) < 1e-12 else factor  # lambda = 1/(2 eta): exact erasure


def class_weights(y: torch.Tensor, weighted: torch.Tensor | None = None) -> torch.Tensor:
    """alpha_n = 1/(2 Pr[y = y_n]) with Pr the share of the class in the sample (the class-weighted hinge of the
    general setting, A.293) for the replicas flagged in ``weighted`` (R,), 1 for the others: shape of y (R, n)."""
    alpha = torch.ones_like(y)
    if weighted is not None and bool(weighted.any()):
        pos = (y > 0).to(y.dtype)
        frac = pos.mean(-1, keepdim=True)
        alpha = torch.where(weighted[:, None], pos / (2 * frac) + (1 - pos) / (2 * (1 - frac)), alpha)
    return alpha


def hinge_gradients(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, alpha: torch.Tensor | None = None,
                    chunk: int = 2048) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (W, b, a) of the mean (class-weighted) hinge loss of the noise-smoothed network (eq. (3),
    ``net.noise_std``) by Lemma 12's formulas, summed over chunks of samples (so that a full batch of 50,000
    samples never needs its (R, n, 2m) activations at once): with c_n = -alpha_n y_n 1[y_n g(x_n) < 1]/n,
    dL/da_i = sum_n c_n sigma~(z_ni), dL/dw_i = a_i sum_n c_n sigma~'(z_ni) x_n, dL/db_i = a_i sum_n c_n
    sigma~'(z_ni), where sigma~' = Pr_xi[z + xi in (0, 1)] (the indicator expectation, with xi in it). ``alpha``
    (R, n): the class weights of :func:`class_weights` (default 1). Checked against autograd in the tests."""
    n = x.shape[-2]
    alpha = torch.ones_like(y) if alpha is None else alpha
    gW, gb, ga = torch.zeros_like(net.W), torch.zeros_like(net.b), torch.zeros_like(net.a)
    for start in range(0, n, chunk):
        xc, yc = x[:, start:start + chunk], y[:, start:start + chunk]
        z = net.preactivation(xc)
        act = smoothed_trunc_relu(z, net.noise_std)
        out = (act * net.a[:, None, :]).sum(-1)
        c = -(alpha[:, start:start + chunk] * yc) * (yc * out < 1).to(z.dtype) / n  # (R, chunk)
        ga += torch.einsum("rn,rni->ri", c, act)
        G = c[..., None] * smoothed_trunc_relu_grad(z, net.noise_std)  # (R, chunk, 2m), times a_i below
        gW += torch.einsum("rni,rnd->rid", G, xc)
        gb += G.sum(1)
    return gW * net.a[..., None], gb * net.a, ga


def full_batch_step(net: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, step: StepConfig,
                    alpha: torch.Tensor | None = None) -> TwoLayerNet:
    """One step of eq. (4) on the whole sample (the "approximate full gradient" of E.1), replicas independent:
    theta <- (1 - 2 eta lambda) theta - eta grad L(theta; sigma_xi), with b unpenalised and the decay set to exactly
    0 where lambda = 1/(2 eta) (the erasure of Theorem 26). L is the mean hinge loss of the noise-smoothed network
    (eq. (3), :func:`hinge_gradients`), class-weighted with ``alpha`` (:func:`class_weights`) where given."""
    with torch.no_grad():
        gW, gb, ga = hinge_gradients(dataclasses.replace(net, noise_std=step.noise_std), x, y, alpha)
        return dataclasses.replace(net, W=_decay(step.eta, step.lam_w) * net.W - step.eta * gW,
                                   b=net.b - step.eta * gb, a=_decay(step.eta, step.lam_a) * net.a - step.eta * ga)


def two_steps(init: TwoLayerNet, x: torch.Tensor, y: torch.Tensor, steps: tuple[StepConfig, StepConfig],
              alpha: torch.Tensor | None = None) -> tuple[TwoLayerNet, TwoLayerNet]:
    """The networks after steps 1 and 2 (full batch, in the dtype of ``init``: float32 in :func:`parity_program`)."""
    one = full_batch_step(init, x, y, steps[0], alpha)
    return one, full_batch_step(one, x, y, steps[1], alpha)

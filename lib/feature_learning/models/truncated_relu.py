"""The two-layer network of Shi, Wei and Liang (ICLR 2022), Section 3.1, eqs. (2)-(3); dissertation ch. 2.

g(x) = sum_{i=1}^{2m} a_i sigma(<w_i, x> + b_i) with the truncated ReLU sigma(z) = min(1, max(z, 0)), the hinge loss
l(y, y') = max(1 - y y', 0) and the unbiased symmetric initialisation (w_{m+i}, b_{m+i}, a_{m+i}) = (w_i, b_i, -a_i),
which makes g^(0) = 0. The noise-smoothed network g(x; xi) = sum_i a_i E_xi sigma(<w_i,x> + b_i + xi_i),
xi ~ N(0, s^2), is computed in closed form (:func:`smoothed_trunc_relu`), so no Monte Carlo over xi is needed.

Parameters carry a leading replica dimension R (independent networks trained side by side): W (R, 2m, d),
b (R, 2m), a (R, 2m); inputs are (n, d) shared by all replicas or (R, n, d).

Also here: the two fixed-feature models of the same network used as baselines in Appendix E.1 -- random features
(first layer frozen at initialisation) and the neural tangent kernel model (the network linearised at
initialisation, trained in parameter space without materialising its features).
"""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.models.two_layer import (  # noqa: F401  (kept importable from here)
    INV_SQRT_2PI,
    SQRT2,
    paper_init_scales,
    smoothed_trunc_relu,
    smoothed_trunc_relu_grad,
    trunc_relu,
)


@dataclasses.dataclass
class TwoLayerParams:
    W: torch.Tensor  # (R, 2m, d)
    b: torch.Tensor  # (R, 2m)
    a: torch.Tensor  # (R, 2m)

    def clone(self) -> TwoLayerParams:
        return TwoLayerParams(self.W.clone(), self.b.clone(), self.a.clone())

    def tensors(self) -> list[torch.Tensor]:
        return [self.W, self.b, self.a]

    @property
    def width(self) -> int:
        return self.W.shape[1]


def symmetric_init(replicas: int, m: int, d: int, *, sigma_w: float, sigma_b: float, sigma_a: float,
                   generator: torch.Generator, dtype=torch.float64, device="cpu") -> TwoLayerParams:
    """Unbiased initialisation (Section 3.1): w_i ~ N(0, sigma_w^2 I), b_i ~ N(0, sigma_b^2), a_i ~ N(0, sigma_a^2)
    for i in [m], then (w_{m+i}, b_{m+i}, a_{m+i}) = (w_i, b_i, -a_i); 2m units in all, g^(0) = 0."""
    W = sigma_w * torch.randn(replicas, m, d, generator=generator, dtype=torch.float64)
    b = sigma_b * torch.randn(replicas, m, generator=generator, dtype=torch.float64)
    a = sigma_a * torch.randn(replicas, m, generator=generator, dtype=torch.float64)
    params = TwoLayerParams(torch.cat([W, W], 1), torch.cat([b, b], 1), torch.cat([a, -a], 1))
    return TwoLayerParams(*(t.to(device=device, dtype=dtype) for t in params.tensors()))


def preactivations(params: TwoLayerParams, x: torch.Tensor) -> torch.Tensor:
    """<w_i, x> + b_i, shape (R, n, 2m); x is (n, d) or (R, n, d)."""
    return torch.matmul(x, params.W.transpose(1, 2)) + params.b[:, None, :]


def hidden(params: TwoLayerParams, x: torch.Tensor, noise_std: float = 0.0) -> torch.Tensor:
    """The features E_xi sigma(<w_i, x> + b_i + xi_i), shape (R, n, 2m)."""
    return smoothed_trunc_relu(preactivations(params, x), noise_std)


def forward(params: TwoLayerParams, x: torch.Tensor, noise_std: float = 0.0) -> torch.Tensor:
    """g(x; xi) of eq. (3), shape (R, n)."""
    return (hidden(params, x, noise_std) * params.a[:, None, :]).sum(-1)


def hinge(y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Mean hinge loss max(1 - y g, 0) over samples, per replica: shape (R,)."""
    return (1.0 - y * out).clamp_min(0.0).mean(-1)


def weighted_hinge(y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The class-balanced hinge of the general setting (Appendix F / A.8, eq. (A.293)): alpha_y = 1/(2 Pr[y])."""
    pos = (y > 0).to(out.dtype)
    frac = pos.mean(-1, keepdim=True)
    alpha = pos / (2 * frac) + (1 - pos) / (2 * (1 - frac))
    return (alpha * (1.0 - y * out).clamp_min(0.0)).mean(-1)


def accuracy(y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Fraction of sign(g) = y per replica (g = 0 counts as wrong, as at initialisation)."""
    return (y * out > 0).to(out.dtype).mean(-1)


# -- fixed-feature models of the same network (Appendix E.1) ----------------------------------------------------
def ntk_forward(init: TwoLayerParams, delta: TwoLayerParams, x: torch.Tensor) -> torch.Tensor:
    """The network linearised at ``init`` (g^(0) = 0): sum_i da_i sigma(z_i) + a_i sigma'(z_i)(<dw_i, x> + db_i),
    with z_i = <w_i^(0), x> + b_i^(0). Linear in ``delta``; its features are the NTK features of the network."""
    z = preactivations(init, x)
    slope = smoothed_trunc_relu_grad(z, 0.0) * init.a[:, None, :]
    moved = torch.matmul(x, delta.W.transpose(1, 2)) + delta.b[:, None, :]
    return (trunc_relu(z) * delta.a[:, None, :] + slope * moved).sum(-1)


def zeros_like(params: TwoLayerParams) -> TwoLayerParams:
    return TwoLayerParams(*(torch.zeros_like(t) for t in params.tensors()))

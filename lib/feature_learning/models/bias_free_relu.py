"""Bias-free two-layer ReLU network f(theta, x) = sum_j u_j relu(v_j . x) (Sec. 2 of Tsoy & Konstantinov, ICML 2024),
batched over a leading replica axis R: ``u`` has shape (R, m) and ``V`` shape (R, m, d).

Also the width-independent function G of their eq. (2), G(v) = (-l'(0)/n) sum_i phi(v, x_i) y_i with the logistic
loss (-l'(0) = 1/2), which drives every neuron while the network is small (Theorem 4.1), and three
initialisations: balanced isotropic (the theory's theta(0) = sigma theta_0 with |u_j| = ||v_j||), PyTorch's default
``nn.Linear`` init times a scale (the source's Sec. 6 and Sec. 7 experiments) and neurons aligned with given
directions (the four-neuron experiment of Sec. 5.4.2).
"""

from __future__ import annotations

import math

import torch

from feature_learning.theory.simplicity_bias import (  # noqa: F401  (kept importable from here)
    LOGISTIC_SLOPE_AT_ZERO,
    g_extrema_on_circle,
    g_function,
    g_on_circle,
)


def _batched(X: torch.Tensor, R: int) -> torch.Tensor:
    return X.unsqueeze(0).expand(R, *X.shape) if X.dim() == 2 else X


def hidden(V: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Hidden activations relu(V x): V (R, m, d), X (n, d) or (R, n, d) -> (R, n, m)."""
    return torch.relu(_batched(X, V.shape[0]) @ V.transpose(-1, -2))


def forward(u: torch.Tensor, V: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """f(theta, x_i) for every replica and point: (R, n)."""
    return (hidden(V, X) * u.unsqueeze(1)).sum(-1)


def logistic_loss_and_grads(u: torch.Tensor, V: torch.Tensor, X: torch.Tensor, y: torch.Tensor):
    """Mean logistic loss L = (1/n) sum_i ln(1 + exp(-y_i f(x_i))) per replica (R,), and its exact gradients
    (eq. (1) of the source with a minus sign): dL/du (R, m) and dL/dV (R, m, d). Stable in float64 far past
    interpolation: -l'(z) = exp(-logaddexp(0, z))."""
    Xb = _batched(X, V.shape[0])
    yb = y if y.dim() == 2 else y.unsqueeze(0).expand(V.shape[0], -1)
    pre = Xb @ V.transpose(-1, -2)  # (R, n, m)
    act = torch.relu(pre)
    margin = (act * u.unsqueeze(1)).sum(-1) * yb  # (R, n)
    zero = torch.zeros((), dtype=margin.dtype, device=margin.device)
    loss = torch.logaddexp(zero, -margin).mean(-1)
    weight = torch.exp(-torch.logaddexp(zero, margin)) * yb / yb.shape[-1]  # -l'(y f) y / n, (R, n)
    grad_u = -(weight.unsqueeze(-1) * act).sum(1)
    mask = (pre > 0).to(pre.dtype) * weight.unsqueeze(-1)  # (R, n, m)
    grad_V = -u.unsqueeze(-1) * (mask.transpose(-1, -2) @ Xb)
    return loss, grad_u, grad_V


def init_balanced(R: int, m: int, d: int, scale: float, *, generator: torch.Generator, dtype=torch.float64):
    """theta(0) = scale * theta_0 with isotropic directions, ||v_j|| = |u_j| = scale and random signs s_j."""
    V = torch.randn(R, m, d, generator=generator, dtype=dtype)
    V = scale * V / V.norm(dim=-1, keepdim=True)
    sign = torch.where(torch.rand(R, m, generator=generator) < 0.5, 1.0, -1.0).to(dtype)
    return scale * sign, V


def init_torch_default(R: int, m: int, d: int, scale: float, *, generator: torch.Generator, dtype=torch.float64):
    """PyTorch's default ``nn.Linear`` init without biases, times ``scale``: V ~ U(+-1/sqrt d), u ~ U(+-1/sqrt m).
    The source's "sigma = 2^-7" (Sec. 6) and "init scaled by 2^-5" (Sec. 7) mean this init times sigma."""
    V = (2 * torch.rand(R, m, d, generator=generator, dtype=dtype) - 1) / math.sqrt(d)
    u = (2 * torch.rand(R, m, generator=generator, dtype=dtype) - 1) / math.sqrt(m)
    return scale * u, scale * V


def init_aligned(u0: torch.Tensor, directions: torch.Tensor):
    """Balanced neurons on given unit directions: u = u0 (R, m), v_j = |u0_j| * direction_j (m, d)."""
    return u0.clone(), u0.abs().unsqueeze(-1) * directions.to(u0.dtype)


def normalized_margin(u: torch.Tensor, V: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """gamma(theta) = min_i y_i f(theta, x_i) / ||theta||^2, ||theta||^2 = sum u^2 + sum ||v||^2 (Sec. 5.3): (R,)."""
    f = forward(u, V, X)
    yb = y if y.dim() == 2 else y.unsqueeze(0)
    return (f * yb).min(-1).values / (u.pow(2).sum(-1) + V.pow(2).sum((-1, -2)))

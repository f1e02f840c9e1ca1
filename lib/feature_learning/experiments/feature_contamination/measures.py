"""Measurements of feature contamination in two-layer networks (Zhang et al., ICML 2024, Sec. 4 and appendix F.1).

All functions take the reduced coordinates of :mod:`feature_learning.data.structured_features` (core coordinates
first) and a :class:`~feature_learning.models.two_layer.TwoLayerNet` with fixed output signs sign(a_k); the
*positive class* of neuron k is y = sign(a_k) (Definition A.5). Risks and accuracies are
:func:`feature_learning.measure.metrics.risk` and :func:`~feature_learning.measure.metrics.sign_accuracy`.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from feature_learning.training.losses import hinge


def neuron_signs(net) -> torch.Tensor:
    return torch.sign(net.a.detach())


@torch.no_grad()
def class_activation_rates(net, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(p_pos, p_neg), each (R, m): Pr[<w_k, x> >= 0 | y = sign(a_k)] and Pr[... | y = -sign(a_k)] (Thm 4.1).
    Activation means pre-activation >= 0 (the source's F.2 definition on the post-activation is degenerate)."""
    active = (net.preactivation(x) >= 0).float()  # (R, n, m)
    y = y if y.dim() == 2 else y.unsqueeze(0).expand(net.replicas, -1)
    pos_class = (y.unsqueeze(-1) == neuron_signs(net).unsqueeze(1)).float()  # (R, n, m)
    p_pos = (active * pos_class).sum(1) / pos_class.sum(1)
    p_neg = (active * (1 - pos_class)).sum(1) / (1 - pos_class).sum(1)
    return p_pos, p_neg


@torch.no_grad()
def selectivity(net, x: torch.Tensor, y: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Mean over neurons of the selectivity of Eq. (61), (R,): per neuron (mu_max - mu_bar) / (|mu_max| + |mu_bar| +
    eps), mu_c the mean post-activation on class c, mu_max the largest and mu_bar the mean over the classes. With two
    classes and non-negative activations it lies in [0, 1/3] (chapter notes, F26)."""
    post = torch.relu(net.preactivation(x))  # (R, n, m)
    y = y if y.dim() == 2 else y.unsqueeze(0).expand(net.replicas, -1)
    means = torch.stack([(post * (y == c).unsqueeze(-1)).sum(1) / (y == c).sum(1, keepdim=True) for c in (-1, 1)])
    mu_max, mu_bar = means.max(0).values, means.mean(0)  # (R, m)
    return ((mu_max - mu_bar) / (mu_max.abs() + mu_bar.abs() + eps)).mean(-1)


@dataclasses.dataclass
class FeatureWeights:
    core: torch.Tensor  # (R,) mean over k and j in S_core of sign(a_k) <w_k, m_j>
    bg: torch.Tensor  # (R,) mean over k and j in S_bg of <w_k, m_j>
    core_norm: torch.Tensor  # (R,) mean over k of ||P_core w_k||
    bg_norm: torch.Tensor  # (R,) mean over k of ||P_bg w_k||


@torch.no_grad()
def feature_weights(net, d_core: int) -> FeatureWeights:
    """The "average correlations" of Fig. 3c (core oriented by sign(a_k), else it averages to zero) and the
    projection norms of Fig. 8."""
    W = net.W.detach()
    core, bg = W[..., :d_core], W[..., d_core:]
    sign = neuron_signs(net).unsqueeze(-1)
    return FeatureWeights(core=(sign * core).mean((1, 2)), bg=bg.mean((1, 2)),
                          core_norm=core.norm(dim=-1).mean(-1), bg_norm=bg.norm(dim=-1).mean(-1))


@torch.no_grad()
def class_correlations(net, d_core: int, mu_core: float, mu_bg: float) -> tuple[torch.Tensor, torch.Tensor]:
    """E_{x|y}<w_k, x> = y mu sum_core <w_k, m_j> + mu sum_bg <w_k, m_j> (Definition A.4), for y = sign(a_k) and
    y = -sign(a_k): two (R, m) tensors (Fig. 7's per-neuron trajectories)."""
    W = net.W.detach()
    c = mu_core * W[..., :d_core].sum(-1)
    b = mu_bg * W[..., d_core:].sum(-1)
    s = neuron_signs(net)
    return s * c + b, -s * c + b


def gradient_projections(net, x: torch.Tensor, y: torch.Tensor, d_core: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Autograd: per neuron, the mean over j in S_core of sign(a_k)<-grad_{w_k} L, m_j> and the mean over j in S_bg
    of <-grad_{w_k} L, m_j>, with L the mean hinge loss on (x, y) (no weight decay). Two (R, m) tensors."""
    W = net.W.detach().clone().requires_grad_(True)
    probe = dataclasses.replace(net, W=W)
    loss = hinge(probe(x), y).mean(-1).sum()
    (grad,) = torch.autograd.grad(loss, W)
    s = neuron_signs(net).unsqueeze(-1)
    return (-s * grad[..., :d_core]).mean(-1), (-grad[..., d_core:]).mean(-1)


@torch.no_grad()
def eq14_projections(net, x: torch.Tensor, y: torch.Tensor, d_core: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The same projections from Lemma A.3, Eq. (14) (with the indicator 1{y h <= 1}, erratum E1):
    -<grad_{w_k} L, m_j> = a_k E[y 1{y h <= 1} 1{<w_k,x> >= 0} <x, m_j>], on the sample. ReLU only."""
    y = y if y.dim() == 2 else y.unsqueeze(0).expand(net.replicas, -1)
    loss_active = (y * net(x) < 1).float()  # (R, n)
    active = (net.preactivation(x) > 0).float()  # (R, n, m)
    xb = x if x.dim() == 3 else x.unsqueeze(0).expand(net.replicas, -1, -1)
    weight = (y * loss_active).unsqueeze(-1) * active  # (R, n, m)
    proj = torch.einsum("rnm,rnd->rmd", weight, xb) / x.shape[-2] * net.a.detach().unsqueeze(-1)
    s = neuron_signs(net).unsqueeze(-1)
    return (s * proj[..., :d_core]).mean(-1), proj[..., d_core:].mean(-1)


@torch.no_grad()
def loss_active_rates(net, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(q_pos, q_neg), each (R, m): Pr[<w_k,x> >= 0 and y h(x) <= 1 | y = +-sign(a_k)], the rates p_+- of the
    contamination-rate formula (bg/core gradient ratio (q_pos - q_neg)/(q_pos + q_neg))."""
    y = y if y.dim() == 2 else y.unsqueeze(0).expand(net.replicas, -1)
    both = (net.preactivation(x) > 0).float() * (y * net(x) < 1).float().unsqueeze(-1)
    pos_class = (y.unsqueeze(-1) == neuron_signs(net).unsqueeze(1)).float()
    return (both * pos_class).sum(1) / pos_class.sum(1), (both * (1 - pos_class)).sum(1) / (1 - pos_class).sum(1)


def uniform_sum_nonnegative(c: torch.Tensor, points: int = 512, span: float = 16.0) -> torch.Tensor:
    """Pr[sum_j c_j z_j >= 0] for independent z_j ~ U[0, 1], for each row of c (..., n), by Gil-Pelaez inversion of
    the characteristic function prod_j e^{i c_j t/2} sinc(c_j t/2):

        Pr = 1/2 + (1/pi) int_0^inf sin(t M)/t prod_j sinc(c_j t/2) dt,    M = sum_j c_j / 2,

    integrated by the trapezoidal rule in u = t * sd (sd^2 = sum_j c_j^2/12) on (0, ``span``] with ``points`` steps.
    The integrand is even and smooth, so the rule converges fast: for n >= 16 terms of comparable size the error is
    below 1e-10 (the tests compare with Monte Carlo and with exact cases). With few terms (n <= 2) the integrand
    decays only like 1/t^2 and the truncation error reaches 1e-3."""
    c = c.double()
    M = c.sum(-1, keepdim=True) / 2
    sd = (c.pow(2).sum(-1, keepdim=True) / 12).sqrt()
    u = torch.linspace(0, span, points + 1, dtype=torch.float64, device=c.device)[1:]
    t = u / sd  # (..., P)
    # (..., n, P); torch.sinc(x) = sin(pi x)/(pi x)
    sinc = torch.sinc(c.unsqueeze(-1) * t.unsqueeze(-2) / (2 * math.pi))
    f = torch.sin(t * M) / u * sinc.prod(-2)
    f0 = (M / sd).squeeze(-1)  # the integrand's limit at u = 0
    integral = (span / points) * (f.sum(-1) - 0.5 * f[..., -1] + 0.5 * f0)
    return 0.5 + integral / math.pi


@torch.no_grad()
def exact_activation_rates(net, d_core: int, chunk: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """(p_pos, p_neg), each (R, m): the exact Pr[<w_k, x> >= 0 | y = +-sign(a_k)] under Definition 3.1 with U[0, 1]
    features (appendix F.1), by :func:`uniform_sum_nonnegative`: given y, <w_k, x> = sum_j c_j z_j with c_j = y w_kj
    on the core and w_kj on the background. The Monte-Carlo counterpart is :func:`class_activation_rates`."""
    W = net.W.detach().double()
    s = neuron_signs(net).double().unsqueeze(-1)
    out = []
    for y in (s, -s):
        c = torch.cat([y * W[..., :d_core], W[..., d_core:]], -1).reshape(-1, W.shape[-1])
        rates = torch.cat([uniform_sum_nonnegative(part) for part in c.split(chunk)])
        out.append(rates.reshape(W.shape[:2]))
    return out[0], out[1]

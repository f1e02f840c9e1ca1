"""Measurements of feature contamination in two-layer networks (Zhang et al., ICML 2024, Sec. 4 and appendix F.1).

All functions take the reduced coordinates of :mod:`feature_learning.data.structured_features` (core coordinates
first) and a :class:`~feature_learning.models.two_layer.TwoLayerNet` with fixed output signs sign(a_k); the
*positive class* of neuron k is y = sign(a_k) (Definition A.5).
"""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.training.losses import hinge


@torch.no_grad()
def hinge_risk(net, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Empirical hinge risk per replica, shape (R,)."""
    return hinge(net(x), y).mean(-1)


@torch.no_grad()
def accuracy(net, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (torch.sign(net(x)) == y).float().mean(-1)


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

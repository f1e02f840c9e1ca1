"""training/losses.py: one argument order (prediction, target), one value per example."""

import math

import pytest
import torch

from feature_learning.training.losses import (
    balance_and_confidence,
    cross_entropy,
    half_squared_error,
    hinge,
    logistic,
    weighted_hinge,
)

D = torch.float64


def test_binary_losses_by_definition():
    h = torch.tensor([[2.0, 0.5, -1.0, 0.0]], dtype=D)
    y = torch.tensor([[1.0, 1.0, 1.0, -1.0]], dtype=D)
    assert hinge(h, y).tolist() == [[0.0, 0.5, 2.0, 1.0]]
    assert logistic(h, y)[0].tolist() == pytest.approx([math.log1p(math.exp(-2)), math.log1p(math.exp(-0.5)),
                                                        math.log1p(math.e), math.log(2)])
    assert logistic(torch.tensor([800.0], dtype=D), torch.tensor([-1.0], dtype=D)).item() == pytest.approx(800.0)


def test_hinges_in_prediction_target_order_by_their_formulas(gen):
    out = torch.randn(3, 50, generator=gen(1), dtype=D)
    y = torch.where(torch.rand(3, 50, generator=gen(2)) < 0.2, 1.0, -1.0).to(D)
    assert torch.equal(hinge(out, y), torch.clamp(1 - y * out, min=0))
    pos = (y > 0).to(D)
    share = pos.mean(-1, keepdim=True)
    alpha = torch.where(y > 0, 1 / (2 * share), 1 / (2 * (1 - share)))
    assert torch.allclose(weighted_hinge(out, y), alpha * torch.clamp(1 - y * out, min=0), rtol=1e-15, atol=0)


def test_weighted_hinge_weighs_the_classes_equally():
    """alpha_y = 1/(2 Pr[y]): at h = 0 the gradient of the mean loss with respect to a constant shift is
    -(sum of alpha_y y)/n = -(1/2 - 1/2) = 0 for any class balance (eq. (A.293))."""
    y = torch.tensor([[1.0] * 3 + [-1.0] * 17], dtype=D)
    shift = torch.zeros(1, dtype=D, requires_grad=True)
    (grad,) = torch.autograd.grad(weighted_hinge(torch.zeros(1, 20, dtype=D) + shift, y).mean(), shift)
    assert abs(grad.item()) < 1e-15
    (plain,) = torch.autograd.grad(hinge(torch.zeros(1, 20, dtype=D) + shift, y).mean(), shift)
    assert plain.item() == pytest.approx(14 / 20)
    assert weighted_hinge(torch.zeros(1, 20, dtype=D), y).mean().item() == pytest.approx(1.0)


def test_cross_entropy_and_squared_error(gen):
    logits = torch.randn(2, 5, 4, generator=gen(3), dtype=D)
    labels = torch.randint(0, 4, (2, 5), generator=gen(4))
    ce = cross_entropy(logits, labels)
    assert ce.shape == (2, 5)
    manual = -torch.log_softmax(logits, -1).gather(-1, labels[..., None]).squeeze(-1)
    assert torch.allclose(ce, manual, atol=1e-14)
    target = torch.randn(2, 5, 4, generator=gen(5), dtype=D)
    assert torch.allclose(half_squared_error(logits, target), 0.5 * ((logits - target) ** 2).sum(-1))


def test_balance_and_confidence_extremes():
    C = 5
    r1, r2 = balance_and_confidence(torch.zeros(2, 7, C, dtype=D))  # uniform predictions: balanced, unconfident
    assert torch.allclose(r1, torch.full((2,), -math.log(C), dtype=D))
    assert torch.allclose(r2, torch.full((2,), math.log(C), dtype=D))
    confident_one_class = torch.zeros(1, 7, C, dtype=D)
    confident_one_class[..., 0] = 60.0
    r1, r2 = balance_and_confidence(confident_one_class)  # confident, all in one class: R1 = 0 (its maximum)
    assert abs(r1.item()) < 1e-12 and abs(r2.item()) < 1e-12

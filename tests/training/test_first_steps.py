"""training/first_steps.py: the erasing first step (W <- -eta grad, checked against autograd and against
eta a G for the hinge loss) and gradient descent on the second layer (against autograd, best iterate)."""

import dataclasses

import torch

from feature_learning.experiments.gradient_features.measures import simplified_gradient
from feature_learning.models.two_layer import init_symmetric_gaussian
from feature_learning.training.first_steps import erasing_step, erasing_step_streamed, second_layer_gd
from feature_learning.training.losses import hinge, squared


def net_and_data(gen):
    net = init_symmetric_gaussian(2, 6, 16, sigma_w=1.0, sigma_a=0.7, bias=-0.5, blocks=4, activation="relu",
                                  trained=("W", "a"), generator=gen(1))
    x = torch.randn(2, 300, 6, generator=gen(2), dtype=torch.float64)
    y = torch.sign(x[..., 0] * x[..., 1])
    return net, x, y


def test_erasing_step_is_minus_eta_gradient(gen):
    net, x, y = net_and_data(gen)
    eta = torch.tensor([0.3, 1.7], dtype=torch.float64)
    new, grads = erasing_step(net, x, y, eta, hinge)
    W, a = net.W.detach().clone().requires_grad_(), net.a.detach().clone().requires_grad_()
    h = (torch.relu(x @ W.transpose(1, 2) + net.b[:, None, :]) * a[:, None, :]).sum(-1)
    gW, ga = torch.autograd.grad(hinge(h, y).mean(-1).sum(), [W, a])
    assert torch.allclose(new.W, -eta[:, None, None] * gW, rtol=1e-13, atol=1e-16)
    assert torch.allclose(new.a, -eta[:, None] * ga, rtol=1e-13, atol=1e-16)
    assert torch.equal(new.W, -eta[:, None, None] * grads["W"])  # the step itself is exactly -eta grad
    assert torch.equal(new.b, net.b) and new.trained == net.trained
    # hinge at g = 0: l'(0) = -1, so w_i^(1) = eta a_i G(w_i, b_i) (B.17)
    G = simplified_gradient(net, x, y)
    assert torch.allclose(new.W, eta[:, None, None] * net.a[..., None] * G, atol=1e-14)


def test_erasing_step_of_one_group_keeps_the_other(gen):
    net, x, y = net_and_data(gen)
    new, grads = erasing_step(net, x, y.double(), 2.0, squared, groups=("W",))
    assert set(grads) == {"W"} and torch.equal(new.a, net.a) and torch.equal(new.W, -2.0 * grads["W"])


def test_streamed_erasing_step_equals_the_materialised_one(gen):
    net, x, y = net_and_data(gen)
    whole, _ = erasing_step(net, x, y, 0.7, hinge)
    cursor = {"at": 0}

    def draw(count):  # the same sample, handed over 64 examples at a time
        at = cursor["at"]
        cursor["at"] = at + count
        return x[:, at:at + count], y[:, at:at + count]

    streamed, _ = erasing_step_streamed(net, draw, x.shape[-2], 0.7, hinge, draw_chunk=64)
    assert cursor["at"] == x.shape[-2]
    assert torch.allclose(streamed.W, whole.W, rtol=1e-12, atol=1e-15)
    assert torch.allclose(streamed.a, whole.a, rtol=1e-12, atol=1e-15)
    one_draw, _ = erasing_step_streamed(net, lambda count: (x, y), x.shape[-2], 0.7, hinge, draw_chunk=None)
    assert torch.equal(one_draw.W, whole.W) and torch.equal(one_draw.a, whole.a)  # one draw: bit for bit


def test_second_layer_gd_matches_autograd_steps_and_keeps_the_best_iterate(gen):
    F = torch.rand(3, 40, 5, generator=gen(3), dtype=torch.float64)
    y = torch.sign(torch.randn(3, 40, generator=gen(4), dtype=torch.float64))
    lr = torch.tensor([0.1, 0.2, 0.05], dtype=torch.float64)
    a0 = torch.zeros(3, 5, dtype=torch.float64)
    best, history = second_layer_gd(F, y, a0, steps=30, lr=lr)
    a, losses, iterates = a0.clone(), [], []
    for _ in range(31):
        a_ = a.clone().requires_grad_()
        loss = hinge((F @ a_[..., None]).squeeze(-1), y).mean(-1)
        (g,) = torch.autograd.grad(loss.sum(), a_)
        losses.append(loss.detach())
        iterates.append(a.clone())
        a = a - lr[:, None] * g
    losses = torch.stack(losses)
    pick = losses.argmin(0)
    expected = torch.stack([iterates[t][r] for r, t in enumerate(pick.tolist())])
    assert torch.allclose(best, expected, atol=1e-12)
    assert torch.allclose(history["best_loss"], losses.min(0).values, atol=1e-12)


def test_second_layer_gd_squared_loss_converges_to_least_squares(gen):
    F = torch.randn(1, 200, 4, generator=gen(5), dtype=torch.float64)
    target = F[0] @ torch.tensor([1.0, -2.0, 0.5, 0.0], dtype=torch.float64)
    a, _ = second_layer_gd(F, target[None], torch.zeros(1, 4, dtype=torch.float64), steps=2000, lr=0.2,
                           loss="squared")
    assert torch.allclose(a[0], torch.tensor([1.0, -2.0, 0.5, 0.0], dtype=torch.float64), atol=1e-6)
    assert dataclasses.is_dataclass(init_symmetric_gaussian(1, 2, 4, sigma_w=1.0, sigma_a=1.0, blocks=4,
                                                            generator=gen(6)))

"""Library pieces of the simplicity-bias chapter (Tsoy & Konstantinov, ICML 2024)."""

import itertools
import math

import sympy as sp
import torch

from feature_learning.data.xor import simple_plus_complex_data, skewed_xor_data, xor_cluster_data
from feature_learning.experiments import simplicity_bias as chapter
from feature_learning.measure.directions import angle_gap, logistic_probe, mass_near, neuron_angles
from feature_learning.models.bias_free_relu import (
    forward,
    g_extrema_on_circle,
    g_function,
    init_aligned,
    init_balanced,
    init_torch_default,
    logistic_loss_and_grads,
    normalized_margin,
)
from feature_learning.theory import simplicity_bias as theory
from feature_learning.training.gradient_descent import four_neuron_schedule, gradient_descent, linearized_flow

D = torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_gradients_match_autograd():
    X, y = skewed_xor_data(8, 1.0, generator=gen())
    u, V = init_torch_default(3, 5, 2, 1.0, generator=gen(1))
    u.requires_grad_(True)
    V.requires_grad_(True)
    f = forward(u, V, X)
    loss = torch.nn.functional.softplus(-f * y).mean(-1)
    gu, gV = torch.autograd.grad(loss.sum(), (u, V))
    ours, ou, oV = logistic_loss_and_grads(u.detach(), V.detach(), X, y)
    assert torch.allclose(ours, loss.detach(), atol=1e-12)
    assert torch.allclose(ou, gu, atol=1e-12) and torch.allclose(oV, gV, atol=1e-12)


def test_xor_cluster_data_satisfies_assumption_5_1():
    X, y = xor_cluster_data(5, 3, delta=0.05, sigma=0.05, generator=gen())
    assert X.shape == (80, 3) and y.sum() == 0
    centre = torch.where(y[:, None] > 0, torch.tensor([1.0, 0, 0], dtype=D) * X[:, :1].sign(),
                         torch.tensor([0, 1.0, 0], dtype=D) * X[:, 1:2].sign())
    assert ((X - centre).norm(dim=1) <= 0.05).all()
    for flip in (torch.tensor([-1.0, 1, 1], dtype=D), torch.tensor([1.0, -1, 1], dtype=D),
                 torch.tensor([1.0, 1, -1], dtype=D)):  # R_1, R_2, R_r map the set onto itself
        image = X * flip
        assert torch.cdist(image, X).min(dim=1).values.max() < 1e-6


def test_skewed_xor_centres_and_labels():
    alpha = math.pi / 3
    X, y = skewed_xor_data(200, alpha, generator=gen())
    w = torch.tensor([math.cos(alpha), math.sin(alpha)], dtype=D)
    pos = X[y > 0]
    assert torch.allclose((pos @ w).abs().mean(), torch.tensor(1.0, dtype=D), atol=0.02)
    assert torch.allclose(X[y < 0][:, 0].abs().mean(), torch.tensor(1.0, dtype=D), atol=0.02)


def test_domino_simple_feature_is_spurious_only_out_of_distribution():
    X, y = simple_plus_complex_data(4000, generator=gen())
    Xo, yo = simple_plus_complex_data(4000, ood=True, generator=gen(1))
    assert (X[:, 0].sign() == y).double().mean() > 0.99
    assert abs((Xo[:, 0].sign() == yo).double().mean() - 0.5) < 0.04
    # the XOR feature: |c_1| - |c_2| has the sign of y on average
    assert ((Xo[:, 1].abs() - Xo[:, 2].abs()) * yo).mean() > 0.5


def test_g_of_clean_xor_and_its_extrema():
    X = torch.tensor([[1.0, 0], [-1, 0], [0, 1], [0, -1]], dtype=D)
    y = torch.tensor([1.0, 1, -1, -1], dtype=D)
    phi = torch.linspace(-3, 3, 13, dtype=D)
    G = g_function(torch.stack([phi.cos(), phi.sin()], -1), X, y)
    assert torch.allclose(G, (phi.cos().abs() - phi.sin().abs()) / 8, atol=1e-14)
    ang, val, sign = g_extrema_on_circle(X, y, n_grid=4000)
    assert len(ang) == 4 and torch.allclose(val.abs(), torch.full((4,), 1 / 8, dtype=D))
    assert torch.allclose(angle_gap(ang[sign > 0], torch.tensor([math.pi, 0.0], dtype=D)).sort().values * 0,
                          torch.zeros(2, dtype=D))
    assert set(torch.round(ang[sign > 0].abs() / (math.pi / 2)).tolist()) == {0.0, 2.0}


def test_aligned_neuron_grows_by_one_plus_eta_lambda():
    X, y = xor_cluster_data(4, 2, generator=gen())
    lam = g_function(torch.tensor([[1.0, 0.0]], dtype=D), X, y)[0]
    u, V = init_aligned(torch.tensor([[1e-9, -1e-9, 1e-9, -1e-9]], dtype=D),
                        torch.tensor(chapter.FOUR_NEURON_DIRECTIONS, dtype=D))
    out = gradient_descent(u, V, X, y, epochs=10, lr=0.5)
    assert torch.allclose(out["V"][0, 0].norm() / 1e-9, (1 + 0.5 * lam) ** 10, rtol=1e-6)
    ul, Vl = linearized_flow(u, V, X, y, epochs=10, lr=0.5)
    assert torch.allclose(ul, out["u"], rtol=1e-6)


def test_balanced_init_and_margin_scale_invariance():
    u, V = init_balanced(2, 7, 3, 0.1, generator=gen())
    assert torch.allclose(u.abs(), V.norm(dim=-1))
    X, y = xor_cluster_data(2, 3, generator=gen())
    assert torch.allclose(normalized_margin(u, V, X, y), normalized_margin(3 * u, 3 * V, X, y))


def test_four_neuron_schedule():
    assert four_neuron_schedule(0) == 4.0 and four_neuron_schedule(100) == 2**-7
    assert math.isclose(four_neuron_schedule(2**14), 2**-7 * 33)
    assert math.isclose(four_neuron_schedule(2**15 - 1) / four_neuron_schedule(2**15 - 1 - 2**9), 2, rel_tol=0.05)


def test_mass_near_and_angles():
    V = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]], dtype=D)
    per, tot = mass_near(V, torch.tensor([0.0, math.pi / 2], dtype=D), 0.1)
    assert torch.allclose(per, torch.tensor([[1 / 7, 4 / 7]], dtype=D)) and torch.allclose(tot, torch.tensor([5 / 7],
                                                                                                          dtype=D))
    assert torch.allclose(neuron_angles(V)[0, 2], torch.tensor(math.pi / 4, dtype=D))


def test_logistic_probe_is_stationary():
    g = gen()
    F = torch.randn(2, 200, 5, generator=g, dtype=D)
    y = torch.where(F[..., 0] + 0.5 * torch.randn(2, 200, generator=g, dtype=D) > 0, 1.0, -1.0)
    res = logistic_probe(F, y, F, y, 10.0)
    z = (F @ res["w"].unsqueeze(-1)).squeeze(-1) + res["b"][:, None]
    p = torch.sigmoid(-z * y)
    grad_w = res["w"] - 10.0 * (F * (p * y).unsqueeze(-1)).sum(1)
    grad_b = -10.0 * (p * y).sum(1)
    assert grad_w.abs().max() < 1e-8 and grad_b.abs().max() < 1e-8
    assert (res["accuracy"] > 0.75).all()


def test_smoothed_relu_profile_against_monte_carlo():
    q3 = theory.smoothed_relu_profile(3)
    g = gen(3)
    z = torch.randn(400000, 3, generator=g, dtype=D)
    z = z / z.norm(dim=1, keepdim=True) * torch.rand(400000, 1, generator=g, dtype=D) ** (1 / 3)
    v = torch.tensor([0.6, 0.8, 0.0], dtype=D)
    xi = 0.2
    for cval in (-0.5, 0.0, 0.7):
        x = cval * xi * v  # v.x / (xi ||v||) = cval
        mc = torch.relu((x + xi * z) @ v).mean()
        assert abs(float(mc) - xi * float(q3.subs(theory.c_, cval))) < 3e-4


def test_capture_probability_equals_counting_surjections():
    for m in (4, 5, 6):
        hits = sum(1 for a in itertools.product(range(4), repeat=m) if len(set(a)) == 4)
        assert theory.capture_probability_exact(m) == sp.Rational(hits, 4**m)


def test_prop_5_7_numbers():
    c = theory.prop_5_7_constants()
    assert abs(c["bound"] - 31.528) < 1e-3 and abs(c["threshold"] - 29.560) < 1e-3
    assert abs(float(c["margin_bound"]) - 4.6768) < 1e-4 and c["bound"] > c["threshold"]

"""Library pieces of the feature-contamination chapter (Zhang et al., ICML 2024)."""

import dataclasses

import pytest
import sympy as sp
import torch

from feature_learning.data.digits_border import border_mask, with_border
from feature_learning.data.structured_features import ConcentricBalls, StructuredFeatures, orthonormal_dictionary
from feature_learning.experiments import feature_contamination as chapter
from feature_learning.measure import contamination as measure
from feature_learning.models.two_layer import init_fixed_output, init_torch_default
from feature_learning.theory import feature_contamination as theory
from feature_learning.training.losses import hinge
from feature_learning.training.online import online_sgd, train_online


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_structured_features_distribution():
    data = StructuredFeatures(d_core=5, d_bg=7)
    x, y, z = data.sample(40000, generator=gen(), dtype=torch.float64)
    assert x.shape == (40000, 12) and set(y.unique().tolist()) == {-1.0, 1.0}
    assert torch.allclose(x[:, :5], y[:, None] * z[:, :5]) and torch.equal(x[:, 5:], z[:, 5:])
    assert abs(y.mean()) < 0.02 and abs(z.mean() - 0.5) < 0.01 and abs(z.var() - 1 / 12) < 0.002
    assert abs(torch.corrcoef(torch.stack([y, z[:, 8]]))[0, 1]) < 0.02  # background independent of the label
    x_ood, _, z_ood = data.sample(20000, split="ood", generator=gen(1), dtype=torch.float64)
    assert z_ood[:, 5:].max() <= 0 and z_ood[:, 5:].min() >= -1 and z_ood[:, :5].min() >= 0
    assert abs(z_ood[:, 5:].mean() + 0.5) < 0.01
    xr, yr, _ = data.sample(10, replicas=3, generator=gen())
    assert xr.shape == (3, 10, 12) and yr.shape == (3, 10)
    with pytest.raises(ValueError):
        data.sample(3, split="test", generator=gen())


def test_concentric_balls_radii():
    data = ConcentricBalls(d_core=16, d_bg=4)
    x, y = data.sample(5000, generator=gen(), dtype=torch.float64)
    r = x[:, :16].norm(dim=-1)
    assert r[y < 0].max() <= 1.0 + 1e-12 and r[y > 0].max() <= 2.0 + 1e-12 and r[y > 0].min() > 1.0
    # uniform in the ball: P(r <= s R) = s^d
    assert abs((r[y > 0] <= 2 * 0.95).double().mean() - 0.95**16) < 0.03


def test_reduced_coordinates_are_exact():
    """h(M x) for ambient weights W M^T + residual equals h(x) for the reduced weights (the residual is invisible)."""
    d, d0, m = 40, 8, 6
    M = orthonormal_dictionary(d, d0, gen())
    assert torch.allclose(M.T @ M, torch.eye(d0, dtype=torch.float64), atol=1e-12)
    net = init_fixed_output(1, d0, m, d_ambient=d, generator=gen(), dtype=torch.float64)
    resid = torch.randn(m, d, generator=gen(2), dtype=torch.float64)
    resid = resid - resid @ M @ M.T
    ambient = dataclasses.replace(net, W=(net.W[0].detach() @ M.T + resid)[None])
    x, _, _ = StructuredFeatures(4, 4).sample(50, generator=gen(3), dtype=torch.float64)
    assert torch.allclose(net(x), ambient(x @ M.T), atol=1e-12)


def test_fixed_output_init():
    net = init_fixed_output(4, 30, 500, d_ambient=120, generator=gen())
    assert net.W.shape == (4, 500, 30) and torch.all(net.a.abs() == 1 / 500)
    assert abs(net.W.var().item() - 1 / 120) < 5e-4
    assert net.parameters() == [net.W] and not net.a.requires_grad


def test_gradient_projections_match_eq14():
    data = StructuredFeatures(6, 6)
    net = init_fixed_output(2, 12, 16, d_ambient=12, generator=gen(), dtype=torch.float64)
    x, y, _ = data.sample(3000, replicas=2, generator=gen(1), dtype=torch.float64)
    core, bg = measure.gradient_projections(net, x, y, 6)
    core14, bg14 = measure.eq14_projections(net, x, y, 6)
    assert torch.allclose(core, core14, atol=1e-12) and torch.allclose(bg, bg14, atol=1e-12)


def test_class_correlations_monte_carlo():
    data = StructuredFeatures(6, 6)
    net = init_fixed_output(1, 12, 5, d_ambient=3, generator=gen(), dtype=torch.float64)
    x, y, _ = data.sample(200000, generator=gen(1), dtype=torch.float64)
    pos, neg = measure.class_correlations(net, 6, 0.5, 0.5)
    pre = net.preactivation(x)[0]  # (n, m)
    s = torch.sign(net.a[0])
    for k in range(5):
        mc_pos = pre[y == s[k], k].mean()
        mc_neg = pre[y == -s[k], k].mean()
        tol = 5 * pre[:, k].std() / (len(y) / 2) ** 0.5  # five standard errors
        assert abs(mc_pos - pos[0, k]) < tol and abs(mc_neg - neg[0, k]) < tol


def test_online_sgd_step_is_eq4():
    data = StructuredFeatures(3, 3)
    net = init_fixed_output(1, 6, 4, d_ambient=6, generator=gen(), dtype=torch.float64)
    W0 = net.W.detach().clone()
    x, y, _ = data.sample(32, replicas=1, generator=gen(1), dtype=torch.float64)
    grad = torch.autograd.grad(hinge(net(x), y).mean(), net.W)[0]
    train_online(net, lambda step: (x, y), hinge, online_sgd(1, lr=0.3, weight_decay=0.01))
    assert torch.allclose(net.W.detach(), (1 - 0.3 * 0.01) * W0 - 0.3 * grad, atol=1e-12)


def test_default_init_shapes_and_bounds():
    net = init_torch_default(2, 10, 7, d_out=3, activation="tanh", generator=gen())
    assert net(torch.zeros(5, 10)).shape == (2, 5, 3) and len(net.parameters()) == 4
    assert net.W.abs().max() <= 10**-0.5
    with pytest.raises(ValueError):
        init_torch_default(1, 2, 2, activation="swish", generator=gen())


def test_digits_border():
    digits = torch.rand(4, 64, generator=gen())
    img = with_border(digits, split="ood", generator=gen(1))
    mask = border_mask()
    assert int(mask.sum()) == 36 and torch.equal(img[:, ~mask], digits)
    assert img[:, mask].max() <= 0 and img[:, mask].min() >= -1


def test_theory_checks():
    assert theory.hinge_gradient()["relu"] and theory.hinge_gradient()["identity"]
    sb = theory.sign_bookkeeping()
    assert sb["sign_identity"] and sb["core_projection"]
    assert theory.contamination_gradient()["linear"] == 0
    rate = theory.contamination_rate_ratio()
    assert rate["at_symmetry"] == 0 and rate["at_full_asymmetry"] == 1
    rec = theory.recursions()
    assert rec["combine_ok"] and rec["solve_ok"] and rec["continuous_ok"]
    mom = theory.uniform_moments()
    moments = (mom["mu1"], mom["mu2"], mom["mu3"], mom["var"], mom["abs3"])
    assert moments == tuple(sp.Rational(1, q) for q in (2, 3, 4, 12, 32))
    assert theory.mills_ratio()["ok"]


def test_table1_gaps():
    gaps = chapter.table1_gaps()
    assert gaps["RN50"]["OOD avg"] == pytest.approx(-7.79) and gaps["RN50"]["ImageNet"] == pytest.approx(-0.52)
    assert gaps["ViT-B/16"]["OOD avg"] == pytest.approx(-20.45)
    assert all(g["avg_error"] <= 0.01 for g in gaps.values())

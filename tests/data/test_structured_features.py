"""data/structured_features.py: Definition 3.1 of Zhang et al. (ICML 2024), its concentric-ball extension, and the
exact reduction to the feature coordinates."""

import dataclasses

import pytest
import torch

from feature_learning.data.bases import orthonormal_dictionary
from feature_learning.data.structured_features import ConcentricBalls, StructuredFeatures
from feature_learning.models.two_layer import init_fixed_output


def test_structured_features_distribution(gen):
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
    assert data.mu_core() == 0.5 and data.mu_bg("id") == 0.5 and data.mu_bg("ood") == -0.5
    assert torch.equal(data.regression_target(x), x[:, :5])
    with pytest.raises(ValueError):
        data.sample(3, split="test", generator=gen())


def test_concentric_balls_radii(gen):
    data = ConcentricBalls(d_core=16, d_bg=4)
    x, y = data.sample(5000, generator=gen(), dtype=torch.float64)
    r = x[:, :16].norm(dim=-1)
    assert r[y < 0].max() <= 1.0 + 1e-12 and r[y > 0].max() <= 2.0 + 1e-12 and r[y > 0].min() > 1.0
    # uniform in the ball: P(r <= s R) = s^d
    assert abs((r[y > 0] <= 2 * 0.95).double().mean() - 0.95**16) < 0.03
    x_ood, _ = data.sample(2000, split="ood", generator=gen(1), dtype=torch.float64)
    assert x_ood[:, 16:].max() <= 0 and x_ood[:, 16:].min() >= -1


def test_reduced_coordinates_are_exact(gen):
    """h(M x) for ambient weights W M^T + residual equals h(x) for the reduced weights (the residual is invisible)."""
    d, d0, m = 40, 8, 6
    M = orthonormal_dictionary(d, d0, gen())
    net = init_fixed_output(1, d0, m, d_ambient=d, generator=gen(), dtype=torch.float64)
    resid = torch.randn(m, d, generator=gen(2), dtype=torch.float64)
    resid = resid - resid @ M @ M.T
    ambient = dataclasses.replace(net, W=(net.W[0].detach() @ M.T + resid)[None])
    x, _, _ = StructuredFeatures(4, 4).sample(50, generator=gen(3), dtype=torch.float64)
    assert torch.allclose(net(x), ambient(x @ M.T), atol=1e-12)

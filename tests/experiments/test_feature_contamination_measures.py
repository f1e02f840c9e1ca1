"""experiments/feature_contamination/measures.py: activation rates (Monte Carlo and exact), feature weights, class
correlations and the feature-wise gradients of Zhang et al. (ICML 2024)."""

import math

import torch

from feature_learning.data.structured_features import StructuredFeatures
from feature_learning.experiments.feature_contamination import measures as measure
from feature_learning.models.two_layer import init_fixed_output
from feature_learning.training.losses import hinge

D = torch.float64


def test_gradient_projections_match_eq14(gen):
    data = StructuredFeatures(6, 6)
    net = init_fixed_output(2, 12, 16, d_ambient=12, generator=gen(), dtype=D)
    x, y, _ = data.sample(3000, replicas=2, generator=gen(1), dtype=D)
    core, bg = measure.gradient_projections(net, x, y, 6)
    core14, bg14 = measure.eq14_projections(net, x, y, 6)
    assert torch.allclose(core, core14, atol=1e-12) and torch.allclose(bg, bg14, atol=1e-12)
    # and against the gradient written out by hand for one neuron
    W = net.W.detach().clone().requires_grad_(True)
    out = (torch.relu(torch.einsum("rnd,rmd->rnm", x, W)) * net.a.unsqueeze(1)).sum(-1)
    (g,) = torch.autograd.grad(hinge(out, y).mean(-1).sum(), W)
    s = torch.sign(net.a[0, 3])
    assert torch.isclose(core[0, 3], (-s * g[0, 3, :6]).mean()) and torch.isclose(bg[0, 3], (-g[0, 3, 6:]).mean())


def test_class_correlations_monte_carlo(gen):
    data = StructuredFeatures(6, 6)
    net = init_fixed_output(1, 12, 5, d_ambient=3, generator=gen(), dtype=D)
    x, y, _ = data.sample(200000, generator=gen(1), dtype=D)
    pos, neg = measure.class_correlations(net, 6, 0.5, 0.5)
    pre = net.preactivation(x)[0]  # (n, m)
    s = torch.sign(net.a[0])
    for k in range(5):
        mc_pos = pre[y == s[k], k].mean()
        mc_neg = pre[y == -s[k], k].mean()
        tol = 5 * pre[:, k].std() / (len(y) / 2) ** 0.5  # five standard errors
        assert abs(mc_pos - pos[0, k]) < tol and abs(mc_neg - neg[0, k]) < tol


def test_feature_weights_of_a_constructed_network(gen):
    net = init_fixed_output(1, 4, 2, generator=gen(), dtype=D)
    W = torch.tensor([[[1.0, 3.0, 0.5, 0.5], [2.0, 2.0, -1.0, 0.0]]], dtype=D)
    net = net.__class__(W=W, a=torch.tensor([[0.5, -0.5]], dtype=D), activation="relu")
    fw = measure.feature_weights(net, 2)
    assert torch.isclose(fw.core, torch.tensor([(1 + 3 - 2 - 2) / 4], dtype=D))  # oriented by sign(a_k)
    assert torch.isclose(fw.bg, torch.tensor([(0.5 + 0.5 - 1.0 + 0.0) / 4], dtype=D))
    assert torch.isclose(fw.core_norm, torch.tensor([(10**0.5 + 8**0.5) / 2], dtype=D))


def test_uniform_sum_nonnegative_exact_cases_and_monte_carlo(gen):
    c = torch.tensor([[1.0, -1.0], [1.0, -2.0], [2.0, -1.0]], dtype=D)
    # P(z1 >= z2) = 1/2, P(z1 >= 2 z2) = 1/4, P(2 z1 >= z2) = 3/4 (areas in the unit square); with two terms the
    # integrand decays only like 1/t^2, so a long span
    assert torch.allclose(measure.uniform_sum_nonnegative(c, points=8192, span=400.0),
                          torch.tensor([0.5, 0.25, 0.75], dtype=D), atol=2e-3)
    # 16 terms with alternating signs: symmetric about 0, so exactly 1/2
    sym = torch.tensor([[1.0, -1.0] * 8], dtype=D)
    assert abs(float(measure.uniform_sum_nonnegative(sym)) - 0.5) < 1e-12
    g = gen(5)
    w = torch.randn(40, 32, generator=g, dtype=D) + 0.1
    exact = measure.uniform_sum_nonnegative(w)
    z = torch.rand(200000, 32, generator=g, dtype=D)
    mc = ((z @ w.T) >= 0).double().mean(0)
    se = (exact * (1 - exact) / 200000).sqrt().clamp_min(1e-4)
    assert ((mc - exact).abs() / se).max() < 5


def test_exact_activation_rates_are_the_monte_carlo_rates(gen):
    data = StructuredFeatures(8, 8)
    net = init_fixed_output(2, 16, 10, d_ambient=16, generator=gen(2), dtype=D)
    x, y, _ = data.sample(100000, generator=gen(3), dtype=D)
    mc_pos, mc_neg = measure.class_activation_rates(net, x, y)
    ex_pos, ex_neg = measure.exact_activation_rates(net, 8)
    for mc, ex in ((mc_pos, ex_pos), (mc_neg, ex_neg)):
        se = (ex * (1 - ex) / 50000).sqrt().clamp_min(1e-4)
        assert ((mc - ex).abs() / se).max() < 5


def test_loss_active_rates_by_hand(gen):
    data = StructuredFeatures(4, 4)
    net = init_fixed_output(1, 8, 3, d_ambient=2, generator=gen(4), dtype=D)
    x, y, _ = data.sample(500, generator=gen(5), dtype=D)
    q_pos, q_neg = measure.loss_active_rates(net, x, y)
    out = net(x)[0]
    pre = net.preactivation(x)[0]
    for k in range(3):
        s = math.copysign(1.0, float(net.a[0, k]))
        both = (pre[:, k] > 0) & (y * out < 1)
        assert torch.isclose(q_pos[0, k].double(), both[y == s].double().mean())
        assert torch.isclose(q_neg[0, k].double(), both[y == -s].double().mean())


def test_selectivity_of_eq61_lies_in_its_two_class_range(gen):
    """Eq. (61) with two classes: in [0, 1/3] (F26); 1/3 for a neuron that fires on one class only, 0 for one that
    fires alike on both."""
    data = StructuredFeatures(6, 6)
    net = init_fixed_output(2, 12, 16, d_ambient=12, generator=gen(), dtype=D)
    x, y, _ = data.sample(2000, replicas=2, generator=gen(1), dtype=D)
    sel = measure.selectivity(net, x, y)
    assert sel.shape == (2,) and bool(((sel >= 0) & (sel <= 1 / 3 + 1e-12)).all())
    one_class = init_fixed_output(1, 12, 2, d_ambient=12, generator=gen(2), dtype=D)
    with torch.no_grad():
        one_class.W.zero_()
        one_class.W[0, 0, :6] = 1.0  # core coordinates: <w, x> = y sum z_j > 0 only for y = +1
        one_class.W[0, 1, 6:] = 1.0  # background: the same for both classes
    xs, ys, _ = data.sample(2000, replicas=1, generator=gen(3), dtype=D)
    post = torch.relu(one_class.preactivation(xs)).detach()
    assert post.shape[-1] == 2
    per_neuron = []
    for k in range(2):
        means = [post[0, ys[0] == c, k].mean() for c in (-1, 1)]
        mx, mb = max(means), sum(means) / 2
        per_neuron.append(float((mx - mb) / (abs(mx) + abs(mb) + 1e-6)))
    assert abs(per_neuron[0] - 1 / 3) < 1e-6 and abs(per_neuron[1]) < 0.02
    assert math.isclose(float(measure.selectivity(one_class, xs, ys)[0]), sum(per_neuron) / 2, rel_tol=1e-9)


def test_bernstein_example_printed_bound_fails_standard_holds():
    from feature_learning.experiments.feature_contamination import bernstein_example

    ex = bernstein_example(100, 0.2)
    # 100 fair signs sum to at least 20 iff at least 60 are +1
    assert abs(ex.exact - sum(__import__("math").comb(100, k) for k in range(60, 101)) / 2**100) < 1e-15
    assert ex.printed < ex.exact <= ex.standard


def test_effective_robustness_is_zero_on_the_line():
    import numpy as np

    from feature_learning.experiments.feature_contamination import StandardModels, effective_robustness, logit

    ids = np.linspace(0.55, 0.97, 12)[:, None]
    line = 1 / (1 + np.exp(-(0.3 + 0.8 * logit(ids))))
    models = StandardModels(ids, line)
    assert abs(effective_robustness(models, 0.9, 1 / (1 + np.exp(-(0.3 + 0.8 * logit(0.9)))))) < 1e-9
    assert effective_robustness(models, 0.9, 0.99) > 0


def test_the_gain_over_standard_models_is_a_difference_of_means_with_welchs_error():
    import numpy as np
    import pytest

    from feature_learning.experiments.feature_contamination import gain_over_standard

    g = gain_over_standard([0.1, 0.3], [-0.1, 0.1, 0.0])
    assert abs(g.mean - 0.2) < 1e-12 and abs(g.se - np.sqrt(0.02 / 2 + 0.01 / 3)) < 1e-12
    assert np.isnan(gain_over_standard([0.1, np.nan], [0.0, 0.1]).mean)  # a NaN is never dropped
    with pytest.raises(ValueError):
        gain_over_standard([0.1], [0.0, 0.1])


def test_class_rates_count_positive_preactivations():
    import torch

    from feature_learning.experiments.feature_contamination import class_rates
    from feature_learning.models.two_layer import init_torch_default

    net = init_torch_default(2, 3, 4, d_out=2, generator=torch.Generator().manual_seed(0))
    x, labels = torch.randn(50, 3, generator=torch.Generator().manual_seed(1)), torch.arange(50) % 10
    rates = class_rates(net, x, labels)
    expected = (net.preactivation(x)[:, labels == 3] > 0).double().mean(1)
    assert rates.shape == (2, 4, 10) and torch.allclose(rates[..., 3], expected)

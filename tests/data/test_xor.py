"""data/xor.py: Assumption 5.1 data, skewed XOR and the synthetic dominoes (Tsoy & Konstantinov, ICML 2024)."""

import math

import torch

from feature_learning.data.xor import simple_plus_complex_data, skewed_xor_data, xor_cluster_data

D = torch.float64


def test_xor_cluster_data_satisfies_assumption_5_1(gen):
    X, y = xor_cluster_data(5, 3, delta=0.05, sigma=0.05, generator=gen())
    assert X.shape == (80, 3) and y.sum() == 0
    centre = torch.where(y[:, None] > 0, torch.tensor([1.0, 0, 0], dtype=D) * X[:, :1].sign(),
                         torch.tensor([0, 1.0, 0], dtype=D) * X[:, 1:2].sign())
    assert ((X - centre).norm(dim=1) <= 0.05).all()
    for flip in (torch.tensor([-1.0, 1, 1], dtype=D), torch.tensor([1.0, -1, 1], dtype=D),
                 torch.tensor([1.0, 1, -1], dtype=D)):  # R_1, R_2, R_r map the set onto itself
        image = X * flip
        assert torch.cdist(image, X).min(dim=1).values.max() < 1e-6
    swapped = X[:, [1, 0, 2]]  # P maps the set onto itself with the labels swapped
    nearest = torch.cdist(swapped, X).min(dim=1)
    assert nearest.values.max() < 1e-6 and torch.equal(y[nearest.indices], -y)


def test_skewed_xor_centres_and_labels(gen):
    alpha = math.pi / 3
    X, y = skewed_xor_data(200, alpha, generator=gen())
    w = torch.tensor([math.cos(alpha), math.sin(alpha)], dtype=D)
    pos = X[y > 0]
    assert torch.allclose((pos @ w).abs().mean(), torch.tensor(1.0, dtype=D), atol=0.02)
    assert torch.allclose(X[y < 0][:, 0].abs().mean(), torch.tensor(1.0, dtype=D), atol=0.02)
    assert X.shape == (800, 2)


def test_domino_simple_feature_is_spurious_only_out_of_distribution(gen):
    X, y = simple_plus_complex_data(4000, generator=gen())
    Xo, yo = simple_plus_complex_data(4000, ood=True, generator=gen(1))
    assert (X[:, 0].sign() == y).double().mean() > 0.99
    assert abs((Xo[:, 0].sign() == yo).double().mean() - 0.5) < 0.04
    # the XOR feature: |c_1| - |c_2| has the sign of y on average
    assert ((Xo[:, 1].abs() - Xo[:, 2].abs()) * yo).mean() > 0.5

"""experiments/gradient_features/measures.py: the simplified gradient against a loop over examples, cones, kinks."""

import torch

from feature_learning.experiments.gradient_features.measures import (
    abs_cosine,
    cone_fractions,
    in_cone,
    kinks,
    nice_mask,
    simplified_gradient,
)
from feature_learning.models.two_layer import TwoLayerNet


def test_simplified_gradient_against_a_loop():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(2, 3, 4, generator=g, dtype=torch.float64)
    b = torch.randn(2, 3, generator=g, dtype=torch.float64)
    net = TwoLayerNet(W=W, a=torch.ones(2, 3, dtype=torch.float64), b=b, activation="relu")
    x = torch.randn(25, 4, generator=g, dtype=torch.float64)
    y = torch.sign(torch.randn(25, generator=g, dtype=torch.float64))
    G = simplified_gradient(net, x, y)
    for r in range(2):
        for i in range(3):
            # the source's sigma(<w, x> - b~) with b~ = -b
            expected = sum(y[n] * x[n] * float(W[r, i] @ x[n] > -b[r, i]) for n in range(25)) / 25
            assert torch.allclose(G[r, i], expected, atol=1e-14)
    per_replica = simplified_gradient(net, x.expand(2, 25, 4), y.expand(2, 25))
    assert torch.allclose(per_replica, G, atol=1e-14)


def test_cone_nice_and_kinks():
    D = torch.tensor([1.0, 0.0], dtype=torch.float64)
    W = torch.tensor([[[2.0, 0.0], [-1.0, 0.1], [1.0, 1.0], [0.0, 0.0]]], dtype=torch.float64)
    cos = abs_cosine(W, D)
    assert torch.allclose(cos[0, :3], torch.tensor([1.0, 1 / 1.01**0.5, 2**-0.5], dtype=torch.float64))
    assert cos[0, 3] == 0
    assert in_cone(W, D, 0.01).tolist() == [[True, True, False, False]]
    assert torch.allclose(cone_fractions(W, D, (0.01, 0.5)), torch.tensor([[0.5, 0.75]], dtype=torch.float64))
    assert nice_mask(W, D, 0.01, 1.5).tolist() == [[True, False, False, False]]
    net = TwoLayerNet(W=W, a=torch.ones(1, 4, dtype=torch.float64), b=torch.tensor([[-1.0, 0.5, 0.0, 1.0]],
                                                                                    dtype=torch.float64))
    assert torch.allclose(kinks(net, D)[0, :2], torch.tensor([0.5, 0.5], dtype=torch.float64))

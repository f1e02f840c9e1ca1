"""measure/lucky_neurons.py: singly-activated sets, set means and the level crossing."""

import torch

from feature_learning.measure.lucky_neurons import level_crossing, responding, set_mean, set_sizes, singly_activated


def test_singly_activated_and_means():
    proj = torch.tensor([[[[3.5, 0.0, 1.0], [3.1, 3.2, 0.0], [0.0, 0.0, 4.0]]]])  # (R=1, C=1, m=3, n=3)
    members = singly_activated(proj, 3.0)
    assert members.tolist() == [[[[True, False, False], [False, False, False], [False, False, True]]]]
    assert torch.allclose(set_mean(proj, members, [(0, 0)]), torch.tensor([3.5], dtype=torch.float64))
    assert torch.allclose(set_mean(proj, members, [(0, 0), (0, 2)]), torch.tensor([3.75], dtype=torch.float64))
    assert torch.isnan(set_mean(proj, members, [(0, 1)])).all()
    assert set_sizes(members, [(0, 0), (0, 1)]).tolist() == [[1, 0]]


def test_responding_counts_neurons_over_threshold():
    W = torch.tensor([[[[1.0, 0.0], [0.2, 0.0], [0.6, 0.0]]]])
    b = torch.tensor([[[-0.5, -0.5, -0.5]]])
    assert responding(W, b, feature=0, owner=0).tolist() == [2]


def test_level_crossing_interpolates():
    x = torch.tensor([0.0, 0.1, 0.2, 0.3])
    curves = torch.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 0.8, 0.6, 0.55], [0.2, 0.1, 0.0, 0.0]])
    out = level_crossing(x, curves, 0.5)
    assert torch.allclose(out, torch.tensor([0.15, 0.3, 0.0], dtype=torch.float64))

"""measure/geometry.py: cosines, MDS, signal-to-background ratios and weight mass on the circle."""

import math

import torch

from feature_learning.measure.geometry import (
    angle_gap,
    best_cosine_per_target,
    classical_mds,
    cluster_amplitudes,
    cosine_to,
    feature_snr,
    mass_near,
    nearest_target,
    neuron_angles,
    pairwise_cosines,
    sign_consistency,
    weighted_centres,
)

D = torch.float64


def test_cosines(gen):
    W = torch.randn(2, 5, 4, generator=gen(1), dtype=D)
    v = torch.randn(4, generator=gen(2), dtype=D)
    manual = torch.stack([torch.stack([torch.dot(w, v) / (w.norm() * v.norm()) for w in Wr]) for Wr in W])
    assert torch.allclose(cosine_to(W, v), manual, atol=1e-14)
    assert torch.allclose(cosine_to(W, v.expand(2, 4)), manual, atol=1e-14)
    # a component orthogonal to everything only lengthens w: cos -> cos * |w| / sqrt(|w|^2 + perp)
    perp = torch.full((2, 5), 3.0, dtype=D)
    norms = W.norm(dim=-1)
    assert torch.allclose(cosine_to(W, v, perp), manual * norms / (norms**2 + 3.0).sqrt(), atol=1e-14)
    targets = torch.stack([W[:, 2] * 5.0, -W[:, 0]], dim=1)  # (R, K=2, d): the first is unit 2's direction
    best = best_cosine_per_target(W, targets)
    assert torch.allclose(best[:, 0], torch.ones(2, dtype=D))
    assert (best[:, 1] < 1).all()
    C = pairwise_cosines(W[0])
    assert torch.allclose(C.diag(), torch.ones(5, dtype=D)) and torch.allclose(C, C.T)


def test_classical_mds_recovers_euclidean_distances(gen):
    points = torch.randn(12, 2, generator=gen(3), dtype=D)
    dist = torch.cdist(points, points)
    coords = classical_mds(dist, 2)
    assert torch.allclose(torch.cdist(coords, coords), dist, atol=1e-10)


def test_feature_snr_of_a_constructed_gradient():
    M = torch.eye(6, dtype=D)
    A = torch.tensor([0, 1])
    grad = torch.zeros(1, 3, 6, dtype=D)
    grad[..., :2] = 4.0  # |T_A| = 4
    grad[..., 2:] = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=D)  # rms background 1
    assert torch.allclose(feature_snr(grad, M, A), torch.tensor([4.0], dtype=D))


def test_mass_on_the_circle():
    angles = torch.tensor([0.0, 0.05, math.pi / 2, 3.0], dtype=D)
    radii = torch.tensor([1.0, 1.0, 2.0, 1.0], dtype=D)
    V = (radii[:, None] * torch.stack([angles.cos(), angles.sin()], -1))[None]
    assert torch.allclose(neuron_angles(V)[0], angles)
    assert torch.allclose(angle_gap(torch.tensor(3.1), torch.tensor(-3.1)), torch.tensor(2 * math.pi - 6.2))
    per, total = mass_near(V, torch.tensor([0.0, math.pi / 2]), tol=0.1)
    assert torch.allclose(per, torch.tensor([[2 / 7, 4 / 7]], dtype=D))
    assert torch.allclose(total, torch.tensor([6 / 7], dtype=D))  # unit 3 (angle 3.0) is near no target
    # circular means weighted by ||v||^2: units 0, 1 (masses 1, 1) around 0; units 2, 3 (masses 4, 1) nearest pi/2
    centres = weighted_centres(V, torch.tensor([0.0, math.pi / 2]))
    assert torch.allclose(centres[0, 0], torch.tensor(0.025, dtype=D), atol=1e-12)
    expected = math.atan2(4 * 1.0 + math.sin(3.0), 4 * 0.0 + math.cos(3.0))
    assert torch.allclose(centres[0, 1], torch.tensor(expected, dtype=D), atol=1e-12)


def test_best_cosine_per_target():
    from feature_learning.measure.geometry import best_cosine_per_target

    W = torch.tensor([[[1.0, 0.0], [1.0, 1.0], [0.0, -3.0]]])
    targets = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]])
    out = best_cosine_per_target(W, targets)
    assert torch.allclose(out, torch.tensor([[1.0, math.sqrt(0.5), 0.0]], dtype=torch.float64))


def test_cluster_amplitudes_and_sign_consistency():
    # four neurons: two near 0 (a = 1, -2), one near pi/2 (a = 3), one near pi (a = 0.5); targets 0, pi/2, pi
    angles = torch.tensor([0.01, -0.02, math.pi / 2 + 0.03, 3.1], dtype=D)
    radii = torch.tensor([1.0, 2.0, 3.0, 0.5], dtype=D)
    V = (radii[:, None] * torch.stack([angles.cos(), angles.sin()], -1))[None]
    a = torch.tensor([[1.0, -2.0, 3.0, 0.5]], dtype=D)
    targets = torch.tensor([0.0, math.pi / 2, math.pi], dtype=D)
    assert nearest_target(V, targets).tolist() == [[0, 0, 1, 2]]
    assert torch.allclose(cluster_amplitudes(a, V, targets), torch.tensor([[1.0 + 4.0, 9.0, 0.25]], dtype=D))
    # target signs +1, -1, +1: neuron 1 (a < 0 near a maximum, mass 4) and neuron 2 (a > 0 near a minimum, mass 9)
    # have the wrong sign
    signs = torch.tensor([1.0, -1.0, 1.0], dtype=D)
    wrong = (4.0 + 9.0) / (1.0 + 4.0 + 9.0 + 0.25)
    assert torch.allclose(sign_consistency(a, V, targets, signs), torch.tensor([1 - wrong], dtype=D))

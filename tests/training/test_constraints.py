"""Projections onto norm-constrained sets, checked against a convex solver's optimality conditions and brute force."""

import math

import torch

from feature_learning.training.constraints import (
    dykstra,
    project_frobenius_ball,
    project_singular_values,
    project_spectral_frobenius,
)


def test_singular_value_projection_is_the_nearest_point_of_box_and_ball():
    gen = torch.Generator().manual_seed(0)
    sigma = 3 * torch.rand(6, generator=gen, dtype=torch.float64)
    p = project_singular_values(sigma, 1.0, 1.5)
    assert p.max() <= 1 + 1e-12 and p.pow(2).sum() <= 1.5**2 + 1e-10
    # brute force: no feasible random point is closer
    cand = torch.rand(200000, 6, generator=gen, dtype=torch.float64)
    cand = cand[cand.pow(2).sum(-1) <= 1.5**2]
    assert ((cand - sigma).norm(dim=-1) >= (p - sigma).norm() - 1e-12).all()
    # first-order condition: (sigma - p) . (q - p) <= 0 for feasible q
    assert (((sigma - p) * (cand - p)).sum(-1) <= 1e-10).all()


def test_matrix_projection_is_feasible_idempotent_and_optimal():
    gen = torch.Generator().manual_seed(1)
    W = 2 * torch.randn(3, 5, 8, generator=gen, dtype=torch.float64)
    P = project_spectral_frobenius(W, 1.0, math.sqrt(3))
    assert (torch.linalg.matrix_norm(P, 2) <= 1 + 1e-10).all()
    assert (torch.linalg.matrix_norm(P) <= math.sqrt(3) + 1e-10).all()
    assert torch.allclose(project_spectral_frobenius(P, 1.0, math.sqrt(3)), P, atol=1e-10)
    # variational inequality against random feasible matrices
    Q = project_spectral_frobenius(torch.randn(200, 5, 8, generator=gen, dtype=torch.float64), 1.0, math.sqrt(3))
    inner = ((W[0] - P[0]) * (Q - P[0])).sum((-1, -2))
    assert (inner <= 1e-9).all()
    inside = 0.02 * W  # spectral norm about 0.2
    assert torch.allclose(project_spectral_frobenius(inside, 1.0, math.sqrt(3)), inside, atol=1e-12)


def test_ball_and_dykstra():
    gen = torch.Generator().manual_seed(2)
    C = project_spectral_frobenius(torch.randn(4, 6, generator=gen, dtype=torch.float64), 1.0, 1.5)
    W = C + torch.randn(4, 6, generator=gen, dtype=torch.float64)
    B = project_frobenius_ball(W, C, 0.5)
    assert abs(float((B - C).norm()) - 0.5) < 1e-12
    assert torch.allclose((B - C) / 0.5, (W - C) / (W - C).norm())
    X = dykstra(W, [lambda V: project_frobenius_ball(V, C, 0.5),
                    lambda V: project_spectral_frobenius(V, 1.0, 100.0)], iterations=200)
    assert float((X - C).norm()) <= 0.5 + 1e-6 and float(torch.linalg.matrix_norm(X, 2)) <= 1 + 1e-6
    # optimality against feasible points (convex combinations of C and X stay feasible; so do random ones)
    Q = [project_frobenius_ball(project_spectral_frobenius(C + 0.3 * torch.randn(4, 6, generator=gen,
                                                                                 dtype=torch.float64), 1.0, 100.0),
                                C, 0.5) for _ in range(100)]
    Q = [q for q in Q if float(torch.linalg.matrix_norm(q, 2)) <= 1 + 1e-12]
    assert all(float(((W - X) * (q - X)).sum()) <= 1e-5 for q in Q)


def test_small_matrices_on_an_accelerator_are_projected_on_the_cpu_with_the_cpus_numbers():
    """Off the CPU a batch of small matrices goes through the CPU (cuSOLVER's batched SVD of small matrices is slow)
    and comes back on its device: on the pretend accelerator, the CPU's numbers, on the device."""
    from feature_learning.build.device_audit import ACCELERATOR, pretend_accelerator

    W = 2 * torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    on_cpu = project_spectral_frobenius(W, 1.0, math.sqrt(3))
    with pretend_accelerator() as marks:
        on_device = project_spectral_frobenius(W.to(ACCELERATOR), 1.0, math.sqrt(3))
        assert marks.has(on_device) and on_device.device == ACCELERATOR
        on_device = on_device.cpu()
    assert torch.equal(on_device, on_cpu)

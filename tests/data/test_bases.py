"""data/bases.py: Haar-random orthonormal bases and uniform directions."""

import torch

from feature_learning.data.bases import orthonormal_dictionary, random_orthogonal, unit_sphere

D = torch.float64


def test_orthonormal_columns_and_one_implementation(gen):
    M = orthonormal_dictionary(30, 10, gen(1))
    assert M.shape == (30, 10) and torch.allclose(M.T @ M, torch.eye(10, dtype=D), atol=1e-13)
    Q = random_orthogonal(7, gen(2))
    assert torch.allclose(Q @ Q.T, torch.eye(7, dtype=D), atol=1e-13)
    assert torch.equal(Q, orthonormal_dictionary(7, 7, gen(2)))
    # drawn in float64 whatever the dtype: the same generator gives the same basis in every precision
    assert torch.equal(orthonormal_dictionary(30, 10, gen(1), dtype=torch.float32), M.float())


def test_the_basis_is_haar_distributed(gen):
    """Without moving the signs of R's diagonal into Q, QR returns Q[0, 0] < 0 always (Householder convention); the
    Haar law has E Q_ij = 0 and E Q_ij^2 = 1/d."""
    g = gen(3)
    Q = torch.stack([random_orthogonal(4, g) for _ in range(4000)])
    se = (1 / 4) ** 0.5 / 4000**0.5
    assert Q.mean(0).abs().max() < 5 * se
    assert (Q.pow(2).mean(0) - 0.25).abs().max() < 0.02


def test_unit_sphere(gen):
    v = unit_sphere(20000, 3, gen(4))
    assert torch.allclose(v.norm(dim=-1), torch.ones(20000, dtype=D))
    assert v.mean(0).abs().max() < 5 / (3 * 20000) ** 0.5
    assert torch.allclose((v[:, 0] ** 2).mean(), torch.tensor(1 / 3, dtype=D), atol=0.01)

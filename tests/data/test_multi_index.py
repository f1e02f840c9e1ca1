"""data/multi_index.py: the degree-2 two-index target has E g* = 0, E g*^2 = 1, E[g* x] = 0 and, by Stein's lemma,
E[g* x x^T] = U H U^T (Monte Carlo)."""

import torch

from feature_learning.data.multi_index import multi_index_sample, quadratic_two_index_hessian


def test_moments():
    g = torch.Generator().manual_seed(0)
    U = torch.linalg.qr(torch.randn(6, 2, generator=g, dtype=torch.float64))[0]
    x, y = multi_index_sample(1_000_000, U, g)
    assert abs(float(y.mean())) < 0.005 and abs(float((y * y).mean()) - 1) < 0.01
    assert (y[:, None] * x).mean(0).abs().max() < 0.005
    second = torch.einsum("n,ni,nj->ij", y, x, x) / len(y)
    expected = U @ quadratic_two_index_hessian() @ U.T
    assert (second - expected).abs().max() < 0.02
    assert torch.linalg.matrix_rank(quadratic_two_index_hessian()) == 2

"""Linear CKA and feature weights of linear representations."""

import torch

from feature_learning.measure.representations import feature_weights, linear_cka


def test_cka_is_one_under_rotation_and_scaling_and_matches_the_kernel_form():
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(300, 5, generator=gen, dtype=torch.float64)
    Q = torch.linalg.qr(torch.randn(5, 5, generator=gen, dtype=torch.float64))[0]
    assert abs(float(linear_cka(X, 3 * X @ Q)) - 1) < 1e-12
    Y = torch.randn(300, 4, generator=gen, dtype=torch.float64)
    # kernel form (Kornblith et al. eq. 2 with HSIC): tr(K H L H) / sqrt(tr(K H K H) tr(L H L H))
    H = torch.eye(300, dtype=torch.float64) - 1 / 300
    K, L = X @ X.T, Y @ Y.T
    hsic = lambda A, B: torch.trace(A @ H @ B @ H)  # noqa: E731
    assert abs(float(linear_cka(X, Y)) - float(hsic(K, L) / (hsic(K, K) * hsic(L, L)).sqrt())) < 1e-12
    batched = linear_cka(torch.stack([X, X]), torch.stack([X @ Q, 2 * X]))
    assert batched.shape == (2,) and torch.allclose(batched, torch.ones(2, dtype=torch.float64))


def test_feature_weights_read_a_diagonal_representation():
    gen = torch.Generator().manual_seed(1)
    M = torch.linalg.qr(torch.randn(6, 6, generator=gen, dtype=torch.float64))[0]
    Q = torch.linalg.qr(torch.randn(3, 3, generator=gen, dtype=torch.float64))[0]
    a = torch.tensor([1.0, 0.5, 0.2], dtype=torch.float64)
    W = Q @ torch.cat([torch.diag(a), torch.zeros(3, 3, dtype=torch.float64)], 1) @ M.T
    assert torch.allclose(feature_weights(W, M), torch.cat([a**2, torch.zeros(3, dtype=torch.float64)]))

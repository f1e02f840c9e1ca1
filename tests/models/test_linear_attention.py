"""Linear self-attention (dissertation ch. 5, eq. 5.1) and the looped linear transformer (ch. 8)."""

import math

import torch

from feature_learning.data.bases import random_orthogonal
from feature_learning.data.in_context import gaussian_design, icl_regression_prompts
from feature_learning.models.linear_attention import (
    gd_construction,
    gd_iterates,
    icl_gamma,
    looped_query_rows,
    looped_transformer,
    lsa_forward,
    lsa_population_loss,
    parity_heads,
    parity_heads_diagonal,
    prompt_matrix,
    reduced_lsa_predict,
)
from feature_learning.theory import looped


def test_lsa_full_weights_equal_reduced_form(gen):
    d, N = 3, 10
    lam = torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64)
    Q = random_orthogonal(d, gen())
    pr = icl_regression_prompts(6, N, Q, lam, gen(1))
    U = torch.randn(d, d, generator=gen(2), dtype=torch.float64)
    W_PV, W_KQ = torch.zeros(d + 1, d + 1, dtype=torch.float64), torch.zeros(d + 1, d + 1, dtype=torch.float64)
    W_PV[d, d], W_KQ[:d, :d] = 1.3, U
    full = lsa_forward(pr.embedding(), W_PV, W_KQ, rho=N)
    red = reduced_lsa_predict(pr.X, pr.y, pr.xq, U[None], torch.tensor([1.3], dtype=torch.float64), rho=N)[0]
    assert torch.allclose(full, red, atol=1e-12)


def test_population_loss_monte_carlo_and_gradient(gen):
    d, N = 3, 8
    lam = torch.tensor([1.5, 1.0, 0.3], dtype=torch.float64)
    Q = random_orthogonal(d, gen())
    Lam = Q @ torch.diag(lam) @ Q.T
    U = 0.3 * torch.randn(1, d, d, generator=gen(1), dtype=torch.float64)
    u = torch.tensor([1.2], dtype=torch.float64)
    pr = icl_regression_prompts(200_000, N, Q, lam, gen(2))
    mc = 0.5 * ((reduced_lsa_predict(pr.X, pr.y, pr.xq, U, u, N)[0] - pr.yq) ** 2)
    exact = lsa_population_loss(U, u, Lam, N)[0]
    assert abs(mc.mean() - exact) < 4 * mc.std() / math.sqrt(len(mc))
    U1 = U.clone().requires_grad_()
    lsa_population_loss(U1, torch.ones(1, dtype=torch.float64), Lam, N).sum().backward()
    closed = icl_gamma(Lam, N) @ Lam @ U[0] @ Lam - Lam @ Lam
    assert torch.allclose(U1.grad[0], closed, atol=1e-10)


def test_diagonal_parity_heads_equal_the_general_heads(gen):
    V = torch.randn(8, 6, generator=gen(0), dtype=torch.float64)
    a = torch.tensor([-1.0, -1.0, 1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    s = torch.randn(5, 8, generator=gen(1), dtype=torch.float64)
    xq = torch.randn(5, 8, generator=gen(2), dtype=torch.float64)
    assert torch.allclose(parity_heads(s, xq, torch.diag_embed(V.T), a), parity_heads_diagonal(s, xq, V, a))


def test_looped_transformer_is_gd_and_query_rows_agree(gen):
    X, y, theta = gaussian_design(8, 12, 3, gen())
    alpha = torch.randn(8, generator=gen(1), dtype=torch.float64)
    Q, P = gd_construction(3)
    etas = [0.01 * (1 + t % 3) for t in range(20)]
    tf, qs = looped_transformer(prompt_matrix(X, y, alpha), Q, P, etas, return_path=True)
    for q, th in zip(qs, gd_iterates(X, y, etas), strict=True):
        assert torch.allclose(q, -alpha[:, None] * th, atol=1e-12)
    Xy = torch.cat([X, y[..., None]], 2)
    z0 = torch.cat([torch.zeros(8, 3, dtype=torch.float64), alpha[:, None]], 1)
    Qr = torch.randn(4, 4, generator=gen(2), dtype=torch.float64)
    Pr = torch.randn(4, 4, generator=gen(3), dtype=torch.float64)
    full = looped_transformer(prompt_matrix(X, y, alpha), Qr, Pr, [0.01] * 3, scale=0.5)
    fast = looped_query_rows(Xy.transpose(1, 2) @ Xy, z0, Qr, Pr, [0.01] * 3, scale=0.5)
    assert torch.allclose(full, fast, atol=1e-10)


def test_looped_transformer_error_matches_the_eigenbasis_closed_form(gen):
    X, y, theta = gaussian_design(5, 16, 4, gen())
    alpha = torch.full((5,), 1.5, dtype=torch.float64)
    L = torch.linalg.eigvalsh(X.transpose(1, 2) @ X)[:, -1]
    Q, P = gd_construction(4)
    tf = looped_transformer(prompt_matrix(X, y, alpha), Q, P, [1 / L] * 7)
    err = ((tf * theta).sum(-1) - alpha).abs()
    assert torch.allclose(err, looped.exact_prediction_error(X, theta, alpha, 7), rtol=1e-8)
    assert (err <= alpha * torch.exp(-7 / (2 * looped.condition_numbers(X)))).all()

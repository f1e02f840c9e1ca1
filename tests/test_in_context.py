"""The in-context-learning library (dissertation ch. 5 and ch. 8): generators, linear attention, closed forms."""

import math

import sympy as sp
import torch

from feature_learning.data.in_context import (
    gaussian_design,
    icl_regression_prompts,
    parity_task_sets,
    random_orthogonal,
    sparse_parity_prompts,
)
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
from feature_learning.theory import icl, looped


def gen(s=0):
    return torch.Generator().manual_seed(s)


def test_looped_transformer_is_gd_and_query_rows_agree():
    X, y, theta = gaussian_design(8, 12, 3, gen())
    alpha = torch.randn(8, generator=gen(1), dtype=torch.float64)
    Q, P = gd_construction(3)
    etas = [0.01 * (1 + t % 3) for t in range(20)]
    tf, qs = looped_transformer(prompt_matrix(X, y, alpha), Q, P, etas, return_path=True)
    thetas = gd_iterates(X, y, etas)
    for q, th in zip(qs, thetas, strict=True):
        assert torch.allclose(q, -alpha[:, None] * th, atol=1e-12)
    Xy = torch.cat([X, y[..., None]], 2)
    z0 = torch.cat([torch.zeros(8, 3, dtype=torch.float64), alpha[:, None]], 1)
    Qr = torch.randn(4, 4, generator=gen(2), dtype=torch.float64)
    Pr = torch.randn(4, 4, generator=gen(3), dtype=torch.float64)
    full = looped_transformer(prompt_matrix(X, y, alpha), Qr, Pr, [0.01] * 3, scale=0.5)
    fast = looped_query_rows(Xy.transpose(1, 2) @ Xy, z0, Qr, Pr, [0.01] * 3, scale=0.5)
    assert torch.allclose(full, fast, atol=1e-10)


def test_exact_prediction_error_matches_iteration():
    X, y, theta = gaussian_design(5, 16, 4, gen())
    alpha = torch.full((5,), 1.5, dtype=torch.float64)
    L = torch.linalg.eigvalsh(X.transpose(1, 2) @ X)[:, -1]
    Q, P = gd_construction(4)
    tf = looped_transformer(prompt_matrix(X, y, alpha), Q, P, [1 / L] * 7)
    err = ((tf * theta).sum(-1) - alpha).abs()
    assert torch.allclose(err, looped.exact_prediction_error(X, theta, alpha, 7), rtol=1e-8)
    assert (err <= alpha * torch.exp(-7 / (2 * looped.condition_numbers(X)))).all()


def test_lsa_full_weights_equal_reduced_form():
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


def test_population_loss_monte_carlo_and_gradient():
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


def test_rank_r_optimum_and_its_loss():
    d, N = 4, 16
    lam = torch.tensor([2.0, 1.0, 0.5, 0.25], dtype=torch.float64)
    Q = random_orthogonal(d, gen())
    Lam = Q @ torch.diag(lam) @ Q.T
    for r in range(d + 1):
        U = icl.optimal_U(Q, lam, N, r)
        loss = lsa_population_loss(U[None], torch.ones(1, dtype=torch.float64), Lam, N)[0]
        assert torch.allclose(loss, icl.rank_r_pretraining_loss(lam, N, r))
    sym = icl.rank_r_symbolic()
    lam_s, trD, N_s, _ = sym["symbols"]
    assert sp.simplify(sym["v_star"] - N_s / ((N_s + 1) * lam_s + trD)) == 0


def test_eval_risk_monte_carlo_with_noise_and_flips():
    d, N, M = 3, 32, 8
    lam = torch.tensor([1.5, 1.0, 0.3], dtype=torch.float64)
    Q = random_orthogonal(d, gen())
    c = torch.tensor([1.0, -0.5, 0.4], dtype=torch.float64)
    for r, sigma, p in ((1, 0.0, 0.0), (3, 1.0, 0.0), (2, 0.5, 0.25)):
        pr = icl_regression_prompts(200_000, M, Q, lam, gen(r), w=Q @ c, sigma=sigma, flip_frac=p)
        U = icl.optimal_U(Q, lam, N, r)[None]
        err = (reduced_lsa_predict(pr.X, pr.y, pr.xq, U, torch.ones(1, dtype=torch.float64), M)[0] - pr.yq) ** 2
        exact = icl.eval_risk(c, lam, N, M, r, sigma, p)
        assert abs(err.mean() - exact) < 4 * err.std() / math.sqrt(len(err)), (r, sigma, p)


def test_symbolic_derivations():
    assert icl.fourth_moment_check(2)
    derived, tilde, (lams, *_ ) = icl.pretraining_loss_symbolic(2)
    assert sp.simplify(derived - tilde - sum(lams) / 2) == 0
    derived, closed, _ = icl.eval_risk_symbolic(2)
    assert sp.simplify(derived - closed) == 0


def test_parity_generator_and_constructions():
    d, k, gamma = 8, 2, 0.2
    pairs = torch.tensor([[0, 1]] * 4000)
    phi, y, phi_q, y_q = sparse_parity_prompts(4000, 8, d, pairs, gamma, gen())
    assert abs(float((y[..., None] * phi).mean((0, 1))[0]) - 2 * gamma) < 0.02
    assert abs(float((y[..., None] * phi).mean((0, 1))[5])) < 0.02
    S1, S2 = parity_task_sets(d, k)
    assert len(S1) == k * (k - 1) and len(S1) + len(S2) == d * (d - 1)
    V, a = icl.parity_construction(3, gamma, 3)
    per_task, margin, _ = icl.parity_population(V, a, S1 + S2, gamma)
    assert float(per_task.max()) < 1e-12 and abs(float(margin.min()) - 1) < 1e-12
    assert abs(float((V**2).sum()) - d * 3 * 4 / (8 * gamma**2)) < 1e-9
    s = torch.randn(5, d, generator=gen(1), dtype=torch.float64)
    xq = torch.randn(5, d, generator=gen(2), dtype=torch.float64)
    W = torch.diag_embed(V.T)
    assert torch.allclose(parity_heads(s, xq, W, a), parity_heads_diagonal(s, xq, V, a))
    D1, _ = icl.small_construction(1, 3, gamma)
    assert abs(float(torch.trace(icl.projector(D1))) - 2) < 1e-9


def test_continuous_transformer_matches_token_lookup_on_one_hot_inputs():
    from feature_learning.models.transformer import TransformerConfig, init_transformer

    cfg = TransformerConfig(vocab=5, seq_len=6, n_out=2, d_model=8, n_heads=2, d_head=4, d_mlp=16, n_blocks=2)
    model = init_transformer(cfg, replicas=2, generator=gen())
    tokens = torch.randint(0, 5, (3, 6), generator=gen(1))
    one_hot = torch.nn.functional.one_hot(tokens, 5).float()
    assert torch.allclose(model(tokens), model.forward_continuous(one_hot), atol=1e-5)


def test_icl_classification_tokens_flip_count_and_layout():
    from feature_learning.data.in_context import icl_classification_tokens

    prior = torch.tensor([1.0, 0.0, 0.0])
    clean, yq = icl_classification_tokens(50, 8, 3, prior, 0.5, gen(3))
    flipped, yq2 = icl_classification_tokens(50, 8, 3, prior, 0.5, gen(3), flip_frac=0.25)
    assert torch.equal(yq, yq2) and (clean[:, -1, -1] == 0).all()
    assert ((clean[:, :8, -1] != flipped[:, :8, -1]).sum(1) == 2).all()
    assert set(clean[:, :8, -1].unique().tolist()) <= {-1.0, 1.0}


def test_train_icl_transformer_learns_and_flip_protocol():
    from feature_learning.measure.in_context import icl_flip_accuracy
    from feature_learning.models.transformer import TransformerConfig
    from feature_learning.training.in_context import train_icl_transformer

    d, M = 4, 8
    prior = torch.zeros(d)
    prior[0] = 1.0
    cfg = TransformerConfig(vocab=d + 1, seq_len=M + 1, n_out=1, d_model=8, n_heads=2, d_head=4, d_mlp=16,
                            n_blocks=1)
    model, hist = train_icl_transformer(cfg, prior, 1.0, M, 150, 64, gen(4), replicas=2, lr=3e-3)
    assert float(hist["loss"][-1]) < float(hist["loss"][0])  # the logged loss is summed over replicas
    flips = (0.0, 0.5, 1.0)
    acc, ref = icl_flip_accuracy(model, prior, 1.0, M, flips, 3000, gen(5), chunk=1000)
    assert acc.shape == (3, 2) and ref.shape == (3, 2)
    assert (acc[0] > 0.6).all()  # learned better than chance with clean labels
    # the prior rule ignores the context labels: identical at every p on common prompts
    assert torch.allclose(ref[:, 0], ref[0, 0].expand(3))
    # fully flipped labels negate sum_i y_i <x_i, x_q>: the context rule's accuracy becomes 1 - its clean accuracy
    assert abs(float(ref[2, 1] + ref[0, 1]) - 1) < 1e-9 and float(ref[0, 1]) > 0.6
    # p = 0 equals a direct evaluation on the same prompts
    from feature_learning.data.in_context import icl_classification_tokens

    tokens, yq = icl_classification_tokens(1000, M, d, prior, 1.0, gen(5))
    with torch.no_grad():
        direct = (torch.sign(model.forward_continuous(tokens)[..., 0]) == yq).double().mean(-1)
    acc1, _ = icl_flip_accuracy(model, prior, 1.0, M, (0.0,), 1000, gen(5))
    assert torch.allclose(acc1[0], direct)


def test_prior_rule_accuracy_matches_angle_formula():
    """P(sign<prior, x> = sign<w, x>) = 1 - angle(prior, w) / pi for isotropic x, averaged over the task w."""
    from feature_learning.data.in_context import icl_classification_tokens

    d, tau = 3, 1.0
    prior = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    tokens, yq = icl_classification_tokens(200000, 1, d, prior, tau, gen(6), dtype=torch.float64)
    acc = float((torch.sign(tokens[:, -1, :d] @ prior) == yq).double().mean())
    w = prior + tau * torch.randn(400000, d, generator=gen(7), dtype=torch.float64) / math.sqrt(d)
    expected = float(1 - torch.arccos(w[:, 0] / w.norm(dim=1)).mean() / math.pi)
    assert abs(acc - expected) < 4 * math.sqrt(0.25 / 200000) + 0.002

"""In-context prompts (dissertation ch. 5): the generators draw what their docstrings say."""

import math

import torch

from feature_learning.data.bases import random_orthogonal
from feature_learning.data.in_context import (
    icl_classification_tokens,
    icl_regression_prompts,
    parity_task_sets,
    sparse_parity_prompts,
)


def test_regression_prompts_covariance_labels_and_flips(gen):
    lam = torch.tensor([2.0, 1.0, 0.25], dtype=torch.float64)
    Q = random_orthogonal(3, gen())
    pr = icl_regression_prompts(20000, 8, Q, lam, gen(1))
    cov = torch.einsum("bnd,bne->de", pr.X, pr.X) / (20000 * 8)
    assert torch.allclose(cov, Q @ torch.diag(lam) @ Q.T, atol=0.03)
    assert torch.allclose(pr.y, torch.einsum("bnd,bd->bn", pr.X, pr.w))
    assert torch.allclose(pr.yq, (pr.w * pr.xq).sum(-1))
    w = torch.tensor([1.0, -0.5, 0.3], dtype=torch.float64)
    clean = icl_regression_prompts(50, 8, Q, lam, gen(2), w=w)
    flipped = icl_regression_prompts(50, 8, Q, lam, gen(2), w=w, flip_frac=0.25)
    assert ((clean.y != flipped.y).sum(1) == 2).all() and torch.allclose(clean.y.abs(), flipped.y.abs())


def test_parity_prompts_and_task_sets(gen):
    d, k, gamma = 8, 2, 0.2
    pairs = torch.tensor([[0, 1]] * 4000)
    phi, y, phi_q, y_q = sparse_parity_prompts(4000, 8, d, pairs, gamma, gen())
    assert torch.equal(y, phi[..., 0] * phi[..., 1]) and torch.equal(y_q, phi_q[:, 0] * phi_q[:, 1])
    assert abs(float((y[..., None] * phi).mean((0, 1))[0]) - 2 * gamma) < 0.02  # E[y phi_i] = 2 gamma
    assert abs(float((y[..., None] * phi).mean((0, 1))[5])) < 0.02
    assert abs(float(((phi[..., 0] == 1) & (phi[..., 1] == 1)).double().mean()) - (0.25 + gamma)) < 0.01
    S1, S2 = parity_task_sets(d, k)
    assert len(S1) == k * (k - 1) and len(S1) + len(S2) == d * (d - 1) and not set(S1) & set(S2)


def test_icl_classification_tokens_flip_count_and_layout(gen):
    prior = torch.tensor([1.0, 0.0, 0.0])
    clean, yq = icl_classification_tokens(50, 8, 3, prior, 0.5, gen(3))
    flipped, yq2 = icl_classification_tokens(50, 8, 3, prior, 0.5, gen(3), flip_frac=0.25)
    assert torch.equal(yq, yq2) and (clean[:, -1, -1] == 0).all()
    assert ((clean[:, :8, -1] != flipped[:, :8, -1]).sum(1) == 2).all()
    assert set(clean[:, :8, -1].unique().tolist()) <= {-1.0, 1.0}


def test_prior_rule_accuracy_matches_angle_formula(gen):
    """P(sign<prior, x> = sign<w, x>) = 1 - angle(prior, w) / pi for isotropic x, averaged over the task w."""
    d, tau = 3, 1.0
    prior = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    tokens, yq = icl_classification_tokens(200000, 1, d, prior, tau, gen(6), dtype=torch.float64)
    acc = float((torch.sign(tokens[:, -1, :d] @ prior) == yq).double().mean())
    w = prior + tau * torch.randn(400000, d, generator=gen(7), dtype=torch.float64) / math.sqrt(d)
    expected = float(1 - torch.arccos(w[:, 0] / w.norm(dim=1)).mean() / math.pi)
    assert abs(acc - expected) < 4 * math.sqrt(0.25 / 200000) + 0.002

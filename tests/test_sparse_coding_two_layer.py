"""The sparse-coding data model, the two-layer truncated-ReLU network and the closed forms of the chapter
"feature learning emerges from the input structure" (Shi, Wei and Liang, ICLR 2022)."""

import math

import pytest
import sympy as sp
import torch

from feature_learning.data.injection import gaussian_like
from feature_learning.data.sparse_coding import (
    SparseCodingTask,
    count_labels,
    interval_set,
    orthonormal_dictionary,
    parity_set,
    relevant_direction,
    threshold_set,
)
from feature_learning.models.fc_quadratic import balance_and_confidence, fc_quadratic, init_fc
from feature_learning.models.truncated_relu import (
    TwoLayerParams,
    forward,
    hinge,
    ntk_forward,
    smoothed_trunc_relu,
    smoothed_trunc_relu_grad,
    symmetric_init,
    trunc_relu,
    zeros_like,
)
from feature_learning.theory import feature_emergence as th
from feature_learning.training.truncated_relu import (
    StepConfig,
    classical_mds,
    cosine_to,
    full_batch_step,
    linear_probe,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_dictionary_is_orthonormal_and_label_sets():
    M = orthonormal_dictionary(30, 10, gen())
    assert torch.allclose(M.T @ M, torch.eye(10, dtype=M.dtype), atol=1e-12)
    assert parity_set(5) == (1, 3, 5) and threshold_set(5) == (3, 4, 5) and interval_set(2, 4) == (2, 3, 4)
    phi = torch.tensor([[1.0, 1, 0, 1], [0.0, 0, 1, 0]])
    assert count_labels(phi, torch.tensor([0, 1, 2]), (1, 3)).tolist() == [-1.0, 1.0]


def test_parity_mixture_matches_its_stated_law():
    task = SparseCodingTask(d=40, D=20, k=5, P=parity_set(5), p_o=0.5)
    g = gen(1)
    A = task.relevant_set(g)
    phi = task.sample_patterns(200_000, A, g)
    y = count_labels(phi, A, task.P)
    se = 4 / math.sqrt(200_000)
    # marginals: 1/2 on A, p_o off A (Sec. 2.5 of the notes); balanced labels (A0); gamma = (1-p_o)/2 (A1)
    assert abs(phi[:, A].mean() - 0.5) < se and abs(phi.mean(0)[[j for j in range(20) if j not in A]].mean() - 0.5) < se
    assert abs(y.mean()) < 2 * se
    gamma = (y[:, None] * phi[:, A]).mean(0) - y.mean() * phi[:, A].mean(0)
    assert torch.all((gamma - 0.25).abs() < 2 * se)
    # the structured component: S in {0, k} with probability (1-p_o) + p_o * 2/2^k
    S = phi[:, A].sum(1)
    assert abs(((S == 0) | (S == 5)).double().mean() - (0.5 + 0.5 * 2 / 32)) < se
    # normalisation: E||x||^2 = 1 with the population sigma~ (orthonormal M)
    M = orthonormal_dictionary(40, 20, g)
    x, _, _ = task.sample(50_000, M, A, g)
    assert abs((x**2).sum(1).mean() - 1) < 0.02 and x.mean(0).abs().max() < 0.02
    assert math.isclose(task.sigma_tilde() ** 2, float(th.sigma_tilde_sq(5, 20, sp.Rational(1, 2))))


def test_uniform_and_bernoulli_laws():
    task = SparseCodingTask(d=20, D=10, k=3, P=(2, 3), law="bernoulli", p_o=0.3, p_in=0.8)
    g = gen(2)
    A = task.relevant_set(g)
    phi = task.sample_patterns(100_000, A, g)
    assert torch.allclose(phi.mean(0), task.pattern_mean(A), atol=0.01)
    u = task.without_structure().sample_patterns(100_000, A, g)
    assert torch.allclose(u.mean(0), torch.full((10,), 0.5, dtype=u.dtype), atol=0.01)


def test_smoothed_activation_is_the_noise_average_and_its_derivative():
    z = torch.linspace(-0.5, 1.5, 41, dtype=torch.float64)
    xi = 0.2 * torch.randn(400_000, 1, generator=gen(3), dtype=torch.float64)
    mc = trunc_relu(z[None, :] + xi).mean(0)
    assert torch.allclose(smoothed_trunc_relu(z, 0.2), mc, atol=3e-3)
    zz = z.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(smoothed_trunc_relu(zz, 0.2).sum(), zz)
    assert torch.allclose(grad, smoothed_trunc_relu_grad(z, 0.2), atol=1e-12)
    # SymPy: derivative of the closed form is Phi(z/s) - Phi((z-1)/s)
    expr = sp.diff(th.smoothed_trunc_relu(), th.z) - th.smoothed_trunc_relu_derivative()
    assert sp.simplify(expr) == 0
    assert torch.equal(smoothed_trunc_relu(z, 0.0), trunc_relu(z))


def test_symmetric_init_gives_zero_output_and_the_gradient_step_matches_lemma_12():
    g = gen(4)
    p = symmetric_init(2, 6, 8, sigma_w=0.5, sigma_b=0.1, sigma_a=1.0, generator=g)
    x = torch.randn(50, 8, generator=g, dtype=torch.float64)
    y = torch.sign(torch.randn(50, generator=g, dtype=torch.float64))
    assert forward(p, x, 0.1).abs().max() < 1e-15
    # Lemma 12 at g = 0 (every sample has y g <= 1): dL/dw_i = -a_i E[y sigma'_s(z_i) x]
    step = StepConfig(eta=1e-3, lam_a=0.0, lam_w=1 / (2 * 1e-3), noise_std=0.1)
    p1 = full_batch_step(p, x, y, step)
    z = x @ p.W.transpose(1, 2) + p.b[:, None, :]
    gW = -p.a[:, :, None] * torch.einsum("n,rni,nd->rid", y, smoothed_trunc_relu_grad(z, 0.1), x) / 50
    assert torch.allclose(p1.W, -1e-3 * gW, atol=1e-15)  # lambda_w = 1/(2 eta) erases w^(0)
    ga = -torch.einsum("n,rni->ri", y, smoothed_trunc_relu(z, 0.1)) / 50
    assert torch.allclose(p1.a, p.a - 1e-3 * ga, atol=1e-14)
    # the mirrored units get opposite w-gradients and equal a-gradients (proof of Lemma 19)
    assert torch.allclose(p1.W[:, :6], -p1.W[:, 6:], atol=1e-15)


def test_ntk_model_is_the_linearisation_of_the_network():
    g = gen(5)
    p = symmetric_init(1, 5, 6, sigma_w=0.3, sigma_b=0.05, sigma_a=1.0, generator=g)
    x = torch.randn(20, 6, generator=g, dtype=torch.float64)
    delta = TwoLayerParams(*(1e-6 * torch.randn(t.shape, generator=g, dtype=t.dtype) for t in p.tensors()))
    moved = TwoLayerParams(p.W + delta.W, p.b + delta.b, p.a + delta.a)
    assert torch.allclose(forward(moved, x) - forward(p, x), ntk_forward(p, delta, x), atol=1e-10)
    assert torch.equal(ntk_forward(p, zeros_like(p), x), torch.zeros(1, 20, dtype=x.dtype))
    assert hinge(torch.ones(1, 20, dtype=x.dtype), torch.zeros(1, 20, dtype=x.dtype)).item() == 1.0


def test_probe_cosines_and_mds():
    g = gen(6)
    f = torch.randn(1, 400, 3, generator=g, dtype=torch.float64)
    y = torch.sign(f[..., 0] + 0.1)
    out = linear_probe(f, y, f, y, standardize=True, steps=300)
    assert out["train_acc"].item() > 0.97
    v = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    W = torch.tensor([[[2.0, 0, 0], [0, 1.0, 0]]], dtype=torch.float64)
    assert cosine_to(W, v).tolist() == [[1.0, 0.0]]
    pts = torch.randn(10, 2, generator=g, dtype=torch.float64)
    emb = classical_mds(torch.cdist(pts, pts))
    assert torch.allclose(torch.cdist(emb, emb), torch.cdist(pts, pts), atol=1e-8)
    assert relevant_direction(torch.eye(4, dtype=torch.float64), torch.tensor([1, 3])).tolist() == [0, 1, 0, 1]


def test_closed_forms():
    half = sp.Rational(1, 2)
    pos, gamma, ephi = th.mixture_constants(5, p=th.p_o)
    assert sp.simplify(pos - half) == 0 and sp.simplify(gamma - (1 - th.p_o) / 2) == 0 and ephi == half
    assert th.best_threshold_accuracy(5) == sp.Rational(27, 32)
    scales = th.init_scales(5, 100, half)
    assert scales["sigma_a"] == 4 and th.sigma_tilde_sq(5, 100, half) == 25
    assert abs(float(th.second_step_cosine(5, 100, half, 5000)) - 0.99249) < 1e-5
    assert th.sq_query_bound(100, 5).evalf() == pytest.approx(211.1, abs=0.1)
    # Lemma 5: the ground-truth network equals the label for every count S (parity, k = 5, mu = k/2)
    for k_val in (3, 4, 5):
        P = parity_set(k_val)
        units = th.ground_truth_network(k_val, P, sp.Rational(k_val, 2))
        assert len(units) == 3 * (k_val + 1)
        for S in range(k_val + 1):
            t = (S - sp.Rational(k_val, 2)) / (4 * k_val)
            assert th.evaluate_units(units, t) == (1 if S in P else -1)
        assert max(abs(a) for a, _ in units) <= 32 * k_val
        assert all(sp.Rational(1, 32 * k_val) <= abs(b) <= half for _, b in units)


def test_injection_helpers():
    g = gen(7)
    x = torch.rand(500, 4, generator=g, dtype=torch.float64) @ torch.randn(4, 4, generator=g, dtype=torch.float64)
    u = gaussian_like(x, 200_000, g)
    assert torch.allclose(u.mean(0), x.mean(0), atol=0.02)
    assert torch.allclose(torch.cov(u.T), torch.cov(x.T), atol=0.03)
    p = init_fc(2, 4, 3, 5, g)
    logits = fc_quadratic(p, x[:7])
    h = (x[:7] @ p.W[1].T) ** 2
    assert torch.allclose(logits[1], h @ p.V[1].T)
    r1, r2 = balance_and_confidence(torch.zeros(1, 10, 5, dtype=torch.float64))
    assert torch.allclose(r1, torch.tensor([-math.log(5)], dtype=torch.float64))
    assert torch.allclose(r2, torch.tensor([math.log(5)], dtype=torch.float64))

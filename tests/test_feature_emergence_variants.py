"""The variants of Appendix E.2-E.3 of Shi, Wei and Liang (ICLR 2022): class-ratio resampling of the sparse-coding
data, the exact reduction to pattern coordinates, the hypercube Gaussian mixture (eq. (290)), the per-target best
cosine, and the replica-batched (several seeds at once) comparison."""

import itertools
import math

import torch

from feature_learning.data.gaussian_mixture import hypercube_centres, hypercube_mixture
from feature_learning.data.sparse_coding import (
    SparseCodingTask,
    orthogonal_norm_sq,
    orthonormal_dictionary,
    parity_set,
    pattern_coordinates,
)
from feature_learning.experiments import feature_emergence as chapter
from feature_learning.measure.geometry import best_cosine_per_target
from feature_learning.models.truncated_relu import (
    TwoLayerParams,
    forward,
    hinge,
    ntk_forward,
    symmetric_init,
    weighted_hinge,
)
from feature_learning.training.truncated_relu import (
    StageConfig,
    StepConfig,
    cosine_to,
    full_batch_step,
    train_ntk,
    train_stage,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_class_ratio_resampling_keeps_the_class_conditional_law():
    task = SparseCodingTask(d=30, D=12, k=3, P=parity_set(3), p_o=0.5)
    g = gen(1)
    M, A = orthonormal_dictionary(30, 12, g), task.relevant_set(g)
    x, y, phi = task.sample_class_ratio(4000, M, A, 0.8, g)
    assert x.shape == (4000, 30) and (y < 0).sum().item() == 3200 and (y > 0).sum().item() == 800
    # labels still follow the count rule, inputs are the law's normalisation of the patterns
    S = phi[:, A].sum(1)
    assert torch.equal(y, torch.where(S % 2 == 1, 1.0, -1.0).to(y.dtype))
    centred = (phi - task.pattern_mean(A)) @ M.T / task.sigma_tilde()
    assert torch.allclose(x, centred, atol=1e-12)
    # class-conditional law unchanged: Pr[S = k | y = +1] under D_A^mix (exact: 0.5*1/2^k*... see below) vs sample
    big_x, big_y, big_phi = task.sample(200_000, M, A, g)
    pos = big_phi[big_y > 0][:, A].sum(1)
    assert abs((S[y > 0] == 3).double().mean() - (pos == 3).double().mean()) < 4 * math.sqrt(0.25 / 800)
    # the order is shuffled (not all negatives first)
    assert (y[:3200] > 0).any()


def test_pattern_coordinates_are_exact_for_the_network_its_steps_and_its_baselines():
    task = SparseCodingTask(d=40, D=8, k=3, P=parity_set(3), p_o=0.5)
    g = gen(2)
    M, A = orthonormal_dictionary(40, 8, g), task.relevant_set(g)
    x, y, _ = task.sample(300, M, A, g)
    z = pattern_coordinates(x, M)
    assert torch.allclose(z @ M.T, x, atol=1e-13)  # inputs lie in span(M)
    p = symmetric_init(2, 5, 40, sigma_w=0.3, sigma_b=0.05, sigma_a=2.0, generator=g)
    q = TwoLayerParams(pattern_coordinates(p.W, M), p.b, p.a)
    assert torch.allclose(forward(p, x, 0.05), forward(q, z, 0.05), atol=1e-13)
    # a step with exact erasure leaves no component outside span(M): the reduced step is the full one
    step = StepConfig(eta=1e-3, lam_a=0.0, lam_w=1 / (2e-3), noise_std=0.1)
    p1, q1 = full_batch_step(p, x, y, step), full_batch_step(q, z, y, step)
    assert (orthogonal_norm_sq(p1.W, M) <= 1e-12 * p1.W.pow(2).sum(-1)).all()
    assert torch.allclose(pattern_coordinates(p1.W, M), q1.W, atol=1e-15)
    assert torch.allclose(p1.b, q1.b, atol=1e-15) and torch.allclose(p1.a, q1.a, atol=1e-14)
    # the cosine with sum_A M_j from pattern coordinates plus the orthogonal norm equals the d-dimensional one
    v_full, v_pat = M[:, A].sum(-1), torch.zeros(8, dtype=torch.float64)
    v_pat[A] = 1.0
    assert torch.allclose(cosine_to(p.W, v_full), cosine_to(q.W, v_pat, orthogonal_norm_sq(p.W, M)), atol=1e-13)
    # per-replica directions: (R, d)
    assert torch.allclose(cosine_to(p.W, v_full.expand(2, -1)), cosine_to(p.W, v_full), atol=1e-15)
    # SGD of the network, the random features and the NTK model agree in both coordinates
    cfg = StageConfig(5, 64, 0.01, 0.01, 1.0)
    net_p, _ = train_stage(p, x, y, cfg, gen(9))
    net_q, _ = train_stage(q, z, y, cfg, gen(9))
    assert torch.allclose(forward(net_p, x), forward(net_q, z), atol=1e-12)
    ntk_p, _ = train_ntk(p, x, y, cfg, gen(9))
    ntk_q, _ = train_ntk(q, z, y, cfg, gen(9))
    assert torch.allclose(ntk_forward(p, ntk_p, x), ntk_forward(q, ntk_q, z), atol=1e-12)


def test_weighted_hinge_balances_the_classes():
    y = torch.tensor([[1.0, -1, -1, -1]])
    out = torch.zeros(1, 4)
    assert torch.allclose(weighted_hinge(y, out), hinge(y, out))  # both 1 at g = 0
    # E[alpha_y y] = 0 (Lemma A.33): a constant output moves the weighted loss symmetrically
    c = torch.tensor(0.1, requires_grad=True)
    (grad,) = torch.autograd.grad(weighted_hinge(y, out + c).sum(), c)
    assert abs(grad.item()) < 1e-7


def test_hypercube_mixture_follows_eq_290():
    g = gen(3)
    d, k, sigma_r = 20, 3, 0.7
    M = orthonormal_dictionary(d, k, g)
    x, y, eps = hypercube_mixture(100_000, M, sigma_r, g)
    assert torch.equal(y, eps.prod(-1))
    noise = x - eps @ M.T
    assert abs(noise.var().item() - sigma_r**2 * k / d) < 0.01 * sigma_r**2 * k / d + 1e-3
    assert abs(y.mean().item()) < 0.02 and (eps.mean(0).abs() < 0.02).all()
    centres, labels = hypercube_centres(M)
    assert centres.shape == (8, d) and torch.allclose(centres.norm(dim=-1), torch.full((8,), math.sqrt(k),
                                                                                        dtype=M.dtype))
    signs = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=k)), dtype=M.dtype)
    assert torch.allclose(centres @ M, signs) and torch.equal(labels, signs.prod(-1))


def test_best_cosine_per_target():
    W = torch.tensor([[[1.0, 0.0], [1.0, 1.0], [0.0, -3.0]]])
    targets = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]])
    out = best_cosine_per_target(W, targets)
    assert torch.allclose(out, torch.tensor([[1.0, math.sqrt(0.5), 0.0]], dtype=torch.float64))


def test_seeded_comparison_batches_seeds_and_is_reproducible():
    size = chapter.sizes("ci")
    small = dict(seeds=2, d=24, D=12, n=300, n_test=200, steps=6)
    tiny = chapter.dataclasses.replace(size, m=8, batch=50, probe_steps=5, log_every=3)
    a = chapter.seeded_comparison(tiny, gen(4), **small)
    b = chapter.seeded_comparison(tiny, gen(4), **small)
    assert a["test_acc"]["net"].shape == (4,) and a["history"]["rf"]["test_acc"].shape[1] == 4
    for key in ("net", "rf", "ntk"):
        assert torch.equal(a["test_acc"][key], b["test_acc"][key])
    # within a seed the two settings share the initialisation (same init cosine), seeds differ
    init = chapter.by_structure(a["max_cos"]["init"])
    assert torch.equal(init[:, 0], init[:, 1]) and init[0, 0] != init[1, 0]
    assert chapter.seed_mean(torch.tensor([1.0, 0.0, 3.0, 2.0])).tolist() == [2.0, 1.0]
    imb = chapter.seeded_comparison(tiny, gen(5), negative_ratio=0.8, **small)
    assert torch.allclose(imb["majority"], torch.full((4,), 0.8, dtype=torch.float64))


def test_weighted_second_moment_matches_monte_carlo():
    import sympy as sp

    from feature_learning.theory import feature_emergence as th

    rho = sp.Rational(4, 5)
    assert sp.simplify(th.weighted_second_moment(sp.Symbol("r", positive=True))
                       - 1 / (4 * sp.Symbol("r", positive=True) * (1 - sp.Symbol("r", positive=True)))) == 0
    y = torch.where(torch.rand(200_000, generator=gen(8)) < 0.8, -1.0, 1.0)[None, :]
    pos = (y > 0).double()
    alpha = pos / (2 * pos.mean()) + (1 - pos) / (2 * (1 - pos.mean()))
    assert abs(alpha.pow(2).mean().item() - float(th.weighted_second_moment(rho))) < 0.01


def test_hidden_representation_task_follows_e31():
    from feature_learning.data.sparse_coding import HiddenRepresentationTask

    task = HiddenRepresentationTask(d=40, D=20, k=8, per_label=10, p_o=0.5)
    g = gen(5)
    codes, labels = task.codes(g)
    assert codes.shape == (20, 8) and len({tuple(c.tolist()) for c in codes}) == 20
    assert labels.sum().item() == 0
    M = orthonormal_dictionary(40, 20, g)
    A = torch.randperm(20, generator=g)[:8].sort().values
    x, y, phi = task.sample(200_000, M, A, codes, labels, g)
    # every sample's relevant block is one of the codes, and its label is that code's label
    match = (phi[:, A][:, None, :] == codes[None]).all(-1)
    assert match.sum(1).eq(1).all()
    assert torch.equal(y, labels[match.double().argmax(1)])
    # background i.i.d. Bernoulli(p_o); inputs in span(M) and normalised: E x = 0, E||x||^2 = 1
    off = torch.ones(20, dtype=torch.bool)
    off[A] = False
    assert abs(phi[:, off].mean().item() - 0.5) < 0.005
    assert x.mean(0).norm().item() < 0.01 and abs(x.pow(2).sum(1).mean().item() - 1.0) < 0.01
    z = pattern_coordinates(x, M)
    assert torch.allclose(z @ M.T, x, atol=1e-10)
    # the population moments against the sample
    assert torch.allclose((y[:, None] * z).mean(0), task.label_correlation(A, codes, labels), atol=0.005)
    emp_cov = torch.cov(phi.T)
    assert torch.allclose(emp_cov, task.pattern_covariance(A, codes), atol=0.01)
    assert abs(task.sigma_tilde(codes) ** 2 - torch.trace(task.pattern_covariance(A, codes)).item()) < 1e-12


def test_general_second_step_cosine_reduces_to_the_parity_formula():
    import sympy as sp

    from feature_learning.theory import feature_emergence as theory

    sig2 = theory.k / 4 + (theory.D - theory.k) * theory.p_o * (1 - theory.p_o)  # any sigma~^2 cancels
    gamma = (1 - theory.p_o) / 2
    general = theory.second_step_cosine_general(theory.k * gamma**2 / sig2,
                                                (theory.D - theory.k) * theory.p_o * (1 - theory.p_o) / sig2)
    assert sp.simplify(general - theory.second_step_cosine()) == 0
    # the sd formula against Monte Carlo of a chi-square background: cos = (1 + |eps|^2/|g|^2)^(-1/2)
    n_val, dof, v, g_sq = 400, 40, 0.5, 0.2
    sd = float(theory.second_step_cosine_sd(g_sq, dof * v, dof * v**2, n_val))
    eps = torch.randn(20000, dof, generator=gen(3), dtype=torch.float64) * math.sqrt(v / n_val)
    cos = (1 + eps.pow(2).sum(1) / g_sq) ** -0.5
    assert abs(cos.std().item() / sd - 1) < 0.1

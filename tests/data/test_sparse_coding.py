"""data/sparse_coding.py: the sparse-coding data of Shi, Wei and Liang (ICLR 2022), eq. (1), its laws (Appendix C and
E), class-ratio resampling (E.2.2) and the hidden-representation labels (E.3.1)."""

import math

import sympy as sp
import torch

from feature_learning.data.bases import orthonormal_dictionary
from feature_learning.data.sparse_coding import (
    HiddenRepresentationTask,
    SparseCodingTask,
    count_labels,
    interval_set,
    parity_set,
    pattern_coordinates,
    relevant_direction,
    threshold_set,
)
from feature_learning.theory import feature_emergence as th


def test_label_sets_count_labels_and_the_relevant_direction():
    assert parity_set(5) == (1, 3, 5) and threshold_set(5) == (3, 4, 5) and interval_set(2, 4) == (2, 3, 4)
    phi = torch.tensor([[1.0, 1, 0, 1], [0.0, 0, 1, 0]])
    assert count_labels(phi, torch.tensor([0, 1, 2]), (1, 3)).tolist() == [-1.0, 1.0]
    assert relevant_direction(torch.eye(4, dtype=torch.float64), torch.tensor([1, 3])).tolist() == [0, 1, 0, 1]


def test_parity_mixture_matches_its_stated_law(gen):
    task = SparseCodingTask(d=40, D=20, k=5, P=parity_set(5), p_o=0.5)
    g = gen(1)
    A = task.relevant_set(g)
    phi = task.sample_patterns(200_000, A, g)
    y = count_labels(phi, A, task.P)
    se = 4 / math.sqrt(200_000)
    # marginals: 1/2 on A, p_o off A; balanced labels (A0); gamma = (1-p_o)/2 (A1)
    off = [j for j in range(20) if j not in A]
    assert abs(phi[:, A].mean() - 0.5) < se and abs(phi.mean(0)[off].mean() - 0.5) < se
    assert abs(y.mean()) < 2 * se
    gamma = (y[:, None] * phi[:, A]).mean(0) - y.mean() * phi[:, A].mean(0)
    assert torch.all((gamma - 0.25).abs() < 2 * se)
    # the structured component: S in {0, k} with probability (1-p_o) + p_o * 2/2^k
    S = phi[:, A].sum(1)
    assert abs(((S == 0) | (S == 5)).double().mean() - (0.5 + 0.5 * 2 / 32)) < se
    # normalisation: E||x||^2 = 1 with the population sigma~ (orthonormal M); inputs lie in span(M)
    M = orthonormal_dictionary(40, 20, g)
    x, _, _ = task.sample(50_000, M, A, g)
    assert abs((x**2).sum(1).mean() - 1) < 0.02 and x.mean(0).abs().max() < 0.02
    assert torch.allclose(pattern_coordinates(x, M) @ M.T, x, atol=1e-12)
    assert math.isclose(task.sigma_tilde() ** 2, float(th.sigma_tilde_sq(5, 20, sp.Rational(1, 2))))


def test_uniform_and_bernoulli_laws(gen):
    task = SparseCodingTask(d=20, D=10, k=3, P=(2, 3), law="bernoulli", p_o=0.3, p_in=0.8)
    g = gen(2)
    A = task.relevant_set(g)
    phi = task.sample_patterns(100_000, A, g)
    assert torch.allclose(phi.mean(0), task.pattern_mean(A), atol=0.01)
    u = task.without_structure().sample_patterns(100_000, A, g)
    assert torch.allclose(u.mean(0), torch.full((10,), 0.5, dtype=u.dtype), atol=0.01)


def test_class_ratio_resampling_keeps_the_class_conditional_law(gen):
    task = SparseCodingTask(d=30, D=12, k=3, P=parity_set(3), p_o=0.5)
    g = gen(1)
    M, A = orthonormal_dictionary(30, 12, g), task.relevant_set(g)
    x, y, phi = task.sample_class_ratio(4000, M, A, 0.8, g)
    assert x.shape == (4000, 30) and (y < 0).sum().item() == 3200 and (y > 0).sum().item() == 800
    S = phi[:, A].sum(1)
    assert torch.equal(y, torch.where(S % 2 == 1, 1.0, -1.0).to(y.dtype))
    centred = (phi - task.pattern_mean(A)) @ M.T / task.sigma_tilde()  # the law's normalisation is kept
    assert torch.allclose(x, centred, atol=1e-12)
    big_x, big_y, big_phi = task.sample(200_000, M, A, g)
    pos = big_phi[big_y > 0][:, A].sum(1)
    assert abs((S[y > 0] == 3).double().mean() - (pos == 3).double().mean()) < 4 * math.sqrt(0.25 / 800)
    assert (y[:3200] > 0).any()  # shuffled


def test_hidden_representation_task_follows_e31(gen):
    task = HiddenRepresentationTask(d=40, D=20, k=8, per_label=10, p_o=0.5)
    g = gen(5)
    codes, labels = task.codes(g)
    assert codes.shape == (20, 8) and len({tuple(c.tolist()) for c in codes}) == 20
    assert labels.sum().item() == 0
    M = orthonormal_dictionary(40, 20, g)
    A = torch.randperm(20, generator=g)[:8].sort().values
    x, y, phi = task.sample(200_000, M, A, codes, labels, g)
    match = (phi[:, A][:, None, :] == codes[None]).all(-1)  # every relevant block is one code, with its label
    assert match.sum(1).eq(1).all()
    assert torch.equal(y, labels[match.double().argmax(1)])
    off = torch.ones(20, dtype=torch.bool)
    off[A] = False
    assert abs(phi[:, off].mean().item() - 0.5) < 0.005
    assert x.mean(0).norm().item() < 0.01 and abs(x.pow(2).sum(1).mean().item() - 1.0) < 0.01
    z = pattern_coordinates(x, M)
    assert torch.allclose((y[:, None] * z).mean(0), task.label_correlation(A, codes, labels), atol=0.005)
    assert torch.allclose(torch.cov(phi.T), task.pattern_covariance(A, codes), atol=0.01)
    assert abs(task.sigma_tilde(codes) ** 2 - torch.trace(task.pattern_covariance(A, codes)).item()) < 1e-12

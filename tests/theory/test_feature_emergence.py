"""theory/feature_emergence.py: the closed forms of Shi, Wei and Liang (ICLR 2022) against independent computations
(Monte Carlo of the data law, scipy, direct evaluation), never against flags the theory computes about itself."""

import math

import pytest
import sympy as sp
import torch
from scipy import stats

from feature_learning.data.sparse_coding import SparseCodingTask, count_labels, interval_set, parity_set
from feature_learning.theory import feature_emergence as th

half = sp.Rational(1, 2)


def test_mixture_constants_and_the_experiment_numbers():
    pos, gamma, ephi = th.mixture_constants(5, p=th.p_o)
    assert sp.simplify(pos - half) == 0 and sp.simplify(gamma - (1 - th.p_o) / 2) == 0 and ephi == half
    assert th.best_threshold_accuracy(5) == sp.Rational(27, 32)
    assert th.init_scales(5, 100, half).sigma_a == 4 and th.sigma_tilde_sq(5, 100, half) == 25
    assert th.sq_query_bound(100, 5).evalf() == pytest.approx(211.1, abs=0.1)


def test_best_threshold_accuracy_against_a_sample(gen):
    task = SparseCodingTask(d=10, D=10, k=5, P=parity_set(5), p_o=0.5)
    A = torch.arange(5)
    phi = task.sample_patterns(400_000, A, gen(1))
    y, S = count_labels(phi, A, task.P), phi[:, A].sum(1)
    best = max(float((torch.where(S >= t, 1.0, -1.0).double() == y).double().mean()) for t in range(7))
    assert abs(best - 27 / 32) < 4 * math.sqrt(0.25 / 400_000)


def test_lemma5_networks_as_truncated_relus_at_every_count():
    """The units evaluated as the truncated ReLU sigma(z) = min(1, max(z, 0)) in floating point (not SymPy's ReLU)."""
    for case in th.lemma5_cases(k_values=(3, 5), every_labelling_at=5):
        units = th.ground_truth_network(case.k, case.P, sp.Rational(case.k, 2))
        assert len(units) == 3 * (case.k + 1)
        for S in range(case.k + 1):
            t = (S - case.k / 2) / (4 * case.k)
            value = sum(float(a) * min(1.0, max(0.0, t + float(b))) for a, b in units)
            assert value == pytest.approx(1.0 if S in case.P else -1.0, abs=1e-12)


def test_second_step_moments_against_a_resampled_sample(gen):
    """||g||^2, the trace of Cov(alpha y phi_A) orthogonal to g and E[alpha^2], from a class-resampled sample of the
    parity mixture (k = 3), against the enumeration."""
    k, rho = 3, sp.Rational(4, 5)
    task = SparseCodingTask(d=k, D=k, k=k, P=parity_set(k), p_o=0.5)
    A = torch.arange(k)
    eye = torch.eye(k, dtype=torch.float64)
    _, y, phi = task.sample_class_ratio(400_000, eye, A, 0.8, gen(2))
    alpha = torch.where(y > 0, 1 / (2 * 0.2), 1 / (2 * 0.8))
    c = phi - task.pattern_mean(A)
    u = (alpha * y)[:, None] * c
    g = u.mean(0)
    cov = torch.cov(u.T, correction=0)
    proj = torch.eye(k, dtype=torch.float64) - torch.outer(g, g) / (g @ g)
    mom = th.second_step_moments(k, half, rho)
    assert float(g @ g) == pytest.approx(float(mom.g_sq), rel=0.02)
    assert float(torch.trace(proj @ cov @ proj)) == pytest.approx(float(mom.t_perp), rel=0.02)
    assert float(alpha.pow(2).mean()) == pytest.approx(float(mom.alpha_sq), rel=0.01)
    assert float(mom.alpha_sq) == pytest.approx(1 / (4 * 0.8 * 0.2))
    assert sp.simplify(th.weighted_second_moment(rho) - mom.alpha_sq) == 0


def test_second_step_cosine_sd_against_monte_carlo(gen):
    """cos = (1 + |eps_perp|^2/|g|^2)^(-1/2) with a Gaussian background of dof coordinates of variance v/n."""
    n_val, dof, v, g_sq = 400, 40, 0.5, 0.2
    mean = float(th.second_step_cosine_general(g_sq, dof * v, n_val))
    sd = float(th.second_step_cosine_sd(g_sq, dof * v, dof * v**2, n_val))
    eps = torch.randn(20000, dof, generator=gen(3), dtype=torch.float64) * math.sqrt(v / n_val)
    cos = (1 + eps.pow(2).sum(1) / g_sq) ** -0.5
    assert abs(cos.std().item() / sd - 1) < 0.1 and abs(cos.mean().item() - mean) < 0.2 * sd


def test_mixture_cosine_closed_form_at_the_source_sizes():
    cos, sd = th.mixture_cosine_and_sd(5, 100, 50_000)
    direct = (1 + ((5 - 1) * 0.5 / 4 + 95 * 0.25) / (50_000 * 5 * 0.0625)) ** -0.5
    assert cos == pytest.approx(direct, rel=1e-12) and 0 < sd < 1e-3


def test_interval_constants_against_scipy_and_a_sample(gen):
    exact = th.interval_constants(30, 20, sp.Rational(2, 3))
    assert float(exact.pos_rate) == pytest.approx(stats.binom.sf(19, 30, 2 / 3), rel=1e-12)
    task = SparseCodingTask(d=40, D=40, k=30, P=interval_set(20, 30), law="bernoulli", p_o=0.5, p_in=2 / 3)
    A = torch.arange(30)
    phi = task.sample_patterns(200_000, A, gen(4))
    y = count_labels(phi, A, task.P)
    gamma = (y * phi[:, 0]).mean() - y.mean() * phi[:, 0].mean()
    assert float(gamma) == pytest.approx(float(exact.gamma), abs=4 / math.sqrt(200_000))
    assert float(th.interval_constants(30, 20, half).gamma) == pytest.approx(0.01865, abs=1e-5)


def test_expected_max_normal_against_a_sample(gen):
    mean, sd = th.expected_max_normal(300)
    draws = torch.randn(20_000, 300, generator=gen(5), dtype=torch.float64).max(1).values
    assert mean == pytest.approx(draws.mean().item(), abs=0.02) and sd == pytest.approx(draws.std().item(), rel=0.05)


def test_parity_correlation_max():
    assert th.parity_correlation_max(4, 2) == 0
    assert th.parity_correlation_max(3, 1) == 0

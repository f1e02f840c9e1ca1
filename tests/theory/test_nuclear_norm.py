"""theory.nuclear_norm: the SymPy closed forms against Monte Carlo, brute force and numerical grids."""

import math

import numpy as np
import sympy as sp
import torch

from feature_learning.data.domain_shift import sign_mixture_uniform, spurious_2d
from feature_learning.theory import nuclear_norm as th


def test_logistic_derivatives_match_finite_differences_and_lemma_e1():
    f = th.logistic_facts()
    assert sp.simplify(f.first + 1 / (1 + sp.exp(th.z))) == 0
    loss = sp.lambdify(th.z, f.loss)
    third = sp.lambdify(th.z, f.third)
    for z0 in (-2.0, 0.3, 1.7, 5.0):
        h = 1e-3
        fd3 = (loss(z0 + 2 * h) - 2 * loss(z0 + h) + 2 * loss(z0 - h) - loss(z0 - 2 * h)) / (2 * h**3)
        assert abs(fd3 - third(z0)) < 1e-4
        if z0 > 0:
            assert third(z0) < 0
    gap = sp.lambdify((th.z, th.c), f.shift_gap)
    for z0, c0 in ((-3, 0.1), (0, 2), (4, 0.5)):
        direct = -math.exp(-c0) / (1 + math.exp(z0)) + 1 / (1 + math.exp(z0 + c0))
        assert abs(gap(z0, c0) - direct) < 1e-12 and direct > 0


def test_environmental_moments_match_monte_carlo():
    mean, var = th.environmental_moments()
    x = sign_mixture_uniform(0.3, (400_000,), torch.Generator().manual_seed(0))
    assert abs(float(x.mean()) - float(mean.subs(th.gamma, 0.3))) < 4e-3
    assert abs(float(x.var()) - float(var.subs(th.gamma, 0.3))) < 4e-3
    assert th.uniform_moments() == (sp.Rational(1, 2), sp.Rational(1, 12))


def test_hoeffding_exponents_bound_the_monte_carlo_tails():
    env, inv = th.hoeffding_tails()
    g = torch.Generator().manual_seed(1)
    d_r, gam, r = 20, 0.2, 16
    s_u = sign_mixture_uniform(gam, (200_000, d_r), g).sum(1)
    s_r = torch.rand(200_000, r, generator=g, dtype=torch.float64).sum(1)
    assert float((s_u <= 0).double().mean()) <= math.exp(-float(env.subs({th.d: d_r + r, th.r: r, th.gamma: gam})))
    assert float((s_r <= r / 4).double().mean()) <= math.exp(-float(inv.subs(th.r, r)))


def test_ratio_chain_is_ordered_on_a_grid_and_tight_at_three_over_root_r():
    chain = [sp.lambdify((th.alpha, th.gamma, th.r), e) for e in th.ratio_chain()]
    for r in (40, 64, 100, 400):
        for gam in np.linspace(3 / math.sqrt(r) + 1e-3, 0.499, 7):
            for a in np.linspace(1e-3, 1 / math.sqrt(r), 5):
                values = [f(a, gam, r) for f in chain]
                assert all(x <= y * (1 + 1e-12) for x, y in zip(values[:-1], values[1:], strict=True))
    assert th.ratio_boundary() == [3 / sp.sqrt(th.r)]


def test_ood_bound_algebra():
    a = th.ood_bound_algebra()
    assert sp.simplify(a.expanded - a.printed_numerator) == 0
    assert sp.simplify(a.corrected_slack - (th.eps + 7 * th.r / (16 * th.gamma**2))) == 0
    assert sp.simplify(a.final_slack - 2 * th.eps * th.gamma**2 / 5) == 0


def test_toy_accuracy_formulas_match_monte_carlo_for_both_branches_and_signs():
    g = torch.Generator().manual_seed(2)
    for p in (0.7, 0.3):
        x, y = spurious_2d(400_000, p, g)
        for slope in (0.0, 0.4, 1.0, 2.5, -0.6):
            measured = float(((y * (x[:, 0] + slope * x[:, 1])) >= 0).double().mean())
            assert abs(measured - th.toy_2d_accuracies(slope, p)) < 4e-3
    toy = th.toy_2d()
    assert toy.error_ratio_bound == sp.Rational(7, 3)
    assert sp.simplify(toy.accuracy_ood - (sp.Rational(3, 10) + sp.Rational(7, 10) * toy.q_small)) == 0


def test_nu_gains_reproduce_the_printed_averages():
    gains = th.nu_gains()
    assert abs(gains["ERM"][-1] - 1.7) < 1e-9
    assert abs(gains["Mixup"][-1] - 1.16) < 1e-9
    assert abs(gains["SWAD"][-1] - 0.92) < 1e-9


def test_clt_accuracy_is_a_probability_and_monotone_in_beta():
    values = [th.clt_accuracy(0.1, b, 49, 109, -0.45) for b in (0.0, 0.05, 0.1)]
    assert values[0] == 1.0 and values[0] >= values[1] >= values[2] >= 0

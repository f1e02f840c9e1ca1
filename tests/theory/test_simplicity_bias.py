"""theory/simplicity_bias.py (Tsoy & Konstantinov, ICML 2024): every closed form against an independent computation
(a dense numerical grid, Monte Carlo, brute-force counting or a numerical ODE solution), not against itself."""

import itertools
import math

import numpy as np
import sympy as sp
import torch
from scipy.integrate import solve_ivp

from feature_learning.data.xor import simple_plus_complex_data
from feature_learning.theory import simplicity_bias as theory

D = torch.float64


def test_logistic_constants_against_a_numerical_grid():
    lc = theory.logistic_constants()
    z = np.linspace(-40, 40, 800001)
    d2 = np.exp(-np.logaddexp(0, z) - np.logaddexp(0, -z))  # sigma(z) sigma(-z) = l''(z)
    assert abs(d2.max() - float(lc.sup_abs_d2)) < 1e-12 and abs(z[d2.argmax()]) < 1e-3
    h = 1e-6
    dl0 = (math.log1p(math.exp(-h)) - math.log1p(math.exp(h))) / (2 * h)
    assert abs(-dl0 - float(lc.minus_dl0)) < 1e-9
    assert lc.argsup == (0,) and lc.limits == (0, 0)
    f = sp.lambdify(theory.z, lc.d2, "numpy")
    assert np.allclose(f(z[::1000]), d2[::1000], atol=1e-15)


def test_smoothed_relu_profile_against_monte_carlo_and_its_joins_numerically(gen):
    q3 = theory.smoothed_relu_profile(3)
    g = gen(3)
    z = torch.randn(400000, 3, generator=g, dtype=D)
    z = z / z.norm(dim=1, keepdim=True) * torch.rand(400000, 1, generator=g, dtype=D) ** (1 / 3)
    v = torch.tensor([0.6, 0.8, 0.0], dtype=D)
    xi = 0.2
    for cval in (-0.5, 0.0, 0.7):
        x = cval * xi * v  # v.x / (xi ||v||) = cval
        mc = torch.relu((x + xi * z) @ v).mean()
        assert abs(float(mc) - xi * float(q3.subs(theory.c_, cval))) < 3e-4
    for d in (3, 5, 7):
        q = sp.lambdify(theory.c_, theory.smoothed_relu_profile(d))
        for h in (1e-2, 1e-3):  # C^2 joins: q(-1 + h) = O(h^3) and q(1 - h) = 1 - h + O(h^3)
            assert abs(q(-1 + h)) < 10 * h**3 and abs(q(1 - h) - (1 - h)) < 10 * h**3
        joins = theory.smoothed_relu_joins(d)
        assert joins.q_at_0 == joins.kappa_over_d_plus_1 and float(joins.q_at_0) == q(0.0)


def test_kinks_and_global_extrema_against_a_dense_grid():
    grid = np.linspace(-np.pi, np.pi, 720001)[:-1]
    for alpha in (sp.pi / 2, sp.pi / 3, sp.pi / 4, 2 * sp.pi / 5):
        expr = theory.g_skewed_circle(alpha)
        kinks = [float(k) for k in theory.kinks(expr)]
        a = float(alpha)
        expected = sorted((t + math.pi) % (2 * math.pi) - math.pi
                          for t in (math.pi / 2, -math.pi / 2, a + math.pi / 2, a - math.pi / 2))
        assert np.allclose(sorted(kinks), expected, atol=1e-12)
        values = (np.abs(np.cos(grid - a)) - np.abs(np.cos(grid))) / 8
        ext = theory.global_extrema(expr)
        assert abs(values.max() - float(ext.max)) < 1e-10 and abs(values.min() - float(ext.min)) < 1e-10
        near_max = grid[values > values.max() - 1e-9]
        assert all(min(abs(math.remainder(p - float(q), 2 * math.pi)) for q in ext.max_at) < 1e-4 for p in near_max)
        assert abs(float(ext.max) - math.sin(a) / 8) < 1e-12
    xor = theory.global_extrema(theory.g_xor_circle())
    assert xor.max == sp.Rational(1, 8) and set(xor.max_at) == {-sp.pi, sp.S.Zero}


def test_g_of_clean_xor_and_its_extrema_on_data():
    X = torch.tensor([[1.0, 0], [-1, 0], [0, 1], [0, -1]], dtype=D)
    y = torch.tensor([1.0, 1, -1, -1], dtype=D)
    phi = torch.linspace(-3, 3, 13, dtype=D)
    G = theory.g_function(torch.stack([phi.cos(), phi.sin()], -1), X, y)
    assert torch.allclose(G, (phi.cos().abs() - phi.sin().abs()) / 8, atol=1e-14)
    ang, val, sign = theory.g_extrema_on_circle(X, y, n_grid=4000)
    assert len(ang) == 4 and torch.allclose(val.abs(), torch.full((4,), 1 / 8, dtype=D))
    assert set(torch.round(ang[sign > 0].abs() / (math.pi / 2)).tolist()) == {0.0, 2.0}
    assert set(torch.round(ang[sign < 0] / (math.pi / 2)).tolist()) == {-1.0, 1.0}


def test_lemma_5_2_chain_numerically():
    chain = theory.lemma_5_2_chain()
    v1 = sp.lambdify((theory.delta, theory.xi), chain.v1_min)
    gap = sp.lambdify((theory.delta, theory.xi), chain.gap)
    # v*^1 >= 1 - 5 delta - 4 xi exceeds delta + xi by 1 - 6 delta - 5 xi: xi > 0 on the boundary delta + xi = 1/6
    assert abs(v1(0.01, 0.0) - 0.95) < 1e-15 and abs(gap(0.1, 1 / 6 - 0.1) - (1 / 6 - 0.1)) < 1e-15
    assert gap(0.05, 0.05) > 0 and gap(1 / 6, 0.0) < 1e-15


def test_max_margin_network_at_random_points():
    mm = theory.max_margin_network()
    f = sp.lambdify((theory.x1, theory.x2), mm.f)
    rng = np.random.default_rng(0)
    for a, b in rng.normal(size=(20, 2)):
        assert abs(f(a, b) - (abs(a) - abs(b))) < 1e-15
    assert mm.norm_sq == 8 and mm.f_simplified == sp.Abs(theory.x1) - sp.Abs(theory.x2)


def test_capture_probability_against_counting_and_monte_carlo():
    for m in (4, 5, 6):
        hits = sum(1 for a in itertools.product(range(4), repeat=m) if len(set(a)) == 4)
        exact = theory.capture_probability_exact(m)
        assert exact == sp.Rational(hits, 4**m) == theory.capture_probability_enumerated(m)
    rng = np.random.default_rng(1)
    basins = rng.integers(0, 4, size=(200000, 8))
    mc = np.mean([len(set(row)) == 4 for row in basins[:20000]])
    p = float(theory.capture_probability_exact(8))
    assert abs(mc - p) < 4 * math.sqrt(p * (1 - p) / 20000)
    assert theory.capture_probability_paper(4) > theory.capture_probability_exact(4)


def test_bernoulli_bound_solves_its_ode_numerically():
    bern = theory.bernoulli_bound()
    syms = {s.name: s for s in bern.solution.free_symbols}
    values = {"y_0": 0.01, "lambda": 0.125, "a": 2.0}
    y = sp.lambdify(syms["t"], bern.solution.subs({syms[k]: v for k, v in values.items()}))
    sol = solve_ivp(lambda _t, u: 2 * 0.125 * u + 2 * 2.0 * u**2, (0, 5), [0.01], rtol=1e-11, atol=1e-14,
                    dense_output=True)
    for tt in (0.5, 2.0, 5.0):
        assert abs(sol.sol(tt)[0] - y(tt)) < 1e-8 * y(tt)
    assert bern.residual == 0


def test_exponent_balance_numerically():
    expo = theory.exponent_balance()
    syms = {s.name: s for s in expo.kappa_star.free_symbols}
    k = float(expo.kappa_star.subs({syms["b_1"]: 40.0, syms["lambda"]: 0.125}))
    assert abs(2 - k * (40 / 0.125 - 2) - k) < 1e-12 and abs(k - 2 * 0.125 / (40 - 0.125)) < 1e-15
    assert expo.dscale_dr == 0


def test_prop_5_7_numbers_are_the_notes():
    c = theory.prop_5_7_constants()
    assert abs(c.bound - 31.528) < 1e-3 and abs(c.threshold - 29.560) < 1e-3 and abs(c.x_at_bound - 2.2696) < 1e-4
    assert abs(c.A - 0.277861) < 1e-6 and abs(c.C - 0.752432) < 1e-6 and abs(c.h_YT - 140.991) < 1e-3
    assert abs(float(c.margin_bound) - 4.6768) < 1e-4


def test_domino_rates_against_monte_carlo_on_noise_free_dominoes(gen):
    rates = theory.domino_rates()
    mu = 0.45
    X, y = simple_plus_complex_data(400000, mu_simple=mu, sigma_simple=0.0, sigma_complex=0.0, d_noise=0,
                                    generator=gen(4))
    g = theory.g_function(torch.eye(3, dtype=D)[:2], X, y)
    se = 0.5 / math.sqrt(400000)  # |relu(v.x) y| <= 1 here
    assert abs(float(g[0]) - float(rates.g_simple.subs(theory.mu_s, mu))) < 4 * se
    assert abs(float(g[1]) - float(rates.g_xor)) < 4 * se
    assert rates.crossover == sp.Rational(1, 2)

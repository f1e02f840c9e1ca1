"""theory/gradient_features.py: closed forms of dissertation ch. 3 against independent checks (brute force,
Monte Carlo, numeric recurrences)."""

import math

import sympy as sp
import torch

from feature_learning.data.parity import StructuredParity
from feature_learning.theory import gradient_features as th


def test_symmetric_init_identities_and_tails():
    ident = th.symmetric_init_identities()
    assert ident.output == 0 and ident.blocks_1_3 == 0
    # the first step with lambda = 1/eta, worked by hand: W0 - eta (g + W0 / eta) = -eta g (the initialisation erased)
    assert sp.simplify(ident.first_step - (-th.eta * ident.gradient)) == 0
    assert ident.init not in ident.first_step.free_symbols
    assert all(v == 0 for v in ident.indicator_points)
    for case in th.tail_exponents().values():
        assert sp.simplify(case.log_tail - case.source) == 0


def test_symmetric_first_step_mirrors_the_blocks():
    step = th.symmetric_first_step()
    assert step.opposite == (0, 0) and step.mirror == (0, 0)
    # by hand: block 2 is (-a, -w, -b), so its step is eta l' a y x 1[t < 0] and block 1's is -eta l' a y x 1[t > 0]
    a, eta, lp, x, y, t = sp.symbols("a eta l' x y t", real=True)
    assert sp.simplify(step.steps[1] - eta * lp * a * y * x * sp.Heaviside(-t)) == 0
    assert sp.simplify(step.drift - eta * lp * a * y * x) == 0


def test_bump_network_is_the_parity_exactly():
    for k, r in ((3, 1), (5, 1), (3, 3)):
        out = th.bump_network_margins(k, r)
        assert out.min_margin == 1 and out.max_hinge == 0
    # the integer form agrees with the symbolic one
    for s_j in range(-5, 6, 2):
        assert th.bump_network_value(5, [s_j]) == th.bump_network_integer(5, s_j)
    assert th.bump_homogeneity() == (0, 0)
    norms = th.bump_network_norms(5, 1)
    assert norms.as_written[1] == sp.sqrt(180) and norms.units == 18 and norms.merged_units == 8


def test_parity_mean_yx_against_monte_carlo():
    exact = th.parity_mean_yx(3, 1, sp.Rational(1, 4))
    assert exact == [sp.Rational(1, 2)] * 3 + [0]
    task = StructuredParity(d=4, k=3, r=1, p_A=0.25, p_o=0.5)
    x, y, _ = task.sample(400_000, torch.Generator().manual_seed(0))
    assert ((y[:, None] * x).mean(0) - torch.tensor([float(v) for v in exact], dtype=x.dtype)).abs().max() < 0.005


def test_majority_and_lemma_b63():
    check = th.majority_check()
    assert check.corrected_equals_enumeration and check.printed_differs
    assert th.majority_coefficient(9, 1) == sp.Rational(35, 128) and th.majority_coefficient(9, 2) == 0
    assert th.lemma_b63_ratios(9, 2, [1, -1, 1, 1, -1, 1, 1, -1, 1]) == {sp.Rational(1, 2)}


def test_drift_recurrence_numerically():
    out = th.drift_recurrence()
    assert out.residual == 0 and out.h1 == 0 and out.h2 == 0
    A, Z, B, eta = 0.3, 0.7, 1.3, 0.05
    h = [None, A, 2 * A + eta * Z]
    for t in range(1, 11):
        h.append(2 * h[t + 1] - (1 - (eta * B) ** 2) * h[t] + eta * Z)
    syms = {s.name: s for s in out.h.free_symbols}
    f = sp.lambdify([syms["t"], syms["A"], syms["Z"], syms["B"], syms["eta"]], out.h)
    assert all(abs(f(t, A, Z, B, eta) - h[t]) < 1e-10 for t in range(1, 13))


def test_error_terms_and_prop_323():
    terms = th.error_terms()
    assert sp.simplify(terms.parity - terms.parity_source) == 0
    N, B = sp.symbols("N B", positive=True)
    from feature_learning.theory.feature_emergence import theorem2_bound

    assert sp.simplify(theorem2_bound(N, B, th.k, sp.Rational(1, 2)) - th.prop_323_floor_corrected(N, B, th.k)) == 0
    assert sp.simplify(th.prop_323_floor(N, B, th.k) - th.prop_323_floor_corrected(N, B, th.k)) != 0


def test_xor_bayes_accuracy_against_monte_carlo():
    _, bayes = th.xor_bayes_accuracy()
    g = torch.Generator().manual_seed(1)
    for d, sigma in ((25, 4.0), (100, 3.0)):
        z = torch.randn(2, 400_000, generator=g, dtype=torch.float64)
        mc = float(((d**0.5 + sigma * z[0]).abs() > (sigma * z[1]).abs()).double().mean())
        assert abs(bayes(d, sigma) - mc) < 0.003


def test_sure_probability_and_special_cases():
    assert abs(th.sure_probability(1.5, math.sqrt(5), 5, 1.0) - 0.0668072) < 1e-6
    values = th.special_case_values("structured parity", {th.d: 30, th.k: 5, th.r: 1, th.tau: 8, th.C_b: 1,
                                                          th.p_A: 0.25})
    assert abs(values.gamma - 30.0**-6) < 1e-15
    assert abs(values.p - th.parity_feature_probability(8, 1, 30)) < 1e-25
    columns, rows = th.special_cases_table()
    assert len(columns) == 8 and len(rows) == 6
    mills = th.mills_bounds()
    for zv in (0.1, 1.0, 5.0):
        lo, mid, hi = (float(expr.subs(mills.z, zv)) for expr in (mills.lower, mills.tail, mills.upper))
        assert lo < mid < hi


def test_theorem_width_by_hand():
    vals = {th.d: 30, th.k: 5, th.r: 1, th.tau: 8, th.C_b: 1, th.p_A: 0.25}
    p = th.special_case_values("structured parity", vals).p
    Ba1, Bx1, Bb, BG = 2 * 5**0.5, 30**0.5, 6 / 5**0.5, 5**0.5 * 0.25
    expected = (Ba1 * Bx1 * (Bb / BG) ** 0.5) ** 4 / (p * 0.1**4)
    assert abs(th.theorem_width("structured parity", vals) / expected - 1) < 1e-12

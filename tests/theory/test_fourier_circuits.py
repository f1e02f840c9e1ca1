"""The closed forms of dissertation ch. 4 / appendix C: the SymPy derivation of gamma* checked against brute force
over Z_p^k, NumPy FFTs and direct evaluation of the network, never against the theory module's own flags."""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
import torch

from feature_learning.theory import fourier_circuits as fc

K, P = fc.k_sym, fc.p_sym


@pytest.fixture(scope="module")
def derivation():
    return fc.derive_gamma_star()


def at(expr, k, p):
    return float(expr.subs({K: k, P: p}))


def test_derived_gamma_is_the_printed_formula_and_its_special_cases(derivation):
    assert sp.simplify(sp.powsimp(derivation.gamma / fc.gamma_star(), force=True)) == 1
    assert sp.simplify(derivation.gamma.subs(K, 3) - sp.Rational(3, 16) / (P * (P - 1))) == 0
    assert sp.simplify(derivation.gamma.subs(K, 2) - sp.sqrt(sp.Rational(2, 27)) / (sp.sqrt(P) * (P - 1))) == 0
    assert sp.nsimplify(derivation.gamma.subs({K: 5, P: 5})) == sp.Rational(1, 720)
    assert sp.nsimplify(derivation.gamma.subs({K: 3, P: 11})) == sp.Rational(3, 1760)
    # the notes' printed values
    printed = {(3, 23): 3.705534e-4, (4, 47): 1.024086e-5, (5, 23): 1.193409e-5, (2, 97): 2.878565e-4}
    for (k, p), value in printed.items():
        assert at(derivation.gamma, k, p) == pytest.approx(value, rel=1e-6)


def test_character_mean_and_margin_functional_match_numeric_sums(derivation):
    t, n = sp.symbols("t n", integer=True)
    for p in (5, 7):
        rho = np.exp(2j * np.pi / p)
        for shift in range(-p, 2 * p):
            numeric = np.mean(rho ** (shift * np.arange(p)))
            exact = complex(derivation.character_mean.subs({t: shift, P: p}).doit())
            assert abs(numeric - exact) < 1e-12
            d_numeric = 1 - np.mean(rho ** (-shift * np.arange(1, p)))
            assert abs(d_numeric - complex(derivation.margin_on_character.subs({n: shift, P: p}))) < 1e-12
    assert derivation.margin_on_constant == 0


@pytest.mark.parametrize("k", range(1, 7))
def test_multilinear_coefficient_is_k_factorial(derivation, k):
    assert fc.multilinear_coefficient(k) == math.factorial(k) == derivation.multilinear_coefficient.subs(K, k)


def test_plancherel_factor_and_budget_match_numpy_fft(derivation):
    rng = np.random.default_rng(0)
    for p in (5, 7, 11):
        f = rng.normal(size=p)
        ratio = np.sum(f**2) / np.sum(np.abs(np.fft.fft(f)) ** 2)
        assert ratio == pytest.approx(float(derivation.plancherel_factor.subs(P, p)), rel=1e-12)
        # a unit vector without constant part: sum over j = 1..(p-1)/2 of |f_hat(j)|^2 is the budget
        f = f - f.mean()
        f /= np.linalg.norm(f)
        half = np.sum(np.abs(np.fft.fft(f)[1 : (p - 1) // 2 + 1]) ** 2)
        assert half == pytest.approx(float(derivation.budget.subs(P, p)), rel=1e-12)


@pytest.mark.parametrize("k,p", [(2, 5), (2, 7), (3, 5), (3, 7), (4, 5)])
def test_fourier_reduction_with_the_derived_prefactor_on_random_neurons(derivation, k, p):
    rng = np.random.default_rng(1)
    prefactor = at(derivation.prefactor, k, p)
    for _ in range(3):
        u, w = rng.normal(size=(k, p)), rng.normal(size=p)
        exact = fc.single_neuron_objective(u, w)
        assert fc.fourier_objective(u, w, prefactor) == pytest.approx(exact, rel=1e-10, abs=1e-12)
        assert fc.fourier_objective_polar(u, w, prefactor) == pytest.approx(exact, rel=1e-10, abs=1e-12)


def test_paired_terms_are_twice_the_real_part():
    expr = fc._paired_terms(3)
    rng = np.random.default_rng(2)
    symbols = sorted(expr.free_symbols, key=str)
    values = dict(zip(symbols, rng.uniform(0.1, 3, size=len(symbols)), strict=True))
    r = {str(s): v for s, v in values.items()}
    term = r["r_w"] * np.exp(-1j * r["theta_w"]) * np.prod(
        [r[f"r_u{i}"] * np.exp(1j * r[f"theta_u{i}"]) for i in (1, 2, 3)])
    assert float(expr.subs(values)) == pytest.approx(2 * term.real, rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_equal_amplitudes_solve_the_kkt_system(derivation, n):
    x, best = fc.equal_amplitude_optimum(n)
    z = sp.Symbol("z", positive=True)
    assert sp.simplify(x - sp.sqrt(z / n)) == 0
    assert sp.simplify(best - (z / n) ** sp.Rational(n, 2)) == 0
    # the symmetric solution for general k at k + 1 = n factors, budget z
    assert sp.simplify(derivation.amplitude.subs({K: n - 1, P: 2 * z}) - x) == 0


def test_curvature_is_nonnegative(derivation):
    z = sp.Symbol("z", positive=True)
    for k in range(1, 6):
        assert float(derivation.curvature.subs({K: k, z: 0.7})) >= 0


@pytest.mark.parametrize("k,p", [(2, 5), (3, 5), (3, 7), (4, 5)])
def test_optimal_single_neuron_attains_gamma_and_a_phase_error_costs_cos(derivation, k, p):
    rng = np.random.default_rng(0)
    phases = rng.uniform(-np.pi, np.pi, size=k)
    u, w = fc.optimal_neuron(k, p, zeta=1, phases_u=phases)
    assert np.sum(u**2) + np.sum(w**2) == pytest.approx(1.0)
    gamma = at(derivation.gamma, k, p)
    assert fc.single_neuron_objective(u, w) == pytest.approx(gamma, rel=1e-10)
    # independent phase error: shift w by hand
    w_shifted = np.sqrt(2 / ((k + 1) * p)) * np.cos(phases.sum() + 1.0 + 2 * np.pi * np.arange(p) / p)
    assert fc.single_neuron_objective(u, w_shifted) / gamma == pytest.approx(np.cos(1.0), rel=1e-10)


def test_torch_objective_matches_the_numpy_brute_force():
    rng = np.random.default_rng(3)
    for k, p in [(2, 5), (3, 7), (4, 5)]:
        u, w = rng.normal(size=(2, k, p)), rng.normal(size=(2, p))
        batch = fc.single_neuron_objective_torch(torch.tensor(u), torch.tensor(w))
        for r in range(2):
            assert float(batch[r]) == pytest.approx(fc.single_neuron_objective(u[r], w[r]), rel=1e-12)


@pytest.mark.parametrize("k,p", [(2, 7), (3, 5), (4, 5)])
def test_gradient_ascent_finds_gamma_and_never_exceeds_it(derivation, k, p):
    values = fc.single_neuron_ascent(k, p, starts=4, steps=400, generator=torch.Generator().manual_seed(k + p))
    gamma = at(derivation.gamma, k, p)
    assert float(values.max()) <= gamma * (1 + 1e-12)
    assert float(values.max()) == pytest.approx(gamma, rel=1e-9)


def test_single_neuron_checks_report_the_same_numbers(derivation):
    (check,) = fc.single_neuron_checks([(2, 5)], derivation, torch.Generator().manual_seed(0), random_neurons=5,
                                       ascent_starts=2, ascent_steps=300)
    assert check.gamma == pytest.approx(float(fc.gamma_star(2, 5)), rel=1e-14)
    assert check.phase_error_ratio == pytest.approx(math.cos(1.0), rel=1e-10)
    assert check.reduction_error < 1e-10 and check.random_ratio < 1
    assert len(check.ascent_ratios) == 2
    assert check.ascent_power.min() > 1 - 1e-6 and check.ascent_same_frequency.all() and check.ascent_phase.max() < 1e-4
    (skipped,) = fc.single_neuron_checks([(2, 5)], derivation, torch.Generator().manual_seed(0), random_neurons=1,
                                         ascent_points=24)
    assert len(skipped.ascent_ratios) == 0


def test_neuron_sparsity_of_a_cosine_neuron_and_of_a_two_frequency_one():
    u, w = fc.optimal_neuron(3, 7, 2, [0.3, -1.0, 2.0])
    power, same, phase = fc.neuron_sparsity(torch.tensor(u)[None], torch.tensor(w)[None])
    assert float(power[0]) == pytest.approx(1.0, abs=1e-12) and bool(same[0]) and float(phase[0]) < 1e-12
    u2, w2 = fc.optimal_neuron(3, 7, 1, [0.3, -1.0, 2.0])
    mixed = torch.tensor(u + 0.5 * u2)[None]
    power, same, phase = fc.neuron_sparsity(mixed, torch.tensor(w)[None])
    assert float(power[0]) < 0.9 and bool(same[0])
    _, _, phase = fc.neuron_sparsity(torch.tensor(u)[None], torch.tensor(-w)[None])  # a sign is a phase pi
    assert float(phase[0]) == pytest.approx(math.pi)


@pytest.mark.parametrize("k", range(1, 7))
def test_sum_to_product_identity(k):
    lhs, rhs, half = fc.sum_to_product(k)
    assert sp.expand(lhs - rhs) == 0
    assert sp.expand(half - lhs / 2) == 0


@pytest.mark.parametrize("n", range(2, 7))
def test_cosine_expansion(n):
    lhs, rhs = fc.cosine_expansion(n)
    values = dict(zip(sorted(rhs.free_symbols, key=str), np.random.default_rng(n).uniform(-3, 3, n), strict=True))
    assert float(lhs.subs(values)) == pytest.approx(float(rhs.subs(values)), abs=1e-12)
    assert sp.expand(sp.expand_trig(lhs) - rhs) == 0


@pytest.mark.parametrize("k", [2, 3])
def test_frequency_block_computes_one_cosine(k):
    block, target, n = fc.frequency_block(k)
    assert n == 2 ** (2 * k - 1)
    values = dict(zip(sorted(block.free_symbols, key=str), np.random.default_rng(k).uniform(-3, 3, k + 1),
                      strict=True))
    assert float(block.subs(values)) == pytest.approx(float(target.subs(values)), rel=1e-12)


def test_construction_margin_is_the_derived_gamma(derivation):
    out = fc.construction_margin()
    assert sp.simplify(sp.powsimp(out["margin"] / derivation.gamma, force=True)) == 1
    assert sp.simplify(out["neuron_norm_sq"] - 1) == 0


@pytest.mark.parametrize("p", [5, 7, 11])
def test_cosine_sum_over_frequencies(p):
    for x in range(p):
        numeric = sum(math.cos(2 * math.pi * z * x / p) for z in range(1, (p - 1) // 2 + 1))
        assert float(fc.cosine_sum_over_frequencies(p, x)) == pytest.approx(numeric, abs=1e-12)
        assert fc.cosine_sum_over_frequencies(p, x) == (sp.Rational(p - 1, 2) if x == 0 else sp.Rational(-1, 2))


def direct_logits(u: np.ndarray, w: np.ndarray, k: int, p: int) -> np.ndarray:
    """f(a)[c] = sum_i (sum_j u_ij(a_j))^k w_i(c) by loops over Z_p^k, shape (p,)*k + (p,)."""
    out = np.zeros((p,) * k + (p,))
    for a in itertools.product(range(p), repeat=k):
        pre = sum(u[:, j, a[j]] for j in range(k))  # (N,)
        out[a] = (pre**k) @ w
    return out


@pytest.mark.parametrize("k,p", [(2, 5), (2, 7), (3, 5)])
def test_check_construction_agrees_with_direct_evaluation(derivation, k, p):
    check = fc.check_construction(k, p)
    u, w, freqs, phases = (t.numpy() for t in fc.max_margin_network(k, p))
    logits = direct_logits(u, w, k, p)
    gamma = at(derivation.gamma, k, p)
    labels = np.sum(np.indices((p,) * k), axis=0) % p
    correct = np.take_along_axis(logits, labels[..., None], -1)[..., 0]
    wrong = np.where(np.arange(p) == labels[..., None], np.nan, logits)
    assert np.allclose(correct, gamma * (p - 1) / p, rtol=1e-10)
    assert np.allclose(wrong[~np.isnan(wrong)], -gamma / p, rtol=1e-9)
    assert check.margin == pytest.approx(gamma, rel=1e-10)
    assert check.correct == pytest.approx((gamma * (p - 1) / p,) * 2, rel=1e-10)
    assert check.norm == pytest.approx(1.0, abs=1e-12)
    assert check.neurons == u.shape[0] == 2 ** (2 * k - 2) * (p - 1)
    # Lemma C.20 by NumPy's FFT of the directly evaluated logits
    spectrum = np.abs(np.fft.fftn(logits))
    on = [(j,) * k + ((-j) % p,) for j in range(1, p)]
    assert all(spectrum[idx] > 1e-6 * spectrum.max() for idx in on)
    mask = np.ones_like(spectrum, dtype=bool)
    for idx in on:
        mask[idx] = False
    assert spectrum[mask].max() < 1e-9 * spectrum.max()
    assert check.support == p - 1 and check.off_support < 1e-9
    # the phase law, from the neurons themselves: each part's phase at its frequency
    for i in range(0, u.shape[0], 7):
        zeta = freqs[i]
        ang = [np.angle(np.fft.fft(u[i, j])[zeta]) for j in range(k)]
        ang_w = np.angle(np.fft.fft(w[i])[zeta])
        assert abs(np.angle(np.exp(1j * (sum(ang) - ang_w)))) < 1e-9
    assert check.frequencies == tuple(range(1, (p - 1) // 2 + 1))


def test_neuron_count():
    assert [fc.neuron_count(k, p) for k, p in [(3, 97), (4, 47), (5, 23)]] == [1536, 2944, 5632]


def test_block_neurons_have_all_sign_patterns_once():
    for k in (2, 3, 4):
        neurons = fc.block_neurons(k)
        keys = {(c, b) for c, b, _ in neurons}
        assert len(keys) == len(neurons) == 2 ** (2 * k - 1)
        assert all(c[0] == 1 for c, _, _ in neurons)
        assert all(sum(b) % 2 == 0 for _, b, _ in neurons)
        assert {c for c, _, _ in neurons} == {(1, *r) for r in itertools.product((1, -1), repeat=k - 1)}

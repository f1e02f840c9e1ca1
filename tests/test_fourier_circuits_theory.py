"""The closed forms of dissertation ch. 4 / appendix C, checked symbolically and by brute force."""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
import torch

from feature_learning.data.modular import all_tuples, modular_sum
from feature_learning.measure.margins import class_weighted_margins, margins
from feature_learning.models.poly_net import poly_net_from_neurons
from feature_learning.theory import fourier_circuits as fc


def test_gamma_star_special_cases():
    p = fc.p_sym
    assert sp.simplify(fc.gamma_star(3, p) - sp.Rational(3, 16) / (p * (p - 1))) == 0
    assert sp.simplify(fc.gamma_star(2, p) - sp.sqrt(sp.Rational(2, 27)) / (sp.sqrt(p) * (p - 1))) == 0
    assert fc.gamma_star(5, 5) == sp.Rational(1, 720)
    assert fc.gamma_star(3, 11) == sp.Rational(3, 1760)


def test_derivation_reaches_the_closed_form():
    assert fc.derive_gamma_star()["matches_closed_form"]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_equal_amplitudes_solve_the_kkt_system(n):
    x, best = fc.equal_amplitude_optimum(n)
    z = sp.Symbol("z", positive=True)
    assert sp.simplify(x - sp.sqrt(z / n)) == 0
    assert sp.simplify(best - (z / n) ** sp.Rational(n, 2)) == 0


@pytest.mark.parametrize("k", range(1, 7))
def test_sum_to_product_identity(k):
    lhs, rhs, half = fc.sum_to_product(k)
    assert sp.expand(lhs - rhs) == 0
    assert sp.expand(half - lhs / 2) == 0


@pytest.mark.parametrize("n", range(2, 7))
def test_cosine_expansion(n):
    lhs, rhs = fc.cosine_expansion(n)
    assert sp.expand(sp.expand_trig(lhs) - rhs) == 0


@pytest.mark.parametrize("k", [2, 3])
def test_frequency_block_computes_one_cosine(k):
    assert fc.check_frequency_block(k)
    assert fc.frequency_block(k)[2] == 2 ** (2 * k - 1)


def test_construction_margin_is_gamma_star_symbolically():
    out = fc.construction_margin()
    assert out["matches_gamma_star"]
    assert sp.simplify(out["neuron_norm_sq"] - 1) == 0


@pytest.mark.parametrize("p", [5, 7, 11])
def test_cosine_sum_over_frequencies(p):
    assert fc.cosine_sum_over_frequencies(p, 0) == sp.Rational(p - 1, 2)
    for x in range(1, p):
        assert fc.cosine_sum_over_frequencies(p, x) == sp.Rational(-1, 2)


@pytest.mark.parametrize("k,p", [(2, 5), (2, 7), (3, 5), (3, 7), (4, 5)])
def test_construction_attains_gamma_star_and_predicted_outputs(k, p):
    u, w, freqs, phases = fc.max_margin_network(k, p)
    assert u.shape[0] == 2 ** (2 * k - 2) * (p - 1)
    net = poly_net_from_neurons(u, w)
    assert float(net.group_norm()) == pytest.approx(1.0, abs=1e-12)
    a = all_tuples(k, p)
    y = modular_sum(a, p)
    logits = net(a)[0]
    gamma = float(fc.gamma_star(k, p))
    assert float(margins(logits, y).min()) == pytest.approx(gamma, rel=1e-10)
    correct = logits.gather(1, y[:, None]).squeeze(1)
    wrong_mask = torch.ones_like(logits, dtype=torch.bool).scatter(1, y[:, None], False)
    assert torch.allclose(correct, torch.full_like(correct, gamma * (p - 1) / p), rtol=1e-10)
    assert torch.allclose(logits[wrong_mask], torch.full_like(logits[wrong_mask], -gamma / p), rtol=1e-9)
    # Phase law of Theorem 4.9: sum of input phases = output phase (mod 2 pi).
    residual = torch.remainder(phases[:, :k].sum(1) - phases[:, k] + math.pi, 2 * math.pi) - math.pi
    assert residual.abs().max() < 1e-12
    # The class-weighted margin equals the margin for theta* (Condition 4.8 holds).
    assert torch.allclose(class_weighted_margins(logits, y), margins(logits, y), rtol=1e-9)


@pytest.mark.parametrize("k,p", [(2, 5), (3, 5), (3, 7), (4, 5)])
def test_optimal_single_neuron_attains_gamma_star(k, p):
    rng = np.random.default_rng(0)
    phases = rng.uniform(-np.pi, np.pi, size=k)
    u, w = fc.optimal_neuron(k, p, zeta=1, phases_u=phases)
    assert np.sum(u**2) + np.sum(w**2) == pytest.approx(1.0)
    assert fc.single_neuron_objective(u, w) == pytest.approx(float(fc.gamma_star(k, p)), rel=1e-10)
    # a phase mismatch d costs a factor cos(d)  (from (C.13))
    w_shifted = np.sqrt(2 / ((k + 1) * p)) * np.cos(phases.sum() + 1.0 + 2 * np.pi * np.arange(p) / p)
    ratio = fc.single_neuron_objective(u, w_shifted) / float(fc.gamma_star(k, p))
    assert ratio == pytest.approx(np.cos(1.0), rel=1e-10)


@pytest.mark.parametrize("k,p", [(2, 5), (3, 7), (4, 5)])
def test_fourier_reduction_c10_on_random_neurons(k, p):
    rng = np.random.default_rng(1)
    for _ in range(3):
        u, w = rng.normal(size=(k, p)), rng.normal(size=p)
        assert fc.single_neuron_objective(u, w) == pytest.approx(fc.fourier_objective(u, w), rel=1e-10, abs=1e-12)
        assert fc.fourier_objective_polar(u, w) == pytest.approx(fc.fourier_objective(u, w), rel=1e-10, abs=1e-12)
        # and any unit-norm neuron stays below gamma*
        scale = np.sqrt(np.sum(u**2) + np.sum(w**2))
        assert fc.single_neuron_objective(u / scale, w / scale) <= float(fc.gamma_star(k, p)) + 1e-15


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

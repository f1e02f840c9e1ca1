"""theory/label_granularity.py: the closed forms against independent computations (brute-force expected updates,
a direct iteration, scipy/mpmath-free float checks)."""

import math

import numpy as np
import sympy as sp
import torch

from feature_learning.models.patch_conv import PatchConvNet
from feature_learning.theory import label_granularity as th


def test_cross_entropy_gradient_is_softmax_minus_onehot():
    diffs, _ = th.cross_entropy_gradient(4)
    assert all(d == 0 for d in diffs)


def _one_step_growth(C, k, labels_of, feature_patches, P=10, s=3):
    """Brute force: the expected eq.-(5) step along v for a neuron that fires exactly on the s patches of v, with
    uniform logits 1/C, over a batch holding one sample per subclass (N = 2k)."""
    N = 2 * k
    total = 0.0
    for n in range(N):
        y = labels_of(n)
        for owner in [0]:
            factor = (1 - 1 / C) if y == owner else -1 / C
            total += factor * s * feature_patches(n)
    return total / (N * P), s, P


def test_drift_rates_against_brute_force():
    rates = th.drift_rates()
    k_val, eta_val, P_val, s_val = 5, 1.0, 10, 3
    subs = {th.k: k_val, th.eta: eta_val, th.P: P_val, th.s: s_val}
    # coarse: output 0 = class +; samples 0..k-1 are class +; v_+ in all of them, v_{+,0} in sample 0
    common, _, _ = _one_step_growth(2, k_val, lambda n: 0 if n < k_val else 1, lambda n: 1 if n < k_val else 0)
    sub, _, _ = _one_step_growth(2, k_val, lambda n: 0 if n < k_val else 1, lambda n: 1 if n == 0 else 0)
    assert math.isclose(float(rates.coarse_common.subs(subs)), common)
    assert math.isclose(float(rates.coarse_sub.subs(subs)), sub)
    # fine: head 0 = subclass (+, 0); labels are the sample index
    common_f, _, _ = _one_step_growth(2 * k_val, k_val, lambda n: n, lambda n: 1 if n < k_val else 0)
    sub_f, _, _ = _one_step_growth(2 * k_val, k_val, lambda n: n, lambda n: 1 if n == 0 else 0)
    assert math.isclose(float(rates.fine_common.subs(subs)), common_f)
    assert math.isclose(float(rates.fine_sub.subs(subs)), sub_f)
    assert sp.simplify(rates.coarse_ratio - th.k) == 0
    assert sp.simplify(rates.fine_ratio - th.k / (2 * th.k - 1)) == 0


def test_drift_rate_in_the_network_step():
    """One eq.-(5) step of a real network: a neuron that is exactly v_+ (and fires only on v_+ patches) moves along
    v_+ by eta s*/(4P) at uniform logits (coarse labels, exact counts, no noise)."""
    from feature_learning.data.multiview_patches import MultiViewPatches

    data = MultiViewPatches(d=10, P=8, k=2, s_star=2, sigma_zeta=0.0, gamma=0.0, iota=0.0)
    X, y, _ = data.sample(3, torch.Generator().manual_seed(0), dtype=torch.float64)
    W = torch.zeros(1, 2, 1, 10, dtype=torch.float64)
    W[0, 0, 0, data.common(0)] = 1e-6  # tiny: the logits stay uniform
    net = PatchConvNet(W, torch.full((1, 2, 1), -1e-9, dtype=torch.float64))
    grad, _ = net.gradient(X, y)
    assert math.isclose(-grad[0, 0, 0, data.common(0)].item(), 2 / (4 * 8), rel_tol=1e-5)


def test_log_time_law_and_recursion_bound():
    law, slope = th.log_time_law()
    assert sp.simplify(law - sp.log(th.C * th.t + th.t0)) == 0 and slope == 1
    for C_val, t0 in ((0.5, 2.0), (2.0, 3.0)):
        A = th.iterate_recursion(C_val, t0, 5000)
        gap = A[-1] - math.log(t0 + C_val * 5000)
        assert 0 <= gap <= th.recursion_gap_bound(C_val, t0, 5000)


def test_harmonic_series_and_finishing_threshold():
    series, n = th.harmonic_remainder()
    for n_val in (10, 100):
        exact = math.log(n_val) + np.euler_gamma - 1 / (2 * n_val) - sum(1 / j for j in range(1, n_val))
        assert abs(exact - float(series.subs(n, n_val))) < 1 / (200 * n_val**6)  # next term 1/(252 n^6)
    threshold, limit = th.finishing_threshold()
    for k_val in (2, 5, 50):
        F = float(threshold.subs(th.k, k_val))
        assert math.isclose(math.exp(F) / (math.exp(F) + 2 * k_val - 1), 1 / (1.5 * k_val), rel_tol=1e-12)
    assert sp.simplify(limit - sp.log(sp.Rational(4, 3))) == 0


def test_errata_checks():
    b = th.gaussian_tail_bounds(1.0)
    assert b["true"] > b["printed_upper"] and b["standard_lower"] <= b["true"] <= b["standard_upper"]
    ratio, lim = th.union_bound_exponent()
    assert lim == sp.oo
    assert th.chi_square_constant() == 5 * th.d


def test_expected_singly_lucky_monte_carlo():
    g = torch.Generator().manual_seed(0)
    m, tau, nf, trials = 400, 2.0, 6, 400
    from feature_learning.measure.lucky_neurons import singly_activated

    W = torch.randn(trials, m, nf, generator=g, dtype=torch.float64)
    counts = singly_activated(W, tau).sum(1).double().mean()
    assert abs(counts.item() - th.expected_singly_lucky(m, tau, nf)) < 0.05 * th.expected_singly_lucky(m, tau, nf)

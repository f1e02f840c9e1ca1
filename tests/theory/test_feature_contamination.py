"""theory/feature_contamination.py against independent computations: torch autograd, Monte Carlo, scipy, numeric
iteration, and the chapter notes' transcription of the source's tables."""

import math

import numpy as np
import pytest
import sympy as sp
import torch
from scipy import stats

from feature_learning.theory import feature_contamination as theory


def rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("activation", ["relu", "identity"])
def test_sympy_hinge_gradient_is_autograds_on_every_region(activation):
    grad = theory.hinge_gradient(activation)
    points = theory.region_points(grad)
    regions = {theory.region_of(grad, p) for p in points}
    assert len(regions) == (14 if activation == "relu" else 16)  # every sign region that exists
    assert any(not r[-1] for r in regions)  # loss-inactive regions are visited
    for p in points:
        W = torch.tensor([[float(p[w]) for w in row] for row in grad.W], dtype=torch.float64, requires_grad=True)
        a = torch.tensor([float(p[s]) for s in grad.a], dtype=torch.float64)
        x = torch.tensor([float(p[s]) for s in grad.x], dtype=torch.float64)
        pre = W @ x
        h = (a * (torch.relu(pre) if activation == "relu" else pre)).sum()
        (g,) = torch.autograd.grad(torch.clamp(1 - float(p[grad.y]) * h, min=0), W)
        sympy_grad = np.array(theory.at(grad.derivative, p).tolist(), dtype=float)
        assert np.allclose(sympy_grad, g.numpy(), atol=1e-12)
        assert np.allclose(np.array(theory.at(grad.eq12, p).tolist(), dtype=float), g.numpy(), atol=1e-12)


def test_the_printed_indicator_is_wrong_only_for_negative_labels_with_large_output():
    grad = theory.hinge_gradient("relu")
    for p in theory.region_points(grad):
        h = float(grad.h.xreplace(p))
        wrong = theory.at(grad.printed, p) != theory.at(grad.derivative, p)
        active = any(float(pre.xreplace(p)) > 0 for pre in grad.pre)
        assert wrong == (active and p[grad.y] == -1 and abs(h) > 1)


def test_contamination_gradient_and_rates_by_monte_carlo():
    """Sample y, an activity indicator with Pr = rho_{+-} on the positive / negative class (independent of z), and
    z ~ U[0, 1]; the sample means of a_k y 1 z (background) and sign(a_k) a_k y 1 (y z) (core) are the rates."""
    rates = theory.contamination_rates()
    args = (rates.rho_plus, rates.rho_minus, rates.mu, theory.m, theory.eta)
    core, bg = (sp.lambdify(args, getattr(rates, k)) for k in ("core", "bg"))
    g, n, m = rng(1), 2_000_000, 8
    for s in (1, -1):
        r_pos, r_neg = 0.8, 0.3
        y = g.choice([-1, 1], n)
        act = g.random(n) < np.where(y == s, r_pos, r_neg)
        z = g.random(n)
        a_k = s / m
        mc_bg = (a_k * y * act * z).mean()
        mc_core = (s * a_k * y * act * (y * z)).mean()
        se = 1 / (m * math.sqrt(n))
        assert abs(mc_bg - bg(r_pos, r_neg, 0.5, m, 1)) < 5 * se
        assert abs(mc_core - core(r_pos, r_neg, 0.5, m, 1)) < 5 * se
    assert rates.by_sign[1] == rates.by_sign[-1]
    eq7 = theory.contamination_gradient()
    assert sp.simplify(eq7.grad_bg - (eq7.q_plus - eq7.q_minus) / (2 * theory.m)) == 0


@pytest.mark.parametrize("activation, w_bg", [("identity", 0), ("identity", 0.5), ("relu", 0), ("relu", -0.25)])
def test_label_averaged_background_gradient_by_monte_carlo(activation, w_bg):
    exact = float(theory.label_averaged_bg_gradient(activation, sp.Rational(3, 2), sp.nsimplify(w_bg)))
    g, n = rng(2), 2_000_000
    y = g.choice([-1, 1], n)
    z1, z2 = g.random(n), g.random(n)
    pre = 1.5 * y * z1 + w_bg * z2
    h = pre if activation == "identity" else np.maximum(pre, 0)
    active = np.ones(n, bool) if activation == "identity" else pre >= 0
    mc = (y * (y * h <= 1) * active * z2).mean()
    assert abs(mc - exact) < 5 * 0.5 / math.sqrt(n)


def test_recursions_by_iteration():
    """One step of (32) and (33) written out numerically, summed, equals SymPy's combined recursion at E = yC + B."""
    rec = theory.recursions()
    names = {str(s): s for s in rec.combined.free_symbols}
    g = {"g_{y,core}": 0.3, "g_{-y,core}": -0.2, "g_{y,bg}": 0.7, "g_{-y,bg}": 0.1}
    C, B, lam, eta = 0.4, -0.25, 1e-3, 0.1
    for yv in (1, -1):
        direct = ((1 - lam * eta) * yv * C + eta * (g["g_{y,core}"] + g["g_{-y,core}"])
                  + (1 - lam * eta) * B + eta * (g["g_{y,bg}"] - g["g_{-y,bg}"]))
        subs = {rec.E_t: yv * C + B, theory.eta: eta, theory.lam: lam, **{names[k]: v for k, v in g.items()}}
        assert float(rec.combined.xreplace(subs)) == pytest.approx(direct, abs=1e-14)
        printed = float(rec.printed.xreplace({**subs, rec.y: yv}))
        assert (printed == pytest.approx(direct, abs=1e-14)) == (yv == 1)  # the source's line: right for y = 1 only
    lam, eta, g, E0 = 0.01, 0.05, 0.3, -1.2
    E = E0
    for _ in range(200):
        E = (1 - lam * eta) * E + eta * g
    sol = float(rec.solution.xreplace({theory.lam: lam, theory.eta: eta, rec.g: g, rec.E0: E0,
                                          rec.t: 200}))
    assert sol == pytest.approx(E, rel=1e-12)
    tau = eta * 200
    cont = float(rec.continuous.xreplace({theory.lam: lam, rec.g: g, rec.E0: E0, rec.tau: tau}))
    assert cont == pytest.approx(E, abs=1e-3)  # eta -> 0 at fixed eta t: close for small eta


def test_uniform_moments_are_scipys():
    mom = theory.uniform_moments()
    u = stats.uniform(0, 1)
    assert [float(getattr(mom, k)) for k in ("mu1", "mu2", "mu3")] == pytest.approx([u.moment(p) for p in (1, 2, 3)])
    assert float(mom.var) == pytest.approx(u.var())
    z = rng(3).random(2_000_000)
    assert float(mom.abs3) == pytest.approx(np.mean(np.abs(z - 0.5) ** 3), abs=1e-4)
    n = 7
    assert float(mom.berry_esseen.subs(mom.n, n)) == pytest.approx(n * (1 / 32) / (n / 12) ** 1.5)


def test_activation_probability_mean_variance_and_normal_limit():
    act = theory.activation_probability()
    g = rng(4)
    w, y = np.array([0.7, -1.3]), np.array([1, -1])
    z = g.random((1_000_000, 2))
    s = (z * (y * w)).sum(1)
    subs = {sp.Symbol("w_1", real=True): w[0], sp.Symbol("w_2", real=True): w[1],
            sp.Symbol("y_1", real=True): y[0], sp.Symbol("y_2", real=True): y[1]}
    assert float(act.mean.xreplace(subs)) == pytest.approx(s.mean(), abs=5e-3)
    assert float(act.variance.xreplace(subs)) == pytest.approx(s.var(), rel=5e-3)
    assert float(act.sigma) == pytest.approx(1 / math.sqrt(12))


def test_both_positive_fraction_by_monte_carlo_with_unequal_sizes():
    both = theory.both_positive_at_init()
    g = rng(5)
    for dc, db in ((32, 32), (40, 10), (8, 24)):
        c = g.normal(0, math.sqrt(dc), 1_000_000)
        b = g.normal(0, math.sqrt(db), 1_000_000)
        mc = np.mean(b > np.abs(c))
        exact = float(both.fraction.subs({both.d_core: dc, both.d_bg: db}))
        assert abs(mc - exact) < 5 * math.sqrt(exact * (1 - exact) / 1_000_000)
    assert both.equal_sizes == sp.Rational(1, 4)


def test_mills_ratio_bounds_numerically():
    mills = theory.mills_ratio()
    d = mills.delta
    lower, upper = sp.lambdify(d, mills.lower), sp.lambdify(d, mills.upper)
    for x in np.linspace(0.05, 8, 60):
        q = stats.norm.sf(x)
        assert lower(x) <= q <= upper(x)
    assert mills.limits == (0, 0) and mills.f_sign.is_negative and mills.g_sign.is_negative


def test_ood_bracket_by_simulation():
    """For OOD margins r m of ID margins m (any law), 1 - r M <= E max(0, 1 - r m) <= 1 - r (1 - R_ID)."""
    ood = theory.ood_hinge_estimate()
    lower, upper = (sp.lambdify((ood.r, ood.M, ood.R_id), getattr(ood, k)) for k in ("lower", "upper"))
    g = rng(6)
    for r in (0.1, 0.5, 0.9):
        m = np.concatenate([g.normal(1.2, 0.3, 50000), g.normal(0.5, 0.5, 5000)])
        M, R_id, R_ood = m.mean(), np.maximum(0, 1 - m).mean(), np.maximum(0, 1 - r * m).mean()
        assert lower(r, M, R_id) <= R_ood + 1e-12 and R_ood <= upper(r, M, R_id) + 1e-12
    c, b = 0.08, 0.058
    r = float(ood.ratio.subs({ood.c: c, ood.b: b, ood.d_core: 32, ood.d_bg: 32}))
    assert 1 - r == pytest.approx(2 * b / (c + b))  # the notes' F25 form, 0.848 for their c and b
    # the notes' calibration: c = 0.0782, b = 0.0575 (rounded) against a measured OOD hinge of about 0.848
    assert float(ood.equal_sizes.subs({ood.c: 0.0782, ood.b: 0.0575})) == pytest.approx(0.8475, abs=5e-4)


def test_tables_against_the_notes_transcription():
    gaps = theory.table1_gaps()
    notes = {"RN50": -7.79, "RN101": -10.09, "ViT-B/16": -20.45, "RN50x4": -10.05, "RN50x16": -12.35}
    for arch, value in notes.items():
        assert gaps[arch]["OOD avg"] == pytest.approx(value, abs=1e-9)
    assert gaps["RN50"]["ImageNet"] == pytest.approx(-0.52) and gaps["ViT-B/16"]["ImageNet"] == pytest.approx(-5.82)
    assert [round(gaps["RN50"][c], 2) for c in theory.TABLE1_COLUMNS[2:]] == [-1.06, -12.96, -5.0, -10.9, -9.06]
    assert max(map(abs, theory.table1_average_residuals().values())) <= 0.01

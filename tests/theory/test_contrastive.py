"""Closed forms of dissertation ch. 7 / App. F, checked against numbers computed independently."""

import itertools
import math

import numpy as np
import sympy as sp
import torch

from feature_learning.measure.representations import linear_cka
from feature_learning.theory import contrastive as theory


def test_pca_identity_holds_symbolically_and_on_a_numeric_table():
    ident = theory.pca_identity_discrete()
    assert sp.expand(ident.contrastive - ident.pca) == 0
    # numeric: a random table, both sides by brute-force enumeration with NumPy
    rng = np.random.default_rng(0)
    pR, pU = 1 / 3, 2 / 5
    h = {z: rng.normal(size=2) for z in itertools.product((0, 1), (0, 1))}
    P = {(a, b): (pR if a else 1 - pR) * (pU if b else 1 - pU) for a, b in h}
    lhs = 0.0
    for (a, b), bp, zn in itertools.product(h, (0, 1), h):
        w = P[(a, b)] * (pU if bp else 1 - pU) * P[zn]
        lhs -= w * h[(a, b)] @ (h[(a, bp)] - h[zn])
    phi0 = sum(P[z] * h[z] for z in h)
    rhs = -sum((pR if a else 1 - pR) * np.sum(((1 - pU) * h[(a, 0)] + pU * h[(a, 1)] - phi0) ** 2) for a in (0, 1))
    subs = {sp.Symbol(f"h_{a}{b}_{i + 1}"): float(h[(a, b)][i]) for (a, b) in h for i in range(2)}
    assert abs(lhs - rhs) < 1e-12
    assert abs(float(ident.contrastive.subs(subs)) - lhs) < 1e-12


def test_xor_loss_and_its_optimality():
    sp_loss = lambda t: math.log1p(math.exp(-t))  # noqa: E731
    expected = (sp_loss(0) + 2 * sp_loss(1) + sp_loss(2)) / 4
    assert abs(float(theory.xor_table_loss()) - expected) < 1e-12
    assert abs(expected - 0.361650) < 1e-6
    best = theory.best_unit_table_loss(64, torch.Generator().manual_seed(1))
    assert abs(best - expected) < 1e-6


def test_min_norm_predictor_matches_a_pseudo_inverse():
    mn = theory.min_norm_predictor(2, 2)
    a, b = 0.7, 0.2
    u_star = np.array([0.3, -0.5, 0.8, 0.1])
    Q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(4, 4)))
    rep = Q @ np.diag(np.sqrt([a, a, b, b]))          # phi(z) = rep z on R_t
    u = np.linalg.pinv(rep.T) @ u_star               # min-norm u with rep^T u = u*
    subs = {theory.alpha: a, theory.beta: b, **{sp.Symbol(f"u_{j + 1}", real=True): u_star[j] for j in range(4)}}
    assert abs(float(mn.norm_sq.subs(subs)) - u @ u) < 1e-12
    v1, v2 = (u_star[:2] ** 2).sum(), (u_star[2:] ** 2).sum()
    assert abs(u @ u - (v1 / a + v2 / b)) < 1e-12


def test_bound_ratio_and_budget():
    terms = theory.bound_terms()
    for T in (1, 2, 4, 16):
        assert abs(float(terms.ratio_sq.subs(theory.T, T)) - (T + 1) ** 2 / (4 * T)) < 1e-12
        assert abs(theory.bound_ratio(T) - math.sqrt((T + 1) ** 2 / (4 * T))) < 1e-12
    assert theory.bound_ratio(4) == 1.25 and theory.bound_ratio(16) == 2.125
    beta = theory.budget_beta()
    assert abs(float(beta.subs({theory.alpha: 1, theory.s: 5, theory.r: 10, theory.T: 4})) - 0.25) < 1e-15
    assert theory.mixture_weights(5, 10, 4) == (1.0, 0.25)


def test_f24_identity_numerically():
    lhs, rhs = theory.f24_identity()
    for a, b in ((0.3, 0.9), (1.0, 0.25), (2.0, 5.0)):
        subs = {theory.alpha: a, theory.beta: b}
        assert abs(float(lhs.subs(subs)) - (1 / a + 1 / b) * (a + b)) < 1e-12
        assert abs(float(rhs.subs(subs)) - (1 / a + 1 / b) * (a + b)) < 1e-12


def test_finetune_weight_against_a_brute_force_budget():
    fw = theory.finetune_private_weight()
    s, T = 5, 4
    grid = np.linspace(0, 1, 200001)  # sqrt(beta') on a grid, the largest within the budget
    for g in (0.25, 0.5, 1.0, 1.5):
        feasible = grid[s * (grid - 1 / math.sqrt(T)) ** 2 <= g * g + 1e-15]
        brute = feasible.max() ** 2
        closed = min(1.0, float(fw.sqrt_beta.subs({theory.s: s, theory.T: T, theory.gamma: g}))) ** 2
        assert abs(brute - closed) < 1e-4
        assert abs(theory.finetune_beta(s, T, g) - closed) < 1e-12
    sat = float(fw.saturation_gamma.subs({theory.s: 5, theory.T: 4}))
    assert abs(sat - math.sqrt(5) * 0.5) < 1e-12


def test_cka_closed_forms_against_sampled_features():
    a_sq = [1.0, 1.0, 0.5, 0.5]
    b_sq = [1.0, 1.0, 0.25, 0.25]
    gen = torch.Generator().manual_seed(2)
    Q = torch.linalg.qr(torch.randn(4, 4, generator=gen, dtype=torch.float64))[0]
    z = torch.randn(200000, 4, generator=gen, dtype=torch.float64)
    X = z * torch.tensor(a_sq, dtype=torch.float64).sqrt() @ Q.T
    Y = z * torch.tensor(b_sq, dtype=torch.float64).sqrt()
    sampled = float(linear_cka(X, Y))
    assert abs(sampled - theory.cka_cosine(a_sq, b_sq)) < 5e-3
    Qs = sp.Matrix(Q.tolist())
    symbolic = float(theory.cka_diagonal([sp.nsimplify(x) for x in a_sq], [sp.nsimplify(x) for x in b_sq], Qs))
    assert abs(symbolic - theory.cka_cosine(a_sq, b_sq)) < 1e-10
    # the mixtures' form: target weights (1 on S, 1/T on P_t) for s = 5, r = 10
    for T1, T2 in ((1, 2), (1, 4), (2, 3)):
        wa = [1.0] * 5 + [1 / T1] * 5
        wb = [1.0] * 5 + [1 / T2] * 5
        assert abs(float(theory.cka_mixtures(T1, T2, 5, 10)) - theory.cka_cosine(wa, wb)) < 1e-12
    assert abs(theory.cka_cosine([1] * 5 + [1] * 5, [1] * 5 + [0] * 5) - math.sqrt(0.5)) < 1e-12


def test_allocation_loss_against_numpy_chi_squared_samples():
    rng = np.random.default_rng(3)
    Z = rng.chisquare(5, size=400000)
    Z1 = rng.chisquare(5, size=400000)
    alphas = torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)
    ours = theory.allocation_loss(alphas, torch.from_numpy(Z), torch.from_numpy(Z1), 5, 10, 4)
    for a, v in zip(alphas.tolist(), ours.tolist(), strict=True):
        b = min(1.0, (10 - 5 * a) / (4 * 5))
        assert abs(v - np.logaddexp(0, -(a * Z + b * Z1)).mean()) < 1e-12
    sol = theory.solve_allocation(5, 10, 4, 50000, 2, torch.Generator().manual_seed(0), grid_points=101)
    assert torch.all(sol.alpha == 1.0) and torch.allclose(sol.beta, torch.full((2,), 0.25, dtype=torch.float64))


def test_allocation_loss_in_blocks_of_the_grid_is_the_one_block_value(monkeypatch):
    """`full`'s grid (2001 alphas x 400,000 samples) is evaluated a block of alphas at a time; each alpha's mean is
    the same reduction as in one block."""
    g = torch.Generator().manual_seed(0)
    Z = torch.randn(3000, 5, generator=g, dtype=torch.float64).pow(2).sum(-1)
    Z1 = torch.randn(3000, 5, generator=g, dtype=torch.float64).pow(2).sum(-1)
    grid = torch.linspace(0, 1, 41, dtype=torch.float64)
    one = theory.allocation_loss(grid, Z, Z1, 5, 10, 4)
    monkeypatch.setattr(theory, "ALLOCATION_CHUNK_ELEMENTS", 7 * 3000)  # blocks of 7 alphas, the last one shorter
    assert torch.equal(theory.allocation_loss(grid, Z, Z1, 5, 10, 4), one)

"""Closed forms of dissertation ch. 5, checked against numbers computed another way (torch formulas, Monte Carlo,
brute force, an independent solver), not against themselves."""

import itertools
import math

import numpy as np
import sympy as sp
import torch
from scipy.optimize import minimize

from feature_learning.data.bases import random_orthogonal
from feature_learning.data.in_context import (
    icl_regression_prompts,
    parity_population_features,
    parity_task_sets,
)
from feature_learning.models.linear_attention import lsa_population_loss, reduced_lsa_predict
from feature_learning.theory import icl

LAM = torch.tensor([2.0, 1.0, 0.5, 0.25], dtype=torch.float64)


def test_fourth_moment_and_the_constant_of_lemma_5_1():
    computed, identity = icl.fourth_moment(2)
    assert sp.simplify(computed - identity) == sp.zeros(2, 2)
    derived, tilde, (lams, *_) = icl.pretraining_loss_symbolic(2)
    assert sp.simplify(derived - tilde - sum(lams) / 2) == 0


def test_eigenbasis_loss_equals_lemma_5_1_in_torch(gen):
    """SymPy's F (d=3) at random numbers = the torch population loss minus tr(Lam)/2 at U = V, Lam = D; and the
    rotation invariance of step 1 at d=5 in float64."""
    e = icl.eigenbasis_loss(3)
    rng = np.random.default_rng(0)
    lam, V, N = np.sort(rng.uniform(0.1, 2, 3))[::-1], rng.normal(size=(3, 3)), 11
    subs = {**dict(zip(e.lams, lam, strict=True)), e.N: N,
            **{e.V[i, j]: V[i, j] for i in range(3) for j in range(3)}}
    lam_t, V_t = torch.tensor(lam.copy()), torch.tensor(V)
    torch_loss = lsa_population_loss(V_t[None], torch.ones(1, dtype=torch.float64), torch.diag(lam_t), N)[0]
    assert abs(float(e.F.subs(subs)) - (float(torch_loss) - lam.sum() / 2)) < 1e-12
    assert abs(float(icl.eigenbasis_loss_numeric(V_t, lam_t, N)) - float(e.F.subs(subs))) < 1e-12
    Q = random_orthogonal(5, gen(1))
    lam5 = torch.tensor([3.0, 1.0, 0.7, 0.2, 0.1], dtype=torch.float64)
    V5 = torch.randn(5, 5, generator=gen(2), dtype=torch.float64)
    rotated = lsa_population_loss((Q @ V5 @ Q.T)[None], torch.ones(1, dtype=torch.float64),
                                  Q @ torch.diag(lam5) @ Q.T, 9)[0]
    assert abs(float(rotated) - lam5.sum() / 2 - float(icl.eigenbasis_loss_numeric(V5, lam5, 9))) < 1e-12
    remainder, _ = icl.eigenbasis_reduction()
    assert remainder == 0


def test_completed_square_and_the_stationary_diagonal():
    e = icl.eigenbasis_loss(3)
    assert sp.expand(e.square - e.F) == 0
    N, lams = e.N, e.lams
    for v, lam in zip(e.v_stationary, lams, strict=True):
        assert sp.simplify(v - N / ((N + 1) * lam + sum(lams))) == 0
    opt = icl.rank_r_optimum()
    lam, trD, N_ = opt.symbols
    g = sp.lambdify((lam, trD, N_), opt.g)
    grid = np.linspace(0.01, 3, 50)
    assert np.all(np.diff(g(grid, 5.0, 64)) > 0)  # g increasing: the top eigen-directions are kept
    assert sp.simplify(opt.v_star - N_ / ((N_ + 1) * lam + trD)) == 0


def test_rank_r_optimum_beats_random_rank_r_matrices_and_other_subsets(gen):
    Q = random_orthogonal(4, gen())
    Lam, N = Q @ torch.diag(LAM) @ Q.T, 16
    ones = torch.ones(1, dtype=torch.float64)
    for r in range(5):
        L_r = icl.rank_r_pretraining_loss(LAM, N, r)
        assert torch.allclose(lsa_population_loss(icl.optimal_U(Q, LAM, N, r)[None], ones, Lam, N)[0], L_r)
        assert torch.allclose(icl.eckart_young_U(Q, LAM, N, r), icl.optimal_U(Q, LAM, N, r), atol=1e-12)
        if r == 0:
            continue
        A = torch.randn(2000, 4, r, generator=gen(r), dtype=torch.float64)
        B = torch.randn(2000, 4, r, generator=gen(10 + r), dtype=torch.float64)
        U = A @ B.transpose(1, 2)
        U = U * (icl.optimal_U(Q, LAM, N, 4).norm() / U.flatten(1).norm(dim=1))[:, None, None]
        assert (lsa_population_loss(U, torch.ones(2000, dtype=torch.float64), Lam, N) >= L_r - 1e-12).all()
        for keep in itertools.combinations(range(4), r):  # any other set of kept directions is worse
            v = torch.zeros(4, dtype=torch.float64)
            v[list(keep)] = icl.v_star(LAM, N, 4)[list(keep)]
            loss = lsa_population_loss((Q @ torch.diag(v) @ Q.T)[None], ones, Lam, N)[0]
            assert loss >= L_r - 1e-12 and (keep == tuple(range(r))) == bool(abs(loss - L_r) < 1e-12)


def test_eval_risk_monte_carlo_with_noise_and_flips(gen):
    d, N, M = 3, 32, 8
    lam = torch.tensor([1.5, 1.0, 0.3], dtype=torch.float64)
    Q = random_orthogonal(d, gen())
    c = torch.tensor([1.0, -0.5, 0.4], dtype=torch.float64)
    for r, sigma, p in ((1, 0.0, 0.0), (3, 1.0, 0.0), (2, 0.5, 0.25)):
        pr = icl_regression_prompts(200_000, M, Q, lam, gen(r), w=Q @ c, sigma=sigma, flip_frac=p)
        U = icl.optimal_U(Q, lam, N, r)[None]
        err = (reduced_lsa_predict(pr.X, pr.y, pr.xq, U, torch.ones(1, dtype=torch.float64), M)[0] - pr.yq) ** 2
        exact = icl.eval_risk(c, lam, N, M, r, sigma, p)
        assert abs(err.mean() - exact) < 4 * err.std() / math.sqrt(len(err)), (r, sigma, p)


def test_derived_risk_its_gap_and_large_N_limit_against_the_torch_formulas():
    derived, closed, syms = icl.eval_risk_symbolic(3)
    assert sp.expand(derived - closed) == 0
    lams, cs, vs, M, sigma, p = syms
    lam = torch.tensor([1.5, 1.0, 0.3], dtype=torch.float64)
    base = {**dict(zip(lams, lam.tolist(), strict=True)), M: 7, sigma: 0.6, sp.Symbol("N", positive=True): 20}
    c = torch.tensor([0.8, -0.4, 0.5], dtype=torch.float64)
    for r in (1, 2, 3):
        at_opt = icl.risk_at_optimum(derived, syms, r).subs({**base, **dict(zip(cs, c.tolist(), strict=True))})
        assert abs(float(at_opt) - float(icl.eval_risk(c, lam, 20, 7, r, 0.6))) < 1e-12
    gap, theorem, limit = icl.gap_symbolic(derived, syms)
    s1 = torch.tensor([0.9, 0.0, 0.0], dtype=torch.float64)
    numeric = icl.eval_risk(s1, lam, 20, 7, 3, 0.6) - icl.eval_risk(s1, lam, 20, 7, 1, 0.6)
    assert abs(float(gap.subs({**base, sp.Symbol("s_1", positive=True): 0.9})) - float(numeric)) < 1e-12
    assert sp.simplify(gap - theorem) == 0
    lim, source = icl.large_N_limit(derived, syms)
    far = float(icl.eval_risk(c, lam, 10**9, 7, 2, 0.6))
    assert abs(float(lim.subs({**base, **dict(zip(cs, c.tolist(), strict=True))})) - far) < 1e-6
    assert abs(float(icl.eval_risk_large_N(c, lam, 7, 2, 0.6)) - far) < 1e-6
    assert sp.simplify(lim - source) == 0


def test_parity_constructions_exact_and_float():
    gamma = 0.2
    S1, S2 = parity_task_sets(8, 2)
    V, a = icl.parity_construction(3, gamma, 3)
    per_task, margin, _ = icl.parity_population(V, a, S1 + S2, gamma)
    assert float(per_task.max()) < 1e-12 and abs(float(margin.min()) - 1) < 1e-12
    Vs, a_s = icl.parity_construction_symbolic(3, gamma=sp.Rational(1, 5))
    assert torch.allclose(V, torch.tensor(np.array(Vs.tolist(), dtype=float))) and a_s == [int(x) for x in a]
    D1, _ = icl.small_construction(1, 3, gamma)
    assert int(torch.linalg.matrix_rank(D1)) == 2  # rank nu1 + 1 (mirror columns)


def pattern_qp_scipy(d, pairs, gamma, a, active, start):
    """The same QP assembled independently (numpy) and solved numerically by trust-constr."""
    z, phi, y, _, _ = parity_population_features(d, pairs, gamma)
    F, Y, m = (z * phi).numpy(), y.numpy(), len(a)
    rows, lb = [], []
    for p in range(len(F)):
        margin = np.zeros((d, m))
        for h in range(m):
            pre = np.zeros((d, m))
            pre[:, h] = F[p]
            rows.append((pre if active[p, h] else -pre).T.ravel())
            lb.append(0.0)
            margin += a[h] * pre if active[p, h] else 0
        rows.append((Y[p] * margin).T.ravel())
        lb.append(1.0)
    from scipy.optimize import LinearConstraint

    res = minimize(lambda x: x @ x, start.T.reshape(-1).numpy(), jac=lambda x: 2 * x, method="trust-constr",
                   constraints=[LinearConstraint(np.array(rows), np.array(lb), np.inf)],
                   options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 5000})
    return res.fun


def test_pattern_qp_is_feasible_and_optimal_by_independent_checks():
    gamma, d = 0.2, 4
    S1, S2 = parity_task_sets(d, 2)
    V, a = icl.parity_construction(2, gamma, 2)
    z, phi, _, _, _ = parity_population_features(d, S1 + S2, gamma)
    signs = [int(x) for x in a]
    own = icl.pattern_qp(d, S1 + S2, gamma, signs, (z * phi) @ V > 1e-12, V)
    assert own.norm == 75 and own.slack >= 0 and min(own.multipliers) >= 0 and set(own.residual) == {0}
    # a model of another pattern: shrink the positive heads and move the code heads off their +-1 values
    from feature_learning.experiments.icl_model_scale import local_min_norm_search

    found = local_min_norm_search(V, a, S1 + S2, gamma)
    active = (z * phi) @ found > 1e-9
    q = icl.pattern_qp(d, S1 + S2, gamma, signs, active, found)
    Vq = torch.tensor(np.array(q.V.tolist(), dtype=float))
    per_task, margin, _ = icl.parity_population(Vq, a, S1 + S2, gamma)  # the ReLU model itself, in float64
    assert float(per_task.max()) < 1e-12 and float(margin.min()) > 1 - 1e-12
    assert abs(float(q.norm) - float((Vq**2).sum())) < 1e-9 and float(q.norm) < 75
    assert abs(pattern_qp_scipy(d, S1 + S2, gamma, a.numpy(), active.numpy(), found) - float(q.norm)) < 1e-5
    assert abs(pattern_qp_scipy(d, S1 + S2, gamma, a.numpy(), ((z * phi) @ V > 1e-12).numpy(), V) - 75) < 1e-5


def test_score_energy_is_the_trace_of_the_two_covariances():
    # E[(a^T U x)^2] = tr(Sigma_a U Sigma_x U^T) for independent centred a, x: an identity independent of the eigenbasis
    lam = torch.tensor([2.0, 1.5, 1.0, 0.5, 0.25], dtype=torch.float64)
    Q, _ = torch.linalg.qr(torch.randn(5, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64))
    A = torch.tensor([0.0, 1.0, 0.0, 2.0, 0.5], dtype=torch.float64)
    for r in range(6):
        U = icl.optimal_U(Q, lam, 16, r)
        direct = torch.trace(Q @ torch.diag(A) @ Q.T @ U @ Q @ torch.diag(lam) @ Q.T @ U.T)
        assert abs(float(icl.score_energy(lam, 16, r, A) - direct)) < 1e-12


def test_score_energy_symbolic_matches_the_numeric_closed_form():
    derived, _ = icl.score_energy_symbolic(3)
    lam = torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64)
    A = torch.tensor([0.3, 0.0, 1.7], dtype=torch.float64)
    v = icl.v_star(lam, 16, 3)
    values = {sp.Symbol(f"{n}{i + 1}", **kw): float(t[i]) for n, t, kw in
              (("v", v, {"real": True}), ("A", A, {"positive": True}),
               ("lambda", lam, {"positive": True})) for i in range(3)}
    assert abs(float(derived.subs(values)) - float(icl.score_energy(lam, 16, 3, A))) < 1e-12

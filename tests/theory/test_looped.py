"""Closed forms of dissertation ch. 8, checked against numbers computed independently (not against themselves)."""

import math

import sympy as sp
import torch

from feature_learning.models.linear_attention import gd_iterates
from feature_learning.theory import looped as theory


def test_gd_error_step_matches_a_numeric_gd_step():
    lhs, rhs = theory.gd_error_step(n=3, d=2)
    values = {s: sp.Rational(k + 1, 7) for k, s in enumerate(sorted(lhs.free_symbols | rhs.free_symbols, key=str))}
    X = torch.tensor([[float(values[sp.Symbol(f"x_{i}{j}")]) for j in (1, 2)] for i in (1, 2, 3)], dtype=torch.float64)
    star = torch.tensor([float(values[sp.Symbol(f"theta^*_{j}")]) for j in (1, 2)], dtype=torch.float64)
    theta = torch.tensor([float(values[sp.Symbol(f"theta_{j}")]) for j in (1, 2)], dtype=torch.float64)
    eta = float(values[sp.Symbol("eta", positive=True)])
    step = theta - eta * (X.T @ X @ theta - X.T @ (X @ star))
    assert torch.allclose(torch.tensor([float(v) for v in lhs.subs(values)], dtype=torch.float64), step - star)
    assert sp.simplify(lhs - rhs) == sp.zeros(2, 1)


def test_prediction_error_in_eigenbasis_matches_numeric_gd():
    lam1, lam2, c1 = 3.0, 0.7, 0.6
    X = torch.diag(torch.tensor([math.sqrt(lam1), math.sqrt(lam2)], dtype=torch.float64))[None]
    star = torch.tensor([[c1, math.sqrt(1 - c1**2)]], dtype=torch.float64)
    y = (X @ star[..., None])[..., 0]
    for T in (1, 3):
        theta_T = gd_iterates(X, y, [1 / lam1] * T)[-1]
        numeric = float((theta_T * star).sum() - 1)  # alpha = 1
        iterated, closed = theory.prediction_error_in_eigenbasis(T)
        subs = {sp.Symbol("lambda_1", positive=True): lam1, sp.Symbol("lambda_2", positive=True): lam2,
                sp.Symbol("c_1", real=True): c1, sp.Symbol("alpha", positive=True): 1}
        assert abs(float(closed.subs(subs)) - numeric) < 1e-12 and abs(float(iterated.subs(subs)) - numeric) < 1e-12


def test_log_rate_ratio_is_the_log_of_the_two_bounds():
    x, expr = theory.log_rate_ratio()
    for kappa in (1.2, 3.0, 50.0):
        expected = 2 * math.log(1 - 1 / kappa) + 1 / kappa
        assert abs(float(expr.subs(x, 1 / kappa)) - expected) < 1e-12


def test_gatmiry_sample_size_at_one_loop():
    assert int(theory.gatmiry_min_n(1, 4)) == (8 * 1 * 16 * 4) ** 2 == 262144

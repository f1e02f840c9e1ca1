"""The ICL chapter's runs: trainers, gradients and helpers agree with independent computations."""

import dataclasses

import numpy as np
import pytest
import torch

from feature_learning.book.profiles import differences, start_run
from feature_learning.data.bases import random_orthogonal
from feature_learning.data.in_context import icl_classification_tokens
from feature_learning.experiments import icl_model_scale as ex
from feature_learning.measure.in_context import icl_flip_accuracy
from feature_learning.models.linear_attention import lsa_population_loss
from feature_learning.models.transformer import TransformerConfig
from feature_learning.theory import icl as theory

LAM = torch.tensor([2.0, 1.0, 0.5, 0.25], dtype=torch.float64)


def test_factor_gradients_equal_autograd(gen):
    WK = torch.randn(2, 3, 4, 4, generator=gen(0), dtype=torch.float64, requires_grad=True)
    WQ = torch.randn(2, 3, 4, 4, generator=gen(1), dtype=torch.float64, requires_grad=True)
    s, xq = torch.randn(2, 1, 16, 4, generator=gen(2), dtype=torch.float64), torch.randn(2, 1, 16, 4, generator=gen(3),
                                                                                       dtype=torch.float64)
    yq = torch.randn(2, 1, 16, generator=gen(4), dtype=torch.float64)
    pred = torch.einsum("rkbd,rkde,rkbe->rkb", s.expand(2, 3, 16, 4), WK.transpose(-1, -2) @ WQ, xq.expand(2, 3, 16, 4))
    (0.5 * (pred - yq) ** 2).mean(-1).sum().backward()
    gK, gQ = ex.factor_gradients(WK.detach(), WQ.detach(), s, xq, yq)
    assert torch.allclose(gK, WK.grad) and torch.allclose(gQ, WQ.grad)


def test_exact_training_recovers_the_rank_r_optimum(gen):
    Q = random_orthogonal(4, gen())
    U = ex.train_rank_r_exact(Q @ torch.diag(LAM) @ Q.T, 16, (1, 2, 4), gen(1), max_iter=3000)
    for k, r in enumerate((1, 2, 4)):
        U_star = theory.optimal_U(Q, LAM, 16, r)
        assert float((U[k] - U_star).norm() / U_star.norm()) < 1e-3


def test_sgd_on_sampled_prompts_lands_near_v_star(gen):
    Q = random_orthogonal(4, gen())
    s = dataclasses.replace(ex.BOOK.sgd, steps=400, batch=256, replicas=2)
    U = ex.train_rank_r_sgd(Q, LAM, 16, (1, 2, 4), s, gen(2))
    assert U.shape == (2, 3, 4, 4)
    for k, r in enumerate((1, 2, 4)):
        v = torch.diagonal(Q.T @ U[:, k] @ Q, dim1=-2, dim2=-1)
        v_star = theory.v_star(LAM, 16, r)
        assert ((v - v_star).norm(dim=-1) / v_star.norm() < 0.1).all()
        assert torch.linalg.matrix_rank(U[0, k]) == r  # averaging the factors keeps the rank
        loss = lsa_population_loss(U[:, k], torch.ones(2, dtype=torch.float64), Q @ torch.diag(LAM) @ Q.T, 16)
        assert ((loss / theory.rank_r_pretraining_loss(LAM, 16, r) - 1).abs() < 0.02).all()


def test_min_norm_check_certifies_a_smaller_zero_loss_model():
    mn = ex.min_norm_check(ex.BOOK)
    assert mn.certified(mn.own) and mn.own.norm == 75 and mn.norm_construction == pytest.approx(75)
    assert mn.certified(mn.found) and mn.ratio < 0.7


def test_reduction_check_is_float_rounding():
    run = start_run("ci", 0, "cpu")
    assert ex.reduction_check(ex.setting(ex.CI, run), run) < 1e-10


def test_profiles_differ_from_book_only_where_they_say():
    changed = {path for path, _ in differences(ex.SIZES)}
    assert "sgd.steps" in changed and "transformer.steps" in changed
    assert not {"regression.d", "regression.N", "regression.spectrum", "parity.gamma", "exact.ranks"} & changed


def test_train_icl_transformer_learns_and_flip_protocol(gen):
    d, M = 4, 8
    prior = torch.zeros(d)
    prior[0] = 1.0
    cfg = TransformerConfig(vocab=d + 1, seq_len=M + 1, n_out=1, d_model=8, n_heads=2, d_head=4, d_mlp=16,
                            n_blocks=1)
    model, hist = ex.train_icl_transformer(cfg, prior, 1.0, M, 150, 64, gen(4), replicas=2, lr=3e-3)
    assert (hist["loss"][-1] < hist["loss"][0]).all()  # the logged loss, per replica
    assert hist["final_loss"].shape == (2,) and (hist["final_loss"] < 0.9 * np.log(2.0)).all()
    flips = (0.0, 0.5, 1.0)
    acc, ref = icl_flip_accuracy(model, prior, 1.0, M, flips, 3000, gen(5), chunk=1000)
    assert acc.shape == (3, 2) and ref.shape == (3, 2)
    assert (acc[0] > 0.6).all()  # learned better than chance with clean labels
    # the prior rule ignores the context labels: identical at every p on common prompts
    assert torch.allclose(ref[:, 0], ref[0, 0].expand(3))
    # fully flipped labels negate sum_i y_i <x_i, x_q>: the context rule's accuracy becomes 1 - its clean accuracy
    assert abs(float(ref[2, 1] + ref[0, 1]) - 1) < 1e-9 and float(ref[0, 1]) > 0.6
    # p = 0 equals a direct evaluation on the same prompts
    tokens, yq = icl_classification_tokens(1000, M, d, prior, 1.0, gen(5))
    with torch.no_grad():
        direct = (torch.sign(model.forward_continuous(tokens)[..., 0]) == yq).double().mean(-1)
    acc1, _ = icl_flip_accuracy(model, prior, 1.0, M, (0.0,), 1000, gen(5))
    assert torch.allclose(acc1[0], direct)


def test_best_rank_statistics_read_the_monte_carlo_curve():
    closed = torch.tensor([[3.0, 2.0, 1.0, 1.01], [3.0, 2.0, 2.5, 4.0]], dtype=torch.float64)
    mean = torch.tensor([[3.0, 2.0, 1.02, 1.00], [3.1, 2.0, 2.5, 4.0]], dtype=torch.float64)
    se = torch.full_like(mean, 0.01)
    tr = ex.Tradeoff((0.0,), [0.0], [1.0], [0.0], (0.0, 1.0), tuple(range(4)), closed, mean, se)
    assert tr.best_closed == [2, 1] and tr.best_mc == [3, 1]
    assert abs(tr.ew_z - 10.0) < 1e-9  # (3.1 - 3.0) / 0.01
    assert abs(tr.best_mc_z - 1.0) < 1e-9  # (1.02 - 1.00) / (0.01 + 0.01); 0 for the second row
    flip = tr.ordering_flip(small=1)  # full rank better at the lowest noise by 1.0, worse at the highest by 2.0
    assert abs(flip.value - 1.0) < 1e-9 and abs(flip.se - 0.02) < 1e-12


def test_score_sweep_monte_carlo_matches_and_ignores_the_irrelevant_part():
    run = start_run("ci", seed=0, device="cpu")
    size = dataclasses.replace(ex.CI, risk=dataclasses.replace(ex.CI.risk, prompts=4000))
    sc = ex.score_sweep(size, run, ex.setting(size, run))
    assert sc.closed.shape == (2, 8) and sc.mean.shape == (2, 8)
    assert sc.z < 5.0
    assert sc.irrelevant_low_rank < 1e-20 and float(sc.closed[1, :4].abs().max()) == 0.0
    assert float(sc.closed[1, 4]) > 0.1


def test_transformer_sweep_claims_carry_value_se_and_their_trivial_model():
    # (size, flip, seed): the small model stays near the prior rule, the large one follows the context
    acc = np.array([[[0.76, 0.78], [0.70, 0.66]], [[0.84, 0.82], [0.40, 0.42]]])
    ts = ex.TransformerSweep(((8, 1, 1), (32, 4, 2)), (0.0, 1.0), acc, np.array([[0.75, 0.8], [0.75, 0.2]]), [1, 2])
    prior = ts.clean_over_prior()
    assert abs(prior.value - 0.08) < 1e-12 and abs(prior.se - 0.01) < 1e-12 and prior.null.value == 0.0
    size = ts.clean_gain_with_size()
    assert abs(size.value - 0.06) < 1e-12 and abs(size.se - 0.02**0.5 / 10) < 1e-12 and size.null == ex.SIZE_BLIND
    drop = ts.sensitivity_gain_with_size()  # paired by seed: (0.44 - 0.06, 0.40 - 0.12)
    assert abs(drop.value - 0.33) < 1e-12 and abs(drop.se - 0.05) < 1e-12
    low = ts.smallest_lowest()
    assert abs(low.value - 0.68) < 1e-12 and low.null.value == 0.2  # the context rule's lowest accuracy
    flipped = ts.largest_fully_flipped()
    assert abs(flipped.value - 0.41) < 1e-12 and flipped.null.value == 0.75  # the prior rule at p = 1
    flat = ts.smallest_flatness()  # per seed 0.06 / 0.44 and 0.12 / 0.40; the context rule drops 0.6 of 0.42
    assert abs(flat.value - (0.06 / 0.44 + 0.12 / 0.40) / 2) < 1e-12 and abs(flat.null.value - 0.6 / 0.42) < 1e-12
    with pytest.raises(ValueError, match="whether its models learned"):
        ts.trained()
    # a replica whose loss after training stays at log 2 (it never learned) is counted as not trained
    ts = dataclasses.replace(ts, final_loss=np.array([[0.3, np.log(2.0)], [0.2, 0.25]]))
    assert ts.trained() == (3, 4)


def test_noise_sources_remove_each_kind_of_noise():
    run = start_run("ci", seed=0, device="cpu")
    size = dataclasses.replace(ex.CI, risk=dataclasses.replace(ex.CI.risk, prompts=8000))
    ns = ex.noise_sources(size, run, ex.setting(size, run), Ms=(16, 64))
    assert ns.scaling_z < 4.0 and abs(ns.vanishing_share - 0.25) < 0.05  # the gap falls as 1/M at sigma = 0
    assert abs(ns.scaled_gap[0] - ns.scaled_gap_closed) < 4 * ns.scaled_gap_se[0]
    assert ns.clean_pretraining_gap < 1e-10  # no pretraining variance outside the top 2: the same predictions


def test_parity_robustness_statistics():
    acc = torch.tensor([[0.8, 0.6], [0.95, 0.9], [1.0, 0.99]], dtype=torch.float64)
    pr = ex.ParityRobustness((0.125, 0.25), (0.001, 0.002), (16, 64, 1024), acc, acc, (0.0,), acc[:1], 10_000)
    assert abs(pr.gap(16).value - 0.2) < 1e-12 and abs(pr.gap(16).se - (0.16 + 0.24) ** 0.5 / 100) < 1e-12
    assert pr.least_significant_gap() == pr.gap(64)  # 0.05 / 0.0037 is less significant than 0.2 / 0.0063
    assert abs(pr.lowest_at_largest_M().value - 0.99) < 1e-12
    con = ex.parity_constructions(ex.CI)
    assert pr.energy_z(con) == 0.0  # (nu + 1) / 16 exactly for nu = 1, 3

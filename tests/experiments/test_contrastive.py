"""The contrastive chapter's runs: their measurements agree with independent computations."""

import math

import torch

from feature_learning.book.claims import STATUS_UNTRAINED, ClaimLedger, trained_runs
from feature_learning.book.profiles import override, start_run
from feature_learning.data.multitask_linear import MultiTaskLinear
from feature_learning.experiments import contrastive as ex
from feature_learning.measure.probes import multiclass_probe

TINY = override(ex.CI, allocation={"pairs": ((5, 10),), "Ts": (1, 4), "n": 5000, "grid_points": 21},
                pretrain={"steps": 40, "batch": 256, "replicas": 2, "cka_samples": 500},
                tradeoff={"ms": (20,), "draws": 2, "n_test": 200, "large_T": 4, "large_prefixes": (1, 4),
                          "closed_replicas": 2},
                finetune={"gammas": (0.0, 0.5), "steps": 20, "ms": (20,)})


def test_contrastive_loss_matches_a_per_example_loop():
    model = MultiTaskLinear.draw(2, 4, 2, 2, torch.Generator().manual_seed(0))
    W = 0.3 * torch.randn(1, 1, model.k, model.d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    tasks = torch.zeros(1, 1, 6, dtype=torch.long)
    loss = ex.contrastive_loss(model, W, tasks, torch.Generator().manual_seed(2))
    g = torch.Generator().manual_seed(2)
    z = model.sample_z(tasks, g, (1, 1, 6))
    zp = model.augment(z, g, (1, 1, 6))
    phi = [W[0, 0] @ model.M @ z[0, 0, i] for i in range(6)]
    phip = [W[0, 0] @ model.M @ zp[0, 0, i] for i in range(6)]
    mean = sum(phi) / 6
    manual = sum(math.log1p(math.exp(-float(phi[i] @ (phip[i] - mean)))) for i in range(6)) / 6
    assert abs(float(loss) - manual) < 1e-12


def test_probe_accuracy_agrees_with_scikit_learn():
    g = torch.Generator().manual_seed(3)
    F = torch.randn(3, 40, 4, generator=g, dtype=torch.float64)
    y = ex.sign(F[..., 0] + 0.5 * torch.randn(3, 40, generator=g, dtype=torch.float64))
    Ft = torch.randn(3, 300, 4, generator=g, dtype=torch.float64)
    yt = ex.sign(Ft[..., 0])
    ours = ex.probe_accuracy(F, y, Ft, yt, 1.0)
    sk = multiclass_probe(F, y, {"test": (Ft, yt)}, C=1.0)["test"]
    assert torch.allclose(ours, torch.tensor(sk, dtype=torch.float64), atol=2 / 300)


def test_runs_at_tiny_size_return_the_expected_shapes_and_feasible_weights():
    run = start_run("ci", 0, "cpu")
    a = ex.allocation(TINY, run)
    assert a.alpha.shape == (1, 2) and torch.all(a.alpha == 1.0) and a.beta_error() < 1e-12
    p = ex.pretrain(TINY, run)
    assert p.W.shape == (2, 6, 25, 35) and p.names[-2:] == ["task 2", "task 3"]
    assert (torch.linalg.matrix_norm(p.W, 2) <= 1 + 1e-9).all()
    assert (torch.linalg.matrix_norm(p.W) <= math.sqrt(10) + 1e-9).all()
    assert torch.allclose(p.weights.sum(-1), p.W.pow(2).sum((-1, -2)))  # M orthogonal: weights sum to ||W||_F^2
    tr = ex.tradeoff(TINY, run, p)
    assert tr.learned.target.shape == (1, 4, 4) and tr.large.target.shape == (1, 2, 4)
    # the closed-form average at n = T is the target accuracy (every task in the mixture)
    assert torch.allclose(tr.large.average[:, -1], tr.large.target[:, -1])
    # target 1's drop from its own pre-training to all tasks is the learned curve's first-to-last drop
    assert tr.alone_vs_all.shape == (3, 1, 4)
    assert torch.allclose(tr.alone_vs_all[0, 0], tr.learned.target[0, 0] - tr.learned.target[0, -1])
    further = ex.further_target_drops(TINY, run, p)  # (targets, chunks x replicas x draws)
    assert further.shape == (3, TINY.tradeoff.advantage_chunks * 2 * 2)
    same = ex.further_probes(TINY, run, p.model, p.W[:, [0, 0]], 0, (20,), "same")  # one representation twice
    assert torch.equal(same, torch.zeros_like(same))  # paired: the same labelled and test points
    f = ex.finetune(TINY, run)
    assert f.W.shape == (2, 2, 25, 35) and ex.further_finetune_gain(TINY, run, f).shape == (further.shape[1],)
    assert (f.distance <= torch.tensor([0.0, 0.5], dtype=torch.float64) + 1e-9).all()
    assert (f.spectral <= 1 + 1e-9).all()
    assert f.accuracy.shape == (1, 3, 4)
    fu = ex.finetune(TINY, run, universal=True)  # W* probed last, on the same labelled sets
    assert fu.accuracy.shape == (1, 4, 4) and torch.equal(fu.accuracy[:, :3], f.accuracy)
    f2 = ex.finetune(TINY, run, T=2, gammas=(1.0,), ms=(20,))
    assert f2.weights.shape == (2, 1, f2.model.d) and f2.model.T == 2 and f2.predicted == (1.0,)
    nb = ex.pretrain_unbudgeted(TINY, run, p)
    assert nb.weights.shape == (2, 3, 35) and nb.target.shape == (4, 3) and set(nb.cka) == {"1 vs 1-2", "1 vs 1-4"}


def test_regularised_finetune_is_paired_and_only_the_contrastive_term_differs():
    model = MultiTaskLinear.draw(2, 4, 2, 3, torch.Generator().manual_seed(4))
    small = ex.RegularisationSizes(Ts=(2,), ms=(8,), augmentations=3, steps=5, replicas=2, n_test=50, pairs=16)
    row = ex.regularised_finetune(model, 8, small, torch.Generator().manual_seed(5), 1.0)
    assert row.lp.shape == row.ft.shape == row.ours.shape == (2,)
    assert ((row.ft >= 0) & (row.ft <= 1)).all() and (row.private_ft >= 0).all()
    same = ex.regularised_finetune(model, 8, override(small, lam=0.0), torch.Generator().manual_seed(5), 1.0)
    assert torch.equal(same.ft, same.ours) and torch.equal(same.private_ft, same.private_ours)
    assert torch.equal(same.ft, row.ft)  # FT does not see the contrastive term's draws


def test_source_map_is_unique_and_names_the_profile_claims():
    class Pre:
        cka = {"1 vs 1-2": None, "1 vs 1-4": None, "1 vs 2": None}

    class Row:
        def __init__(self, T, m):
            self.T, self.m = T, m

    class Enc:
        radii, spread = (0.05, 3.0), (0.24, 0.05)

    entries = ex.source_map(ex.CI, Pre(), [Row(4, 20), Row(16, 20), Row(4, 50)], Enc())
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    claims = {c for e in entries for c in e.get("claims", [])}
    assert {"cka_1_vs_1-4", "ours_beats_ft_T16", "mixture_private_weight_P4"} <= claims
    assert not any("status" in e or (e.get("not_attempted") and e.get("claims")) for e in entries)
    assert {"f9_private_weight_trend", "finetune_gain_grows_with_T"} <= claims
    assert {"thm72_every_feature_encoded", "nonlinear_target_falls", "target_falls_each_target",
            "learned_drop_shrinks_with_m"} <= claims


def test_encoding_sweep_reads_the_spread_and_the_moves_of_a_table():
    size = override(ex.CI, encoding={"probs": (0.5, 0.1), "radii": (0.5, 2.0), "restarts": 4, "steps": 50})
    e = ex.encoding_sweep(size, start_run("ci", 0, "cpu"))
    # Pr[z_{-i} equal, z_i differs] = 2 p_i (1 - p_i) (p_j^2 + (1 - p_j)^2)
    assert abs(e.spread[0] - 2 * 0.25 * (0.01 + 0.81)) < 1e-12 and abs(e.spread[1] - 2 * 0.09 * 0.5) < 1e-12
    assert e.encoding.shape == (2, 2) and ((e.encoding >= 0) & (e.encoding <= 2 + 1e-9)).all()
    assert (e.runner_up_gap >= 0).all()


def test_nonlinear_tradeoff_is_paired_at_initialisation():
    size = override(ex.CI, nonlinear={"ns": (1, 4), "replicas": 2, "steps": 0, "draws": 2, "n_test": 50})
    nl = ex.nonlinear_tradeoff(size, start_run("ci", 0, "cpu"))
    assert nl.target.shape == nl.average.shape == (2, 4)
    # untrained encoders are shared by the pre-training sets: the paired change is exactly 0
    assert torch.equal(nl.change("target"), torch.zeros(4, dtype=torch.float64))
    assert nl.trained() == (0, 4)


def test_a_claim_on_runs_that_never_trained_fails():
    """Experiment 2 with no step taken: no run reaches its training target, and a claim that reads the runs fails
    however its measurement falls; the same runs trained reach it."""
    run = start_run("ci", 0, "cpu")
    untrained = ex.pretrain(override(TINY, pretrain={"steps": 0}), run)
    assert untrained.trained() == (0, 12)
    trained = ex.pretrain(TINY, run)
    assert trained.trained() == (12, 12)
    ledger = ClaimLedger("contrastive", "test", profile="ci", seed=0)
    claim = ledger.at_least("weights", "s", "w", kind="verification", measured=1.0, bound=0.0,
                            trained=untrained.trained())
    assert claim.passed and claim.status == STATUS_UNTRAINED and not claim.ok
    assert ledger.at_least("weights_trained", "s", "w", kind="verification", measured=1.0, bound=0.0,
                           trained=trained.trained()).ok
    both = trained_runs(trained.trained(), untrained.trained())
    assert both == (12, 24) and ledger.at_least("both", "s", "w", kind="verification", measured=1.0, bound=0.0,
                                               trained=both).status == STATUS_UNTRAINED


def test_training_targets_count_nan_as_not_reached_and_an_unmoved_optimum_as_reached():
    nan = torch.tensor([0.01, float("nan")], dtype=torch.float64)
    target = ex.TrainingTarget(start=torch.tensor([0.7, 0.7]), final=nan, optimum=torch.tensor([0.0, 0.0]))
    assert target.counts() == (1, 2)
    at_optimum = ex.TrainingTarget(start=torch.tensor([0.3]), final=torch.tensor([0.3]), optimum=torch.tensor([0.3]))
    assert at_optimum.counts() == (1, 1)  # fine-tuning with gamma = 0 starts and stays at its optimum
    half = ex.TrainingTarget(start=torch.tensor([1.0]), final=torch.tensor([0.5]), optimum=torch.tensor([0.0]))
    assert half.counts() == (0, 1)


def test_untrained_fine_tuning_fits_do_not_reach_their_target():
    model = MultiTaskLinear.draw(2, 4, 2, 3, torch.Generator().manual_seed(4))
    small = ex.RegularisationSizes(Ts=(2,), ms=(8,), augmentations=3, steps=0, replicas=2, n_test=50, pairs=16)
    row = ex.regularised_finetune(model, 8, small, torch.Generator().manual_seed(5), 1.0)
    assert torch.allclose(row.train_loss, torch.full((2, 2), math.log(2), dtype=torch.float64))  # the zero head
    assert row.trained() == (0, 4)
    f = ex.finetune(override(TINY, finetune={"steps": 0}), start_run("ci", 0, "cpu"))
    assert f.trained() == (2, 4)  # two replicas: gamma = 0 is its own optimum; gamma = 0.5 never moved

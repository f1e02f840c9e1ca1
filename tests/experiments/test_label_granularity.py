"""experiments/label_granularity.py: sizes per profile, a tiny end-to-end run, the summaries and the source's tables."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from feature_learning.book.profiles import override, start_run
from feature_learning.experiments import label_granularity as E
from feature_learning.models.patch_conv import PatchConvNet

TINY = dataclasses.replace(E.PatchModel(), n_lucky=1.0, P=12, s_star=3, d_min=16, d_spare=4, batch=16)


def test_profiles_and_derived_sizes():
    assert set(E.SIZES) == {"ci", "book", "full"}
    assert E.CI.sweep.fine_ks == (4, 8) and E.BOOK.sweep.steps == E.CI.sweep.steps
    model = E.PatchModel()
    assert model.d(8) == 32 and model.d(16) == 48 and model.width == 2222
    # the pruning margin is safe by the notes' rule at the sweep's length
    assert model.prune_margin >= model.safe_margin(E.BOOK.sweep.steps)


def test_log_times_cover_the_early_window():
    t = E.log_times(600, 40, 4)
    assert t[:5] == [0, 1, 2, 3, 4] and t[-1] == 600 and t == sorted(set(t))


@pytest.mark.parametrize("labels", E.LABELS)
def test_tiny_run_and_evaluation(labels):
    run = start_run("ci", 0, "cpu")
    r = E.train_run(TINY, 2, labels, 30, 2, run, n_log=5, early=2)
    assert r.A_common.shape[1:] == (2, 2) and r.F_normal.shape[1] == 2
    ok = ~torch.isnan(r.A_common[0])  # a class may have no singly-activated neuron at this tiny width
    assert torch.all(r.A_common[-1][ok] >= r.A_common[0][ok] - 1e-6)  # lucky neurons of the own feature only grow
    ev = E.evaluate(r.net, TINY, 2, labels, 3, (0.0, 0.2), run.generator("test"))
    assert ev.hard_acc.shape == (2, 2) and ev.normal_margin.shape == (2,)
    assert torch.all(ev.rho_half >= 0) and torch.all(ev.rho_half <= 0.2)


def test_same_batches_for_coarse_and_fine():
    """Coarse and fine runs at the same k draw the same batch stream (only the labels differ)."""
    run = start_run("ci", 3, "cpu")
    data = TINY.data(2)
    a = data.sample(2, run.generator("batches", "sweep", 2, "exact"))[0]
    b = data.sample(2, run.generator("batches", "sweep", 2, "exact"))[0]
    assert torch.equal(a, b)


def test_margin_slope_is_exact_for_a_power_law():
    class Ev:
        def __init__(self, m):
            self.hard_margin = torch.tensor(m)

    sweep = E.Sweep(runs={("coarse", k): None for k in (4, 8, 16)},
                    evals={("coarse", k): Ev([3.0 / k, 5.0 / k**0.5]) for k in (4, 8, 16)})
    assert np.allclose(E.margin_slope(sweep, "coarse"), [-1.0, -0.5])
    # with as many replicas at every k the slope estimate is the mean of the per-replica slopes
    assert np.isclose(E.slope_estimate(sweep, "coarse").value, -0.75)


def test_slope_estimate_takes_more_replicas_at_one_k():
    class Ev:
        def __init__(self, m):
            self.hard_margin = torch.tensor(m)

    margins = {4: [0.25, 0.25, 0.25, 0.25], 8: [0.125, 0.125], 16: [1 / 16, 1 / 16]}
    sweep = E.Sweep(runs={("coarse", k): None for k in margins},
                    evals={("coarse", k): Ev(m) for k, m in margins.items()})
    est = E.slope_estimate(sweep, "coarse")
    assert np.isclose(est.value, -1.0) and est.se < 1e-9
    assert len(E.margin_slope(sweep, "coarse")) == 2  # paired over the replicas every k has


def test_source_constants_and_table6():
    # the source's constants at d = 32: well under one singly activated neuron per output, and the event of
    # Props. 1-2 needs d of order 10^39-10^40
    assert E.source_lucky_mean(32, 8, "coarse") < 0.2 and E.source_lucky_mean(32, 8, "fine") < 0.2
    assert 1e35 <= E.source_event_dimension(8, "coarse") <= 1e45
    model = E.source_model(E.PatchModel(), 8, "coarse", E.SOURCE_C0)
    assert abs(model.tau - (4.2 * np.log(32)) ** 0.5) < 1e-12 and abs(model.lam - np.log(32) ** 5) < 1e-9
    assert abs(E.table6_ratio_bound() - 0.03 / 0.07) < 1e-9  # G = 273: 4.86 - 4.83 over 4.90 - 4.83
    assert E.checkpoint_steps(E.CI.hierarchy) == (56, 78)


def test_empirical_arithmetic():
    a = E.empirical_arithmetic()
    assert abs(a["relative_gain"] - 8.76) < 0.005
    assert a["best_G_resnet34"] == 1103 and a["best_G_resnet50"] == 1103
    assert a["split_appendix_gap"] == 0 and a["split_main_gap"] == 90
    assert a["table3_vs_table10"] == 0 and a["random_ids_over_11"] == 0
    assert a["in1k_best_minus_baseline"] > 0 and a["cross_monotone"] == 1
    panels = E.empirical_panels()
    assert [len(p) for p in panels] == [2, 2, 1]


def test_hierarchy_label_functions_nest_as_intended():
    run = start_run("ci", 0, "cpu")
    hs = E.CI.hierarchy
    tree = E.hierarchy_tree(E.PatchModel(), hs)
    leaves = torch.arange(tree.n_leaves).repeat_interleave(6)
    X, _, _ = tree.sample(len(leaves), run.generator("t"), leaves=leaves)
    sup = tree.ancestor(leaves, 0)
    for name in E.HIERARCHY_RUNS:
        lab = E.pretraining_labels(name, tree, leaves, X, hs, run.generator("l", name), seed=0)
        assert lab.shape == leaves.shape
        if name == "leaf pairs":
            assert torch.equal(lab, leaves // 2) and int(lab.max()) + 1 == tree.n_leaves // 2
        if name not in ("k-means global",):
            # every label except the global clustering lies inside one superclass
            for g in torch.unique(lab):
                assert len(torch.unique(sup[lab == g])) == 1


def test_claim_estimates_carry_failing_nulls():
    """The feature-growth nulls (frequency-blind growth) and the robustness null (a learner against itself) fail
    the claims' tests; halves_rate applies a (mean, se) test to each half of the replicas."""
    sw = E.SweepSizes(coarse_ks=(4, 8), fine_ks=(4,))
    ones = np.ones(4)
    summary = {("coarse", k): {"ratio_k": ones, "early_rel": ones, "rho_half": 0.1 * ones} for k in (4, 8)}
    summary[("fine", 4)] = {"early_rel": ones, "rho_half": 0.3 + 0.01 * np.arange(4)}
    est = E.feature_estimates(summary, sw)
    assert est["ratio_law_k8"].value == 1.0 and abs(est["ratio_law_k8"].null.value - 1.0) > 0.15
    assert abs(est["early_coarse_k4"].null.value - 1.0) > 0.15 and abs(est["early_fine_k4"].null.value - 1) > 0.15
    rob = E.robustness_estimate(summary, 4)
    assert rob.value > E.ROBUSTNESS_GAP and rob.null.value < E.ROBUSTNESS_GAP
    assert E.halves_rate([1.0, 1.1, -1.0, -1.1], lambda m, se: m > 0) == (1, 2)
    d = E.paired_difference({"a": [1.0, 2.0], "b": [0.5, 1.0]}, "a", "b")
    assert d.value == 0.75 and d.null.value == 0.0


def test_source_map_names_only_claims_of_the_profile():
    ids = [e["id"] for e in E.source_map(E.CI)]
    assert len(ids) == len(set(ids))
    claims = {c for e in E.source_map(E.CI) for c in e.get("claims", [])}
    assert "robustness_k16" not in claims and "robustness_k8" in claims
    assert {c for e in E.source_map(E.BOOK) for c in e.get("claims", [])} >= {"robustness_k16", "early_fine_k16"}
    for e in E.source_map(E.CI):  # an entry has claims, or says why not; never both claims and "not attempted"
        assert bool(e.get("claims")) != bool(e.get("not_attempted") or e.get("not_testable")) or "printed" in e


def test_untrained_evaluation_is_the_trained_runs_initialisation():
    run = start_run("ci", 0, "cpu")
    size = override(E.CI, model={"n_lucky": 1.0, "P": 12, "s_star": 3, "d_min": 16, "d_spare": 4, "batch": 16},
                      sweep={"coarse_replicas": 2, "n_test": 2, "rhos": (0.0, 0.2)})
    ev = E.untrained_evaluation(size, run, 2, "coarse")
    assert ev.normal_margin.shape == (2,) and torch.all(ev.normal_margin.abs() < 0.1)  # outputs of order sigma0


def test_a_claim_on_an_untrained_run_fails():
    """The training guard: a run stopped before it learned (one step: outputs of order sigma0)
    misses the training target (training loss at most TRAIN_LOSS_FRACTION of ln C), so a claim measured on it fails
    whatever it measured; the same claim on a trained run passes its guard."""
    from feature_learning.book.claims import STATUS_UNTRAINED, ClaimLedger
    from feature_learning.measure.statistics import Null

    run = start_run("ci", 0, "cpu")
    untrained = E.train_run(TINY, 2, "coarse", 1, 2, run, n_log=2, early=0)
    trained = E.train_run(TINY, 2, "coarse", 200, 2, run, n_log=5, early=0)
    assert not untrained.reached().any() and trained.reached().all()
    assert E.trained(untrained) == (0, 2) and E.trained(untrained, trained) == (2, 4)
    led = ClaimLedger("label_granularity", "test", profile="ci", seed=0)
    kw = dict(kind="reproduction", measured=1.0, bound=0.5, null=Null(0.0, "chance"))
    assert led.at_least("on_untrained", "s", "w", trained=E.trained(untrained, trained), **kw).status == \
        STATUS_UNTRAINED
    assert not led.claims[-1].ok
    assert led.at_least("on_trained", "s", "w", trained=E.trained(trained), **kw).ok
    # the hierarchy's guard: merged superclass loss on the training images at most half of ln K0; a NaN never passes
    h = E.HierarchyRun(name="x", G=2, hard_acc=torch.zeros(3, 2), normal_acc=torch.ones(3), hard_margin=torch.ones(3),
                       purity=torch.ones(3), leaf_purity=torch.ones(3), n_super=2,
                       train_loss=torch.tensor([0.01, np.log(2.0), float("nan")]))
    assert h.reached().tolist() == [True, False, False] and E.trained(h) == (1, 3)


def test_prop2_expected_sets_match_direct_tails_and_their_limits():
    """Prop. 2's exact means in log space agree with the direct normal tails where those are accurate (d = 100), and
    approach the derived limits 1/sqrt(4 pi (1 + c0)) and 2 + 2 c0."""
    from scipy.stats import norm

    p2 = E.prop2_expected_sets(k=8, c0=0.1, exponents=(2, 12))
    d = 100.0
    ln = math.log(d)
    eps_p, eps_m = math.sqrt(2.2 * (ln + ln**-5)), math.sqrt(2.2 * (ln - ln**-5))
    m = d**1.2
    star = m * norm.sf(eps_p) * norm.cdf(eps_m) ** 17
    scale = d**0.1 / math.sqrt(ln)
    assert p2["star"][0] == pytest.approx(star / scale, rel=1e-9)
    assert p2["all"][0] == pytest.approx(m * norm.sf(eps_m) / scale, rel=1e-9)
    assert p2["ratio_gap"][0] == pytest.approx((1 - star / (m * norm.sf(eps_m))) * ln**5, rel=1e-6)
    assert p2["star"][-1] == pytest.approx(p2["limit"], rel=0.03)
    assert p2["ratio_gap"][-1] == pytest.approx(p2["gap_limit"], rel=0.03)


def test_cross_probe_hidden_layer_ridge_and_margin():
    """The hidden layer summed over each output group is the network's output; the ridge probe separates classes
    carried by distinct neurons whatever the representation's overall scale; the margin is Table 4's lead of the
    leaves over level 1, rounded down."""
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(2, 3, 5, 6, generator=gen)
    b = -0.1 * torch.ones(2, 3, 5)
    pnet = PatchConvNet(W=W, b=b)
    X = torch.randn(7, 4, 6, generator=gen)
    H = E.hidden_layer(pnet, X, chunk=3)
    assert H.shape == (2, 7, 15)
    F = pnet(X.unsqueeze(0).expand(2, -1, -1, -1)).double()
    assert torch.allclose(H.view(2, 7, 3, 5).sum(-1), F, atol=1e-5)
    y = torch.arange(40) % 4
    Hc = 1e-4 * (torch.nn.functional.one_hot(y, 4).double() + 0.1 * torch.rand(40, 4, generator=gen).double())
    assert (E.ridge_probe(Hc.unsqueeze(0), y, Hc.unsqueeze(0), 4, 1e-2) == y).all()  # the scale is normalised away
    assert E.cross_probe_margin() == 0.03
    assert E.cross_probe_ceiling(0.96, 0.9) is None, "below ceiling the lead can reach the margin: testable"
    assert "at ceiling" in E.cross_probe_ceiling(0.99, 1.0), "above 1 - margin no lead can reach it"

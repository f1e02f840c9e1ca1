"""The nuclear-norm chapter's runs at tiny sizes: what they measure agrees with independent computations."""

import dataclasses

import torch

from feature_learning.book.profiles import override, start_run
from feature_learning.experiments import nuclear_norm as ex
from feature_learning.measure.statistics import Null
from feature_learning.theory import nuclear_norm as th

TINY = override(
    ex.CI,
    population={"samples": 20_000, "full_samples": 4000, "support_samples": 5000, "sweep_gaps": (10, 251),
                "lambdas": (0.01, 1.0)},
    finite={"n": 800, "test": 2000, "steps": 100, "nu_steps": 60, "nu_lambdas": (0.03,), "nu_small_lambdas": (0.03,)},
    toy={"n": 300, "test": 20_000, "steps": 200, "seeds": 1},
    analogue={"steps": 30, "lambdas": (0.0, 0.01), "seeds": 2, "n_per_domain": 200, "n_test": 200},
)


def test_population_block_optimum_is_stationary_for_the_full_problem():
    p = ex.population(TINY, start_run("ci", 0))
    opt = p.optima[0]
    assert 0 < opt.beta < opt.alpha and opt.ood_accuracy == 0.0 and opt.id_accuracy == 1.0
    assert p.block_means_gap() < 1e-2
    assert p.best_supports()[2] in {(0, 1), (0, 2), (1, 2)}  # an invariant pair (Lemma 6.2)
    assert p.best_supports_text() == "; ".join(f"B={b}: {{{', '.join(map(str, s))}}}"
                                               for b, s in p.best_supports().items())
    assert p.best_supports_text().startswith("B=1: {")
    assert p.rank_ood_accuracy == 1.0  # ERM-rank trained by IHT, its support found, not assumed
    assert int((p.rank_w != 0).sum()) == TINY.population.r and p.rank_support_in_R == 1.0
    assert p.sweep[0].ood_accuracy == 1.0 and p.sweep[-1].ood_accuracy == 0.0


def test_finite_sample_methods_and_the_nu_loss():
    f = ex.finite_sample(TINY, start_run("ci", 0))
    assert f.get("ERM-l2").ood_accuracy < 0.05
    iht = f.get("IHT")
    assert int((iht.w != 0).sum()) <= TINY.finite.iht_budgets[0] and (iht.w[TINY.finite.r:] == 0).all()


def test_toy_accuracies_follow_the_formulas():
    toy = ex.toy_2d(TINY, start_run("ci", 0))
    for r in toy.runs:
        assert float(r.first.min()) > 0
        assert abs(float(r.id_formula[0]) - th.toy_2d_accuracies(float(r.slopes[0]), 0.7)) < 1e-15
    assert toy.max_formula_gap() < 0.02


def test_domain_analogues_have_the_shapes_and_ranges():
    for which in ("synthetic", "digits"):
        a = ex.domain_analogue(TINY, start_run("ci", 0), which)
        assert a.id_accuracy.shape == (2, 2) and ((a.ood_accuracy >= 0) & (a.ood_accuracy <= 1)).all()
        assert (a.stable_rank >= 1).all()
    assert dataclasses.is_dataclass(a)


def test_ci_and_full_change_only_sizes():
    assert ex.SIZES["ci"].population.r == ex.SIZES["book"].population.r
    assert torch.is_tensor(torch.tensor(ex.SIZES["full"].analogue.lambdas))


def test_analogue_claim_statistics_pair_by_seed_and_count_monotone_seeds():
    acc = torch.tensor([[0.5, 0.6, 0.7], [0.6, 0.6, 0.9], [0.2, 0.2, 0.2]], dtype=ex.DTYPE)  # (lambda, seed)
    ranks = torch.tensor([[3.0, 3.0, 3.0], [2.0, 3.5, 2.5], [1.0, 1.0, 2.5]], dtype=ex.DTYPE)
    an = ex.Analogue("demo", (0.0, 0.01, 0.3), acc, acc, {}, ranks, 0.2)
    gain = an.change(an.ood_accuracy, 0.01, Null(0.0, "ERM"))
    assert abs(gain.value - 0.1) < 1e-12 and abs(gain.se - (0.1 / 3**0.5)) < 1e-12 and gain.null.model == "ERM"
    assert abs(an.ood_at(0.3).value - 0.2) < 1e-12 and an.ood_at(0.3).se < 1e-12
    means, falls, rate = an.stable_rank_falls()
    assert max(abs(m - t) for m, t in zip(means, [3.0, 8 / 3, 1.5], strict=True)) < 1e-12
    assert falls and rate == (1, 3)  # the mean falls; seed 0 falls, seed 1 rises, seed 2 ends flat


def test_printed_stable_rank_is_not_scale_free():
    ours, printed = ex.stable_rank_scaling(torch.Generator().manual_seed(0))
    assert abs(ours - 1) < 1e-12 and abs(printed - 2) < 1e-12


def test_source_map_is_unique_and_types_no_status():
    assert len({e["id"] for e in ex.SOURCE_MAP}) == len(ex.SOURCE_MAP)
    for e in ex.SOURCE_MAP:
        assert "status" not in e and ("printed" in e) == ("correct" in e)
        assert e.get("claims") or e.get("not_attempted") or e.get("not_testable")


def test_table_6_1_is_self_consistent_and_table_e3_swaps_its_labels():
    from feature_learning.theory import nuclear_norm as theory

    t61 = theory.TABLE_6_1
    for method in ("Fishr", "mDSDI"):
        assert abs(sum(t61[method][:5]) / 5 - t61[method][5]) < 0.05
    e3 = {m: sum(v) / len(v) for m, v in theory.TABLE_E3_OFFICEHOME.items()}
    assert abs(e3["Fishr"] - t61["mDSDI"][2]) < 0.05 and abs(e3["mDSDI"] - t61["Fishr"][2]) < 0.05
    assert abs(e3["Fishr"] - t61["Fishr"][2]) > 1


def test_mixup_and_class_count_variants_share_the_data_and_measure_the_untrained_featurizer():
    run = start_run("ci", 0)
    erm = ex.domain_analogue(TINY, run, "synthetic", lambdas=(0.0,))
    mix = ex.domain_analogue(TINY, run, "synthetic", lambdas=(0.0, 0.01), mixup=0.2)
    ten = ex.domain_analogue(TINY, run, "synthetic", lambdas=(0.0,), classes=10)
    assert mix.name == "synthetic_mixup" and mix.ood_accuracy.shape == (2, 2) and ten.chance == 0.1
    assert not torch.equal(mix.ood_accuracy[:1], erm.ood_accuracy)  # Mixup trains differently on the same data
    for a in (erm, mix, ten):
        assert a.init_stable_rank.shape == a.stable_rank.shape and (a.init_stable_rank >= 1).all()
    ranks, falls, rate = mix.stable_rank_falls_up_to(0.001)
    assert len(ranks) == 1 and falls and rate == (2, 2)  # one lambda: trivially monotone


def test_the_training_target_and_a_claim_on_models_that_never_trained():
    from feature_learning.book.claims import STATUS_UNTRAINED, ClaimLedger

    assert bool(ex.reached_target(1.0, 0.5, 0.5)) and not bool(ex.reached_target(1.0, 1.0, 1.0))  # never trained
    assert not bool(ex.reached_target(1.0, 0.3, 0.9))  # rose over the last tenth: oscillating
    assert bool(ex.target_reached([0, 8, 9, 10], [1.0, 0.6, 0.5, 0.5], 10))
    assert not bool(ex.target_reached([0], [1.0], 0))  # no step at all
    assert not bool(ex.target_reached([0, 8, 9, 10], [1.0, 0.3, 0.5, 0.5], 10))  # rising over the last tenth
    untrained = override(TINY, finite={"steps": 0, "nu_steps": 0}, toy={"steps": 0})
    run = start_run("ci", 0)
    fin, toy = ex.finite_sample(untrained, run), ex.toy_2d(untrained, run)
    assert not any(m.reached for m in fin.methods) and toy.trained() == (0, 4)
    assert all(m.reached for m in ex.finite_sample(TINY, run).methods)
    led = ClaimLedger("nuclear_norm", "test", profile="ci", seed=0)
    l2 = fin.get("ERM-l2")  # untrained: w = 1e-3 everywhere, OOD accuracy 0, so the bound alone would pass
    claim = led.at_most("fin_l2_ood", "s", "w", kind="verification", measured=l2.ood_accuracy, bound=0.01,
                        trained=fin.trained(l2))
    assert l2.ood_accuracy <= 0.01 and claim.status == STATUS_UNTRAINED and not claim.ok
    a = ex.domain_analogue(override(TINY, analogue={"steps": 0}), run, "digits")
    assert a.trained() == (0, 4) and a.trained(0.0) == (0, 2)

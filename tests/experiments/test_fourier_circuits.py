"""The Fourier-circuit chapter's sizes, recipes, trainers and runs, checked against independent computations."""

import math
import types

import pytest
import torch
import torch.nn.functional as F

from feature_learning.book.profiles import ParameterError, differences, start_run
from feature_learning.data.modular import modular_addition
from feature_learning.experiments import fourier_circuits as ex
from feature_learning.experiments.fourier_circuits import runs as fc_runs
from feature_learning.models.poly_net import init_poly_net
from feature_learning.models.transformer import init_transformer
from feature_learning.training.loop import OptimConfig


def test_sizes_validate_k_and_p_to_the_tested_range():
    assert ex.sizes("ci").margin.k == 3 and ex.sizes("ci").margin.p == 11
    assert ex.sizes("book", k=4, p=7).margin == ex.MarginSizes(k=4, p=7, seeds=3)
    with pytest.raises(ParameterError, match=r"'k' is 5"):
        ex.sizes("ci", k=5)
    with pytest.raises(ParameterError, match=r"'p' is 9.*prime"):
        ex.sizes("ci", p=9)
    with pytest.raises(ParameterError, match=r"p\^k = 14641"):
        ex.sizes("ci", k=4, p=11)
    with pytest.raises(ParameterError, match="profile"):
        ex.sizes("paper")
    assert set(ex.TESTED_PAIRS) == {(2, 5), (2, 7), (2, 11), (2, 13), (3, 5), (3, 7), (3, 11), (3, 13), (4, 5), (4, 7)}


def test_profiles_differ_from_book_only_where_they_say():
    changed = {path for path, _ in differences(ex.SIZES)}
    assert "margin.control_seeds" in changed and "split.steps" in changed
    assert ex.CI.margin.control_seeds == 1 and ex.BOOK.margin.control_seeds == ex.BOOK.margin.seeds == 3
    assert "margin.k" in changed  # full only
    assert ex.CI.margin.k == ex.BOOK.margin.k and ex.CI.grok == ex.BOOK.grok


@pytest.mark.parametrize("k,p", [(2, 5), (2, 13), (3, 11), (4, 7)])
def test_margin_width_is_at_least_the_theorem_width_and_32_per_frequency(k, p):
    width = ex.margin_width(k, p)
    assert width >= ex.theorem_width(k, p) == 2 ** (2 * k - 2) * (p - 1)
    assert width / ((p - 1) / 2) >= ex.MIN_PER_FREQUENCY
    assert ex.margin_recipe(k, p).width == width


def test_regularized_objective_is_cross_entropy_plus_the_unsquared_group_norm():
    g = torch.Generator().manual_seed(0)
    net = init_poly_net(2, 5, 6, replicas=2, generator=g)
    data = modular_addition(2, 5)
    value = ex.regularized_objective(net, data.inputs, data.labels, 0.1)
    expected = 0.0
    for r in range(2):
        logits = net.replica(r)(data.inputs)[0]
        U, W = net.U[r], net.W[r]
        norms = (U.pow(2).sum((0, 1)) + W.pow(2).sum(1)).sqrt()
        expected += F.cross_entropy(logits, data.labels) + 0.1 * norms.pow(3).sum().pow(1 / 3)
    assert float(value) == pytest.approx(float(expected), rel=1e-12)


def test_train_poly_net_returns_its_initial_network_and_logs_the_normalised_margin():
    data = modular_addition(2, 5, 1.0, torch.Generator().manual_seed(0))
    optim = OptimConfig(steps=5, lr=1e-2, betas=(0.9, 0.98), warmup=10)
    trained = ex.train_poly_net(data, 8, optim, norm_penalty=1e-3, batch_size=data.n,
                                replicas=2, generator=torch.Generator().manual_seed(1), log_every=5)
    fresh = init_poly_net(2, 5, 8, 2, ex.INIT_SCALE, torch.Generator().manual_seed(1))
    assert torch.equal(trained.initial.U, fresh.U.detach()) and torch.equal(trained.initial.W, fresh.W.detach())
    assert not torch.equal(trained.model.U, trained.initial.U)
    # the last logged margin, recomputed by hand: min over Z_p^k of (correct - best wrong) / ||theta||^(k+1)
    logits = trained.model(data.inputs)
    correct = logits.gather(2, data.labels.expand(2, -1).unsqueeze(-1)).squeeze(-1)
    wrong = logits.masked_fill(F.one_hot(data.labels, 5).bool(), float("-inf")).max(-1).values
    norm = trained.model.group_norm()
    assert torch.allclose(trained.history["margin"][-1], (correct - wrong).min(1).values / norm**3, rtol=1e-10)


def test_train_transformer_returns_its_initial_model():
    data = modular_addition(2, 5, 0.5, torch.Generator().manual_seed(0))
    size = ex.GrokSizes(pairs=((2, 5),), steps=2, seeds=(2,), width=8, heads=2)
    config = ex.transformer_config(2, 5, size)
    optim = OptimConfig(steps=2, lr=1e-2, betas=(0.9, 0.98), warmup=10)
    trained = ex.train_transformer(data, config, optim, replicas=2,
                                   generator=torch.Generator().manual_seed(3), log_every=1)
    fresh = init_transformer(config, 2, torch.Generator().manual_seed(3))
    for name, value in fresh.params.items():
        assert torch.equal(trained.initial.params[name], value.detach())
    assert not torch.equal(trained.model.params["W_Q"], trained.initial.params["W_Q"])


def test_grokking_sweep_and_attention_concentration_on_a_tiny_size():
    run = start_run("ci", 0, "cpu")
    size = ex.GrokSizes(pairs=((2, 5), (3, 5)), steps=4, seeds=(3, 2), width=8, heads=2, attention_k=3)
    grok = ex.grokking_sweep(size, run)
    assert set(grok) == {2, 3} and len(grok[2].fit) == 3 and len(grok[3].fit) == 2
    g = grok[3]
    conc = ex.attention_concentration(grok, size)
    assert conc.trained.shape == conc.initial.shape == (2, 2, 5, 5)
    # the initial attention is the initial model's, i.e. init_transformer's with the sweep's stream
    fresh = init_transformer(g.config, 2, run.generator("grok", 3))
    assert torch.allclose(conc.initial, fresh.attention_matrix(torch.arange(5)).double())
    assert ((conc.conc_trained > 0) & (conc.conc_trained <= 1 + 1e-12)).all()


def test_grokking_delay_median_and_ratio():
    inf, nan = float("inf"), float("nan")
    g = ex.GrokRun(2, 5, None, None, fit=torch.tensor([90.0, 72.0, inf, inf, 100.0], dtype=torch.float64),
                   generalise=torch.tensor([450.0, 72.0, 300.0, inf, inf], dtype=torch.float64))
    delay = g.delay
    assert delay[0] == 360 and delay[1] == 0 and delay[2] == -inf and delay[3].isnan() and delay[4] == inf
    assert math.isnan(g.median(delay))  # a replica that reached neither target is never left out
    assert g.median(delay[[0, 1, 2, 4]]) == 180  # (0 + 360) / 2 of -inf, 0, 360, inf
    assert math.isnan(g.median(g.lag_ratio))
    assert math.isnan(g.median(torch.tensor([3.0, nan, 1.0, 2.0]))) and g.median(torch.tensor([3.0, 1.0, 2.0])) == 2
    assert g.fitted == (3, 5) and g.generalised == (3, 5)
    assert math.isnan(ex.min_or_nan([1.0, nan])) and math.isnan(ex.min_or_nan([nan, 1.0]))
    assert ex.min_or_nan([2, 1]) == 1


def test_margin_run_summary_on_a_small_recipe(monkeypatch):
    optim = OptimConfig(steps=300, lr=1e-2, schedule="cosine", betas=(0.9, 0.98), warmup=10)
    recipe = ex.MarginRecipe(width=32, optim=optim)
    monkeypatch.setattr(fc_runs, "margin_recipe", lambda k, p: recipe)  # margin_run reads it from runs
    result = ex.margin_run(ex.MarginSizes(k=2, p=5, seeds=2), start_run("ci", 0, "cpu"), gamma=1.0)
    s = result.summary()
    assert s["margin_ratio"] == pytest.approx(float(result.ratio[-1].min()))
    assert s["margin_ratio_max"] >= s["margin_ratio"]
    assert result.per_frequency == 16
    assert 0 <= s["frequencies_used"] <= 2 and 0 <= s["same_frequency"] <= 1
    assert torch.equal(result.neurons.counts, torch.bincount(
        result.neurons.summary.frequency[result.neurons.active], minlength=3))


def test_grokking_glue_spells_out_censored_median_delays():
    inf = float("inf")
    trained = types.SimpleNamespace(history={"step": torch.tensor([0, 10, 20])})

    def run(k, fit, gen):
        return ex.GrokRun(k, 5, None, trained, fit=torch.tensor(fit, dtype=torch.float64),
                          generalise=torch.tensor(gen, dtype=torch.float64))

    grok = {2: run(2, [10.0, 20.0, 30.0], [50.0, 80.0, 90.0]), 3: run(3, [10.0, 10.0, 10.0], [inf, inf, 20.0]),
            4: run(4, [inf, inf, 10.0], [20.0, 30.0, 20.0])}
    attention = types.SimpleNamespace(k=3, p=5, conc_trained=torch.ones(2, 2), conc_initial=torch.ones(2, 2) / 4,
                                      off_trained=torch.ones(2, 2) / 2, off_initial=torch.ones(2, 2) / 8)
    out = ex.grokking_glue(grok, attention)
    assert out["delay_text_k2"] == "60 steps" and out["delay_median_k2"] == 60 and out["ratio_text_k2"] == "4.0"
    # k=3: two replicas never generalise within the 20 steps: delays at least 20 - 10, so the median is at least 10
    assert out["delay_text_k3"].startswith("at least 10 steps") and math.isnan(out["delay_median_k3"])
    # k=4: two never fit: delays at most 20 - 20 and 30 - 20, the third 10: the median lies in [-inf, 10]
    assert out["delay_text_k4"].startswith("at most 10 steps") and out["ratio_text_k4"] == "0.0 to 1.5"
    assert out["fit_k4"] == "never, never, 10" and out["log_interval"] == 10 and out["seeds_k3"] == 3


def test_censored_bounds_count_every_replica():
    inf = float("inf")
    trained = types.SimpleNamespace(history={"step": torch.tensor([0, 50, 100])})
    g = ex.GrokRun(2, 5, None, trained, fit=torch.tensor([90.0, 72.0, inf, inf, 100.0], dtype=torch.float64),
                   generalise=torch.tensor([450.0, 72.0, 300.0, inf, inf], dtype=torch.float64))
    lo, hi = g.delay_bounds
    assert lo.tolist() == [360.0, 0.0, -inf, -inf, 0.0] and hi.tolist() == [360.0, 0.0, 200.0, inf, inf]
    assert not (lo.isnan().any() or hi.isnan().any())
    assert g.median_bounds(g.delay_bounds) == (0.0, 360.0)
    assert g.median_bounds(g.fit_bounds) == (100.0, 100.0) and g.median_measured  # 3 of 5 fit
    assert ex.bounds_text(0.0, 360.0) == "0 to 360" and ex.bounds_text(-inf, inf) == "unbounded"
    g.fit[0] = inf
    assert not g.median_measured and g.median_bounds(g.fit_bounds) == (100.0, inf)


def test_median_lag_ratio_carries_a_bootstrap_se_and_the_no_grokking_null():
    trained = types.SimpleNamespace(history={"step": torch.tensor([0, 50, 100])})
    g = ex.GrokRun(2, 5, None, trained, fit=torch.tensor([10.0, 10.0, 10.0, 10.0, 10.0], dtype=torch.float64),
                   generalise=torch.tensor([30.0, 40.0, 50.0, 60.0, 70.0], dtype=torch.float64))
    est = g.median_lag_ratio()
    assert est.value == 5.0 and 0 < est.se < 2 and est.null.value == 1.0
    never = ex.GrokRun(2, 5, None, trained, fit=torch.tensor([10.0, 10.0, 10.0], dtype=torch.float64),
                       generalise=torch.tensor([30.0, 50.0, float("inf")], dtype=torch.float64))
    est = never.median_lag_ratio()  # the never-generalising replica counts as 100 / 10 for the se only
    assert est.value == 5.0 and 0 < est.se < 4


def _grok_run(k, fit, gen, steps=(0, 50, 100)):
    fit, gen = torch.tensor(fit, dtype=torch.float64), torch.tensor(gen, dtype=torch.float64)
    history = {"step": torch.tensor(steps), "train_acc": torch.zeros(len(steps), len(fit))}
    return ex.GrokRun(k, 5, None, types.SimpleNamespace(history=history), fit=fit, generalise=gen)


def _delays(k, delays):
    d = [float(x) for x in delays]
    return _grok_run(k, [10.0] * len(d), [10.0 + x for x in d])


def test_weaker_at_k_compares_the_named_k_and_its_pairs():
    grok = {2: _delays(2, [100, 200, 300]), 3: _delays(3, [150, 50, 250]), 4: _delays(4, [10, float("inf"), 20])}
    assert ex.weaker_at_k(grok, 4)  # median 20 < 150, 200
    assert ex.weaker_at_k(grok, 4, [0, 2]) and not ex.weaker_at_k(grok, 4, [0, 1])  # (10 + inf) / 2
    assert ex.weaker_at_k_pairs(grok, 4) == (1, 3)
    grok[5] = _delays(5, [-500, -400, -600])  # a larger k does not replace the named one
    assert ex.weaker_at_k(grok, 4) and ex.weaker_at_k(grok, 5)
    grok[4] = _delays(4, [400, 500, 600])
    assert not ex.weaker_at_k(grok, 4) and ex.weaker_at_k(grok, 5)
    assert ex.monotone_in_k({2: grok[2], 3: _delays(3, [50, 60, 70]), 4: _delays(4, [10, 20, 30])})
    assert not ex.monotone_in_k(grok)


def test_weaker_at_k_is_false_on_a_nan_median_whatever_the_order():
    inf = float("inf")
    never = _grok_run(3, [inf, inf, inf], [inf, inf, inf])  # delay inf - inf: nan
    for order in ((2, 3, 4), (3, 2, 4)):
        runs = {2: _delays(2, [100, 200, 300]), 3: never, 4: _delays(4, [10, 20, 30])}
        grok = {k: runs[k] for k in order}
        assert not ex.weaker_at_k(grok, 4) and not ex.monotone_in_k(grok)
        assert ex.fitted_below(grok, 4) == (6, 9)
    grok = {2: _delays(2, [100, 200, 300]), 3: _delays(3, [50, 60, 70]), 4: never}
    assert not ex.weaker_at_k(grok, 4)


def _ledger():
    from feature_learning.book.claims import ClaimLedger

    return ClaimLedger("fourier_circuits", "test", profile="ci", seed=0)


def _attention(k, replicas=5, ratio=4.0):
    conc = torch.full((replicas, 2), 0.1, dtype=torch.float64)
    trained = conc * ratio + 0.01 * torch.arange(replicas)[:, None]
    return ex.AttentionConcentration(k, 5, torch.zeros(replicas, 2, 5, 5), torch.zeros(replicas, 2, 5, 5),
                                     trained, conc, trained, conc)


def _full_like_sweep():
    """The stored full run's pattern: k = 3 and 4 never fit nor generalise, k = 5 generalises before it fits."""
    inf = float("inf")
    return {2: _grok_run(2, [100.0, 100.0, 100.0], [90.0, 60.0, 80.0]),
            3: _grok_run(3, [inf, inf, inf], [inf, inf, inf]), 4: _grok_run(4, [inf, inf, inf], [inf, inf, inf]),
            5: _grok_run(5, [100.0, 100.0, inf], [50.0, 20.0, 30.0])}


def test_transformer_claims_cannot_pass_on_replicas_that_never_learned():
    ledger = _ledger()
    ex.record_transformer_claims(ledger, _full_like_sweep(), _attention(4))
    claims = {c.id: c for c in ledger.claims}
    for cid in ("grokking_weaker_at_k4", "grokking_weaker_at_k4_two", "grokking_monotone_in_k", "transformers_fit",
                "fit_steps_grow_with_k", "transformer_concentration", "transformer_concentration_5",
                "grokking_present_every_k"):
        assert not claims[cid].ok, cid
    assert claims["grokking_weaker_at_k4"].trained == (1, 3)  # medians measured at k=2 only
    assert "k=4: unbounded" in claims["grokking_weaker_at_k4"].measured
    assert "k=5" not in claims["grokking_weaker_at_k4"].measured
    assert claims["transformer_concentration"].trained == (0, 3)
    assert claims["grokking_present_every_k"].trained == (2, 4)  # k=5: two of three fit
    assert claims["grokking_present_every_k"].measured == 0.0  # the lower bound where no replica fits
    assert not claims["transformers_fit_all"].passed


def test_grokking_present_k2_fails_when_a_replica_never_fits():
    inf = float("inf")
    grok = {2: _grok_run(2, [10.0, 10.0, inf], [50.0, 60.0, 70.0]), 3: _delays(3, [5, 6, 7]),
            4: _delays(4, [1, 2, 3])}
    ledger = _ledger()
    ex.record_transformer_claims(ledger, grok, _attention(3))
    claims = {c.id: c for c in ledger.claims}
    assert not claims["grokking_present_k2"].ok and claims["grokking_present_k2"].trained == (2, 3)
    assert claims["grokking_present_k2"].measured == "nan"
    # the censored medians: two of three k=2 replicas fit, and the third (never fits, generalises at step 70 of 100)
    # has a delay of at most -30: counted, not dropped
    assert claims["transformers_fit"].ok and claims["grokking_weaker_at_k4"].ok
    assert claims["grokking_weaker_at_k4"].trained == (3, 3) and "k=2: 40" in claims["grokking_weaker_at_k4"].measured
    assert not claims["transformers_fit_all"].passed and claims["transformers_fit_all"].ok  # declared inconclusive


def test_transformer_claims_pass_on_a_sweep_that_learned():
    grok = {2: _delays(2, [100, 200, 300]), 3: _grok_run(3, [20.0] * 3, [60.0, 70.0, 80.0]),
            4: _grok_run(4, [30.0] * 3, [30.0, 40.0, 50.0])}
    ledger = _ledger()
    ex.record_transformer_claims(ledger, grok, _attention(3))
    claims = {c.id: c for c in ledger.claims}
    for cid in ("grokking_present_k2", "grokking_weaker_at_k4", "grokking_monotone_in_k", "transformers_fit",
                "fit_steps_grow_with_k", "transformer_concentration"):
        assert claims[cid].ok, (cid, claims[cid].status)


def test_attention_ratio_per_replica_and_its_five_replica_blocks():
    trained = torch.tensor([[0.8, 0.6]] * 5 + [[0.3, 0.3]] * 5, dtype=torch.float64)
    initial = torch.full((10, 2), 0.2, dtype=torch.float64)
    conc = ex.AttentionConcentration(3, 5, None, None, trained, initial)
    est = conc.ratio()
    assert est.value == pytest.approx((3.5 * 5 + 1.5 * 5) / 10) and est.null.value == 1.0
    first = conc.ratio(slice(0, 5))
    assert first.value == pytest.approx(3.5) and first.se == pytest.approx(0, abs=1e-12)
    assert conc.ratio_halves(2.0) == (1, 2)


def test_neuron_stats_count_one_sparse_neurons_and_their_balance():
    from feature_learning.models.poly_net import poly_net_from_neurons

    p, k = 5, 2
    a = torch.arange(p, dtype=torch.float64)
    rows = []
    for zeta in (1, 1, 2):  # two neurons on frequency 1, one on frequency 2: pure cosines with the phase law
        c = torch.cos(2 * torch.pi * zeta * a / p)
        rows.append(torch.stack([c, c, c]))
    parts = torch.stack(rows)  # (m, k+1, p)
    net = poly_net_from_neurons(parts[:, :k], parts[:, k])
    stats = ex.neuron_stats(net, p)
    assert stats.sparse.all() and stats.used_sparse == 2
    assert stats.balance_sparse == pytest.approx(1 / 3)  # counts (2, 1) against their mean 1.5
    random = init_poly_net(k, p, 40, 1, ex.INIT_SCALE, torch.Generator().manual_seed(0))
    noisy = ex.neuron_stats(random, p)
    assert noisy.used == 2 and noisy.used_sparse == 0 and noisy.balance_sparse == 1.0


def test_mean_log_lag_ratio_counts_never_generalising_replicas_at_the_last_step():
    trained = types.SimpleNamespace(history={"step": torch.tensor([0, 50, 100])})
    g = ex.GrokRun(2, 5, None, trained, fit=torch.tensor([10.0, 10.0, 10.0], dtype=torch.float64),
                   generalise=torch.tensor([20.0, 40.0, float("inf")], dtype=torch.float64))
    est = g.mean_log_lag_ratio()
    logs = torch.tensor([2.0, 4.0, 10.0], dtype=torch.float64).log()
    assert est.value == pytest.approx(float(logs.mean())) and est.se == pytest.approx(float(logs.std()) / 3**0.5)
    assert est.null.value == 0.0


def test_full_trains_the_source_transformer_recipe_and_every_k_is_declared_for_it():
    assert ex.grok_recipe(ex.CI.grok) == ex.transformer_recipe(ex.CI.grok.steps)
    source = ex.grok_recipe(ex.FULL.grok)
    assert (source.lr, source.weight_decay, source.steps) == (1e-3, 1e-3, ex.FULL.grok.steps)
    with pytest.raises(ValueError, match="recipe"):
        ex.grok_recipe(ex.GrokSizes(recipe="other"))
    ledger = _ledger()
    grok = {2: _delays(2, [100, 200, 300]), 3: _grok_run(3, [20.0] * 3, [20.0, 30.0, 20.0]),
            4: _grok_run(4, [30.0] * 3, [30.0, 40.0, 50.0])}
    ex.record_transformer_claims(ledger, grok, _attention(3))
    every_k = {c.id: c for c in ledger.claims}["grokking_present_every_k"]
    assert every_k.source_scale_only and every_k.status == "not reproduced below the source's scale"
    assert every_k.null_model is not None and every_k.not_testable is None


def test_frequency_balance_counts_the_seeds_networks_together():
    def stats(counts):
        counts = torch.tensor([0, *counts])
        return types.SimpleNamespace(sparse=None, summary=types.SimpleNamespace(
            frequency_counts=lambda p, mask: counts))

    run = ex.MarginRun(3, 5, None, None, torch.zeros(2, 2), stats([4, 2]), torch.zeros(3), stats([0, 0]),
                       [stats([4, 2]), stats([2, 4]), stats([3, 3])])
    assert run.balance_sparse() == 0.0  # (9, 9) together, though each network alone is off by a third
    run.replica_neurons = [stats([4, 2]), stats([3, 3])]
    assert run.balance_sparse() == pytest.approx(1 / 6)  # (7, 5) against 6
    run.replica_neurons = [stats([0, 0])]
    assert run.balance_sparse() == 1.0


@pytest.mark.parametrize("k,p", [(2, 5), (3, 7)])
def test_grid_logits_are_the_network_on_every_input_in_order(k, p):
    from feature_learning.data.modular import all_tuples

    net = init_poly_net(k, p, 6, replicas=2, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(net.grid(), net(all_tuples(k, p)), rtol=1e-12, atol=1e-15)
    data = modular_addition(k, p)
    assert torch.allclose(ex.regularized_objective(net, None, data.labels, 1e-3),
                          ex.regularized_objective(net, data.inputs, data.labels, 1e-3), rtol=1e-12)


def test_k5_runs_the_source_pair_at_full_and_a_smoke_run_below():
    assert ex.CI.k5 == ex.BOOK.k5 and ex.BOOK.k5.split.k == ex.FULL.k5.split.k == 5
    big = ex.FULL.k5.split
    assert (big.p, ex.theorem_width(5, big.p)) == (23, 5632)  # Figs C.3, C.4: p = 23, m = 5632
    assert (5, ex.FULL.k5.transformer_p) in ex.FULL.grok.pairs  # full reads the sweep's own k = 5 transformers
    sweep = {5: _delays(5, [10, 20, 30])}
    assert ex.k5_transformers(sweep, ex.FULL, None) is sweep[5]
    for limit in (ex.k5_limit(ex.BOOK, ex.FULL), ex.k5_split_limit(ex.BOOK, ex.FULL)):
        assert "smoke run" in limit and "`full`" in limit


def test_eval_chunk_bounds_the_hidden_layer_of_a_forward_pass():
    assert ex.eval_chunk(352 * 2) == ex.EVAL_CHUNK  # the ci split run: unchanged
    rows = ex.eval_chunk(5632 * 3)
    assert rows * 5632 * 3 <= ex.EVAL_ELEMENTS < (rows + 1) * 5632 * 3


def _test_history(final):
    final = torch.tensor(final, dtype=torch.float64)
    return {"step": torch.tensor([0, 50, 100]), "train_acc": torch.zeros(3, len(final)),
            "test_acc": torch.stack([torch.full_like(final, 0.2), final, final])}


def test_k5_claims_are_declared_below_the_source_scale_and_read_the_medians():
    from feature_learning.models.poly_net import poly_net_from_neurons

    p = 5
    c = torch.cos(2 * torch.pi * torch.arange(p, dtype=torch.float64) / p)
    net = poly_net_from_neurons(torch.stack([torch.stack([c] * 5)] * 2), torch.stack([c, c]))
    init = init_poly_net(5, p, 2, 1, ex.INIT_SCALE, torch.Generator().manual_seed(0))
    split5 = ex.SplitRun(5, p, None, 0.1, 1.0, 10, ex.neuron_stats(net, p), [ex.neuron_stats(net, p)],
                         ex.neuron_stats(init, p))
    learned = ex.GrokRun(5, 5, None, types.SimpleNamespace(history=_test_history([0.95, 0.99, 0.3])),
                         fit=torch.tensor([10.0] * 3), generalise=torch.tensor([20.0] * 3))
    ledger = _ledger()
    ex.record_k5_claims(ledger, split5, learned, ex.BOOK)
    claims = {c.id: c for c in ledger.claims}
    assert all(c.source_scale_only for c in claims.values()) and len(claims) == 3
    assert claims["k5_transformers_learn"].measured == pytest.approx(0.95)  # the median, not the mean
    assert claims["k5_transformers_learn"].null_model is not None
    assert claims["split_k5_one_sparse"].measured == pytest.approx(1.0)
    chance = ex.GrokRun(5, 5, None, types.SimpleNamespace(history=_test_history([0.2])),
                        fit=torch.tensor([float("inf")]), generalise=torch.tensor([float("inf")]))
    ledger = _ledger()
    ex.record_k5_claims(ledger, split5, chance, ex.BOOK)
    learn = {c.id: c for c in ledger.claims}["k5_transformers_learn"]
    assert learn.ok and learn.status == "not reproduced below the source's scale"

"""experiments/gemfilter.py: the chapter's sizes, trainer and runs on small models."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from feature_learning.book.profiles import differences, start_run
from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.experiments import gemfilter as experiment
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder


@pytest.mark.parametrize("profile", ["ci", "book", "full"])
def test_chapter_sizes_are_consistent(profile):
    size = experiment.SIZES[profile]
    assert size.model.d_model % size.model.n_heads == 0 and size.model.d_head % 2 == 0  # rotary pairs
    assert size.probe.length <= size.training.n_max  # the layer-by-layer study stays in distribution
    assert size.snapkv_window < size.k < size.probe.length and max(size.k_sweep) < size.probe.length
    assert size.k in size.k_sweep
    assert any(n <= size.training.n_max for n in size.grid.lengths)
    assert any(n > size.training.n_max for n in size.grid.lengths)  # the length-generalisation claim has cells


def test_book_is_the_defaults():
    assert experiment.BOOK == experiment.GemFilterSizes()


def test_ci_changes_only_what_it_says():
    changed = {path for path, _ in differences(experiment.SIZES)}
    assert "training.steps" in changed and "model.n_layers" in changed  # full's model, ci's steps
    assert experiment.CI.model == experiment.BOOK.model


def test_new_model_is_seeded_without_touching_the_global_stream():
    state = torch.random.get_rng_state()
    a, b = experiment.new_model(experiment.CI.model, 0), experiment.new_model(experiment.CI.model, 0)
    assert torch.equal(a.embed.key, b.embed.key)
    assert torch.equal(state, torch.random.get_rng_state())


def test_training_path_reduces_the_loss():
    torch.manual_seed(0)
    model = RopeDecoder(DecoderConfig(n_layers=2, d_model=32, n_heads=2))
    recipe = experiment.NeedleTraining(steps=40, batch=16, n_max=16, log_every=10, warmup=5)
    hist, converged_at = experiment.train_needle_decoder(model, recipe, torch.Generator().manual_seed(0))
    assert converged_at is None and hist["step"][-1] == 40  # not answered in 40 steps: the most steps
    assert hist["loss"].shape == (5,) and math.isnan(hist["loss"][0])
    assert hist["loss"][-1] < 0.6 * hist["loss"][1]
    assert not model.training


def test_convergence_rule():
    rule = experiment.Convergence(target=0.9, window=3, cooldown=4)
    for step, exact in enumerate([0.2, 1.0, 1.0, 0.9, 1.0]):
        rule.observe(step, exact)
        assert (rule.converged_at is None) == (step < 3)  # the mean of the last 3 reaches 0.9 at step 3
    assert rule.converged_at == 4 and rule.factor(3) == 1.0 and rule.factor(4) == 1.0
    assert rule.factor(6) == pytest.approx(0.5) and rule.factor(8) == 0.0 and rule.factor(20) == 0.0
    assert not rule.done(7) and rule.done(8)


def test_first_locating_layer_rule():
    assert experiment.first_locating_layer(np.array([0.2, 0.95, 0.99, 0.5])) == 3
    assert experiment.first_locating_layer(np.array([0.2, 0.98, 0.99, 0.5])) == 2
    assert experiment.first_locating_layer(np.array([0.2, 0.5, 0.7, 0.3])) == 3  # none locates: the best


def test_probe_set_covers_every_depth():
    vocab = experiment.CI.model.vocab
    probe = experiment.probe_set(vocab, experiment.ProbeSizes(length=20, depths=3, prompts=4),
                                 torch.Generator().manual_seed(0))
    assert len(probe) == 12 and probe.tokens.shape == (12, 23)
    assert probe.needle_pos.tolist() == [2] * 4 + [2 + round(0.5 * 19)] * 4 + [21] * 4


def test_kv_cache_sizes_and_grid_on_an_untrained_model():
    size = experiment.CI
    run = start_run("ci", 0, "cpu")
    model = experiment.new_model(DecoderConfig(n_layers=2, d_model=16, n_heads=2), 0).eval()
    tokens = experiment.timing_prompt(size.model.vocab, 40, run)
    H, e = model.config.n_heads, model.config.d_head
    assert experiment.kv_cache_sizes(model, tokens, 1, 8, 0, 4) == {"standard": 4 * 2 * 2 * H * 40 * e,
                                                                   "gemfilter": 4 * 2 * 2 * H * 8 * e}  # float32
    after = experiment.kv_cache_sizes(model, tokens, 1, 8, 2, 4)
    assert after["standard"] == 4 * 2 * 2 * H * 42 * e and after["snapkv"] == after["one-run"] == 4 * 2 * 2 * H * 10 * e


def test_prompt_memory_counts_allocations_and_repeats():
    """The measured prompt-phase memory is the same on every call; a full prefill keeps its cache (2mhnd floats,
    allocated) and so needs more than GemFilter's selection; a cached view of a larger buffer counts the buffer."""
    run = start_run("ci", 0, "cpu")
    model = experiment.new_model(DecoderConfig(n_layers=4, d_model=16, n_heads=2), 0).eval()
    tokens = experiment.timing_prompt(experiment.CI.model.vocab, 256, run)
    first, again = (experiment.prompt_memory(model, tokens, 2, 8, 4) for _ in range(2))
    assert first == again and first["gemfilter"] < first["standard"]
    kv = 4 * 2 * 4 * 16 * 256  # float32 bytes of 2mhnd
    assert first["standard"] > kv + experiment.layer_bytes(model, 4)
    with torch.no_grad():
        cache = model.prefill(tokens)[1]
        snap = experiment.snapkv_layerwise_prefill(model, tokens, 8, 4)
    assert experiment.cache_bytes(cache) == kv and experiment.cache_bytes(snap) == 4 * 2 * 4 * 16 * 7
    wide = dataclasses.replace(cache, values=[torch.zeros(1, 2, 3 * 256, 8)[:, :, :256] for _ in cache.values])
    assert experiment.cache_bytes(wide) == kv // 2 + 3 * kv // 2


def test_index_focus_shares_are_fractions_and_random_is_near_its_expectation():
    model = experiment.new_model(experiment.CI.model, 0).eval()
    probe = experiment.probe_set(model.config.vocab, experiment.ProbeSizes(64, 5, 40), torch.Generator().manual_seed(0))
    focus = experiment.index_focus(model, probe, 2, 16, 4)
    assert set(focus) == {"GemFilter", "SnapKV", experiment.RANDOM}
    for share in focus.values():
        assert share.shape == (len(probe),) and (share >= 0).all() and (share <= 1).all()
    assert abs(focus[experiment.RANDOM].mean() - 10 / 67) < 0.03  # 5 around the needle + 5 recent of 67


def test_prompt_flops_follow_the_cost_model():
    """Every layer costs the same, so layer r in full saves m/r of the prefill's FLOPs at any length; our selection
    (Q, K only at layer r) saves more, and more as attention's n^2 term comes to dominate, towards m/(r-1)."""
    model = experiment.new_model(DecoderConfig(n_layers=4, d_model=16, n_heads=2), 0).eval()
    size = dataclasses.replace(experiment.CI, k=8, timing=experiment.TimingSizes(lengths=(32, 256), repeats=1))
    rows = experiment.prompt_flops(model, 2, size, start_run("ci", 0, "cpu"))
    assert [row.length for row in rows] == [32, 256]
    for row in rows:
        assert row.speedup_full_layer == pytest.approx(4 / 2, rel=0.01)
        assert 4 / 2 < row.speedup < 4 / 1
    assert rows[1].speedup > rows[0].speedup
    # attention is counted: the full prefill's FLOPs grow faster than linearly in n
    assert rows[1].full > 8 * rows[0].full


def test_accuracy_grid_splits_at_the_training_length():
    full = np.zeros((2, 3, 4))
    full[:, 2] = 1.0  # only the longest length answered
    grid = experiment.AccuracyGrid((16, 64, 128), np.array([0.0, 1.0]), full, 1 - full, n_max=64)
    assert grid.in_distribution.tolist() == [True, True, False]
    assert grid.outcomes("full", True).shape == (16,) and grid.mean("full", True) == 0.0
    assert grid.mean("full", False) == 1.0 and grid.mean("gemfilter", False) == 0.0


def test_snapkv_beyond_training_pairs_with_the_grid():
    """SnapKV runs on the grid's own prompts at the lengths beyond training, in the order the grid ravels them."""
    from feature_learning.inference.token_selection import snapkv_generate

    size = dataclasses.replace(experiment.CI, grid=experiment.GridSizes(lengths=(16, 80, 96), depths=2, prompts=3),
                               k=8, snapkv_window=2)
    run = start_run("ci", 0, "cpu")
    model = experiment.new_model(DecoderConfig(n_layers=2, d_model=16, n_heads=2), 0).eval()
    out = experiment.snapkv_beyond_training(model, size, run)
    assert out.shape == (2, 2, 3) and set(np.unique(out)) <= {0.0, 1.0}
    batch = needle_prompts(size.model.vocab, 3, 96, run.generator("grid", 96, 1), depth=1.0)
    expected = experiment.correct(snapkv_generate(model, batch.tokens, 8, 2, window=2)[0], batch.answer)
    assert np.array_equal(out[1, 1], expected)


def test_full_candidates_are_recipes_of_full():
    from feature_learning.book.profiles import override

    for change in experiment.FULL_CANDIDATES.values():
        candidate = override(experiment.FULL, training=change)
        assert candidate.model == experiment.FULL.model and candidate.training != experiment.FULL.training


def test_locate_picks_the_layer_on_the_selection_prompts_and_measures_fresh_ones():
    vocab = experiment.CI.model.vocab
    model = experiment.new_model(DecoderConfig(n_layers=3, d_model=16, n_heads=2), 1).eval()
    sizes = experiment.ProbeSizes(length=12, depths=2, prompts=3)
    probes = [experiment.probe_set(vocab, sizes, torch.Generator().manual_seed(i), layout)
              for i, layout in enumerate(("ask_last", "ask_last", "key_last"))]
    loc = experiment.locate(model, *probes, k=4)
    assert loc.filter_layer == experiment.first_locating_layer(loc.selection_kept)
    assert loc.points.shape == loc.points_key_last.shape == loc.kept.shape == (3,)
    outcomes = experiment.row_ablation(model, probes[1], loc.filter_layer, 4)
    assert set(outcomes) == {*experiment.ROW_VARIANTS, experiment.LISTING}
    assert all(o.shape == (6,) and set(np.unique(o)) <= {0.0, 1.0} for o in outcomes.values())


def test_localisation_by_layer_against_the_attention_logits():
    torch.manual_seed(0)
    model = RopeDecoder(DecoderConfig(n_layers=3, d_model=32, n_heads=4)).eval()
    p = needle_prompts(NeedleVocab(), 4, 20, torch.Generator().manual_seed(10))
    loc = experiment.localise_by_layer(model, p.tokens, p.needle_pos, 5)
    assert loc.head_argmax_at_needle.shape == (3, 4) and loc.distance.shape == (3, 4)
    assert torch.equal(loc.needle_kept, (loc.distance == 0).float().mean(1))
    for layer in (1, 3):  # the last row's logits q_T . k_j, written out per head
        q, k = model.queries_keys(p.tokens, layer)
        logits = torch.einsum("bhe,bhte->bht", q[:, :, -1], k)
        at_needle = logits.argmax(-1) == p.needle_pos[:, None]
        assert torch.equal(loc.head_argmax_at_needle[layer - 1], at_needle.float().mean(0))
        assert loc.argmax_at_needle[layer - 1] == (logits.sum(1).argmax(-1) == p.needle_pos).float().mean()


def test_the_authors_selection_keeps_what_ours_keeps_and_random_positions_are_sorted_and_distinct():
    from feature_learning.inference.token_selection import gemfilter_select

    model = experiment.new_model(DecoderConfig(n_layers=3, d_model=16, n_heads=2), 2).eval()
    tokens = needle_prompts(NeedleVocab(), 3, 20, torch.Generator().manual_seed(4)).tokens
    for layer in (1, 2, 3):  # layer r in full changes the work, not the kept positions
        assert torch.equal(experiment.select_full_layer(model, tokens, layer, 5),
                           gemfilter_select(model, tokens, layer, 5).index)
    index = experiment.random_index(4, 10, 3, torch.Generator().manual_seed(0))
    assert index.shape == (4, 3) and bool((index.diff(dim=1) > 0).all()) and int(index.max()) < 10


def test_source_map_entries_are_well_formed():
    """Statuses are computed, never typed: an entry names its claims, or says why it has none."""
    ids = [entry["id"] for entry in experiment.SOURCE_MAP]
    assert len(ids) == len(set(ids))
    for entry in experiment.SOURCE_MAP:
        assert "status" not in entry
        if "printed" in entry:  # an erratum
            assert entry.get("correct")
        elif entry.get("not_attempted"):
            assert not entry.get("claims")
        else:
            assert entry.get("claims") or entry.get("not_testable"), entry["id"]


def test_full_run_values_read_the_stored_record_not_the_sizes():
    record = {"ledger": {"claims": [{"id": "filter_layer_peak", "measured": "[0.5329, 0.146, 0.3849]"}]}}
    values = experiment.full_run_values(record)
    assert values == {"full_layer_accs": "0.53, 0.15, 0.38", "full_layers": "3",
                      "full_train_steps": "a number of steps that the stored record does not keep",
                      "full_statuses": "* no claims stored"}
    record["ledger"]["claims"][0]["status"] = "FAIL: within noise of its bound"
    assert experiment.full_run_values(record)["full_statuses"] == "* FAIL: within noise of its bound: 1"
    assert experiment.full_run_values(None)["full_layer_accs"] == "not stored"
    stored = experiment.training_record(8000, None, 8000)
    record["ledger"]["claims"].append({"id": experiment.TRAINING_CLAIM, "measured": stored})
    assert experiment.full_run_values(record)["full_train_steps"] == (
        "8,000 steps (budget 8,000; training batches never answered)")
    record["ledger"]["claims"][-1]["measured"] = str(experiment.training_record(1450, 1150, 20000))  # as text
    assert experiment.full_run_values(record)["full_train_steps"] == (
        "1,450 steps (budget 20,000; training batches answered at step 1,150)")


def test_smoke_values_read_the_stored_cuda_smoke():
    """The full section's sentence on the CUDA smoke quotes results/cuda-smoke.json, not typed numbers."""
    entry = {"changed_claims": {
        "filter_layer_peak": {"status": "FAIL", "measured": "[0.43, 0.988, 0.998, 0.988]", "se": None,
                              "relation": "acc(r*) - acc(1) = 0.558 > 0.046; best - acc(r*) = 0.010 <= 0.009 "
                                          "(paired 2 se)"},
        "prompt_speedup_full_layer": {"status": "FAIL: within noise of its bound", "measured": 1.6743, "se": 0.4703,
                                      "relation": "|ours − source| ≤ 0.2·|source|"}}}
    assert experiment.smoke_values(entry) == {"smoke_best_layer": "3", "smoke_peak_lead": "0.010",
                                              "smoke_peak_two_se": "0.009", "smoke_speedup": "1.67",
                                              "smoke_speedup_se": "0.47"}
    assert set(experiment.smoke_values(None).values()) == {"?"}
    tex = (r"$\mathrm{acc}(r^*) - \mathrm{acc}(1) = 0.558 > 0.046$; best $- \mathrm{acc}(r^*) = 0.010 \le 0.009$ "
           "(paired 2 se)")
    entry["changed_claims"]["filter_layer_peak"]["relation"] = tex  # a ledger written since the TeX rewrite
    assert experiment.smoke_values(entry)["smoke_peak_lead"] == "0.010"
    assert experiment.smoke_values(entry)["smoke_peak_two_se"] == "0.009"


def test_untrained_model_is_the_initial_decoder_and_all_kv_reads_the_grid_prompts():
    """The null of the All KV claim: the decoder with its weights before training, on the accuracy grid's prompts
    at the lengths within training."""
    config = DecoderConfig(n_layers=2, d_model=16, n_heads=2)
    model = experiment.new_model(config, 3).eval()
    initial = {name: value.detach().clone() for name, value in model.state_dict().items()}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # "training" moves every weight
    trained = experiment.Trained(model, initial, {"step": torch.tensor([0])}, None, 0.0)
    untrained = experiment.untrained_model(trained)
    assert all(torch.equal(untrained.state_dict()[name], value) for name, value in initial.items())
    size = dataclasses.replace(experiment.CI, model=config,
                               grid=experiment.GridSizes(lengths=(8, 16, 32), depths=2, prompts=3),
                               training=dataclasses.replace(experiment.CI.training, n_max=16))
    outcomes = experiment.all_kv_in_distribution(untrained, size, start_run("ci", 0, "cpu"))
    assert outcomes.shape == (2, 2, 3) and set(np.unique(outcomes)) <= {0.0, 1.0}

"""The GemFilter chapter's library: needle prompts, the rotary decoder and its KV cache, token selection, theory."""

import math

import pytest
import sympy as sp
import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.inference.generation import generate_greedy
from feature_learning.inference.token_selection import (
    _evict_then_answer,
    gemfilter_generate,
    gemfilter_select,
    head_row_logits,
    selection_scores,
    smooth,
    snapkv_indices,
    top_k_sorted,
)
from feature_learning.measure.needle import exact_match, localise_by_layer, min_distance
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder, rotate
from feature_learning.theory import gemfilter as th
from feature_learning.training.needle import NeedleTraining, train_needle_decoder

VOCAB = NeedleVocab()


def small_model(seed=0, layers=3):
    torch.manual_seed(seed)
    return RopeDecoder(DecoderConfig(n_layers=layers, d_model=32, n_heads=4)).eval()


def test_needle_prompts_layout():
    g = torch.Generator().manual_seed(0)
    for layout, offset in (("ask_last", 2), ("key_last", 1)):
        p = needle_prompts(VOCAB, 50, 20, g, depth=0.5, layout=layout)
        assert p.tokens.shape == (50, 21 + offset) and (p.tokens[:, 0] == VOCAB.BOS).all()
        assert (p.needle_pos == offset + round(0.5 * 19)).all()
        target = p.tokens.gather(1, p.needle_pos[:, None])[:, 0] - VOCAB.needle0
        key, value = target // VOCAB.n_values, target % VOCAB.n_values
        question = p.tokens[:, 1] if layout == "ask_last" else p.tokens[:, -1]
        assert (question == VOCAB.qkey0 + key).all()
        assert layout == "key_last" or (p.tokens[:, -1] == VOCAB.ASK).all()
        assert (p.answer[:, 0] == VOCAB.value0 + value).all() and (p.answer[:, 1] == VOCAB.END).all()
        assert (VOCAB.is_needle(p.tokens).sum(1) == 4).all()  # four needles at distinct positions
        others = p.tokens.gather(1, p.distractor_pos) - VOCAB.needle0
        assert (others // VOCAB.n_values != key[:, None]).all()  # with other keys


def test_needle_prompts_depth_extremes_and_errors():
    g = torch.Generator().manual_seed(1)
    assert (needle_prompts(VOCAB, 4, 10, g, depth=0.0).needle_pos == 2).all()
    assert (needle_prompts(VOCAB, 4, 10, g, depth=1.0, layout="key_last").needle_pos == 10).all()
    with pytest.raises(ValueError):
        needle_prompts(VOCAB, 4, 10, g, depth=1.5)
    with pytest.raises(ValueError):
        needle_prompts(VOCAB, 4, 3, g)
    with pytest.raises(ValueError):
        needle_prompts(VOCAB, 4, 10, g, layout="middle")


def test_rotary_scores_depend_on_relative_position_only():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 1, 8, generator=g), torch.randn(1, 1, 1, 8, generator=g)

    def score(i, j):
        return (rotate(q, torch.tensor([i]), 1e4) * rotate(k, torch.tensor([j]), 1e4)).sum()

    assert torch.allclose(score(7, 3), score(104, 100), atol=1e-5)
    assert torch.allclose(score(0, 0), (q * k).sum(), atol=1e-6)


def test_kv_cache_decoding_equals_full_forward():
    model = small_model()
    tokens = needle_prompts(VOCAB, 3, 12, torch.Generator().manual_seed(2)).tokens
    with torch.no_grad():
        full = model(tokens)
        logits, cache = model.prefill(tokens[:, :8])
        assert torch.allclose(logits, full[:, 7], atol=1e-5)
        for j in range(8, tokens.shape[1]):
            logits, cache = model.decode(tokens[:, j : j + 1], cache)
            assert torch.allclose(logits, full[:, j], atol=1e-5)
        logits, cache2 = model.decode(tokens[:, 3:], model.prefill(tokens[:, :3])[1])  # several tokens at once
    assert torch.allclose(logits, full[:, -1], atol=1e-5)
    H, e = model.config.n_heads, model.config.d_head
    assert cache.numel() == 3 * th.kv_cache_floats(model.n_layers, H, tokens.shape[1], e) == cache2.numel()


def test_queries_keys_are_the_layers_own():
    model = small_model()
    tokens = needle_prompts(VOCAB, 2, 10, torch.Generator().manual_seed(3)).tokens
    positions = torch.arange(tokens.shape[1])
    with torch.no_grad():
        x = model.embed(tokens)
        for layer, block in enumerate(model.blocks, start=1):
            q, k, _ = block.project(x, positions)
            q2, k2 = model.queries_keys(tokens, layer)
            assert torch.allclose(q, q2) and torch.allclose(k, k2)
            x, _ = block(x, positions)
    with pytest.raises(ValueError):
        model.queries_keys(tokens, 0)


def test_greedy_generation_keeps_prompt_plus_t_tokens():
    model = small_model()
    tokens = needle_prompts(VOCAB, 2, 10, torch.Generator().manual_seed(4)).tokens
    out, cache = generate_greedy(model, tokens, 3)
    assert out.shape == (2, 3) and cache.next_position == tokens.shape[1] + 3
    with torch.no_grad():  # the first generated token is the argmax of the full forward
        assert (out[:, 0] == model(tokens)[:, -1].argmax(-1)).all()


class FixedScores:
    """A stand-in causal model whose layer-r queries and keys are given: gemfilter only needs the protocol."""

    n_layers = 2

    def __init__(self, q, k):
        self.q, self.k = q, k

    def queries_keys(self, tokens, layer):
        return self.q, self.k


def test_gemfilter_selects_top_scores_in_prompt_order():
    T = 9
    k = torch.zeros(1, 2, T, 1)
    k[0, 0, [6, 2, 4], 0] = torch.tensor([3.0, 2.0, 1.0])
    q = torch.ones(1, 2, T, 1)
    sel = gemfilter_select(FixedScores(q, k), torch.zeros(1, T, dtype=torch.long), layer=1, k=3, pool=1)
    assert sel.index.tolist() == [[2, 4, 6]]  # values, not the argsort permutation [0, 1, 2] of the listing
    assert top_k_sorted(torch.tensor([[5.0, 1.0, 4.0]]), 10).tolist() == [[0, 1, 2]]  # min(k, n)


def test_smoothing_is_zero_padded_average():
    s = torch.tensor([[0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 10.0]])
    out = smooth(s, 5)
    assert torch.allclose(out, torch.tensor([[1.0, 1.0, 1.0, 1.0, 3.0, 2.0, 2.0]]))
    with pytest.raises(ValueError):
        smooth(s, 4)
    hidden = torch.tensor([[3.0, 3.0, float("-inf")]])
    assert torch.allclose(smooth(hidden, 3)[:, :2], torch.tensor([[2.0, 2.0]]))
    assert torch.isneginf(smooth(hidden, 3)[:, 2]).all()


def test_single_head_logits_and_probabilities_rank_alike_but_head_sums_do_not():
    g = torch.Generator().manual_seed(5)
    q, k = torch.randn(1, 1, 12, 4, generator=g), torch.randn(1, 1, 12, 4, generator=g)
    raw, prob = selection_scores(q, k, score="raw"), selection_scores(q, k, score="prob")
    assert torch.equal(raw.argsort(), prob.argsort())
    # three heads with logits (20, 0), (0, 5), (0, 5): raw sums favour key 0, probability sums key 1
    q2 = torch.ones(1, 3, 2, 1)
    k2 = torch.tensor([[[[20.0], [0.0]], [[0.0], [5.0]], [[0.0], [5.0]]]])
    raw2, prob2 = selection_scores(q2, k2, score="raw"), selection_scores(q2, k2, score="prob")
    assert (raw2[0, 0] > raw2[0, 1]) and (prob2[0, 0] < prob2[0, 1])


def test_row_variants_and_errors():
    g = torch.Generator().manual_seed(6)
    q, k = torch.randn(2, 3, 10, 4, generator=g), torch.randn(2, 3, 10, 4, generator=g)
    middle = selection_scores(q, k, row="middle")
    assert torch.isneginf(middle[:, 5:]).all() and torch.isfinite(middle[:, :5]).all()  # the middle row sees 0..4
    l2 = selection_scores(q, k, row="l2max")
    assert l2.shape == (2, 10) and torch.isneginf(l2[:, -1]).all()  # never the last row, so the last key is hidden
    kept = top_k_sorted(smooth(middle, 5), 5)
    assert (kept <= 4).all()  # pooling never lets a hidden position outrank a visible one
    with pytest.raises(ValueError):
        selection_scores(q, k, row="first")


def test_eviction_that_keeps_everything_changes_nothing():
    model = small_model()
    tokens = needle_prompts(VOCAB, 3, 14, torch.Generator().manual_seed(7)).tokens
    full, _ = generate_greedy(model, tokens, 2)
    T = tokens.shape[1]
    everything = torch.arange(T - 1).expand(3, -1)
    out, cache = _evict_then_answer(model, tokens, everything, 2)
    assert torch.equal(out, full) and cache.next_position == T + 2
    per_head = everything[None, :, None, :].expand(model.n_layers, 3, model.config.n_heads, -1)
    assert torch.equal(_evict_then_answer(model, tokens, per_head, 2)[0], full)


def test_snapkv_indices_keep_window_and_budget():
    model = small_model()
    tokens = needle_prompts(VOCAB, 2, 30, torch.Generator().manual_seed(8)).tokens
    T, window, budget = tokens.shape[1], 4, 10
    idx = snapkv_indices(model, tokens, budget, window=window)
    assert idx.shape == (model.n_layers, 2, model.config.n_heads, budget - 1)
    assert (idx[..., -(window - 1) :] == torch.arange(T - window, T - 1)).all()
    assert (idx.diff(dim=-1) > 0).all()


def test_gemfilter_cache_sizes_match_theorem():
    model = small_model()
    tokens = needle_prompts(VOCAB, 2, 40, torch.Generator().manual_seed(9)).tokens
    k_sel, t = 8, 2
    out, cache, sel = gemfilter_generate(model, tokens, 2, k_sel, t)
    H, e = model.config.n_heads, model.config.d_head
    assert sel.index.shape == (2, k_sel) and out.shape == (2, t)
    assert cache.numel() == 2 * th.kv_cache_floats(model.n_layers, H, k_sel + t, e)


def test_measurements():
    assert min_distance(torch.tensor([[1, 5, 9]]), torch.tensor([6])).tolist() == [1]
    assert exact_match(torch.tensor([[3, 4], [3, 5]]), torch.tensor([[3, 4], [3, 4]])).tolist() == [True, False]
    model = small_model()
    p = needle_prompts(VOCAB, 4, 20, torch.Generator().manual_seed(10))
    loc = localise_by_layer(model, p.tokens, p.needle_pos, 5)
    assert loc.head_argmax_at_needle.shape == (3, 4) and loc.distance.shape == (3, 4)
    assert loc.argmax_at_needle.shape == (3,)
    assert torch.equal(loc.needle_kept, (loc.distance == 0).float().mean(1))
    q, k = model.queries_keys(p.tokens, 1)
    scores = head_row_logits(q, k, torch.full((4,), 5))
    assert torch.isneginf(scores[..., 6:]).all() and torch.isfinite(scores[..., :6]).all()


def test_theorem_9_3_table():
    table, printed = th.complexity_table(), th.complexity_table(memory_as_printed=True)
    assert th.prompt_speedup() == th.m / th.r
    lower, upper = th.theta_sandwich(table.generation_time["gemfilter"] / (th.m * th.h * th.d), th.k**2 + th.t**2)
    assert sp.simplify(2 * upper - ((th.k - th.t) ** 2 + th.k**2 + th.t * (2 * th.t - 1))) == 0
    assert sp.factor(printed.prompt_memory["snapkv"] - printed.prompt_memory["standard"]) == sp.factor(
        2 * th.d * th.h * (th.k * th.m - th.m + th.n))
    assert sp.solve(sp.Eq(table.prompt_memory["standard"], table.prompt_memory["snapkv"]), th.n) == [
        th.k * th.m / (th.m - 1)]
    assert sp.expand(table.prompt_memory["snapkv"] - table.prompt_memory["gemfilter"]) == sp.expand(
        2 * th.d * th.h * th.k * th.m + (th.m - th.r) * th.w)
    gap = sp.Symbol("Delta", positive=True)
    assert sp.solve(sp.Eq(th.softmax_needle_mass(gap, th.n), sp.Rational(1, 2)), gap) == [sp.log(th.n - 1)]


def test_training_path_reduces_the_loss():
    torch.manual_seed(0)
    model = RopeDecoder(DecoderConfig(n_layers=2, d_model=32, n_heads=2))
    hist = train_needle_decoder(model, NeedleTraining(steps=40, batch=16, n_max=16, log_every=10, warmup=5),
                                torch.Generator().manual_seed(0))
    assert hist["loss"].shape == (5,) and math.isnan(hist["loss"][0])
    assert hist["loss"][-1] < 0.6 * hist["loss"][1]
    assert not model.training


def test_best_time_is_a_minimum():
    from feature_learning.measure.timing import best_time

    calls = []
    assert best_time(lambda: calls.append(1), repeats=3) >= 0.0
    assert len(calls) == 4  # one warm-up call, then the repeats


def test_peak_cuda_memory_is_none_on_cpu():
    from feature_learning.measure.timing import peak_cuda_memory

    assert peak_cuda_memory(lambda: torch.zeros(3), "cpu") is None


@pytest.mark.parametrize("profile", ["ci", "book", "full"])
def test_chapter_sizes_are_consistent(profile):
    from feature_learning.experiments import gemfilter as chapter

    size = chapter.sizes(profile)
    assert size.model.d_model % size.model.n_heads == 0 and size.model.d_head % 2 == 0  # rotary pairs
    assert size.probe_length <= size.training.n_max  # the layer-by-layer study stays in distribution
    assert size.snapkv_window < size.k < size.probe_length and max(size.k_sweep) < size.probe_length
    assert any(n <= size.training.n_max for n in size.lengths)
    model = chapter.new_model(size.model, 0)
    assert torch.equal(model.embed.key, chapter.new_model(size.model, 0).embed.key)  # seeded initialisation

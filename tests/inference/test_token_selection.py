"""inference/token_selection.py: GemFilter (Algorithm 2), the listing as printed, SnapKV and One-Run."""

import pytest
import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.inference.generation import generate_greedy
from feature_learning.inference.token_selection import (
    _evict_then_answer,
    gemfilter_generate,
    gemfilter_select,
    head_row_logits,
    min_distance,
    one_run_generate,
    selection_scores,
    smooth,
    snapkv_generate,
    snapkv_indices,
    top_k_listing_as_printed,
    top_k_sorted,
)
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder

VOCAB = NeedleVocab()


def small_model(seed=0, layers=3):
    torch.manual_seed(seed)
    return RopeDecoder(DecoderConfig(n_layers=layers, d_model=32, n_heads=4)).eval()


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
    assert sel.index.tolist() == [[2, 4, 6]]
    assert top_k_sorted(torch.tensor([[5.0, 1.0, 4.0]]), 10).tolist() == [[0, 1, 2]]  # min(k, n)


def test_listing_as_printed_returns_the_sorting_permutation():
    scores = torch.tensor([[0.0, 9.0, 0.0, 0.0, 7.0, 8.0]])  # top-3 positions 1, 5, 4
    assert top_k_sorted(scores, 3).tolist() == [[1, 4, 5]]
    assert top_k_listing_as_printed(scores, 3).tolist() == [[0, 2, 1]]  # argsort of [1, 5, 4]: positions 0..2


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


def test_head_row_logits_are_causal_dot_products():
    g = torch.Generator().manual_seed(11)
    q, k = torch.randn(2, 3, 8, 4, generator=g), torch.randn(2, 3, 8, 4, generator=g)
    scores = head_row_logits(q, k, torch.tensor([5, 7]))
    assert torch.isneginf(scores[0, :, 6:]).all() and torch.isfinite(scores[1]).all()
    assert torch.allclose(scores[0, 1, 3], q[0, 1, 5] @ k[0, 1, 3])


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


def test_cache_sizes_after_generation():
    """Counted independently of theory: keys and values of every layer and head, positions times head width."""
    model = small_model()
    tokens = needle_prompts(VOCAB, 2, 40, torch.Generator().manual_seed(9)).tokens
    k_sel, t = 8, 2
    out, cache, sel = gemfilter_generate(model, tokens, 2, k_sel, t)
    L, H, e = model.n_layers, model.config.n_heads, model.config.d_head
    assert sel.index.shape == (2, k_sel) and out.shape == (2, t)
    assert cache.numel() == 2 * (2 * L * H * (k_sel + t) * e) and cache.next_position == k_sel + t
    evicted = (snapkv_generate(model, tokens, k_sel, t, window=3)[1], one_run_generate(model, tokens, 2, k_sel, t)[1])
    for cache in evicted:
        assert cache.numel() == 2 * (2 * L * H * (k_sel + t) * e)  # k - 1 kept, the re-fed last token, t new
        assert cache.next_position == tokens.shape[1] + t  # original positions kept


def test_min_distance_is_zero_exactly_when_the_position_is_kept():
    index = torch.tensor([[1, 5, 9], [1, 5, 9], [0, 2, 3]])
    position = torch.tensor([6, 9, 7])
    brute = [min(abs(j - int(p)) for j in row.tolist()) for row, p in zip(index, position, strict=True)]
    assert min_distance(index, position).tolist() == brute == [1, 0, 4]

"""GemFilter (Algorithm 2 of dissertation ch. 9) and the baselines it is compared with.

All functions take any :class:`~feature_learning.models.rope_decoder.CausalLM`: a causal transformer exposing
``queries_keys(tokens, layer)``, ``prefill`` and ``decode``. Layers are counted from 1, as in Algorithm 2; the
authors' code indexes from 0, so their "layer 13" runs 14 layers.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F

from feature_learning.inference.generation import generate_greedy, greedy_continue
from feature_learning.models.rope_decoder import CausalLM, KVCache

ROWS = ("last", "middle", "l2max")
SCORES = ("raw", "prob")


def smooth(scores: torch.Tensor, pool: int) -> torch.Tensor:
    """Average pooling over positions with kernel ``pool``, stride 1 and zero padding counted in the mean
    (``avg_pool1d(kernel_size=5, stride=1, padding=2)`` in appendix G.4.1); ``pool=1`` leaves the scores.
    Positions scored -inf (after the query row: not visible to it) count as 0 in their neighbours' means and stay
    -inf, so they always rank last."""
    if pool == 1:
        return scores
    if pool % 2 == 0:
        raise ValueError(f"pool must be odd so that positions stay aligned, got {pool}")
    shape, hidden = scores.shape, torch.isneginf(scores)
    pooled = F.avg_pool1d(scores.masked_fill(hidden, 0.0).reshape(-1, 1, shape[-1]), kernel_size=pool, stride=1,
                          padding=pool // 2)
    return pooled.reshape(shape).masked_fill(hidden, float("-inf"))


def selection_scores(q: torch.Tensor, k: torch.Tensor, *, row: str = "last", score: str = "raw") -> torch.Tensor:
    """Scores (B, T) of every position from the queries and keys (B, H, T, e) of the filter layer.

    ``row="last"`` is Algorithm 2: the last query's row. ``"middle"`` and ``"l2max"`` are the ablation of
    appendix G.4.4: the middle row, and the row of largest l2 norm of the head-summed logits over its causal
    prefix among the rows other than the last (the source does not say how it norms rows; without the exclusion
    the last row, which has the most entries, usually wins and the variant is Algorithm 2 again).
    ``score="raw"`` sums the raw logits q.k over heads (the source); ``"prob"`` sums the per-head softmax
    probabilities instead (an ablation: the two differ once there is more than one head).
    """
    if row not in ROWS:
        raise ValueError(f"row must be one of {ROWS}, got {row!r}")
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    B, H, T, e = q.shape
    if row == "l2max":
        logits = torch.einsum("bhse,bhte->bst", q, k).tril()  # head-summed, causal part of every row
        index = logits[:, :-1].norm(dim=-1).argmax(dim=1)  # (B,) among the rows other than the last
    else:
        index = torch.full((B,), T - 1 if row == "last" else (T - 1) // 2, device=q.device)
    logits = head_row_logits(q, k, index)
    if score == "prob":  # positions after the row get probability 0, then rank last again
        causal = torch.isfinite(logits[:, 0])
        return (logits / math.sqrt(e)).softmax(dim=-1).sum(dim=1).masked_fill(~causal, float("-inf"))
    return logits.sum(dim=1)  # positions after the row stay -inf: they rank last


def head_row_logits(q: torch.Tensor, k: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Raw attention logits q_i . k_j (B, H, T) of query row i = ``index[b]`` in every head, before scaling and
    softmax; positions after the row are -inf (causal)."""
    B, _, T, _ = q.shape
    q_row = q[torch.arange(B, device=q.device), :, index]  # (B, H, e)
    causal = torch.arange(T, device=q.device)[None, None, :] <= index[:, None, None]
    return torch.einsum("bhe,bhte->bht", q_row, k).masked_fill(~causal, float("-inf"))


def top_k_sorted(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The positions of the k largest scores, back in their original order (Algorithm 2, lines 6-7).

    The listing of appendix G.4.1 returns ``torch.sort(...).indices``, the permutation 0..k-1, so taken literally
    it keeps the first k tokens; the values are what the algorithm means."""
    k = min(k, scores.shape[-1])
    return scores.topk(k, dim=-1).indices.sort(dim=-1).values


def top_k_listing_as_printed(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The listing of appendix G.4.1 taken literally: ``torch.sort(top_k_indices).indices``, the permutation that
    sorts the top-k positions (a reordering of 0..k-1), not the positions: GemFilter would keep the first k tokens,
    in a scrambled order. For the chapter's erratum; :func:`top_k_sorted` is what the algorithm means."""
    k = min(k, scores.shape[-1])
    return torch.sort(scores.topk(k, dim=-1).indices, dim=-1).indices


def min_distance(index: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """The statistic of the source's Fig. 9.5, min_{j in J} |j - position| for kept positions J = ``index`` (B, k)
    and one position per prompt (B,), e.g. the needle's: 0 exactly when that position was kept."""
    return (index - position[:, None]).abs().min(dim=1).values


@dataclasses.dataclass(frozen=True)
class Selection:
    index: torch.Tensor  # (B, k) kept positions in prompt order
    scores: torch.Tensor  # (B, T) the smoothed scores they were chosen by


def select_tokens(q: torch.Tensor, k: torch.Tensor, keep: int, *, pool: int = 5, row: str = "last",
                  score: str = "raw") -> Selection:
    """Algorithm 2, lines 6-7, from the filter layer's queries and keys: score, smooth, keep the top ``keep``."""
    scores = smooth(selection_scores(q, k, row=row, score=score), pool)
    return Selection(top_k_sorted(scores, keep), scores)


@torch.no_grad()
def gemfilter_select(model: CausalLM, tokens: torch.Tensor, layer: int, k: int, *, pool: int = 5,
                     row: str = "last", score: str = "raw") -> Selection:
    """Algorithm 2, lines 4-7: run layers 1..``layer`` (the last one only up to Q, K), score positions by the
    head-summed last-row logits, smooth, keep the top ``k`` in prompt order."""
    q, key = model.queries_keys(tokens, layer)
    return select_tokens(q, key, k, pool=pool, row=row, score=score)


@torch.no_grad()
def gemfilter_generate(model: CausalLM, tokens: torch.Tensor, layer: int, k: int, max_new_tokens: int, **options,
                       ) -> tuple[torch.Tensor, KVCache, Selection]:
    """GemFilter: select with the early layers, then run the full model afresh on the k kept tokens (positions
    0..k-1) and generate greedily (Algorithm 2, line 8)."""
    selection = gemfilter_select(model, tokens, layer, k, **options)
    kept = tokens.gather(1, selection.index)
    generated, cache = generate_greedy(model, kept, max_new_tokens)
    return generated, cache, selection


@torch.no_grad()
def _evict_then_answer(model: CausalLM, tokens: torch.Tensor, index: torch.Tensor, max_new_tokens: int,
                       ) -> tuple[torch.Tensor, KVCache]:
    """Prefill all but the last prompt token, keep the cached positions ``index`` (shared (B, k') or per layer
    and head (L, B, H, k')), then feed the last prompt token and generate from the compressed cache.

    Feeding the last token after the eviction makes the first answer token depend on the compressed cache; with
    one-token questions the answer would otherwise come from the full prefill."""
    _, cache = model.prefill(tokens[:, :-1])
    cache = cache.gather(index)
    logits, cache = model.decode(tokens[:, -1:], cache)
    return greedy_continue(model, logits, cache, max_new_tokens)


@torch.no_grad()
def one_run_generate(model: CausalLM, tokens: torch.Tensor, layer: int, k: int, max_new_tokens: int, *,
                     pool: int = 5) -> tuple[torch.Tensor, KVCache]:
    """GemFilter-One-Run (appendix G.4.3): GemFilter's index set J evicts the cache of every layer and head; no
    second run, so the original positions are kept and all layers have seen all n tokens."""
    selection = gemfilter_select(model, tokens, layer, k, pool=pool)
    # The last prompt token is re-fed after the eviction, so J's other k - 1 best positions are cached.
    index = top_k_sorted(selection.scores[:, :-1], k - 1)
    return _evict_then_answer(model, tokens, index, max_new_tokens)


@torch.no_grad()
def snapkv_indices(model: CausalLM, tokens: torch.Tensor, k: int, *, window: int, pool: int = 5) -> torch.Tensor:
    """SnapKV's kept positions (L, B, H, k) among the first T - 1: per layer and head, the softmax attention of the
    last ``window`` queries, summed, average-pooled, top-(k - window) of the prefix, plus the window's own
    positions (the last prompt token excluded, as it is re-fed)."""
    B, T = tokens.shape
    if not 0 < window < k < T:
        raise ValueError(f"need 0 < window < k < T, got window={window}, k={k}, T={T}")
    return torch.stack([snapkv_head_index(*model.queries_keys(tokens, layer), k, window=window, pool=pool)
                        for layer in range(1, model.n_layers + 1)])


def snapkv_head_index(q: torch.Tensor, key: torch.Tensor, k: int, *, window: int, pool: int = 5) -> torch.Tensor:
    """One layer's SnapKV positions (B, H, k - 1) from its queries and keys (B, H, T, e): the softmax attention of
    the last ``window`` queries, summed, pooled, top-(k - window) of the prefix, plus the window's positions but
    the last."""
    B, H, T, e = q.shape
    logits = torch.einsum("bhwe,bhte->bhwt", q[:, :, T - window :], key) / math.sqrt(e)
    causal = torch.arange(T)[None, :] <= torch.arange(T - window, T)[:, None]
    votes = logits.masked_fill(~causal.to(q.device), float("-inf")).softmax(dim=-1).sum(dim=2)
    top = smooth(votes[..., : T - window], pool).topk(k - window, dim=-1).indices
    recent = torch.arange(T - window, T - 1, device=q.device).expand(B, H, -1)
    return torch.cat([top, recent], dim=-1).sort(dim=-1).values


@torch.no_grad()
def snapkv_generate(model: CausalLM, tokens: torch.Tensor, k: int, max_new_tokens: int, *, window: int,
                    pool: int = 5) -> tuple[torch.Tensor, KVCache]:
    """SnapKV (Li et al. 2024): a per-layer, per-head cache of k - 1 positions plus the re-fed last token."""
    index = snapkv_indices(model, tokens, k, window=window, pool=pool)
    return _evict_then_answer(model, tokens, index, max_new_tokens)

"""Where does a decoder look for the needle? Measurements for the GemFilter chapter (dissertation ch. 9, Fig. 9.5)."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.inference.token_selection import head_row_logits, select_tokens
from feature_learning.models.rope_decoder import CausalLM


def exact_match(generated: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """(B,) True where the greedy generation reproduces the whole answer [VAL v*] [END]."""
    return (generated[:, : answer.shape[1]] == answer).all(dim=1)


def min_distance(index: torch.Tensor, needle_pos: torch.Tensor) -> torch.Tensor:
    """Fig. 9.5's statistic min_{j in J} |j - needle| (B,): 0 exactly when the needle was kept."""
    return (index - needle_pos[:, None]).abs().min(dim=1).values


@dataclasses.dataclass(frozen=True)
class LayerLocalisation:
    head_argmax_at_needle: torch.Tensor  # (L, H) fraction of prompts whose head's last-row argmax is the needle
    argmax_at_needle: torch.Tensor  # (L,) the same for the head-summed logits (GemFilter's scores before pooling)
    needle_kept: torch.Tensor  # (L,) fraction of prompts whose top-k at that filter layer contains the needle
    distance: torch.Tensor  # (L, B) min |J - needle| per prompt
    last_kept: torch.Tensor  # (L,) fraction of prompts whose top-k keeps the last (question) token


@torch.no_grad()
def localise_by_layer(model: CausalLM, tokens: torch.Tensor, needle_pos: torch.Tensor, k: int, *, pool: int = 5,
                      score: str = "raw") -> LayerLocalisation:
    """For every filter layer r = 1..m: where the last row's largest logit falls (per head and summed over heads),
    and GemFilter's top-k selection (pooled, as in Algorithm 2)."""
    B, T = tokens.shape
    heads, summed, kept, dist, last = [], [], [], [], []
    for layer in range(1, model.n_layers + 1):
        q, key = model.queries_keys(tokens, layer)  # one pass of the layers below serves every measurement
        scores = head_row_logits(q, key, torch.full((B,), T - 1, device=q.device))  # (B, H, T)
        heads.append((scores.argmax(dim=-1) == needle_pos[:, None]).float().mean(0))
        summed.append((scores.sum(dim=1).argmax(dim=-1) == needle_pos).float().mean())
        index = select_tokens(q, key, k, pool=pool, score=score).index
        d = min_distance(index, needle_pos)
        dist.append(d)
        kept.append((d == 0).float().mean())
        last.append((index == T - 1).any(dim=1).float().mean())
    return LayerLocalisation(torch.stack(heads), torch.stack(summed), torch.stack(kept), torch.stack(dist),
                             torch.stack(last))


"""Greedy generation with a real KV cache: one prefill of the prompt, then one decode step per new token."""

from __future__ import annotations

import torch

from feature_learning.models.rope_decoder import CausalLM, KVCache


@torch.no_grad()
def greedy_continue(model: CausalLM, logits: torch.Tensor, cache: KVCache, max_new_tokens: int,
                    ) -> tuple[torch.Tensor, KVCache]:
    """Continue from the last prompt logits (B, V) and cache: ``max_new_tokens`` argmax tokens (B, t), the cache
    after them. Every new token is fed back once, so the final cache holds prompt + t tokens, as in Theorem 9.3."""
    out = []
    for _ in range(max_new_tokens):
        token = logits.argmax(dim=-1, keepdim=True)
        out.append(token)
        logits, cache = model.decode(token, cache)
    return torch.cat(out, dim=1), cache


@torch.no_grad()
def generate_greedy(model: CausalLM, tokens: torch.Tensor, max_new_tokens: int) -> tuple[torch.Tensor, KVCache]:
    """Standard attention ("All KV"): prefill the whole prompt, then decode greedily."""
    logits, cache = model.prefill(tokens)
    return greedy_continue(model, logits, cache, max_new_tokens)

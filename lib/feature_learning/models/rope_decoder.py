"""A small decoder-only transformer with rotary positions and a real KV cache (the analogue of the LLMs of
dissertation ch. 9).

Pre-LayerNorm blocks of causal multi-head self-attention (rotary position embedding on queries and keys, Su et al.
2021, as in LLaMA, Mistral and Phi) and a GELU MLP; an untied read-out over the whole vocabulary. Definitions 9.1-9.2
of the source in code: ``Attn`` is ``Block.attend``, ``g_i`` the LayerNorms, residuals and MLP.

Shapes: B prompts, T positions, D model width, H heads of width e = D / H (the source's d in Theorem 9.3 is the head
width e). Layers are counted from 1 in the API, as in Algorithm 2 (``layer=r`` runs layers 1..r).

What GemFilter needs from a model (:mod:`feature_learning.inference.token_selection`) is the protocol
:class:`CausalLM`: ``queries_keys(tokens, layer)`` (post-rotary Q and K of one layer, running only the layers
below it) and ``prefill`` / ``decode`` with a :class:`KVCache`.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from feature_learning.data.needle_haystack import NeedleVocab


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    vocab: NeedleVocab = NeedleVocab()
    n_layers: int = 4
    d_model: int = 64
    n_heads: int = 4
    mlp_ratio: int = 4
    rope_base: float = 10_000.0

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclasses.dataclass
class KVCache:
    """Per-layer keys and values (B, H, T_l, e), keys stored after the rotation, and the next position id.

    ``next_position`` is the RoPE position of the next token: after eviction (SnapKV, One-Run) it stays the
    original prompt length, so distances keep their meaning; GemFilter's second run starts a fresh cache at 0.
    """

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    next_position: int

    def numel(self) -> int:
        """Number of cached floats over the whole batch: B times the KV memory of Theorem 9.3, in numbers."""
        return sum(k.numel() + v.numel() for k, v in zip(self.keys, self.values, strict=True))

    def gather(self, index: torch.Tensor) -> KVCache:
        """Keep the cached positions ``index``: (B, k) shared by all layers and heads (GemFilter-One-Run), or
        (L, B, H, k) per layer and head (SnapKV, H2O)."""
        keys, values = [], []
        for layer, (k, v) in enumerate(zip(self.keys, self.values, strict=True)):
            idx = index[layer] if index.dim() == 4 else index[:, None, :].expand(k.shape[0], k.shape[1], -1)
            idx = idx[..., None].expand(-1, -1, -1, k.shape[-1])
            keys.append(k.gather(2, idx))
            values.append(v.gather(2, idx))
        return KVCache(keys, values, self.next_position)


class CausalLM(Protocol):
    """What ``feature_learning.inference.token_selection.gemfilter`` needs from a causal transformer."""

    n_layers: int

    def queries_keys(self, tokens: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]: ...

    def prefill(self, tokens: torch.Tensor) -> tuple[torch.Tensor, KVCache]: ...

    def decode(self, tokens: torch.Tensor, cache: KVCache) -> tuple[torch.Tensor, KVCache]: ...


def rotate(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """Rotary position embedding of x (B, H, T, e) at integer ``positions`` (T,): pairs (x_i, x_{i+e/2}) are
    rotated by the angle position * base^(-2i/e)."""
    e = x.shape[-1]
    freqs = base ** (-torch.arange(0, e, 2, device=x.device, dtype=torch.float64) / e)
    angles = (positions.to(torch.float64)[:, None] * freqs[None, :]).to(x.dtype)  # (T, e/2)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., : e // 2], x[..., e // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class FactorisedEmbedding(nn.Module):
    """Token vectors with structure: a needle (key, value) is E_key[key] + E_value[value] + t_needle and a question
    key is E_key[key] + t_question, so that "same key" is visible to attention, as shared sub-words are in a real
    tokenizer. Other tokens (PAD, BOS, ASK, END, filler, answer values) have free vectors."""

    def __init__(self, vocab: NeedleVocab, d: int):
        super().__init__()
        self.vocab = vocab
        self.free = nn.Parameter(torch.randn(vocab.size, d) * 0.02)
        self.key = nn.Parameter(torch.randn(vocab.n_keys, d) * 0.02)
        self.value = nn.Parameter(torch.randn(vocab.n_values, d) * 0.02)
        self.tags = nn.Parameter(torch.randn(2, d) * 0.02)  # needle, question

    def table(self) -> torch.Tensor:
        v = self.vocab
        needles = (self.key[:, None, :] + self.value[None, :, :]).reshape(-1, self.key.shape[1]) + self.tags[0]
        return torch.cat([self.free[: v.qkey0], self.key + self.tags[1], needles, self.free[v.value0 :]], dim=0)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.embedding(tokens, self.table())


class Block(nn.Module):
    def __init__(self, config: DecoderConfig):
        super().__init__()
        D = config.d_model
        self.config = config
        self.norm_attn = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D, bias=False)
        self.out = nn.Linear(D, D, bias=False)
        self.norm_mlp = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, config.mlp_ratio * D), nn.GELU(), nn.Linear(config.mlp_ratio * D, D))

    def project(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rotated queries and keys and the values (each B, H, T, e) of the residual stream x (B, T, D)."""
        B, T, _ = x.shape
        H, e = self.config.n_heads, self.config.d_head
        q, k, v = self.qkv(self.norm_attn(x)).view(B, T, 3, H, e).permute(2, 0, 3, 1, 4)
        return rotate(q, positions, self.config.rope_base), rotate(k, positions, self.config.rope_base), v

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Causal softmax attention of the T_q newest positions over all T_k cached ones: Softmax(QK^T/sqrt(e) +
        log M_c) V, the mask inside the softmax (Definition 9.1 puts it outside; see the chapter)."""
        T_q, T_k = q.shape[2], k.shape[2]
        if T_q == 1:
            out = F.scaled_dot_product_attention(q, k, v)
        elif T_q == T_k:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            mask = torch.ones(T_q, T_k, dtype=torch.bool, device=q.device).tril(diagonal=T_k - T_q)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        B, H, T, e = out.shape
        return self.out(out.transpose(1, 2).reshape(B, T, H * e))

    def forward(self, x, positions, past: tuple[torch.Tensor, torch.Tensor] | None = None):
        q, k, v = self.project(x, positions)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        x = x + self.attend(q, k, v)
        return x + self.mlp(self.norm_mlp(x)), (k, v)


class RopeDecoder(nn.Module):
    """Token ids (B, T) -> next-token logits (B, T, V), with :meth:`prefill`, :meth:`decode` and
    :meth:`queries_keys` for generation and token selection."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.config = config
        self.n_layers = config.n_layers
        self.embed = FactorisedEmbedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.unembed = nn.Linear(config.d_model, config.vocab.size, bias=False)

    def _run(self, tokens: torch.Tensor, cache: KVCache | None) -> tuple[torch.Tensor, KVCache]:
        """The final hidden states (B, T, D) of ``tokens`` placed after ``cache``, and the extended cache."""
        start = 0 if cache is None else cache.next_position
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)
        x = self.embed(tokens)
        keys, values = [], []
        for i, block in enumerate(self.blocks):
            x, (k, v) = block(x, positions, None if cache is None else (cache.keys[i], cache.values[i]))
            keys.append(k)
            values.append(v.contiguous())  # a view of the fused QKV projection would keep all of it alive
        return self.norm(x), KVCache(keys, values, start + tokens.shape[1])

    def forward(self, tokens: torch.Tensor, last: int | None = None) -> torch.Tensor:
        """Next-token logits (B, T, V), or only those of the ``last`` positions (B, last, V): training on answer
        tokens needs no read-out of the prompt."""
        hidden = self._run(tokens, None)[0]
        return self.unembed(hidden if last is None else hidden[:, -last:])

    def prefill(self, tokens: torch.Tensor) -> tuple[torch.Tensor, KVCache]:
        """Prompt computation: logits of the last position (B, V) and the KV cache of every layer."""
        hidden, cache = self._run(tokens, None)
        return self.unembed(hidden[:, -1]), cache

    def decode(self, tokens: torch.Tensor, cache: KVCache) -> tuple[torch.Tensor, KVCache]:
        """Iterative generation: feed ``tokens`` (B, s) after the cache; logits of the last one and the new cache."""
        hidden, cache = self._run(tokens, cache)
        return self.unembed(hidden[:, -1]), cache

    def queries_keys(self, tokens: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotated Q and K (B, H, T, e) of layer ``layer`` (1..m): layers below it run in full, layer ``layer``
        only projects. No cache is kept: one layer's K, V live at a time (the 2hnd term of Theorem 9.3)."""
        if not 1 <= layer <= self.n_layers:
            raise ValueError(f"layer must be in 1..{self.n_layers}, got {layer}")
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens)
        for block in self.blocks[: layer - 1]:
            x, _ = block(x, positions)
        q, k, _ = self.blocks[layer - 1].project(x, positions)
        return q, k


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def layer_parameters(model: RopeDecoder) -> int:
    """w of Theorem 9.3: the parameters of one transformer layer."""
    return count_parameters(model.blocks[0])


__all__ = [
    "CausalLM",
    "DecoderConfig",
    "KVCache",
    "RopeDecoder",
    "count_parameters",
    "layer_parameters",
    "rotate",
]

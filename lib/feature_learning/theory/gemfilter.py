"""Closed forms of dissertation ch. 9 (GemFilter) in SymPy: Theorem 9.3's time and memory table (proof in
appendix G.3), its case study, and a softmax-dilution model of why a shorter prompt helps retrieval.

Symbols as in the theorem: prompt length n, head width d, m layers of h heads, filter layer r, k selected (or
cached) tokens, t generated tokens, w the memory of one layer's parameters. Costs are counted per head: attention
over T positions costs T^2 d, the other operations of a layer c T d^2 (projections, MLP) with a constant c.
"""

from __future__ import annotations

import dataclasses

import sympy as sp

n, k, t, m, r, h, d, w, c = sp.symbols("n k t m r h d w c", positive=True)
i = sp.Symbol("i", integer=True, positive=True)
METHODS = ("standard", "snapkv", "gemfilter")


def layer_prompt_cost(T=n):
    """Time of one layer on a T-token prompt: h heads of T^2 d attention plus c T d^2 other work."""
    return h * (T**2 * d + c * T * d**2)


def generation_cost(cached):
    """Time of generating t tokens after ``cached`` positions, per layer and head: sum_i (cached + i) d."""
    return sp.summation((cached + i) * d, (i, 1, t))


@dataclasses.dataclass(frozen=True)
class ComplexityTable:
    """Theorem 9.3's rows for each method: exact counts (before Theta) and memory."""

    prompt_time: dict
    generation_time: dict
    prompt_memory: dict
    generation_memory: dict


def complexity_table(memory_as_printed: bool = False) -> ComplexityTable:
    """The table derived from the cost model (appendix G.3).

    GemFilter's prompt phase runs r layers on n tokens; its generation phase is the second run's prefill of k
    tokens plus t decode steps. SnapKV/H2O prefill everything, then keep k tokens per head. Prompt memory holds the
    weights in use plus the KV cache in use: the standard model's full cache, SnapKV's one full layer (2 h n d)
    while it selects plus the kept caches, GemFilter's one layer at a time. ``memory_as_printed`` returns the
    standard-attention prompt entry as the source prints it, m w + 2 m h d (no n): the typo this chapter exposes.
    """
    per_layer = layer_prompt_cost()
    prompt_time = {"standard": m * per_layer, "snapkv": m * per_layer, "gemfilter": r * per_layer}
    generation_time = {
        "standard": m * h * generation_cost(n),
        "snapkv": m * h * generation_cost(k),
        "gemfilter": m * h * (k**2 * d + generation_cost(k)),
    }
    prompt_memory = {
        "standard": m * w + 2 * m * h * (1 if memory_as_printed else n) * d,
        "snapkv": m * w + 2 * h * n * d + 2 * m * h * k * d,
        "gemfilter": r * w + 2 * h * n * d,
    }
    generation_memory = {
        "standard": m * w + 2 * m * h * (n + t) * d,
        "snapkv": m * w + 2 * m * h * (k + t) * d,
        "gemfilter": m * w + 2 * m * h * (k + t) * d,
    }
    return ComplexityTable(prompt_time, generation_time, prompt_memory, generation_memory)


def theta_sandwich(expr, bound, variables=(n, k, t)) -> tuple[sp.Expr, sp.Expr]:
    """Slack of bound/2 <= expr <= 2 bound: (expr - bound/2, 2 bound - expr), both to be shown >= 0."""
    return sp.factor(sp.expand(expr - bound / 2)), sp.factor(sp.expand(2 * bound - expr))


def prompt_speedup(filter_layers=r):
    """Prompt-phase time of standard attention over GemFilter's: exactly m / r (every layer costs the same)."""
    return sp.simplify(complexity_table().prompt_time["standard"] / (filter_layers * layer_prompt_cost()))


def softmax_needle_mass(gap, length):
    """Attention mass e^gap / (e^gap + length - 1) on one needle whose logit exceeds length - 1 equal others by
    ``gap`` (an illustrative model, not the source's: why a filtered prompt of k tokens is easier to read)."""
    return sp.exp(gap) / (sp.exp(gap) + length - 1)


def kv_cache_floats(layers, heads, positions, head_width):
    """Floats in a KV cache: keys and values of every layer and head, 2 L h T d (the KV terms of Theorem 9.3)."""
    return 2 * layers * heads * positions * head_width

"""Closed forms of dissertation ch. 9 (GemFilter) in SymPy: Definition 9.1 read literally, Theorem 9.3's time and
memory table (proof in appendix G.3), its case study, a softmax-dilution model of why a shorter prompt helps
retrieval, and the source's printed tables (9.1, 9.2) and constants as data.

Symbols as in the theorem: prompt length n, head width d, m layers of h heads, filter layer r, k selected (or
cached) tokens, t generated tokens, w the memory of one layer's parameters. Costs are counted per head: attention
over T positions costs T^2 d, the other operations of a layer c T d^2 (projections, MLP) with a constant c.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

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


# -- Definition 9.1 read literally ------------------------------------------------------------------------------------


def row_softmax(scores: sp.Matrix) -> sp.Matrix:
    """Softmax of every row of a SymPy matrix over all its columns (Definition G.3: exp(z) / <exp(z), 1>)."""
    return sp.Matrix([[sp.exp(scores[i, j]) / sum(sp.exp(scores[i, c]) for c in range(scores.cols))
                       for j in range(scores.cols)] for i in range(scores.rows)])


def causal_mask(size: int) -> sp.Matrix:
    """M_c of Definition 9.1: (M_c)_ij = 1 iff i >= j."""
    return sp.Matrix(size, size, lambda i, j: 1 if i >= j else 0)


def literal_attention_weights(scores: sp.Matrix) -> sp.Matrix:
    """Definition 9.1 as printed: M_c (Hadamard) Softmax(S), the mask applied after a softmax over every key."""
    return sp.matrix_multiply_elementwise(causal_mask(scores.rows), row_softmax(scores))


def causal_attention_weights(scores: sp.Matrix) -> sp.Matrix:
    """The intended form Softmax(S + log M_c): row i normalised over the keys j <= i only."""
    return sp.Matrix([[sp.exp(scores[i, j]) / sum(sp.exp(scores[i, c]) for c in range(i + 1)) if j <= i else 0
                       for j in range(scores.cols)] for i in range(scores.rows)])


# -- helpers for the Theta sandwiches and the signs of the memory differences ----------------------------------------


def shifted_terms(expr, variable, start, shift=None) -> list[sp.Expr]:
    """The terms of ``expr`` expanded after substituting ``variable = start + shift`` (``shift`` a positive symbol):
    if every term is positive, ``expr > 0`` for ``variable > start``. The caller judges the terms."""
    shift = shift if shift is not None else sp.Symbol("s", positive=True)
    return list(sp.Add.make_args(sp.expand(expr.subs(variable, start + shift))))


def prompt_speedup_qk_limit(filter_layers=r):
    """lim_{n -> oo} of standard attention's prompt time over a filter pass that runs layers 1..r-1 in full and only
    the projections of layer r (our ``gemfilter_select``; the authors' code runs layer r in full): m / (r - 1)."""
    partial = (filter_layers - 1) * layer_prompt_cost() + h * c * n * d**2  # at most a whole layer's linear work
    return sp.cancel(sp.limit(complexity_table().prompt_time["standard"] / partial, n, sp.oo))


# -- the source's models and its printed tables ----------------------------------------------------------------------

# Section 9.4: m attention layers and the filter layer r of each model, as printed (the authors' code counts layers
# from 0, so it runs r + 1 layers).
SOURCE_MODELS = {"LLaMA 3.1 8B": (32, 13), "Mistral Nemo 12B": (40, 19), "Phi 3.5 Mini": (32, 19)}


@dataclasses.dataclass(frozen=True)
class LlamaShape:
    """The published shape of LLaMA 3.1 8B (its config.json): for Theorem 9.3's w and KV terms."""

    layers: int = 32
    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8  # grouped-query attention: the KV cache holds 8 heads, not 32 (the theorem assumes h = 32)
    head_dim: int = 128
    intermediate: int = 14336
    bytes_per_number: int = 2  # float16

    def layer_parameters(self) -> int:
        """w in numbers: q, o (hidden^2 each), k, v (hidden x kv_heads head_dim each), the SwiGLU MLP (3 matrices)
        and two RMSNorm weights."""
        kv = self.kv_heads * self.head_dim
        return 2 * self.hidden**2 + 2 * self.hidden * kv + 3 * self.hidden * self.intermediate + 2 * self.hidden


LLAMA_3_1_8B = LlamaShape()


def llama_prompt_memory(n_tokens: int, k_tokens: int, filter_layer: int, shape: LlamaShape = LLAMA_3_1_8B,
                        ) -> dict[str, float]:
    """Theorem 9.3's prompt-phase memory in bytes (standard with the KV term 2mhnd restored), with LLaMA 3.1 8B's
    constants and its KV heads in the KV terms (a plug-in of ours, not in the source)."""
    table = complexity_table()
    values = {m: shape.layers, h: shape.kv_heads, d: shape.head_dim, n: n_tokens, k: k_tokens, r: filter_layer,
              w: shape.layer_parameters()}
    return {name: float(table.prompt_memory[name].subs(values)) * shape.bytes_per_number for name in METHODS}


# Reported savings of GemFilter's prompt phase on LLaMA 3.1 8B (section 9.1 and Fig. 9.3): 30% less GPU memory than
# SnapKV, 70% less than standard attention. Needle lengths up to 120K tokens for LLaMA 3.1 (section 9.4.1).
REPORTED_MEMORY_SAVING = {"snapkv": 0.30, "standard": 0.70}

# Fig. 9.1: a needle prompt of 108,172 tokens filtered to 100 ("1000x"); section 9.4.2: on LongBench, 1024 selected
# tokens are on average 8% of the input and 4096 are 32%.
FIG_9_1_TOKENS = (108_172, 100)
LONGBENCH_KEPT_SHARE = {1024: 0.08, 4096: 0.32}

# Fig. G.2(a): the All KV panel of Phi 3.5 Mini averages 0.851 over its needle lengths and depths, the only All KV
# panel average the text prints (Fig. 9.4's panels are images).
ALL_KV_PANEL_PHI = 0.851

LONGBENCH_TASKS = ("NrtvQA", "Qasper", "MF-en", "HotpotQA", "2WikiMQA", "Musique", "GovReport", "QMSum", "MultiNews",
                   "TREC", "TriviaQA", "SAMSum", "PCount", "PRe")

TABLES = Path(__file__).parent / "tables"  # the source's printed tables, as text files


def parse_table(text: str) -> dict[str, dict[str, tuple[tuple[float, ...], float]]]:
    """A printed table: ``## group`` lines, then rows of a name and numbers, the last number the printed average
    ("_" in a name stands for a space; other "#" lines are comments). Returns ``{group: {name: (scores,
    average)}}`` (group "" when there is none)."""
    table: dict[str, dict[str, tuple[tuple[float, ...], float]]] = {}
    group = ""
    for line in text.strip().splitlines():
        if line.startswith("## "):
            group = line[3:].strip()
            continue
        if line.startswith("#"):
            continue
        name, *numbers = line.split()
        table.setdefault(group, {})[name.replace("_", " ")] = (tuple(map(float, numbers[:-1])), float(numbers[-1]))
    return table


# Table 9.1: {model: {method: (14 task scores, printed average)}}; Table 9.2: {filter layer: (scores, average)}.
TABLE_9_1 = parse_table((TABLES / "gemfilter_table_9_1.txt").read_text())
TABLE_9_2 = {int(name.split("-")[1]): row
             for name, row in parse_table((TABLES / "gemfilter_table_9_2.txt").read_text())[""].items()}


def exact_mean(scores) -> Fraction:
    """The mean of printed decimals in exact arithmetic (each read from its shortest decimal form)."""
    return sum(Fraction(repr(float(s))) for s in scores) / len(scores)


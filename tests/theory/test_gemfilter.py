"""theory/gemfilter.py: Definition 9.1 read literally, Theorem 9.3's table against brute-force counts, the source's
tables and constants. The checks are independent of the closed forms: numbers, sums and torch."""

import math

import sympy as sp
import torch

from feature_learning.theory import gemfilter as th


def test_literal_definition_9_1_is_not_causal_softmax():
    scores = torch.tensor([[0.3, 1.2, -0.4], [2.0, -1.0, 0.5], [0.1, 0.2, 0.3]])
    S = sp.Matrix(scores.tolist())
    literal = torch.tensor(th.literal_attention_weights(S).evalf().tolist(), dtype=torch.float64)
    causal = torch.tensor(th.causal_attention_weights(S).evalf().tolist(), dtype=torch.float64)
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    expected = scores.double().masked_fill(~mask, float("-inf")).softmax(-1)
    assert torch.allclose(causal, expected)
    assert torch.allclose(literal, scores.double().softmax(-1) * mask)
    assert literal.sum(-1)[0] < 1 and torch.allclose(causal.sum(-1), torch.ones(3, dtype=torch.float64))


def test_theorem_9_3_counts_against_brute_force():
    values = {th.n: 50, th.k: 7, th.t: 5, th.m: 6, th.r: 2, th.h: 3, th.d: 4, th.w: 1000, th.c: 2}
    n, k, t, m, r, h, d, w, c = (values[s] for s in (th.n, th.k, th.t, th.m, th.r, th.h, th.d, th.w, th.c))
    table = th.complexity_table()
    layer = h * (n * n * d + c * n * d * d)  # every head attends over n positions, plus the linear work
    assert table.prompt_time["standard"].subs(values) == m * layer
    assert table.prompt_time["gemfilter"].subs(values) == r * layer
    decode = lambda cached: sum((cached + i) * d for i in range(1, t + 1))  # noqa: E731
    assert table.generation_time["standard"].subs(values) == m * h * decode(n)
    assert table.generation_time["gemfilter"].subs(values) == m * h * (k * k * d + decode(k))
    kv = lambda positions, layers: 2 * layers * h * positions * d  # noqa: E731
    assert table.generation_memory["standard"].subs(values) == m * w + kv(n + t, m)
    assert table.prompt_memory["snapkv"].subs(values) == m * w + kv(n, 1) + kv(k, m)
    assert table.prompt_memory["gemfilter"].subs(values) == r * w + kv(n, 1)
    assert th.complexity_table(memory_as_printed=True).prompt_memory["standard"].subs(values) == m * w + 2 * m * h * d
    assert th.kv_cache_floats(m, h, n, d) == kv(n, m)


def test_speedups_and_the_sandwich_numerically():
    assert th.prompt_speedup() == th.m / th.r
    assert th.prompt_speedup_qk_limit() == th.m / (th.r - 1)
    gen = th.complexity_table().generation_time["gemfilter"] / (th.m * th.h * th.d)
    lower, upper = th.theta_sandwich(gen, th.k**2 + th.t**2)
    for k in range(1, 30, 3):
        for t in range(1, 30, 4):
            assert lower.subs({th.k: k, th.t: t}) >= 0 and upper.subs({th.k: k, th.t: t}) >= 0


def test_shifted_terms():
    s = sp.Symbol("s", positive=True)
    terms = th.shifted_terms(th.t**2 - th.t, th.t, 1, s)  # (1 + s)^2 - (1 + s) = s^2 + s
    assert sorted(terms, key=str) == sorted([s**2, s], key=str)


def test_dilution_mass():
    gap = sp.Symbol("Delta", positive=True)
    mass = th.softmax_needle_mass(gap, th.n)
    assert math.isclose(float(mass.subs({gap: 1.0, th.n: 5})), math.e / (math.e + 4))
    assert sp.solve(sp.Eq(mass, sp.Rational(1, 2)), gap) == [sp.log(th.n - 1)]


def test_printed_tables_have_14_columns_and_table_9_2_layer_13_is_table_9_1_gemfilter_1024():
    rows = [row for model in th.TABLE_9_1.values() for row in model.values()] + list(th.TABLE_9_2.values())
    assert len(rows) == 10 + 9 + 9 + 8 and all(len(scores) == len(th.LONGBENCH_TASKS) == 14 for scores, _ in rows)
    assert th.TABLE_9_2[13] == th.TABLE_9_1["LLaMA 3.1 8B Instruct"]["GemFilter-1024"]
    assert th.exact_mean([0.1, 0.2]) == sp.Rational(3, 20)  # exact, not 0.15000000000000002


def test_llama_shape_gives_the_published_parameter_count():
    shape = th.LLAMA_3_1_8B
    vocab = 128_256  # untied input and output embeddings, and the final norm
    total = shape.layers * shape.layer_parameters() + 2 * vocab * shape.hidden + shape.hidden
    assert total == 8_030_261_248  # LLaMA 3.1 8B's published size
    memory = th.llama_prompt_memory(120_000, 1024, 13)
    kv_per_token = 2 * shape.layers * shape.kv_heads * shape.head_dim * shape.bytes_per_number
    assert kv_per_token == 131_072
    weights = shape.layers * shape.layer_parameters() * shape.bytes_per_number
    assert memory["standard"] == weights + 120_000 * kv_per_token


def test_parse_table():
    text = "# a comment\n## Model A\nAll_KV 1.0 2.0 1.50\nX-1 3 5 4.00\n## Model B\nAll_KV 0 1 0.5\n"
    table = th.parse_table(text)
    assert table == {"Model A": {"All KV": ((1.0, 2.0), 1.5), "X-1": ((3.0, 5.0), 4.0)},
                     "Model B": {"All KV": ((0.0, 1.0), 0.5)}}

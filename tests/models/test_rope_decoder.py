"""models/rope_decoder.py: rotary positions, the KV cache, and the per-layer queries and keys GemFilter reads."""

import pytest
import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder, layer_parameters, rotate

VOCAB = NeedleVocab()


def small_model(seed=0, layers=3):
    torch.manual_seed(seed)
    return RopeDecoder(DecoderConfig(n_layers=layers, d_model=32, n_heads=4)).eval()


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
    assert cache.numel() == 3 * 2 * model.n_layers * H * tokens.shape[1] * e == cache2.numel()


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


def test_attention_is_causal_with_the_mask_inside_the_softmax():
    model = small_model(layers=2)
    tokens = needle_prompts(VOCAB, 2, 14, torch.Generator().manual_seed(4)).tokens
    changed = tokens.clone()
    changed[:, 9:] = VOCAB.filler0  # change the future of position 8
    with torch.no_grad():
        assert torch.allclose(model(tokens)[:, :9], model(changed)[:, :9], atol=1e-6)


def test_layer_parameters_count_one_block():
    model = small_model()
    D = model.config.d_model
    # qkv (3 D^2) + out (D^2) + two LayerNorms (4 D) + MLP (D x 4D + 4D, 4D x D + D)
    assert layer_parameters(model) == 4 * D * D + 4 * D + (4 * D * D + 4 * D) + (4 * D * D + D)


def test_logits_of_the_last_positions_only():
    model = small_model()
    tokens = needle_prompts(VOCAB, 2, 10, torch.Generator().manual_seed(5)).tokens
    with torch.no_grad():
        assert torch.allclose(model(tokens, last=3), model(tokens)[:, -3:], atol=1e-6)

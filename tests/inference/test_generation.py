"""inference/generation.py: greedy generation with a KV cache."""

import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.inference.generation import generate_greedy
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder


def test_greedy_generation_keeps_prompt_plus_t_tokens_and_matches_the_full_forward():
    torch.manual_seed(0)
    model = RopeDecoder(DecoderConfig(n_layers=3, d_model=32, n_heads=4)).eval()
    tokens = needle_prompts(NeedleVocab(), 2, 10, torch.Generator().manual_seed(4)).tokens
    out, cache = generate_greedy(model, tokens, 3)
    assert out.shape == (2, 3) and cache.next_position == tokens.shape[1] + 3
    with torch.no_grad():  # every generated token is the argmax of the full forward on what came before
        sequence = tokens
        for j in range(3):
            assert (out[:, j] == model(sequence)[:, -1].argmax(-1)).all()
            sequence = torch.cat([sequence, out[:, j : j + 1]], dim=1)

"""measure/needle.py: exact match and where each layer's last row points."""

import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.inference.token_selection import head_row_logits
from feature_learning.measure.needle import exact_match, localise_by_layer, min_distance
from feature_learning.models.rope_decoder import DecoderConfig, RopeDecoder


def test_exact_match_and_distance():
    assert min_distance(torch.tensor([[1, 5, 9]]), torch.tensor([6])).tolist() == [1]
    generated, answer = torch.tensor([[3, 4], [3, 5], [3, 4]]), torch.tensor([[3, 4], [3, 4], [3, 4]])
    assert exact_match(generated, answer).tolist() == [True, False, True]


def test_localisation_by_layer():
    torch.manual_seed(0)
    model = RopeDecoder(DecoderConfig(n_layers=3, d_model=32, n_heads=4)).eval()
    p = needle_prompts(NeedleVocab(), 4, 20, torch.Generator().manual_seed(10))
    loc = localise_by_layer(model, p.tokens, p.needle_pos, 5)
    assert loc.head_argmax_at_needle.shape == (3, 4) and loc.distance.shape == (3, 4)
    assert loc.argmax_at_needle.shape == (3,)
    assert torch.equal(loc.needle_kept, (loc.distance == 0).float().mean(1))
    q, k = model.queries_keys(p.tokens, 1)
    scores = head_row_logits(q, k, torch.full((4,), p.tokens.shape[1] - 1))
    at_needle = (scores.sum(1).argmax(-1) == p.needle_pos).float().mean()
    assert loc.argmax_at_needle[0] == at_needle

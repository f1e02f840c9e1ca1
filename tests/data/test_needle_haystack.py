"""data/needle_haystack.py: the synthetic needle prompts and their vocabulary."""

import pytest
import torch

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts

VOCAB = NeedleVocab()


def test_needle_prompts_layout():
    g = torch.Generator().manual_seed(0)
    for layout, offset in (("ask_last", 2), ("key_last", 1)):
        p = needle_prompts(VOCAB, 50, 20, g, depth=0.5, layout=layout)
        assert p.tokens.shape == (50, 21 + offset) and (p.tokens[:, 0] == VOCAB.BOS).all()
        assert (p.needle_pos == offset + round(0.5 * 19)).all()
        target = p.tokens.gather(1, p.needle_pos[:, None])[:, 0] - VOCAB.needle0
        key, value = target // VOCAB.n_values, target % VOCAB.n_values
        question = p.tokens[:, 1] if layout == "ask_last" else p.tokens[:, -1]
        assert (question == VOCAB.qkey0 + key).all()
        assert layout == "key_last" or (p.tokens[:, -1] == VOCAB.ASK).all()
        assert (p.answer[:, 0] == VOCAB.value0 + value).all() and (p.answer[:, 1] == VOCAB.END).all()
        assert (VOCAB.is_needle(p.tokens).sum(1) == 4).all()  # four needles at distinct positions
        others = p.tokens.gather(1, p.distractor_pos) - VOCAB.needle0
        assert (others // VOCAB.n_values != key[:, None]).all()  # with other keys


def test_needle_prompts_depth_extremes_and_errors():
    g = torch.Generator().manual_seed(1)
    assert (needle_prompts(VOCAB, 4, 10, g, depth=0.0).needle_pos == 2).all()
    assert (needle_prompts(VOCAB, 4, 10, g, depth=1.0, layout="key_last").needle_pos == 10).all()
    with pytest.raises(ValueError):
        needle_prompts(VOCAB, 4, 10, g, depth=1.5)
    with pytest.raises(ValueError):
        needle_prompts(VOCAB, 4, 3, g)
    with pytest.raises(ValueError):
        needle_prompts(VOCAB, 4, 10, g, layout="middle")


def test_token_names():
    p = needle_prompts(VOCAB, 1, 12, torch.Generator().manual_seed(2), depth=0.5)
    names = VOCAB.text(p.tokens[0]).split()
    assert names[0] == "<bos>" and names[1].startswith("KEY") and names[-1] == "<ask>"
    key = int(names[1][3:])
    assert names[int(p.needle_pos[0])].startswith(f"[{key}:")  # the target needle carries the question's key
    value = int(names[int(p.needle_pos[0])].split(":")[1][:-1])
    assert VOCAB.text(p.answer[0]) == f"VAL{value} <end>"
    assert sum(name == "." for name in names) == 12 - 4  # the filler, around four needles

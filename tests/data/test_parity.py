"""data/parity.py: the structured and the uniform parity of dissertation ch. 3 (eqs. (B.396)-(B.397)), checked
against the law they state (part frequencies, the label rule, the background law, E[y x])."""

import math

import pytest
import torch

from feature_learning.data.bases import random_orthogonal
from feature_learning.data.parity import UNIFORM_PART, StructuredParity, part_names, uniform_parity


def test_part_frequencies_and_shapes(gen):
    task = StructuredParity(d=20, k=3, r=3, p_A=0.1, p_o=0.3)
    x, y, part = task.sample(60_000, gen())
    assert x.shape == (60_000, 20) and y.shape == (60_000,) and part.shape == (60_000,)
    freq = torch.bincount(part, minlength=task.parts).double() / len(part)
    expected = task.part_probabilities()
    se = (expected * (1 - expected) / len(part)).sqrt()
    assert ((freq - expected).abs() <= 5 * se).all()
    assert part_names(3) == ["U", "1+", "1-", "2+", "2-", "3+", "3-"]


def test_label_is_the_sign_of_the_sum_of_block_parities(gen):
    task = StructuredParity(d=12, k=3, r=3, p_A=0.1, p_o=0.5)
    x, y, part = task.sample(5000, gen(1))
    blocks = x[:, :9].reshape(-1, 3, 3)
    expected = torch.sign(blocks.prod(-1).sum(-1))
    assert torch.equal(y, expected) and (y != 0).all()


def test_structured_parts_and_uniform_part(gen):
    task = StructuredParity(d=15, k=5, r=1, p_A=0.25, p_o=0.5)
    for p, sign in ((1, 1.0), (2, -1.0)):
        x, y, part = task.sample(200, gen(p), part=p)
        assert (part == p).all() and (x[:, :5] == sign).all() and (y == sign).all()
    x, y, _ = task.sample(20_000, gen(3), part=UNIFORM_PART)
    assert set(x[:, :5].unique().tolist()) == {-1.0, 1.0}
    assert abs(float(x[:, :5].mean())) < 0.03 and torch.equal(y, x[:, :5].prod(-1))


def test_background_law(gen):
    task = StructuredParity(d=40, k=3, r=1, p_A=0.25, p_o=0.2)
    x, _, _ = task.sample(20_000, gen(4))
    bg = x[:, 3:]
    n = bg.numel()
    for value, prob in ((1.0, 0.2), (-1.0, 0.2), (0.0, 0.6)):
        share = float((bg == value).double().mean())
        assert abs(share - prob) <= 5 * math.sqrt(prob * (1 - prob) / n)


def test_mean_yx_is_two_pA_sqrt_k_times_the_features(gen):
    """Remark B.45 says E[y x] = 0; the law gives 2 p_A sqrt(k) sum_j D_j (Monte Carlo, rotated dictionary)."""
    task = StructuredParity(d=16, k=3, r=3, p_A=0.1, p_o=0.5)
    M = random_orthogonal(16, gen(5))
    x, y, _ = task.sample(400_000, gen(6), M)
    mean = (y[:, None] * x).mean(0)
    expected = 2 * task.p_A * math.sqrt(task.k) * task.directions(M).sum(0)
    assert (mean - expected).abs().max() < 0.01


def test_directions_are_unit_and_orthogonal(gen):
    task = StructuredParity(d=20, k=3, r=3, p_A=0.1)
    M = random_orthogonal(20, gen(7))
    D = task.directions(M)
    assert torch.allclose(D @ D.T, torch.eye(3, dtype=D.dtype), atol=1e-12)
    x, _, _ = task.sample(10, gen(8), M, part=1)
    assert torch.allclose(x @ D[0], torch.full((10,), math.sqrt(3), dtype=D.dtype))  # <D_1, x> = k / sqrt(k)


def test_uniform_parity_and_validation(gen):
    task = uniform_parity(11, 4)
    x, y, part = task.sample(1000, gen(9))
    assert (part == UNIFORM_PART).all() and torch.equal(y, x[:, :4].prod(-1)) and set(x.unique().tolist()) == {-1, 1}
    with pytest.raises(ValueError):
        StructuredParity(d=10, k=4, r=1, p_A=0.25)  # structured parts need k odd
    with pytest.raises(ValueError):
        StructuredParity(d=10, k=3, r=2)

"""data/digits.py: the bundled digits, their border shift and their Gaussian look-alikes."""

import numpy as np
import torch
from sklearn import datasets

from feature_learning.data.digits import (
    SIDE,
    border_mask,
    digit_splits,
    gaussian_like,
    load_digits,
    random_split,
    with_border,
)


def test_load_digits_is_scikit_learns_scaled_exactly_in_every_precision():
    x, y = load_digits()
    bunch = datasets.load_digits()
    assert x.shape == (1797, 64) and x.dtype == torch.float64 and y.dtype == torch.long
    assert np.array_equal(x.numpy() * 16, bunch.data) and np.array_equal(y.numpy(), bunch.target)
    x32, _ = load_digits(torch.float32)
    assert torch.equal(x32, x.float()) and torch.equal(x32, torch.tensor(bunch.data, dtype=torch.float32) / 16.0)


def test_splits_partition_the_digits(gen):
    train, test = digit_splits(1200, gen(1))
    assert train.digits.shape == (1200, 64) and test.digits.shape == (597, 64) and train.digits.dtype == torch.float32
    x, y = load_digits(torch.float32)
    order = torch.randperm(1797, generator=gen(1))
    assert torch.equal(train.digits, x[order[:1200]]) and torch.equal(test.labels, y[order[1200:]])
    first, rest = random_split(10, 4, gen(2))
    assert sorted(torch.cat([first, rest]).tolist()) == list(range(10)) and len(first) == 4


def test_border_shift(gen):
    digits = torch.rand(4, 64, generator=gen(3))
    mask = border_mask()
    assert mask.shape == (SIDE * SIDE,) and int(mask.sum()) == 36
    for split, (lo, hi) in (("id", (0.0, 1.0)), ("ood", (-1.0, 0.0))):
        img = with_border(digits, split=split, generator=gen(4))
        assert torch.equal(img[:, ~mask], digits)
        assert (img[:, mask] >= lo).all() and (img[:, mask] <= hi).all()
    same_noise = with_border(digits, split="id", generator=gen(4))[:, mask] - 1.0
    assert torch.equal(with_border(digits, split="ood", generator=gen(4))[:, mask], same_noise)


def test_gaussian_like_has_the_first_two_moments(gen):
    x, _ = load_digits()
    u = gaussian_like(x[:, :8], 100_000, gen(5))
    assert torch.allclose(u.mean(0), x[:, :8].mean(0), atol=0.01)
    assert torch.allclose(torch.cov(u.T), torch.cov(x[:, :8].T), atol=0.01)

"""measure/metrics.py: accuracies, margins and risks, (prediction, target) order."""

import itertools

import torch

from feature_learning.measure.metrics import (
    argmax_accuracy,
    class_weighted_margins,
    exact_match,
    margins,
    risk,
    sign_accuracy,
)
from feature_learning.models.two_layer import init_fixed_output
from feature_learning.training.losses import hinge

D = torch.float64


def test_sign_accuracy_counts_zero_as_wrong_and_agrees_with_the_former_accuracies(gen):
    scores = torch.tensor([[1.0, -2.0, 0.0, 3.0]], dtype=D)
    y = torch.tensor([[1.0, 1.0, 1.0, -1.0]], dtype=D)
    assert sign_accuracy(scores, y).tolist() == [0.25]
    out = torch.randn(3, 40, generator=gen(1), dtype=D)
    out[:, :5] = 0.0
    yy = torch.sign(torch.randn(3, 40, generator=gen(2), dtype=D))
    assert torch.equal(sign_accuracy(out, yy), ((yy * out) > 0).double().mean(-1))
    net = init_fixed_output(2, 4, 6, generator=gen(3), dtype=D)
    x = torch.randn(2, 30, 4, generator=gen(4), dtype=D)
    yn = torch.sign(torch.randn(2, 30, generator=gen(5), dtype=D))
    with torch.no_grad():
        out = net(x)
    assert torch.equal(sign_accuracy(out, yn), (torch.sign(out) == yn).double().mean(-1))
    assert torch.equal(risk(out, yn, hinge), torch.clamp(1 - yn * out, min=0).mean(-1))


def test_margins_and_accuracy_by_brute_force(gen):
    logits = torch.randn(2, 6, 4, generator=gen(6), dtype=D)
    labels = torch.randint(0, 4, (6,), generator=gen(7))
    m, cw = margins(logits, labels), class_weighted_margins(logits, labels)
    for r, i in itertools.product(range(2), range(6)):
        row, y = logits[r, i], int(labels[i])
        others = [row[j] for j in range(4) if j != y]
        assert torch.isclose(m[r, i], row[y] - max(others))
        assert torch.isclose(cw[r, i], row[y] - sum(others) / 3)
    hits = (logits.argmax(-1) == labels).double().mean(-1)
    assert torch.equal(argmax_accuracy(logits, labels), hits)
    assert ((m > 0).double().mean(-1) == hits).all()  # a positive margin is a correct argmax


def test_exact_match_needs_every_answer_token():
    generated = torch.tensor([[3, 4, 9], [3, 5, 9], [3, 4, 1]])  # longer than the answer: the rest is ignored
    answer = torch.tensor([[3, 4], [3, 4], [3, 4]])
    assert exact_match(generated, answer).tolist() == [True, False, True]


def test_sign_accuracy_ties():
    from feature_learning.measure.metrics import sign_accuracy

    scores = torch.tensor([1.0, 0.0, -2.0, 0.0])
    y = torch.tensor([1.0, 1.0, 1.0, -1.0])
    assert float(sign_accuracy(scores, y)) == 0.25 and float(sign_accuracy(scores, y, ties=0.5)) == 0.5

"""measure/fourier.py, measure/neurons.py and the margin metrics on the modular-addition networks (Fourier chapter)."""

import math

import pytest
import torch

from feature_learning.measure import fourier
from feature_learning.measure.metrics import argmax_accuracy as accuracy
from feature_learning.measure.metrics import class_weighted_margins, margins, steps_to_reach
from feature_learning.measure.neurons import summarize_neurons
from feature_learning.models.poly_net import poly_net_from_neurons
from feature_learning.theory.fourier_circuits import max_margin_network
from feature_learning.training.loop import OptimConfig


def test_margins_by_definition():
    logits = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, -1.0]])
    y = torch.tensor([0, 2])
    assert torch.allclose(margins(logits, y), torch.tensor([1.0, -6.0]))
    assert torch.allclose(class_weighted_margins(logits, y), torch.tensor([1.5, -3.5]))
    assert torch.allclose(accuracy(logits, y), torch.tensor(0.5, dtype=torch.float64))


def test_one_sided_power_is_one_sparse_for_a_cosine_and_keeps_plancherel():
    p = 11
    a = torch.arange(p, dtype=torch.float64)
    x = 0.7 * torch.cos(0.3 + 2 * math.pi * 4 * a / p)
    assert float(fourier.max_normalized_power(x)) == pytest.approx(1.0)
    assert int(fourier.dominant_frequency(x)) == 4
    assert float(fourier.phase_at(x, torch.tensor(4))) == pytest.approx(0.3)
    noise = torch.randn(p, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert float(fourier.one_sided_power(noise).sum()) == pytest.approx(p * float(noise.pow(2).sum()))


def test_interpolation_passes_through_the_samples():
    x = torch.randn(7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(fourier.interpolate(x, torch.arange(7, dtype=torch.float64)), x)


def test_top_power_fraction_of_a_2d_cosine():
    p = 13
    a = torch.arange(p, dtype=torch.float64)
    M = torch.cos(2 * math.pi * (2 * a[:, None] + 5 * a[None, :]) / p + 0.4)
    assert float(fourier.top_power_fraction(M, n=2)) == pytest.approx(1.0)


def test_neuron_summary_of_the_construction():
    k, p = 3, 7
    u, w, freqs, _ = max_margin_network(k, p)
    summary = summarize_neurons(poly_net_from_neurons(u, w))
    assert torch.allclose(summary.max_power, torch.ones_like(summary.max_power))
    assert torch.equal(summary.frequency, freqs)
    assert summary.same_frequency.all()
    assert summary.phase_residual.abs().max() < 1e-10
    assert summary.frequency_counts(p).tolist() == [0] + [2 ** (2 * k - 1)] * ((p - 1) // 2)


def test_lr_schedule_and_steps_to_reach():
    cfg = OptimConfig(steps=110, lr=1.0, warmup=10, schedule="cosine")
    assert cfg.lr_factor(0) == pytest.approx(0.1) and cfg.lr_factor(10) == pytest.approx(1.0)
    assert cfg.lr_factor(110) == pytest.approx(0.0, abs=1e-12)
    curve = torch.tensor([[0.1, 0.2], [0.5, 0.3], [0.99, 0.4]])
    out = steps_to_reach(curve, torch.tensor([0, 10, 20]), 0.9)
    assert out[0] == 20 and math.isinf(out[1])

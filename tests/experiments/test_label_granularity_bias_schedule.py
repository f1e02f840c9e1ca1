"""experiments/label_granularity/bias_schedule.py: eqs. (7) and (93) as gradient-descent steps on a pseudo-gradient of
the bias."""

import math

import torch

from feature_learning.data.multiview_patches import MultiViewPatches
from feature_learning.experiments.label_granularity.bias_schedule import bias_pseudo_gradient, train_bias_schedule
from feature_learning.models.patch_conv import init_thresholded

D = torch.float64


def test_eq7_step_is_norm_over_lambda():
    g = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(0), dtype=D)
    eta, lam = 0.1, 20.0
    db = -eta * bias_pseudo_gradient(g, lam, "eq7")
    assert torch.allclose(db, -(eta * g).norm(dim=-1) / lam)


def test_eq93_is_the_min_with_the_lookahead():
    gen = torch.Generator().manual_seed(1)
    g = torch.randn(2, 3, 4, 5, generator=gen, dtype=D)
    g[:, 0, 0] = 0.0  # a neuron that did not move
    X_next = torch.randn(2, 6, 7, 5, generator=gen, dtype=D)
    eta, lam = 0.05, 20.0
    db = -eta * bias_pseudo_gradient(g, lam, "eq93", X_next)
    dw = -eta * g
    brute = torch.zeros(2, 3, 4, dtype=D)
    for r in range(2):
        for c in range(3):
            for j in range(4):
                look = 0.1 * (X_next[r].reshape(-1, 5) @ dw[r, c, j]).max()
                brute[r, c, j] = -min(dw[r, c, j].norm() / lam, look) if dw[r, c, j].abs().sum() else 0.0
    assert torch.allclose(db, brute, atol=1e-15)


def test_training_follows_the_hand_written_rule():
    """Two steps of train_bias_schedule equal eq. (5) and eq. (7) written out."""
    data = MultiViewPatches(d=12, P=8, k=2, s_star=2, sigma_zeta=0.05 / math.sqrt(12))
    net = init_thresholded(1, 2, 300, 12, sigma0=0.1, tau=2.0, generator=torch.Generator().manual_seed(0), dtype=D)
    W0, b0 = net.W.clone(), net.b.clone()
    gen = torch.Generator().manual_seed(5)
    batches = [data.sample(2, gen, dtype=D)[:2] for _ in range(2)]
    train_bias_schedule(net, lambda step: batches[step], steps=2, lr=0.5, lam=10.0, rule="eq7")
    from feature_learning.models.patch_conv import PatchConvNet

    ref = PatchConvNet(W0.clone(), b0.clone())
    for X, y in batches:
        grad, _ = ref.gradient(X, y)
        W_new = ref.W - 0.5 * grad
        ref = PatchConvNet(W_new, ref.b - (W_new - ref.W).norm(dim=-1) / 10.0)
    assert torch.allclose(net.W, ref.W, atol=1e-14) and torch.allclose(net.b, ref.b, atol=1e-14)
    assert not torch.equal(net.W, W0)

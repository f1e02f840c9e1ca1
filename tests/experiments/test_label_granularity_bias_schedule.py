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


def test_eq93_lookahead_in_chunks_is_the_same():
    """A look-ahead product beyond the budget is computed in chunks of patches: the same pseudo-gradient, and the
    scratch buffer within the budget."""
    gen = torch.Generator().manual_seed(2)
    g = torch.randn(2, 3, 4, 5, generator=gen, dtype=D)
    g[:, 1, 2] = 0.0
    X_next = torch.randn(2, 6, 7, 5, generator=gen, dtype=D)
    whole = bias_pseudo_gradient(g, 20.0, "eq93", X_next, {})
    for budget in (2 * 11 * 10, 2 * 11 * 17, 1):
        workspace = {}
        part = bias_pseudo_gradient(g, 20.0, "eq93", X_next, workspace, max_elements=budget)
        assert torch.allclose(part, whole, atol=1e-15, rtol=1e-13)
        if budget > 1:
            assert workspace["look_ahead"].numel() <= budget


def test_training_in_chunks_matches_the_whole_batch():
    """eq. (93) training (the fine rule) with a budget of a few samples per chunk: the same run to rounding."""
    data = MultiViewPatches(d=12, P=8, k=2, s_star=2, sigma_zeta=0.05 / math.sqrt(12))
    gen = torch.Generator().manual_seed(6)
    batches = [data.sample(3, gen, dtype=D)[::2] for _ in range(4)]
    nets = []
    for budget in (None, 2 * 4 * 300 * 8):
        net = init_thresholded(1, 4, 300, 12, sigma0=0.1, tau=2.0, generator=torch.Generator().manual_seed(0),
                               dtype=D)
        if budget is not None:
            net.max_elements = budget
            assert len(net.chunks(batches[0][0])) == 6
        train_bias_schedule(net, lambda step: batches[step], steps=3, lr=0.5, lam=10.0, rule="eq93")
        nets.append(net)
    assert not torch.equal(nets[0].b, torch.full_like(nets[0].b, nets[0].b.flatten()[0]))
    assert torch.allclose(nets[0].W, nets[1].W, atol=1e-13) and torch.allclose(nets[0].b, nets[1].b, atol=1e-13)

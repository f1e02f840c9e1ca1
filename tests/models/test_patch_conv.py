"""models/patch_conv.py: the per-output convolutional ReLU learner of Hong et al. (eqs. 3, 5): its closed-form
gradient against autograd, the live-neuron shortcut against the dense forward, pruning as a subset of the unpruned
initialisation, and the merge of fine heads."""

import math

import torch

from feature_learning.data.multiview_patches import MultiViewPatches
from feature_learning.models.patch_conv import (
    PAD_BIAS,
    PatchConvNet,
    gaussian_tail,
    init_thresholded,
    merge_heads,
    width_for_lucky,
)

D = torch.float64


def _net_and_batch(C=4, m=6, d=10, R=2, N=5, P=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(R, C, m, d, generator=g, dtype=D)
    b = 0.3 * torch.randn(R, C, m, generator=g, dtype=D)
    X = torch.randn(R, N, P, d, generator=g, dtype=D)
    labels = torch.randint(0, C, (R, N), generator=g)
    return PatchConvNet(W, b), X, labels


def test_gradient_matches_autograd():
    net, X, labels = _net_and_batch()
    grad, F = net.gradient(X, labels)
    W = net.W.clone().requires_grad_(True)
    loss = PatchConvNet(W, net.b).loss(X, labels).sum()
    (auto,) = torch.autograd.grad(loss, W)
    assert torch.allclose(grad, auto, atol=1e-12, rtol=1e-10)
    assert torch.allclose(F, torch.relu(net.preactivation(X)).sum(dim=(2, 4)), atol=1e-12)


def test_forward_is_the_sum_over_patches_and_neurons():
    net, X, _ = _net_and_batch(seed=1)
    F = net(X)
    brute = torch.zeros_like(F)
    R, C, m, d = net.W.shape
    for r in range(R):
        for n in range(X.shape[1]):
            for c in range(C):
                brute[r, n, c] = sum(torch.relu(X[r, n, p] @ net.W[r, c, j] + net.b[r, c, j])
                                     for p in range(X.shape[2]) for j in range(m))
    assert torch.allclose(F, brute, atol=1e-12)


def test_reused_scratch_memory_changes_no_value():
    """The training path writes its pre-activations into the network's reused workspace; any sequence of batch
    sizes gives exactly the values of a fresh network, and of the allocating path taken under autograd."""
    net, X, labels = _net_and_batch(N=9, seed=2)
    small, small_labels = X[:, :3], labels[:, :3]
    net.gradient(X, labels)  # the buffer grows to the larger batch
    grad, F = net.gradient(small, small_labels)
    fresh_grad, fresh_F = PatchConvNet(net.W.clone(), net.b.clone()).gradient(small, small_labels)
    assert torch.equal(grad, fresh_grad) and torch.equal(F, fresh_F)
    assert net.workspace["pre"].numel() == X.shape[0] * net.n_outputs * net.width * X.shape[1] * X.shape[2]
    W = net.W.clone().requires_grad_(True)
    assert torch.equal(PatchConvNet(W, net.b)(small).detach(), net(small))


def test_silent_network_has_zero_output_and_gradient():
    net, X, labels = _net_and_batch()
    net = PatchConvNet(net.W, torch.full_like(net.b, PAD_BIAS))
    grad, F = net.gradient(X, labels)
    assert F.abs().max() == 0 and grad.abs().max() == 0


def test_pruned_init_is_the_unpruned_one_restricted():
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    feats = range(6)
    full = init_thresholded(2, 3, 500, 12, sigma0=1e-3, tau=2.5, generator=g1, dtype=D)
    pruned = init_thresholded(2, 3, 500, 12, sigma0=1e-3, tau=2.5, generator=g2, features=feats, prune_margin=0.4,
                              dtype=D)
    keep = full.W[..., list(feats)].max(-1).values >= (2.5 - 0.4) * 1e-3
    for r in range(2):
        for c in range(3):
            kept = full.W[r, c][keep[r, c]]
            n = kept.shape[0]
            assert torch.equal(pruned.W[r, c, :n], kept)
            assert torch.all(pruned.b[r, c, :n] == -2.5e-3)
            assert torch.all(pruned.W[r, c, n:] == 0) and torch.all(pruned.b[r, c, n:] == PAD_BIAS)
    assert torch.allclose(full.b, torch.full_like(full.b, -2.5e-3))


def test_init_scale_and_width_rule():
    net = init_thresholded(1, 2, 4000, 50, sigma0=0.01, tau=3.0, generator=torch.Generator().manual_seed(0), dtype=D)
    assert abs(net.W.std().item() / 0.01 - 1) < 0.01
    assert width_for_lucky(3, 3.0) == int(3 / gaussian_tail(3.0)) == 2222
    assert abs(gaussian_tail(0.0) - 0.5) < 1e-15 and abs(gaussian_tail(1.0) - 0.15865525393145707) < 1e-12


def test_merge_heads_sums_groups():
    F = torch.arange(12, dtype=D).view(1, 2, 6)
    groups = torch.tensor([0, 0, 0, 1, 1, 1])
    out = merge_heads(F, groups)
    assert torch.equal(out, torch.tensor([[[3.0, 12.0], [21.0, 30.0]]], dtype=D))


def test_data_features_drive_lucky_neurons_only():
    """A neuron far below threshold on every feature stays silent on real data (the premise of pruning)."""
    data = MultiViewPatches(d=16, P=12, k=2, s_star=3, sigma_zeta=0.05 / math.sqrt(16))
    X, y, _ = data.sample(4, torch.Generator().manual_seed(0), dtype=D)
    W = torch.zeros(1, 1, 1, 16, dtype=D)
    W[..., : data.n_features] = 2.0e-3  # below tau - delta = 2.6 (units of sigma0 = 1e-3)
    net = PatchConvNet(W, torch.full((1, 1, 1), -3.0e-3, dtype=D))
    assert net(X).abs().max() == 0


def test_conditioned_init_has_the_required_singly_activated_neurons():
    from feature_learning.measure.lucky_neurons import singly_activated

    feats = list(range(8))
    require = {0: [0, 3], 1: [1]}
    args = dict(sigma0=1.0, tau=2.0, features=feats, require=require, dtype=D)
    net = init_thresholded(5, 2, 60, 10, generator=torch.Generator().manual_seed(0), **args)
    members = singly_activated(net.W[..., feats], 2.0)  # (R, C, m, n)
    for c, needed in require.items():
        assert members[:, c][..., needed].any(1).all()
    assert net.redraws > 0  # 60 neurons: the condition fails often enough to be exercised
    pruned = init_thresholded(5, 2, 60, 10, generator=torch.Generator().manual_seed(0), prune_margin=0.5, **args)
    assert pruned.redraws == net.redraws
    keep = net.W[..., feats].max(-1).values >= 1.5
    assert torch.equal(pruned.W[0, 0, : int(keep[0, 0].sum())], net.W[0, 0][keep[0, 0]])


def _sparse_net_and_batch(dtype, seed=3, N=11):
    """Half the neurons fire rarely (bias far below the pre-activations' scale), so the live set differs per chunk."""
    net, X, labels = _net_and_batch(C=3, m=8, d=10, R=2, N=N, P=5, seed=seed)
    b = net.b.clone()
    b[..., ::2] = -9.0
    return PatchConvNet(net.W.to(dtype), b.to(dtype)), X.to(dtype), labels


def test_chunks_cover_the_batch_and_are_one_within_the_budget():
    net, X, _ = _sparse_net_and_batch(D)
    R, N, P, _ = X.shape
    per_sample = R * net.n_outputs * net.width * P
    assert net.chunks(X) == [(0, N)]  # the default budget: one chunk, the unchunked path
    net.max_elements = N * per_sample
    assert net.chunks(X) == [(0, N)]
    net.max_elements = 3 * per_sample + per_sample // 2
    assert net.chunks(X) == [(0, 3), (3, 6), (6, 9), (9, 11)]
    net.max_elements = 1  # below one sample: one sample at a time
    assert net.chunks(X) == [(n, n + 1) for n in range(N)]


def test_chunked_forward_and_gradient_match_the_whole_batch():
    """A budget of a few samples: F and the gradient (a sum over chunks) those of the whole batch to rounding (not
    bit for bit: the matrix product's rounding depends on its shape, here a few ulps); the live neurons differ
    between chunks; the scratch buffers stay within the budget."""
    for dtype, tol in ((D, 1e-13), (torch.float32, 1e-5)):
        whole, X, labels = _sparse_net_and_batch(dtype)
        grad, F = whole.gradient(X, labels)
        F_fwd = whole(X)
        per_sample = X.shape[0] * whole.n_outputs * whole.width * X.shape[2]
        chunked = PatchConvNet(whole.W.clone(), whole.b.clone(), max_elements=3 * per_sample)
        parts = chunked.chunks(X)
        assert len(parts) == 4
        lives = {tuple(chunked._live(X[:, lo:hi])[2].tolist()) for lo, hi in parts}
        assert len(lives) > 1
        grad_c, F_c = chunked.gradient(X, labels)
        assert torch.allclose(F_c, F, atol=0, rtol=tol) and torch.equal(F_fwd, F)
        assert torch.equal(chunked(X), F_c)
        assert torch.allclose(grad_c, grad, atol=tol * grad.abs().max(), rtol=tol)
        assert grad.abs().max() > 0
        for name in ("pre", "act"):
            assert chunked.workspace[name].numel() <= chunked.max_elements
        assert whole.workspace["pre"].numel() == per_sample * X.shape[1]  # the unchunked net held the whole batch
        W = chunked.W.clone().requires_grad_(True)  # the allocating path under autograd, chunked as well
        assert torch.equal(PatchConvNet(W, chunked.b, max_elements=3 * per_sample)(X).detach(), F_c)

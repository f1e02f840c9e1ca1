"""data/multiview_patches.py: the patch counts, hard samples, distractors, balance and label functions."""

import math

import torch

from feature_learning.data.multiview_patches import (
    HierarchicalPatches,
    MultiViewPatches,
    bag_of_patches,
    kmeans_labels,
    labels_at_level,
    oversplit_labels,
    random_sublabels,
)


def _data(counts="exact", k=3):
    return MultiViewPatches(d=20, P=16, k=k, s_star=4, sigma_zeta=0.01 / math.sqrt(20), counts=counts)


def test_exact_counts_and_balance():
    data = _data()
    X, y, fine = data.sample(5, torch.Generator().manual_seed(0), replicas=2)
    assert X.shape == (2, 30, 16, 20)
    assert torch.equal(torch.bincount(fine[0]), torch.full((6,), 5))
    counts = data.patch_counts(X)
    for n in range(30):
        yy, c = int(y[0, n]), int(fine[0, n]) % 3
        assert counts[0, n, data.common(yy)] == 4 and counts[0, n, data.subclass(yy, c)] == 4
        assert counts[0, n].sum() == 8


def test_hard_samples_lose_the_common_feature_only():
    data = _data()
    X, y, fine = data.sample(3, torch.Generator().manual_seed(1), hard=True)
    counts = data.patch_counts(X)
    assert counts[..., :2].sum() == 0
    assert torch.all(counts.sum(-1) == 4)


def test_feature_noise_uses_the_other_class_and_distractor():
    data = MultiViewPatches(d=20, P=16, k=3, s_star=4, sigma_zeta=0.0, gamma=0.05)
    X, y, _ = data.sample(4, torch.Generator().manual_seed(2), hard=True, distract=0.3)
    for n in range(X.shape[1]):
        own = [data.common(int(y[0, n]))] + [data.subclass(int(y[0, n]), c) for c in range(3)]
        noise_patches = torch.cat([X[0, n, :4], X[0, n, 8:]])  # hard: the common slots hold feature noise too
        assert torch.all(noise_patches[:, own[0]] == 0)
        other = 1 - int(y[0, n])
        assert torch.all((noise_patches[:, other] >= 0.3 - 1e-6) & (noise_patches[:, other] <= 0.3 + 0.1 + 1e-6))


def test_bernoulli_counts_have_the_right_mean():
    data = _data("bernoulli")
    X, _, _ = data.sample(200, torch.Generator().manual_seed(3))
    counts = data.patch_counts(X)
    common = counts[..., :2].sum(-1).double().mean()
    assert abs(common - 4) < 0.1


def test_hierarchy_and_label_functions():
    tree = HierarchicalPatches(branching=(2, 3), P=16, s_per_level=(3, 3), sigma_zeta=0.0, n_nuisance=2, s_nuisance=2)
    assert tree.level_sizes == (2, 6) and tree.d == 2 + 6 + 2 + 8
    g = torch.Generator().manual_seed(0)
    X, leaf, nuis = tree.sample(60, g)
    sup = labels_at_level(tree, leaf, 0)
    assert torch.equal(sup, leaf // 3)
    assert torch.all(X[torch.arange(60), 0, sup] > 0.9) and torch.all(X[torch.arange(60), 3, 2 + leaf] > 0.9)
    assert torch.all(X[torch.arange(60), 6, 8 + nuis] == 1.0)
    Xh, _, _ = tree.sample(10, g, hard=True)
    assert Xh[..., :2].max() < 0.5
    over = oversplit_labels(leaf, 4, g)
    assert torch.equal(over // 4, leaf)
    rnd = random_sublabels(sup, 5, g)
    assert torch.equal(rnd // 5, sup)
    emb = bag_of_patches(X, 0.0, g)
    per = kmeans_labels(emb, 3, seed=0, groups=sup)
    assert torch.equal(per // 3, sup)
    # the leaves are well separated in the embedding: clusters within a superclass recover them
    for c in range(6):
        assert len(torch.unique(leaf[per == c])) == 1

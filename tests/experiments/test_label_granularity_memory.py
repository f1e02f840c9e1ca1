"""The memory plan of the label-granularity chapter at the `full` profile, by arithmetic on the shapes, without
allocating: the chunk plan of :class:`PatchConvNet` (:meth:`PatchConvNet.chunks`, on meta tensors) and of the
eq. (93) look-ahead (:func:`chunk_ranges`) for every training and evaluation batch of the `full` sweep, log-time and
pruning runs, and the buffers they hold at once (``patch_conv``'s module docstring: the pre-activations, the live
activations and the look-ahead products, each at most ``MAX_PRE_ELEMENTS`` elements, plus the weights, the gradient
and the batches).

The width is the unpruned width ``PatchModel.width``: pruning only removes neurons, so the plan bounds the one of
every seed, seed 0 included. The bound: three buffers of at most 2^30 float32 elements (4.29 GB each) and less than
2 GB for everything else (1.3 GB for the fine k = 32 weights, gradient and batches at the unpruned width 2222,
about a third of that at seed 0's pruned width 672), so below 15 GB; without chunking the fine k = 32 evaluation
alone would need more than 40 GB for its pre-activations (the out-of-memory crash this plan prevents)."""

from __future__ import annotations

import math

import torch

from feature_learning.experiments.label_granularity.runs import source_model
from feature_learning.experiments.label_granularity.sizes import FULL
from feature_learning.experiments.label_granularity.summaries import SOURCE_C0
from feature_learning.models.patch_conv import MAX_PRE_ELEMENTS, PatchConvNet, chunk_ranges

GB = 1e9
BOUND_GB = 15.0  # 3 x 2^30 x 4 bytes = 12.9 GB for the chunked buffers, plus 2 GB for the rest


def meta_net(R: int, C: int, m: int, d: int) -> PatchConvNet:
    return PatchConvNet(torch.empty(R, C, m, d, device="meta"), torch.empty(R, C, m, device="meta"))


def plan(R: int, C: int, m: int, d: int, P: int, n_train: int, n_eval: int, itemsize: int, look_ahead: bool,
         max_elements: int = MAX_PRE_ELEMENTS) -> dict[str, float]:
    """Bytes held at once by one run: the largest chunk's pre-activations and live activations (at most every
    neuron live), the look-ahead products of eq. (93), the weights with their gradient and the live rows' gradient,
    and the batches (a training batch and the next one, three evaluation batches alive in ``evaluate``)."""
    net = meta_net(R, C, m, d)
    net.max_elements = max_elements
    per_sample = R * C * m * P
    chunk = 0
    for n in (n_train, n_eval):
        parts = net.chunks(torch.empty(R, n, P, d, device="meta"))
        assert parts[0][0] == 0 and parts[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:], strict=False))
        chunk = max(chunk, max(hi - lo for lo, hi in parts) * per_sample)
    look = 0
    if look_ahead:  # (R, moved, n P) with moved <= C m, in chunks of patches
        look = max(hi - lo for lo, hi in chunk_ranges(n_train * P, R * C * m, max_elements)) * R * C * m
    out = {"pre": chunk * itemsize, "act": chunk * itemsize, "look_ahead": look * itemsize,
           "weights": 3 * R * C * m * d * itemsize,
           "batches": (2 * n_train + 3 * n_eval) * R * P * d * itemsize}
    out["total"] = sum(out.values())
    return out


def full_runs() -> list[tuple[str, dict]]:
    """(name, shapes) of every PatchConvNet run of the `full` profile."""
    model, sw = FULL.model, FULL.sweep
    runs = []
    for labels, ks, R in (("coarse", sw.coarse_ks, sw.coarse_replicas), ("fine", sw.fine_ks, sw.fine_replicas)):
        for k in ks:
            runs.append((f"sweep {labels} k={k}", dict(
                R=sw.slope_replicas if labels == "coarse" and k == min(ks) else R,
                C=2 if labels == "coarse" else 2 * k, m=model.width, d=model.d(k), P=model.P,
                n_train=2 * k * model.n_per_subclass(k), n_eval=2 * k * sw.n_test, itemsize=4,
                look_ahead=labels == "fine")))
    k = FULL.source.k  # the source's thresholds: the unpruned draw is wider (pruned before training)
    for labels, R in (("coarse", FULL.source.coarse_replicas), ("fine", FULL.source.fine_replicas)):
        runs.append((f"source constants {labels}", dict(
            R=R, C=2 if labels == "coarse" else 2 * k, m=source_model(model, k, labels, SOURCE_C0).width,
            d=model.d(k), P=model.P, n_train=2 * k * model.n_per_subclass(k), n_eval=2 * k * sw.n_test, itemsize=4,
            look_ahead=labels == "fine")))
    k = FULL.logtime.k
    runs.append(("log-time", dict(R=FULL.logtime.replicas, C=2, m=model.width, d=model.d(k), P=model.P,
                                  n_train=2 * k * model.n_per_subclass(k), n_eval=2 * 2, itemsize=4,
                                  look_ahead=False)))
    k = FULL.pruning.k  # the unpruned network, in float64
    runs.append(("pruning", dict(R=FULL.pruning.replicas, C=2, m=model.width, d=model.d(k), P=model.P,
                                 n_train=2 * k * model.n_per_subclass(k), n_eval=2 * 2, itemsize=8,
                                 look_ahead=False)))
    return runs


def test_full_plan_stays_below_its_bound():
    for name, shapes in full_runs():
        p = plan(**shapes)
        itemsize = shapes["itemsize"]
        for key in ("pre", "act", "look_ahead"):
            assert p[key] <= MAX_PRE_ELEMENTS * itemsize, (name, key, p[key] / GB)
        assert p["weights"] + p["batches"] < 2 * GB, (name, p)
        assert p["total"] < BOUND_GB * GB, (name, p["total"] / GB)


def test_full_plan_needs_its_chunks():
    """The largest run, fine k = 32, would not fit unchunked: the test above can fail."""
    shapes = dict(full_runs())[f"sweep fine k={max(FULL.sweep.fine_ks)}"]
    p = plan(**shapes, max_elements=2**62)
    assert p["pre"] > 40 * GB and p["total"] > 3 * BOUND_GB * GB


def test_docstring_chunks_at_the_seed_0_width():
    """``patch_conv``'s docstring: at the pruned width 672 of seed 0 the fine k = 32 evaluation (8 x 64 x 672 x 1280
    x 24 = 1.06e10 pre-activations) goes in 10 chunks of 130 samples."""
    R, C, m, P, n = 8, 64, 672, 24, 1280
    assert R * C * m * n * P == 10_569_646_080
    parts = meta_net(R, C, m, 80).chunks(torch.empty(R, n, P, 80, device="meta"))
    assert len(parts) == math.ceil(n / 130) == 10 and parts[0] == (0, 130)

"""Pictures of individual neurons: weight rows, trajectories, angles and scales on the circle, MDS maps of units."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from feature_learning.measure.fourier import interpolate, one_sided_power
from feature_learning.plotting import to_numpy


def neuron_rows(parts: torch.Tensor, names: list[str], title: str = "") -> plt.Figure:
    """Figure 4.1 of the source: one row per neuron; each part's values (dots) with its band-limited interpolation,
    and the one-sided power spectrum of the part with the largest norm.

    ``parts`` has shape (rows, n_parts, p).
    """
    rows, n_parts, p = parts.shape
    fig, axes = plt.subplots(rows, 2, figsize=(10, 1.7 * rows), squeeze=False, gridspec_kw={"width_ratios": [3, 2]})
    t = torch.linspace(0, p - 1, 400, dtype=torch.float64)
    colors = plt.cm.tab10(np.arange(n_parts))
    for r in range(rows):
        ax, axp = axes[r]
        for j in range(n_parts):
            ax.plot(to_numpy(t), to_numpy(interpolate(parts[r, j].double(), t)), color=colors[j], alpha=0.35, lw=1.2)
            ax.plot(np.arange(p), to_numpy(parts[r, j]), "o", ms=3, color=colors[j], label=names[j] if r == 0 else None)
        largest = int(parts[r].norm(dim=-1).argmax())
        power = to_numpy(one_sided_power(parts[r, largest].double()))
        axp.bar(np.arange(len(power)), power / power.sum(), color=colors[largest])
        axp.set_ylim(0, 1.05)
        ax.set_ylabel(f"neuron {r + 1}", fontsize=8)
        if r == rows - 1:
            ax.set_xlabel("input value a")
            axp.set_xlabel("frequency ζ")
        axp.set_ylabel("power", fontsize=8)
    axes[0, 0].legend(ncol=n_parts, fontsize=7, loc="upper right")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def neuron_trajectories(time, corr_pos, corr_neg, title: str = "", xlabel: str = "step") -> plt.Figure:
    """Fig. 7 of Zhang et al.: E_{x|y}<w_k, x> for the neuron's positive and negative class, one panel per neuron
    (``corr_*`` of shape (T, neurons))."""
    n = corr_pos.shape[1]
    cols = min(5, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.1 * rows), squeeze=False, sharex=True)
    for k in range(n):
        ax = axes[k // cols, k % cols]
        ax.plot(to_numpy(time), to_numpy(corr_pos[:, k]), label="positive class")
        ax.plot(to_numpy(time), to_numpy(corr_neg[:, k]), label="negative class")
        ax.axhline(0, color="gray", lw=0.6)
        ax.set_title(f"neuron {k + 1}", fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols, k % cols].axis("off")
    axes[0, 0].legend(fontsize=6)
    axes[-1, 0].set_xlabel(xlabel, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def scales_and_angles(epochs, scales, angles, windows, labels, title: str = "") -> plt.Figure:
    """Figure 1 of the source: per-neuron scales ||v_k|| (top row, log scale) and signed angles to their cluster
    directions (bottom row) against the epoch, one column per epoch window. scales, angles: (T, K)."""
    epochs, scales, angles = to_numpy(epochs), to_numpy(scales), to_numpy(angles)
    fig, axes = plt.subplots(2, len(windows), figsize=(3.2 * len(windows), 5), squeeze=False)
    for c, (lo, hi) in enumerate(windows):
        keep = (epochs >= lo) & (epochs <= hi)
        for k in range(scales.shape[1]):
            axes[0, c].plot(epochs[keep], scales[keep, k], label=labels[k])
            axes[1, c].plot(epochs[keep], angles[keep, k], label=labels[k])
        axes[0, c].set_yscale("log")
        axes[0, c].set_title(f"epochs {lo}-{hi}", fontsize=9)
        axes[1, c].set_xlabel("epoch")
    axes[0, 0].set_ylabel("scale ||v_k||")
    axes[1, 0].set_ylabel("angle to cluster (rad)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def angle_vs_relative_scale(phi, g, extrema, panels, title: str = "") -> plt.Figure:
    """Figure 2 of the source, one column per setting: top, the first-layer scale against the epoch; bottom, each
    neuron's angle against its relative scale ||v_j||^2 / sum ||v_i||^2 (u > 0 red, u < 0 blue) over G(phi)
    (grey, right axis) with G's extrema as dashed lines. ``panels``: list of dicts with keys epoch, scale
    (T, widths), widths, angle (m,), rel (m,), sign (m,), name."""
    fig, axes = plt.subplots(2, len(panels), figsize=(5.2 * len(panels), 6.4), squeeze=False)
    for c, p in enumerate(panels):
        ax = axes[0, c]
        for w, width in enumerate(p["widths"]):
            ax.plot(to_numpy(p["epoch"]), to_numpy(p["scale"])[:, w], label=f"m = {width}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("first-layer scale ||V||_F")
        ax.set_title(p["name"])
        ax.legend(fontsize=8)
        ax = axes[1, c]
        sign = to_numpy(p["sign"])
        ax.scatter(to_numpy(p["angle"])[sign > 0], to_numpy(p["rel"])[sign > 0], s=8, color="tab:red", label="u > 0")
        ax.scatter(to_numpy(p["angle"])[sign < 0], to_numpy(p["rel"])[sign < 0], s=8, color="tab:blue", label="u < 0")
        for e in to_numpy(extrema[c]):
            ax.axvline(e, color="k", ls="--", lw=0.8)
        ax.set_xlabel("neuron angle atan2(v2, v1) (rad)")
        ax.set_ylabel("relative scale")
        ax.legend(fontsize=8, loc="upper left")
        twin = ax.twinx()
        twin.plot(to_numpy(phi[c]), to_numpy(g[c]), color="0.6", lw=1)
        twin.set_ylabel("G(φ)", color="0.4")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def mds_scatter(coords, highlight=None, ax=None, title: str = ""):
    """Points of a 2-D MDS embedding (e.g. of the first-layer weights, Figure 2 of Shi, Wei and Liang 2022);
    ``highlight`` is a dict ``label: (index, colour)`` of points drawn as stars on top."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(3, 3))[1]
    ax.scatter(coords[:, 0], coords[:, 1], s=6, alpha=0.5, color="tab:blue")
    for label, (index, colour) in (highlight or {}).items():
        ax.scatter(coords[index, 0], coords[index, 1], marker="*", s=160, color=colour, edgecolor="k", label=label)
    ax.set(title=title, xticks=[], yticks=[])
    ax.set_aspect("equal", adjustable="datalim")  # MDS distances are only faithful at equal scales
    return ax

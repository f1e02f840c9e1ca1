"""Pictures of individual neurons: weight rows, trajectories, angles and scales on the circle, MDS maps of units."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import MaxNLocator

from feature_learning.measure.fourier import interpolate, one_sided_power
from feature_learning.measure.geometry import classical_mds, pairwise_cosines
from feature_learning.plotting import TEXT_POINTS, columns_that_fit, panel_row, to_numpy, wrap
from feature_learning.plotting.legibility import COLUMN_INCHES


def neuron_rows(parts: torch.Tensor, names: list[str], title: str = "", *, width: float = COLUMN_INCHES,
                row_height: float = 1.9) -> plt.Figure:
    """Figure 4.1 of the source: one row per neuron; each part's values (dots) with its band-limited interpolation,
    and the one-sided power spectrum of the part with the largest norm; ``width`` inches wide (the book's column).

    ``parts`` has shape (rows, n_parts, p).
    """
    rows, n_parts, p = parts.shape
    fig, axes = plt.subplots(rows, 2, figsize=(width, row_height * rows), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 2]})
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
        ax.set_ylabel(f"neuron {r + 1}", fontsize=TEXT_POINTS)
        if r == rows - 1:
            ax.set_xlabel("input value a")
            axp.set_xlabel("frequency ζ")
        axp.set_ylabel("power", fontsize=TEXT_POINTS)
    axes[0, 0].legend(ncol=n_parts, fontsize=TEXT_POINTS, loc="upper right")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _column_pairs(count: int, width: float, height: float, max_columns: int | None):
    """Axes (2 * blocks, columns) for figures of one column of two panels per setting: the settings wrap into blocks
    of at most ``max_columns`` (default: as many as fit the book's column), each block a pair of rows; cells left over
    in the last block are turned off. Setting ``c`` is column ``c % columns`` of rows ``2 * (c // columns)`` and
    ``+ 1``; the returned array is indexed ``[0 or 1, c]``."""
    columns = min(count, columns_that_fit(width, max_columns))
    blocks = -(-count // columns)
    fig, grid = plt.subplots(2 * blocks, columns, figsize=(width * columns, height * 2 * blocks), squeeze=False)
    for c in range(count, blocks * columns):
        grid[2 * (c // columns), c % columns].axis("off")
        grid[2 * (c // columns) + 1, c % columns].axis("off")
    cells = np.empty((2, count), dtype=object)
    for c in range(count):
        cells[0, c] = grid[2 * (c // columns), c % columns]
        cells[1, c] = grid[2 * (c // columns) + 1, c % columns]
    return cells


def neuron_trajectories(time, corr_pos, corr_neg, title: str = "", xlabel: str = "step", *, width: float = 2.2,
                        height: float = 1.9, max_columns: int | None = None,
                        ylabel: str = r"$E_{x|y}\langle w_k, x\rangle$") -> plt.Figure:
    """Fig. 7 of Zhang et al.: E_{x|y}<w_k, x> for the neuron's positive and negative class, one panel per neuron
    (``corr_*`` of shape (T, neurons)), ``width`` x ``height`` inches each, in rows of at most ``max_columns``
    (default: as many as fit the book's column); ``ylabel`` on the first panel of each row."""
    n = corr_pos.shape[1]
    cols = min(columns_that_fit(width, max_columns), n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, sharex=True)
    for k in range(n):
        ax = axes[k // cols, k % cols]
        ax.plot(to_numpy(time), to_numpy(corr_pos[:, k]), label="positive class")
        ax.plot(to_numpy(time), to_numpy(corr_neg[:, k]), label="negative class")
        ax.axhline(0, color="gray", lw=0.6)
        ax.set_title(f"neuron {k + 1}", fontsize=TEXT_POINTS)
    for k in range(n, rows * cols):
        axes[k // cols, k % cols].axis("off")
    axes[0, 0].legend(fontsize=TEXT_POINTS)
    axes[-1, 0].set_xlabel(xlabel, fontsize=TEXT_POINTS)
    for row in axes:
        row[0].set_ylabel(ylabel, fontsize=TEXT_POINTS)
        for ax in row:
            ax.xaxis.set_major_locator(MaxNLocator(3))
    if title:
        fig.suptitle(title, fontsize=TEXT_POINTS + 1)
    fig.tight_layout()
    return fig


def scales_and_angles(epochs, scales, angles, windows, labels, title: str = "", *, width: float = 3.2,
                      height: float = 2.5, max_columns: int | None = None) -> plt.Figure:
    """Figure 1 of the source: per-neuron scales ||v_k|| (top row, log scale) and signed angles to their cluster
    directions (bottom row) against the epoch, one column per epoch window. scales, angles: (T, K). Each panel is
    ``width`` x ``height`` inches; more windows than ``max_columns`` (default: as many as fit the book's column)
    continue in a further pair of rows."""
    epochs, scales, angles = to_numpy(epochs), to_numpy(scales), to_numpy(angles)
    axes = _column_pairs(len(windows), width, height, max_columns)
    fig = axes[0, 0].figure
    for c, (lo, hi) in enumerate(windows):
        keep = (epochs >= lo) & (epochs <= hi)
        for k in range(scales.shape[1]):
            axes[0, c].plot(epochs[keep], scales[keep, k], label=labels[k])
            axes[1, c].plot(epochs[keep], angles[keep, k], label=labels[k])
        axes[0, c].set_yscale("log")
        axes[0, c].set_title(f"epochs {lo}-{hi}", fontsize=TEXT_POINTS)
        axes[1, c].set_xlabel("epoch")
        if axes[0, c].get_subplotspec().is_first_col():
            axes[0, c].set_ylabel("scale ||v_k||")
            axes[1, c].set_ylabel("angle to cluster (rad)")
    axes[0, 0].legend(fontsize=TEXT_POINTS)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def angle_vs_relative_scale(phi, g, extrema, panels, title: str = "", *, width: float = 5.2, height: float = 3.2,
                            max_columns: int | None = None) -> plt.Figure:
    """Figure 2 of the source, one column per setting: top, the first-layer scale against the epoch; bottom, each
    neuron's angle against its relative scale ||v_j||^2 / sum ||v_i||^2 (u > 0 red, u < 0 blue) over G(phi)
    (grey, right axis) with G's extrema as dashed lines. ``panels``: list of dicts with keys epoch, scale
    (T, widths), widths, angle (m,), rel (m,), sign (m,), name. Each panel is ``width`` x ``height`` inches; more
    settings than ``max_columns`` (default: as many as fit the book's column) continue in a further pair of rows."""
    axes = _column_pairs(len(panels), width, height, max_columns)
    fig = axes[0, 0].figure
    for c, p in enumerate(panels):
        ax = axes[0, c]
        for w, width in enumerate(p["widths"]):
            ax.plot(to_numpy(p["epoch"]), to_numpy(p["scale"])[:, w], label=f"m = {width}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("first-layer scale ||V||_F")
        ax.set_title(p["name"])
        ax.legend(fontsize=TEXT_POINTS)
        ax = axes[1, c]
        sign = to_numpy(p["sign"])
        ax.scatter(to_numpy(p["angle"])[sign > 0], to_numpy(p["rel"])[sign > 0], s=8, color="tab:red", label="u > 0")
        ax.scatter(to_numpy(p["angle"])[sign < 0], to_numpy(p["rel"])[sign < 0], s=8, color="tab:blue", label="u < 0")
        for e in to_numpy(extrema[c]):
            ax.axvline(e, color="k", ls="--", lw=0.8)
        ax.set_xlabel("neuron angle atan2(v2, v1) (rad)")
        ax.set_ylabel("relative scale")
        ax.legend(fontsize=TEXT_POINTS, loc="upper left")
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


def mds_panels(rows: list[list[dict]], width: float = 3.3, *, max_columns: int | None = None) -> plt.Figure:
    """Classical MDS maps of units (Figures 2, 15 and 16 of Shi, Wei and Liang 2022), a grid of panels: each panel has
    a ``title``, the units ``W`` (m, d) (one per row) and ``marks``, a list of (label, vectors (j, d), colour) drawn
    as stars. The units and the marks are embedded together in two dimensions from their chordal distances
    sqrt(2 - 2 cos) (:func:`feature_learning.measure.geometry.classical_mds`, exact for unit vectors when two
    dimensions suffice). Panels are ``width`` inches square; a row longer than ``max_columns`` (default: as many as
    fit the book's column) wraps onto the next rows."""
    columns = columns_that_fit(width, max_columns)
    rows = [chunk for row in rows for chunk in wrap(list(row), columns)]
    ncols = max(len(row) for row in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(width * ncols, width * len(rows)), squeeze=False)
    for r, row in enumerate(rows):
        for ax in axes[r, len(row):]:
            ax.axis("off")
        for c, panel in enumerate(row):
            W = torch.as_tensor(panel["W"]).double()
            marks = panel.get("marks", [])
            points = torch.cat([W, *(torch.as_tensor(v).double().reshape(-1, W.shape[1]) for _, v, _ in marks)])
            coords = to_numpy(classical_mds(torch.sqrt((2 - 2 * pairwise_cosines(points)).clamp_min(0))))
            ax = mds_scatter(coords[: len(W)], ax=axes[r, c], title=panel.get("title", ""))
            start = len(W)
            for label, vectors, colour in marks:
                count = torch.as_tensor(vectors).reshape(-1, W.shape[1]).shape[0]
                ax.scatter(coords[start:start + count, 0], coords[start:start + count, 1], marker="*", s=120,
                           color=colour, edgecolor="k", label=label)
                start += count
    axes[0, 0].legend(fontsize=TEXT_POINTS, loc="lower left")
    fig.tight_layout()
    return fig


def cosine_histograms(panels: dict, xlabel: str = "|cos(w, D)|", bins: int = 40, *, width: float = 3.3,
                      height: float = 3.0, max_columns: int | None = None) -> plt.Figure:
    """Histograms of per-unit cosines with a direction, one panel per entry ``title: {label: values}`` (values of any
    shape, pooled), on a shared [0, 1] axis: e.g. the units at initialisation and after the first step
    (dissertation ch. 3, Lemma 3.13). Panels are ``width`` x ``height`` inches, in rows of at most ``max_columns``
    (default: as many as fit the book's column)."""
    fig, axes = panel_row(len(panels), width, height, max_columns=max_columns, sharey=True)
    edges = np.linspace(0, 1, bins + 1)
    for ax, (title, series) in zip(axes, panels.items(), strict=True):
        for label, values in series.items():
            v = to_numpy(values).ravel()
            ax.hist(v, bins=edges, weights=np.full(len(v), 1 / len(v)), alpha=0.6, label=label)
        ax.set_title(title, fontsize=TEXT_POINTS)
        ax.set_xlabel(xlabel)
        ax.legend(fontsize=TEXT_POINTS)
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel("fraction of units")
    fig.tight_layout()
    return fig

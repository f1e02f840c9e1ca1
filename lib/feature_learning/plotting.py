"""Figure helpers shared by chapters: one function per kind of figure, returning the matplotlib Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from feature_learning.measure.fourier import interpolate, one_sided_power, power_2d

SEED_BAND_ALPHA = 0.25


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def mean_band(ax, x, curves, label=None, color=None, **kwargs):
    """Mean over seeds (axis 1 of ``curves``, shape (T, S)) with a min-max band."""
    x, curves = _np(x), _np(curves)
    if curves.ndim == 1:
        curves = curves[:, None]
    (line,) = ax.plot(x, curves.mean(axis=1), label=label, color=color, **kwargs)
    if curves.shape[1] > 1:
        ax.fill_between(x, curves.min(axis=1), curves.max(axis=1), color=line.get_color(), alpha=SEED_BAND_ALPHA)
    return line


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
            ax.plot(_np(t), _np(interpolate(parts[r, j].double(), t)), color=colors[j], alpha=0.35, lw=1.2)
            ax.plot(np.arange(p), _np(parts[r, j]), "o", ms=3, color=colors[j], label=names[j] if r == 0 else None)
        largest = int(parts[r].norm(dim=-1).argmax())
        power = _np(one_sided_power(parts[r, largest].double()))
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


def frequency_and_power(counts, power_init, power_trained, title: str = "") -> plt.Figure:
    """Figure 4.2 of the source: (a) neurons per dominant frequency, (b) max normalised power at initialisation,
    (c) after training."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    counts = _np(counts)
    axes[0].bar(np.arange(len(counts)), counts)
    axes[0].set(xlabel="dominant frequency ζ", ylabel="neurons", title="(a) frequency coverage")
    bins = np.linspace(0, 1, 41)
    axes[1].hist(_np(power_init).ravel(), bins=bins, color="gray")
    axes[1].set(xlabel="max normalised power", ylabel="count", title="(b) at initialisation")
    axes[2].hist(_np(power_trained).ravel(), bins=bins, color="C2")
    axes[2].set(xlabel="max normalised power", title="(c) trained")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def attention_heads(matrices: torch.Tensor, title: str = "") -> plt.Figure:
    """Figure 4.3 of the source: each head's p x p attention matrix and its 2-D power spectrum (DC removed,
    frequencies centred)."""
    heads = matrices.shape[0]
    fig, axes = plt.subplots(heads, 2, figsize=(6.4, 3.0 * heads), squeeze=False)
    for h in range(heads):
        m = _np(matrices[h])
        axes[h, 0].imshow(m, cmap="RdBu_r", vmin=-np.abs(m).max(), vmax=np.abs(m).max())
        axes[h, 0].set(title=rf"head {h + 1}: $E\,W^Q_h (W^K_h)^\top E^\top$", xlabel="key token b",
                       ylabel="query token a")
        spec = np.fft.fftshift(_np(power_2d(matrices[h].double())))
        p = m.shape[0]
        extent = (-(p // 2) - 0.5, p // 2 + 0.5, p // 2 + 0.5, -(p // 2) - 0.5)
        axes[h, 1].imshow(spec, cmap="viridis", extent=extent)
        axes[h, 1].set(title="2-D power spectrum", xlabel="frequency (b)", ylabel="frequency (a)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def contamination_panels(time, histories: dict, title: str = "") -> plt.Figure:
    """Figs. 3a-c and 8 of Zhang et al. (ICML 2024): for each network (dict name -> history with (T, R) curves),
    ID/OOD hinge risk, class-wise activation rates, oriented core and background weights, and projection norms."""
    names = list(histories)
    fig, axes = plt.subplots(len(names), 4, figsize=(15, 3.0 * len(names)), squeeze=False)
    for row, name in enumerate(names):
        h = histories[name]
        ax = axes[row]
        mean_band(ax[0], time, h["id_hinge"], label="ID hinge risk")
        mean_band(ax[0], time, h["ood_hinge"], label="OOD hinge risk")
        ax[0].set_ylim(-0.03, 1.1)
        mean_band(ax[1], time, h["p_pos"], label="positive class")
        mean_band(ax[1], time, h["p_neg"], label="negative class")
        ax[1].set_ylim(-0.03, 1.03)
        mean_band(ax[2], time, h["core"], label="core (oriented)")
        mean_band(ax[2], time, h["bg"], label="background")
        mean_band(ax[3], time, h["core_norm"], label=r"$\|P_{core}w_k\|$")
        mean_band(ax[3], time, h["bg_norm"], label=r"$\|P_{bg}w_k\|$")
        titles = ["risks", "activation rate", "mean weight per coordinate", "projection norms"]
        for a, t in zip(ax, titles, strict=True):
            a.set_title(f"{name}: {t}", fontsize=9)
            a.legend(fontsize=7)
            a.set_xlabel("source SGD steps (eta = 0.001)", fontsize=8)
# --- simplicity bias of two-layer networks (Tsoy & Konstantinov, ICML 2024) ----------------------------------------


def scales_and_angles(epochs, scales, angles, windows, labels, title: str = "") -> plt.Figure:
    """Figure 1 of the source: per-neuron scales ||v_k|| (top row, log scale) and signed angles to their cluster
    directions (bottom row) against the epoch, one column per epoch window. scales, angles: (T, K)."""
    epochs, scales, angles = _np(epochs), _np(scales), _np(angles)
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


def neuron_trajectories(time, corr_pos, corr_neg, title: str = "") -> plt.Figure:
    """Fig. 7 of Zhang et al.: E_{x|y}<w_k, x> for the neuron's positive and negative class, one panel per neuron
    (``corr_*`` of shape (T, neurons))."""
    n = corr_pos.shape[1]
    cols = min(5, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.1 * rows), squeeze=False, sharex=True)
    for k in range(n):
        ax = axes[k // cols, k % cols]
        ax.plot(_np(time), _np(corr_pos[:, k]), label="positive class")
        ax.plot(_np(time), _np(corr_neg[:, k]), label="negative class")
        ax.axhline(0, color="gray", lw=0.6)
        ax.set_title(f"neuron {k + 1}", fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols, k % cols].axis("off")
    axes[0, 0].legend(fontsize=6)
def angle_vs_relative_scale(phi, g, extrema, panels, title: str = "") -> plt.Figure:
    """Figure 2 of the source, one column per setting: top, the first-layer scale against the epoch; bottom, each
    neuron's angle against its relative scale ||v_j||^2 / sum ||v_i||^2 (u > 0 red, u < 0 blue) over G(phi)
    (grey, right axis) with G's extrema as dashed lines. ``panels``: list of dicts with keys epoch, scale
    (T, widths), widths, angle (m,), rel (m,), sign (m,), name."""
    fig, axes = plt.subplots(2, len(panels), figsize=(5.2 * len(panels), 6.4), squeeze=False)
    for c, p in enumerate(panels):
        ax = axes[0, c]
        for w, width in enumerate(p["widths"]):
            ax.plot(_np(p["epoch"]), _np(p["scale"])[:, w], label=f"m = {width}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("first-layer scale ||V||_F")
        ax.set_title(p["name"])
        ax.legend(fontsize=8)
        ax = axes[1, c]
        sign = _np(p["sign"])
        ax.scatter(_np(p["angle"])[sign > 0], _np(p["rel"])[sign > 0], s=8, color="tab:red", label="u > 0")
        ax.scatter(_np(p["angle"])[sign < 0], _np(p["rel"])[sign < 0], s=8, color="tab:blue", label="u < 0")
        for e in _np(extrema[c]):
            ax.axvline(e, color="k", ls="--", lw=0.8)
        ax.set_xlabel("neuron angle atan2(v2, v1) (rad)")
        ax.set_ylabel("relative scale")
        ax.legend(fontsize=8, loc="upper left")
        twin = ax.twinx()
        twin.plot(_np(phi[c]), _np(g[c]), color="0.6", lw=1)
        twin.set_ylabel("G(φ)", color="0.4")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def measured_vs_predicted(panels: list[tuple[str, object, object]], xlabel: str = "predicted",
                          ylabel: str = "measured") -> plt.Figure:
    """Scatter plots of measured against predicted values with the diagonal, one panel per (title, pred, meas)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.3), squeeze=False)
    for ax, (title, pred, meas) in zip(axes[0], panels, strict=True):
        pred, meas = _np(pred).ravel(), _np(meas).ravel()
        ax.scatter(pred, meas, s=6, alpha=0.6)
        lo, hi = min(pred.min(), meas.min()), max(pred.max(), meas.max())
        ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
    fig.tight_layout()
    return fig


def grouped_bars(groups: list[str], series: dict, ylabel: str = "", title: str = "", log: bool = False) -> plt.Figure:
    """Bars per group (x axis) for each named series of values (Fig. 10 style)."""
    fig, ax = plt.subplots(figsize=(1.6 * len(groups) + 2, 3.3))
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        ax.bar(np.arange(len(groups)) + (i - (len(series) - 1) / 2) * width, _np(values), width, label=name)
    ax.set_xticks(np.arange(len(groups)), groups)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    return fig
def probe_curves(epochs, curves: dict, ylabel: str, ax=None, logy: bool = False):
    """Mean +- standard deviation over seeds of probe curves {label: (T, S)} against the training epoch."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    x = _np(epochs)
    for label, c in curves.items():
        c = _np(c)
        ax.errorbar(x, c.mean(1), yerr=c.std(1, ddof=1) if c.shape[1] > 1 else None, label=label, capsize=3,
                    marker="o", ms=3)
    ax.set_xlabel("training epoch of the features")
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
def accuracy_curves(curves: dict, styles: dict | None = None, ax=None, title: str = ""):
    """Test accuracy against training step, one line per entry ``label: (steps, accuracy)`` (Figure 1 of Shi, Wei
    and Liang 2022); ``styles`` maps a label to matplotlib keyword arguments."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    for label, (steps, acc) in curves.items():
        ax.plot(steps, acc, label=label, **(styles or {}).get(label, {}))
    ax.axhline(0.5, color="grey", lw=0.6, ls=":")
    ax.set(xlabel="step", ylabel="test accuracy", title=title, ylim=(0.4, 1.02))
    ax.legend(fontsize=7, ncol=2)
    return ax


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


def accuracy_curves_seeds(curves: dict, styles: dict | None = None, ax=None, title: str = "", ylim=(0.4, 1.02)):
    """Test accuracy against training step over seeds: ``label: (steps (T,), accuracy (T, S))``, drawn as the mean
    with error bars of one standard deviation over the S seeds (Figure 1 of Shi, Wei and Liang 2022, averaged over
    seeds as their Appendix E does); ``styles`` maps a label to matplotlib keyword arguments."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    for label, (steps, acc) in curves.items():
        acc = _np(acc)
        acc = acc[:, None] if acc.ndim == 1 else acc
        err = acc.std(1, ddof=1) if acc.shape[1] > 1 else None
        ax.errorbar(_np(steps), acc.mean(1), yerr=err, label=label, capsize=2, elinewidth=0.8,
                    **(styles or {}).get(label, {}))
    ax.axhline(0.5, color="grey", lw=0.6, ls=":")
    ax.set(xlabel="step", ylabel="test accuracy", title=title, ylim=ylim)
    ax.legend(fontsize=7, ncol=2)
    return ax

"""Curves, bands and bars: learning curves over seeds (mean with a band), measured against predicted, grouped bars."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from feature_learning.plotting import SEED_BAND_ALPHA, to_numpy


def mean_band(ax, x, curves, label=None, color=None, **kwargs):
    """Mean over seeds (axis 1 of ``curves``, shape (T, S)) with a min-max band."""
    x, curves = to_numpy(x), to_numpy(curves)
    if curves.ndim == 1:
        curves = curves[:, None]
    (line,) = ax.plot(x, curves.mean(axis=1), label=label, color=color, **kwargs)
    if curves.shape[1] > 1:
        ax.fill_between(x, curves.min(axis=1), curves.max(axis=1), color=line.get_color(), alpha=SEED_BAND_ALPHA)
    return line


def measured_vs_predicted(panels: list[tuple[str, object, object]], xlabel: str = "predicted",
                          ylabel: str = "measured") -> plt.Figure:
    """Scatter plots of measured against predicted values with the diagonal, one panel per (title, pred, meas)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.3), squeeze=False)
    for ax, (title, pred, meas) in zip(axes[0], panels, strict=True):
        pred, meas = to_numpy(pred).ravel(), to_numpy(meas).ravel()
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
        ax.bar(np.arange(len(groups)) + (i - (len(series) - 1) / 2) * width, to_numpy(values), width, label=name)
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
    x = to_numpy(epochs)
    for label, c in curves.items():
        c = to_numpy(c)
        ax.errorbar(x, c.mean(1), yerr=c.std(1, ddof=1) if c.shape[1] > 1 else None, label=label, capsize=3,
                    marker="o", ms=3)
    ax.set_xlabel("training epoch of the features")
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize=8)


def accuracy_curves_seeds(curves: dict, styles: dict | None = None, ax=None, title: str = "", ylim=(0.4, 1.02)):
    """Test accuracy against training step over seeds: ``label: (steps (T,), accuracy (T, S))``, drawn as the mean
    with error bars of one standard deviation over the S seeds (Figure 1 of Shi, Wei and Liang 2022, averaged over
    seeds as their Appendix E does); ``styles`` maps a label to matplotlib keyword arguments."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    for label, (steps, acc) in curves.items():
        acc = to_numpy(acc)
        acc = acc[:, None] if acc.ndim == 1 else acc
        err = acc.std(1, ddof=1) if acc.shape[1] > 1 else None
        ax.errorbar(to_numpy(steps), acc.mean(1), yerr=err, label=label, capsize=2, elinewidth=0.8,
                    **(styles or {}).get(label, {}))
    ax.axhline(0.5, color="grey", lw=0.6, ls=":")
    ax.set(xlabel="step", ylabel="test accuracy", title=title, ylim=ylim)
    ax.legend(fontsize=7, ncol=2)
    return ax


def band_grid(x, rows: list[list[dict]], xlabel: str = "step", width: float = 3.7, height: float = 3.0) -> plt.Figure:
    """A grid of panels, one row per list of ``rows``; each panel a dict with a ``title`` and ``curves``
    (label -> curves (T, S) over S seeds, drawn as the mean with a min-max band against ``x``), and optionally
    ``ylim`` and ``logy``."""
    ncols = max(len(r) for r in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(width * ncols, height * len(rows)), squeeze=False)
    for row, panels in zip(axes, rows, strict=True):
        for ax, panel in zip(row, panels, strict=False):
            for label, curves in panel["curves"].items():
                mean_band(ax, x, curves, label=label)
            if panel.get("logy"):
                ax.set_yscale("log")
            if panel.get("ylim") is not None:
                ax.set_ylim(*panel["ylim"])
            ax.set_title(panel["title"], fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            ax.legend(fontsize=7)
        for ax in row[len(panels):]:
            ax.axis("off")
    fig.tight_layout()
    return fig


def curve_panels(ts, panels: list[dict], ylabel: str = "", xlabel: str = "t", ylim=None) -> plt.Figure:
    """One panel per entry, side by side with a shared y axis. Each entry has a ``title``, optional ``thin`` curves
    (T, k) drawn as thin lines (one per trial) with ``thin_label``, and ``lines``: label -> (curve (T,), style)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2), sharey=True, squeeze=False)
    ts = to_numpy(ts)
    for ax, panel in zip(axes[0], panels, strict=True):
        thin = panel.get("thin")
        if thin is not None:
            thin = to_numpy(thin)
            for j in range(thin.shape[1]):
                label = panel.get("thin_label") if j == 0 else None
                ax.plot(ts, thin[:, j], color="C0", lw=0.8, alpha=0.6, label=label)
        for label, (curve, style) in panel.get("lines", {}).items():
            ax.plot(ts, to_numpy(curve), style, lw=1.2, label=label)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel(xlabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def loglog_series(x, series: dict, xlabel: str, ylabel: str, hline: float | None = None) -> plt.Figure:
    """Several series against one x on log-log axes: label -> (values, style); an optional horizontal guide."""
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for label, (values, style) in series.items():
        ax.loglog(to_numpy(x), to_numpy(values), style, label=label)
    if hline is not None:
        ax.axhline(hline, color="gray", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def band_panels(panels: list[dict], ylabel: str = "", xlabel: str = "training step", ylim=None,
                hline: tuple[float, str] | None = None) -> plt.Figure:
    """Learning curves over seeds, one panel per entry, side by side with a shared y axis. Each entry has a
    ``title`` and ``series``: label -> (steps (T,), curves (T, S) or (T,), color), drawn as :func:`mean_band`.
    ``hline`` = (value, label) draws a dashed reference line (a bound) in every panel."""
    fig, axes = plt.subplots(1, len(panels), figsize=(max(3.6 * len(panels), 6.5), 3.4), sharey=True, squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        for label, (steps, curves, color) in panel["series"].items():
            mean_band(ax, steps, curves, label=label, color=color)
        if hline is not None:
            ax.axhline(hline[0], color="k", ls="--", lw=1, label=hline[1])
        ax.set(title=panel["title"], xlabel=xlabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig

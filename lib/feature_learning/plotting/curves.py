"""Curves, bands and bars: learning curves over seeds (mean with a band), measured against predicted, grouped bars."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from feature_learning.plotting import SEED_BAND_ALPHA, panel_row, to_numpy


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


def grouped_bars(groups: list[str], series: dict, ylabel: str = "", title: str = "", log: bool = False,
                 errors: dict | None = None, ylim=None) -> plt.Figure:
    """Bars per group (x axis) for each named series of values (Fig. 10 style); ``errors`` (same keys, optional)
    draws error bars (e.g. standard errors over seeds)."""
    fig, ax = plt.subplots(figsize=(1.6 * len(groups) + 2, 3.3))
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        err = None if errors is None or name not in errors else to_numpy(errors[name])
        ax.bar(np.arange(len(groups)) + (i - (len(series) - 1) / 2) * width, to_numpy(values), width, label=name,
               yerr=err, capsize=3 if err is not None else 0)
    if ylim is not None:
        ax.set_ylim(*ylim)
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


def probe_grid(epochs, columns: dict, row_labels: list[str], logy_rows=()) -> plt.Figure:
    """A grid of :func:`probe_curves` panels (Fig. 4 of Tsoy & Konstantinov): ``columns`` maps a column title to one
    dict of curves {label: (T, S)} per row; ``row_labels`` are the rows' y labels, ``logy_rows`` the rows drawn on a
    log scale."""
    n_rows = len(row_labels)
    fig, axes = plt.subplots(n_rows, len(columns), figsize=(5 * len(columns), 3.25 * n_rows), squeeze=False)
    for c, (title, rows) in enumerate(columns.items()):
        for r, curves in enumerate(rows):
            probe_curves(epochs, curves, row_labels[r], axes[r, c], logy=r in logy_rows)
        axes[0, c].set_title(title)
    fig.tight_layout()
    return fig


def series_panels(panels: list[dict], width: float = 4.6, height: float = 3.4) -> plt.Figure:
    """Panels side by side, each on its own axes. A panel is a dict with ``series``: a list of dicts with ``x``,
    ``y``, optional ``yerr`` (drawn as error bars), ``style`` (a Matplotlib format string, default ``"o-"``),
    ``label``, ``color`` and ``ms``; or ``matrix``: a 2-D array drawn as a diverging heat map (symmetric colour
    range, with a colour bar). Optional keys: ``title``, ``xlabel``, ``ylabel``, ``xscale``, ``yscale``, ``hline``
    (a grey horizontal guide) and ``legend`` (font size; 0 for none)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), height), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        if panel.get("matrix") is not None:
            matrix = to_numpy(panel["matrix"])
            bound = float(np.abs(matrix).max()) or 1.0
            image = ax.imshow(matrix, cmap="RdBu_r", vmin=-bound, vmax=bound)
            fig.colorbar(image, ax=ax, fraction=0.046)
        for s in panel.get("series", []):
            kwargs = {"label": s.get("label"), "ms": s.get("ms", 4)}
            if s.get("color") is not None:
                kwargs["color"] = s["color"]
            if s.get("yerr") is not None:
                ax.errorbar(to_numpy(s["x"]), to_numpy(s["y"]), yerr=to_numpy(s["yerr"]), fmt=s.get("style", "o-"),
                            capsize=2, **kwargs)
            else:
                ax.plot(to_numpy(s["x"]), to_numpy(s["y"]), s.get("style", "o-"), **kwargs)
        if panel.get("hline") is not None:
            ax.axhline(panel["hline"], color="grey", lw=0.6)
        for key in ("xscale", "yscale"):
            if panel.get(key):
                getattr(ax, f"set_{key}")(panel[key])
        ax.set_title(panel.get("title", ""), fontsize=9)
        ax.set_xlabel(panel.get("xlabel", ""))
        ax.set_ylabel(panel.get("ylabel", ""))
        if panel.get("legend", 7) and any(s.get("label") for s in panel.get("series", [])):
            ax.legend(fontsize=panel.get("legend", 7))
    fig.tight_layout()
    return fig


def line_panel(ax, x, series: dict, *, xlabel: str = "", ylabel: str = "", title: str = "", logx: bool = False,
               logy: bool = False, hlines: dict | None = None, vline: float | None = None, ylim=None,
               integer_ticks: bool = False, legend: bool = True):
    """Curves against one x in ``ax``: ``series`` maps a label to ``(y, style)`` or ``(y, yerr, style)`` (error bars);
    ``hlines`` maps a label to ``(y, style)`` (a horizontal guide), ``vline`` marks one x; ``integer_ticks`` puts a
    tick at every x (layers, lengths on a log axis)."""
    x = to_numpy(x)
    for label, spec in series.items():
        y, yerr, style = spec if len(spec) == 3 else (spec[0], None, spec[1])
        if yerr is None:
            ax.plot(x, to_numpy(y), style, label=label)
        else:
            ax.errorbar(x, to_numpy(y), yerr=to_numpy(yerr), fmt=style, capsize=3, label=label)
    for label, (y, style) in (hlines or {}).items():
        ax.axhline(y, ls=style, color="grey", lw=1, label=label)
    if vline is not None:
        ax.axvline(vline, color="grey", ls=":")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if integer_ticks:
        ax.set_xticks(x, [str(int(v)) for v in x])
        ax.minorticks_off()
    if ylim is not None:
        ax.set_ylim(*ylim)
    if legend and (series or hlines) and any(not str(label).startswith("_") for label in [*series, *(hlines or {})]):
        ax.legend(fontsize=8)
    return ax


def line_panels(panels: list[dict], width: float = 4.6, height: float = 3.3) -> plt.Figure:
    """One :func:`line_panel` per entry (its keyword arguments, with ``x`` and ``series``), side by side."""
    fig, axes = panel_row(len(panels), width, height)
    for ax, panel in zip(axes, panels, strict=True):
        panel = dict(panel)
        line_panel(ax, panel.pop("x"), panel.pop("series"), **panel)
    fig.tight_layout()
    return fig


def lines_with_reference(x, series: dict, reference: float, reference_label: str, xlabel: str, ylabel: str,
                         ylim=None) -> plt.Figure:
    """Curves {label: (T,)} against ``x`` with a dashed horizontal line at a predicted ``reference`` value."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    x = to_numpy(x)
    for label, values in series.items():
        ax.plot(x, to_numpy(values), label=label)
    ax.axhline(reference, color="k", ls="--", lw=1, label=reference_label)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def seed_curve_panels(panels: list[dict], ylabel: str = "test accuracy", xlabel: str = "step",
                      ylim=(0.4, 1.02), width: float = 3.4) -> plt.Figure:
    """Curves over seeds, one panel per entry, side by side with a shared y axis: each entry has a ``title``,
    ``curves`` (label -> (x (T,), values (T, S))), optional ``styles`` (label -> matplotlib keywords) and an optional
    horizontal line ``hline`` (e.g. a majority rate). Each curve is the mean over its S seeds with error bars of
    one standard deviation (:func:`accuracy_curves_seeds`); the legend is drawn in the first panel."""
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), 3.3), sharey=True, squeeze=False)
    for i, (ax, panel) in enumerate(zip(axes[0], panels, strict=True)):
        accuracy_curves_seeds(panel["curves"], panel.get("styles"), ax=ax, title=panel.get("title", ""), ylim=ylim)
        if panel.get("hline") is not None:
            ax.axhline(panel["hline"], color="k", lw=0.6, ls="-.")
        ax.set(xlabel=xlabel, ylabel=ylabel if i == 0 else "")
        if i > 0 and ax.get_legend() is not None:
            ax.get_legend().remove()
    axes[0, 0].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    return fig


def seed_errorbars(x, series: dict, xlabel: str, ylabel: str, *, logx: bool = False, guides: dict | None = None,
                   ylim=None, title: str = "") -> plt.Figure:
    """Mean +- one standard deviation over seeds against x, one line per ``label: values (S, len(x))``; ``guides``
    adds reference curves ``label: (values (len(x),), style)`` (a closed form, a chance level)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.5))
    xs = to_numpy(x)
    for label, values in series.items():
        v = to_numpy(values)
        v = v[None, :] if v.ndim == 1 else v
        ax.errorbar(xs, v.mean(0), yerr=v.std(0, ddof=1) if v.shape[0] > 1 else None, label=label, capsize=3,
                    marker="o", ms=4)
    for label, (values, style) in (guides or {}).items():
        ax.plot(xs, to_numpy(values) * np.ones(len(xs)), style, lw=1, label=label)
    if logx:
        ax.set_xscale("log")
        if len(xs) <= 6:  # label the measured points, not powers of ten
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
            ax.minorticks_off()
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def errorbar_panels(panels: list[dict], width: float = 4.0, height: float = 3.2) -> plt.Figure:
    """Side-by-side panels of series with optional error bars. Each panel: ``title``, ``xlabel``, ``ylabel``,
    ``series``: label -> (x, y, yerr or None, style); optional ``xlog`` (or ``symlog``: its linear threshold),
    ``ylim``, ``hlines`` / ``vlines``: label -> (value, style), and ``twin``: {"ylabel", "series"} drawn on a
    right-hand axis (e.g. a stable rank next to an accuracy, Fig. 6.5 style)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), height), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        handles = []
        for target, spec in ((ax, panel), (ax.twinx() if "twin" in panel else None, panel.get("twin"))):
            if target is None:
                continue
            for label, (x, y, yerr, style) in spec["series"].items():
                container = target.errorbar(to_numpy(x), to_numpy(y), yerr=None if yerr is None else to_numpy(yerr),
                                            fmt=style, capsize=3, lw=1.2, ms=4, label=label)
                handles.append(container)
            target.set_ylabel(spec.get("ylabel", ""))
        for key, draw in (("hlines", ax.axhline), ("vlines", ax.axvline)):
            for label, (value, style) in panel.get(key, {}).items():
                handles.append(draw(value, ls=style, color="gray", lw=0.9, label=label))
        if panel.get("symlog"):  # a log axis that also shows x = 0 (lambda = 0, plain ERM)
            ax.set_xscale("symlog", linthresh=panel["symlog"])
        elif panel.get("xlog"):
            ax.set_xscale("log")
        if panel.get("ylim") is not None:
            ax.set_ylim(*panel["ylim"])
        ax.set_title(panel.get("title", ""), fontsize=9)
        ax.set_xlabel(panel.get("xlabel", ""))
        ax.legend(handles=handles, fontsize=7, loc=panel.get("legend", "best"))
    fig.tight_layout()
    return fig


def _label_panel(ax, panel: dict, xlabel: str, logx: bool, logy: bool) -> None:
    """Scales, title, axis labels and legend of one panel of :func:`band_panels` / :func:`errorbar_band_panels`."""
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(panel["title"], fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(panel.get("ylabel", ""), fontsize=8)
    ax.legend(fontsize=7)



def band_panels(x, panels: list[dict], xlabel: str = "t", logx: bool = False, logy: bool = False,
                sharey: bool = False) -> plt.Figure:
    """Panels of curves over seeds against one x: each panel has a ``title``, ``lines``: label -> (curves (T, S) or
    (T,), style dict for :func:`mean_band`) or (own x, curves, style), optional ``hlines``: label -> y (dashed
    reference levels), ``vlines``: label -> x (dotted markers) and ``ylabel``."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.2), squeeze=False, sharey=sharey)
    for ax, panel in zip(axes[0], panels, strict=True):
        for label, line in panel.get("lines", {}).items():
            xs, curves, style = line if len(line) == 3 else (x, *line)
            mean_band(ax, xs, curves, label=label, **(style or {}))
        for i, (label, y) in enumerate(panel.get("hlines", {}).items()):
            ax.axhline(y, color=f"C{7 + i % 3}", lw=0.9, ls="--", label=label)
        for i, (label, xv) in enumerate(panel.get("vlines", {}).items()):
            ax.axvline(xv, color="gray", lw=0.8, ls=(0, (1, 2 + i)), label=label)
        _label_panel(ax, panel, xlabel, logx, logy)
    fig.tight_layout()
    return fig



def errorbar_band_panels(panels: list[dict], xlabel: str, logx: bool = True, logy: bool = False) -> plt.Figure:
    """Points with error bars against a (log) x, one panel per entry: ``title``, ``ylabel``, ``series``: label ->
    (x, y, yerr or None, format string), optional ``hlines``: label -> (y, half-width of a shaded band or 0),
    optional ``reference``: label -> (x, y) drawn as a thin line."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.9 * len(panels), 3.3), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        for label, (xs, ys, err, fmt) in panel.get("series", {}).items():
            ax.errorbar(to_numpy(xs), to_numpy(ys), yerr=None if err is None else to_numpy(err), fmt=fmt,
                        capsize=2, ms=4, lw=1, label=label)
        for i, (label, (y, half)) in enumerate(panel.get("hlines", {}).items()):
            color = f"C{7 + i % 3}"
            ax.axhline(y, color=color, lw=0.9, ls="--", label=label)
            if half:
                ax.axhspan(y - half, y + half, color=color, alpha=0.15)
        for label, (xs, ys) in panel.get("reference", {}).items():
            ax.plot(to_numpy(xs), to_numpy(ys), color="gray", lw=0.8, ls=":", label=label)
        _label_panel(ax, panel, xlabel, logx, logy)
    fig.tight_layout()
    return fig



def patch_heatmaps(samples: list[tuple[str, object]], xlabel: str = "feature", ylabel: str = "patch") -> plt.Figure:
    """Heat maps of patch x feature matrices side by side (e.g. one normal and one hard sample): (title, (P, n))."""
    fig, axes = plt.subplots(1, len(samples), figsize=(3.2 * len(samples), 3.4), squeeze=False)
    for ax, (title, mat) in zip(axes[0], samples, strict=True):
        image = ax.imshow(to_numpy(mat), aspect="auto", cmap="viridis", vmin=0, vmax=1.05)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8)
    return fig


def seed_band_panels(panels: list[dict], ylabel: str = "", xlabel: str = "training step", ylim=None,
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

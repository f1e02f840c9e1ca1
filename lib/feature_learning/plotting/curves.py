"""Curves over seeds and the other figures of measured numbers: one function, :func:`plot_panels`, draws every
figure of curves in the book (learning curves over seeds with a band or error bars, sweeps with standard errors,
closed forms as lines, bounds as guides), from :class:`Panel`, :class:`Curve` and :class:`Guide`; beside it measured
against predicted scatter plots, grouped bars and patch heat maps."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np

from feature_learning.plotting import SEED_BAND_ALPHA, TEXT_POINTS, columns_that_fit, panel_row, to_numpy, wrap
from feature_learning.plotting.legibility import COLUMN_INCHES

SPREADS = ("band", "sd", "se", "lines")


@dataclasses.dataclass
class Curve:
    """One curve of a panel: ``y`` against ``x``.

    ``y`` is (T,) values, or (T, S) values over S seeds (replicas), summarised by ``spread``: ``"band"`` the mean
    with a min-max band, ``"sd"`` the mean with error bars of one standard deviation, ``"se"`` the mean with error bars
    of one standard error, ``"lines"`` one thin line per seed. ``yerr`` gives error bars directly (for example two
    standard errors computed by the experiment) and then ``spread`` is not used. ``style`` is a Matplotlib format
    string (``"o-"``, ``"k--"``); a label that is None or starts with ``_`` stays out of the legend; ``kwargs`` go to
    Matplotlib (``ms``, ``lw``, ``alpha``, ``ls``)."""

    x: object
    y: object
    label: str | None = None
    style: str = "-"
    color: str | None = None
    yerr: object = None
    spread: str = "band"
    kwargs: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.spread not in SPREADS:
            raise ValueError(f"spread: {self.spread!r}; allowed: {list(SPREADS)}")


@dataclasses.dataclass
class Guide:
    """A reference line across a panel (a bound, a chance level, a source's value): horizontal at y = ``value``
    (``axis="h"``) or vertical at x = ``value`` (``axis="v"``), with an optional shaded band of ``half_width``."""

    value: float
    label: str | None = None
    axis: str = "h"
    style: str = "--"
    color: str = "grey"
    half_width: float = 0.0

    def __post_init__(self):
        if self.axis not in ("h", "v"):
            raise ValueError(f"axis: {self.axis!r}; allowed: ['h', 'v']")


@dataclasses.dataclass
class Panel:
    """One panel: its curves, guides, labels and scales. ``xscale`` / ``yscale`` are Matplotlib scales (``"log"``;
    ``"symlog"`` with ``linthresh``, a log axis that still shows 0); ``ticks_at_x`` puts one tick at each x of the
    first curve (layers, lengths, the few sizes of a sweep on a log axis); ``legend`` is the legend's location, or
    None for none; ``twin`` curves are drawn on a right-hand axis labelled ``twin_ylabel``; ``image`` (a matrix) is
    drawn as a diverging heat map with a colour bar instead of curves."""

    curves: list[Curve] = dataclasses.field(default_factory=list)
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    guides: list[Guide] = dataclasses.field(default_factory=list)
    xscale: str = "linear"
    yscale: str = "linear"
    linthresh: float = 1.0
    xlim: tuple | None = None
    ylim: tuple | None = None
    ticks_at_x: bool = False
    legend: str | None = "best"
    legend_size: float = TEXT_POINTS
    twin: list[Curve] = dataclasses.field(default_factory=list)
    twin_ylabel: str = ""
    image: object = None


def draw_curve(ax, curve: Curve):
    """Draw one :class:`Curve` into ``ax``; returns its legend handle."""
    x, y = to_numpy(curve.x), to_numpy(curve.y)
    y = np.full(len(x), float(y)) if y.ndim == 0 else y
    kwargs = {"label": curve.label, **({"color": curve.color} if curve.color is not None else {}), **curve.kwargs}
    seeds = y.shape[1] if y.ndim == 2 else 1
    if seeds > 1 and curve.yerr is None and curve.spread == "lines":
        lines = [ax.plot(x, y[:, j], curve.style, **{"lw": 0.8, "alpha": 0.6, **kwargs,
                                                     "label": curve.label if j == 0 else None})[0]
                 for j in range(seeds)]
        return lines[0]
    yerr = None if curve.yerr is None else to_numpy(curve.yerr)
    if seeds > 1 and yerr is None and curve.spread in ("sd", "se"):
        yerr = y.std(1, ddof=1) / (np.sqrt(seeds) if curve.spread == "se" else 1.0)
    mean = y.mean(1) if y.ndim == 2 else y
    if yerr is not None:
        return ax.errorbar(x, mean, yerr=yerr, fmt=curve.style, capsize=2.5, elinewidth=0.8, **{"ms": 4, **kwargs})
    (line,) = ax.plot(x, mean, curve.style, **{"ms": 4, **kwargs})
    if seeds > 1:
        ax.fill_between(x, y.min(1), y.max(1), color=line.get_color(), alpha=SEED_BAND_ALPHA)
    return line


def draw_panel(ax, panel: Panel) -> None:
    """Draw one :class:`Panel` into ``ax`` (for figures that mix it with other kinds of panels)."""
    if panel.image is not None:
        image = to_numpy(panel.image)
        bound = float(np.abs(image).max()) or 1.0
        shown = ax.imshow(image, cmap="RdBu_r", vmin=-bound, vmax=bound)
        ax.figure.colorbar(shown, ax=ax, fraction=0.046)
    handles = [draw_curve(ax, curve) for curve in panel.curves]  # the legend lists curves, guides, twin curves
    for guide in panel.guides:
        draw = ax.axhline if guide.axis == "h" else ax.axvline
        handles.append(draw(guide.value, ls=guide.style, color=guide.color, lw=0.9, label=guide.label))
        if guide.half_width:
            span = ax.axhspan if guide.axis == "h" else ax.axvspan
            span(guide.value - guide.half_width, guide.value + guide.half_width, color=guide.color, alpha=0.15)
    if panel.twin:
        twin = ax.twinx()
        handles += [draw_curve(twin, curve) for curve in panel.twin]
        twin.set_ylabel(panel.twin_ylabel)
    if panel.xscale == "symlog":
        ax.set_xscale("symlog", linthresh=panel.linthresh)
    elif panel.xscale != "linear":
        ax.set_xscale(panel.xscale)
    if panel.yscale != "linear":
        ax.set_yscale(panel.yscale)
    if panel.ticks_at_x and panel.curves:
        xs = to_numpy(panel.curves[0].x)
        ax.set_xticks(xs, [f"{v:g}" for v in xs])
        ax.minorticks_off()
    if panel.xlim is not None:
        ax.set_xlim(*panel.xlim)
    if panel.ylim is not None:
        ax.set_ylim(*panel.ylim)
    ax.set_title(panel.title, fontsize=TEXT_POINTS)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    handles = [h for h in handles if h.get_label() and not h.get_label().startswith("_")]
    if panel.legend is not None and handles:
        ax.legend(handles=handles, fontsize=panel.legend_size, loc=panel.legend)


def plot_panels(panels: list[Panel] | list[list[Panel]], *, width: float = 4.0, height: float = 3.3,
                sharey: bool = False, max_columns: int | None = None) -> plt.Figure:
    """A figure of :class:`Panel` s: a list is one row side by side, a list of lists a grid (one list per row;
    a short row leaves its last cells empty). ``width`` and ``height`` are one panel's size in inches.

    A row longer than ``max_columns`` panels (default: as many as fit the book's column at ``width``,
    :func:`~feature_learning.plotting.columns_that_fit`) wraps onto the next rows, in order, so that the figure is
    shown at its own size and its text stays legible."""
    rows = [panels] if panels and isinstance(panels[0], Panel) else panels
    columns = columns_that_fit(width, max_columns)
    rows = [chunk for row in rows for chunk in wrap(list(row), columns)]
    ncols = max(len(row) for row in rows)
    fig, axes = plt.subplots(len(rows), ncols, figsize=(width * ncols, height * len(rows)), squeeze=False,
                             sharey=sharey)
    for axes_row, row in zip(axes, rows, strict=True):
        for ax, panel in zip(axes_row, row, strict=False):
            draw_panel(ax, panel)
        for ax in axes_row[len(row):]:
            ax.axis("off")
    fig.tight_layout()
    return fig


def measured_vs_predicted(panels: list[tuple[str, object, object]], xlabel: str = "predicted",
                          ylabel: str = "measured", *, width: float = 3.3, height: float = 3.3,
                          max_columns: int | None = None) -> plt.Figure:
    """Scatter plots of measured against predicted values with the diagonal, one panel per (title, pred, meas),
    ``width`` x ``height`` inches each, in rows of at most ``max_columns`` (default: as many as fit the column)."""
    fig, axes = panel_row(len(panels), width, height, max_columns=max_columns)
    for ax, (title, pred, meas) in zip(axes, panels, strict=True):
        pred, meas = to_numpy(pred).ravel(), to_numpy(meas).ravel()
        ax.scatter(pred, meas, s=6, alpha=0.6)
        lo, hi = min(pred.min(), meas.min()), max(pred.max(), meas.max())
        ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8)
        ax.set_title(title, fontsize=TEXT_POINTS)
        ax.set_xlabel(xlabel, fontsize=TEXT_POINTS)
        ax.set_ylabel(ylabel, fontsize=TEXT_POINTS)
    fig.tight_layout()
    return fig


def grouped_bars(groups: list[str], series: dict, ylabel: str = "", title: str = "", log: bool = False,
                 errors: dict | None = None, ylim=None, *, width: float | None = None,
                 height: float = 3.3) -> plt.Figure:
    """Bars per group (x axis) for each named series of values (Fig. 10 style); ``errors`` (same keys, optional)
    draws error bars (e.g. standard errors over seeds). ``width`` in inches defaults to 1.6 per group plus 2, at
    most the book's column."""
    width = min(1.6 * len(groups) + 2, COLUMN_INCHES) if width is None else width
    fig, ax = plt.subplots(figsize=(width, height))
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
    ax.legend(fontsize=TEXT_POINTS)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def patch_heatmaps(samples: list[tuple[str, object]], xlabel: str = "feature", ylabel: str = "patch", *,
                   width: float = 3.2, height: float = 3.4, max_columns: int | None = None) -> plt.Figure:
    """Heat maps of patch x feature matrices side by side (e.g. one normal and one hard sample): (title, (P, n)),
    ``width`` x ``height`` inches each, in rows of at most ``max_columns`` (default: as many as fit the column),
    with one colour bar."""
    fig, axes = panel_row(len(samples), width, height, max_columns=max_columns)
    for ax, (title, mat) in zip(axes, samples, strict=True):
        image = ax.imshow(to_numpy(mat), aspect="auto", cmap="viridis", vmin=0, vmax=1.05)
        ax.set_title(title, fontsize=TEXT_POINTS)
        ax.set_xlabel(xlabel, fontsize=TEXT_POINTS)
        ax.set_ylabel(ylabel, fontsize=TEXT_POINTS)
    fig.colorbar(image, ax=axes, shrink=0.8)
    return fig

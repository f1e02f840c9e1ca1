"""Grids of scores: heatmaps over two experimental axes (for example context length and needle depth)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from feature_learning.plotting import panel_row, to_numpy


def heatmap_panels(panels: dict, xticks, yticks, *, xlabel: str = "", ylabel: str = "", colorbar: str = "",
                   vline: float | None = None, vmin: float = 0.0, vmax: float = 1.0, width: float = 5.0,
                   height: float = 3.6, max_columns: int | None = None) -> plt.Figure:
    """One heatmap per entry ``title: scores (rows, columns)`` with a shared colour scale (red low, green high),
    labelled ticks, the panel mean in the title, and an optional dashed column boundary ``vline`` (between
    columns, e.g. the longest training length). Each panel is ``width`` x ``height`` inches, in rows of at most
    ``max_columns`` (default: as many as fit the book's column)."""
    fig, axes = panel_row(len(panels), width, height, max_columns=max_columns, sharey=True)
    fig.set_layout_engine("constrained")  # stacked panels: keeps one panel's x label off the next one's title
    image = None
    for ax, (title, scores) in zip(axes, panels.items(), strict=True):
        scores = to_numpy(scores)
        image = ax.imshow(scores, vmin=vmin, vmax=vmax, cmap="RdYlGn", aspect="auto", origin="upper")
        ax.set_xticks(range(len(xticks)), [str(v) for v in xticks])
        ax.set_yticks(range(len(yticks)), [str(v) for v in yticks])
        ax.set(xlabel=xlabel, title=f"{title}: mean {scores.mean():.2f}")
        if vline is not None:
            ax.axvline(vline, color="k", lw=1, ls="--")
    for ax in axes:
        if ax.get_subplotspec().is_first_col():
            ax.set_ylabel(ylabel)
    fig.colorbar(image, ax=axes, label=colorbar)
    return fig

"""Decision boundaries of linear classifiers in the plane over a labelled sample (dissertation ch. 6, Figs. 6.2-6.3)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from feature_learning.plotting import TEXT_POINTS, panel_row, to_numpy


def linear_boundaries_2d(panels: list[dict], width: float = 3.3, *, max_columns: int | None = None) -> plt.Figure:
    """One square panel ``width`` inches wide per entry, in rows of at most ``max_columns`` (default: as many as fit
    the book's column): ``title``, points ``x`` (n, 2) coloured by labels ``y`` in {-1, +1}, and ``lines``:
    label -> (w (2,), style) drawn as the boundary {w1 x1 + w2 x2 = 0} (through the origin), plus optional
    ``xlabel`` / ``ylabel``."""
    fig, axes = panel_row(len(panels), width, width, max_columns=max_columns)
    for ax, panel in zip(axes, panels, strict=True):
        x, y = to_numpy(panel["x"]), to_numpy(panel["y"])
        for label, colour in ((1, "C0"), (-1, "C3")):
            keep = y == label
            ax.scatter(x[keep, 0], x[keep, 1], s=3, alpha=0.35, color=colour, label=f"y={label:+d}")
        lo, hi = x.min(0), x.max(0)
        xs = np.linspace(lo[0], hi[0], 2)
        for label, (w, style) in panel.get("lines", {}).items():
            w = to_numpy(w)
            if abs(w[1]) > 1e-12 * abs(w[0]):
                ax.plot(xs, -w[0] * xs / w[1], style, lw=1.5, label=label)
            else:
                ax.axvline(0.0, ls=style[-2:] if len(style) > 1 else "-", color="k", lw=1.5, label=label)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_title(panel.get("title", ""), fontsize=TEXT_POINTS)
        ax.set_xlabel(panel.get("xlabel", "$x_1$"))
        ax.set_ylabel(panel.get("ylabel", "$x_2$"))
        ax.legend(fontsize=TEXT_POINTS, loc="lower right", markerscale=3)
    fig.tight_layout()
    return fig

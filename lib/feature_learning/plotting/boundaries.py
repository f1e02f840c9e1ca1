"""Decision boundaries of linear classifiers in the plane over a labelled sample (dissertation ch. 6, Figs. 6.2-6.3)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from feature_learning.plotting import to_numpy


def linear_boundaries_2d(panels: list[dict], width: float = 3.4) -> plt.Figure:
    """One panel per entry: ``title``, points ``x`` (n, 2) coloured by labels ``y`` in {-1, +1}, and ``lines``:
    label -> (w (2,), style) drawn as the boundary {w1 x1 + w2 x2 = 0} (through the origin), plus optional
    ``xlabel`` / ``ylabel``."""
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), width), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
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
        ax.set_title(panel.get("title", ""), fontsize=9)
        ax.set_xlabel(panel.get("xlabel", "$x_1$"))
        ax.set_ylabel(panel.get("ylabel", "$x_2$"))
        ax.legend(fontsize=7, loc="lower right", markerscale=3)
    fig.tight_layout()
    return fig

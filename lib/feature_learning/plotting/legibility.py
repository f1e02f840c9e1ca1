"""How a figure reads at the size the book shows it: the HTML column is :data:`COLUMN_INCHES` wide (665 px at the
100 dpi of the book's figures), so a wider figure is scaled down by the browser, its fonts with it.

:func:`problems` lists what a reader cannot read at the shown size: text under :data:`MIN_POINTS` points once the
figure is scaled to the column.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text

COLUMN_INCHES = 6.65  # the book theme's content column, 665 px, at 100 dpi
MIN_POINTS = 9.0


def shown_scale(fig: Figure) -> float:
    """The factor the browser scales the figure by: 1 if it fits the column, else column width over its width."""
    return min(1.0, COLUMN_INCHES / float(fig.get_size_inches()[0]))


def texts(fig: Figure) -> list[Text]:
    """Every visible, non-empty text of the figure (titles, labels, tick labels, legends, annotations)."""
    found = fig.findobj(lambda a: isinstance(a, Text) and a.get_visible() and bool(a.get_text().strip()))
    return [t for t in found if t.figure is not None]


def smallest_font(fig: Figure) -> float:
    """The smallest font size of the figure's visible text in points at the shown size (inf without text)."""
    scale = shown_scale(fig)
    return min((t.get_fontsize() * scale for t in texts(fig)), default=float("inf"))


def problems(fig: Figure, min_points: float = MIN_POINTS) -> list[str]:
    """What is too small to read at the shown size: one line per distinct text under ``min_points``."""
    scale = shown_scale(fig)
    small = sorted({(round(t.get_fontsize() * scale, 1), t.get_text()[:30]) for t in texts(fig)
                    if t.get_fontsize() * scale < min_points})
    width = float(fig.get_size_inches()[0])
    return [f"{text!r} at {points} pt (figure {width:.2f} in wide, shown at {scale:.0%})" for points, text in small]

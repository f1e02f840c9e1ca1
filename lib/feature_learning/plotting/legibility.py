"""How a figure reads at the size the book shows it: the HTML column is :data:`COLUMN_INCHES` wide (665 px at the
100 dpi of the book's figures), so a wider figure is scaled down by the browser, its fonts with it.

:func:`problems` lists what a reader cannot read at the shown size: text under :data:`MIN_POINTS` points once the
figure, as the notebook saves it (cropped to what it draws, ``bbox_inches="tight"``), is scaled to the column.

A chapter's figures are checked where they are glued: :meth:`feature_learning.book.chapter.Chapter.glue_figure` stores
:func:`record` of each figure in the glued output's metadata (under :data:`METADATA_KEY`), and
:func:`notebook_problems` reads them back from an executed notebook, for the test that fails on an illegible figure
of any chapter (``tests/notebooks/test_figures_legible.py``).
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text

#: The book theme's content column in inches: 665 px at the 100 dpi of the book's figures.
COLUMN_INCHES = 6.65
#: The smallest font, in points at the shown size, that a figure may use.
MIN_POINTS = 9.0
#: Matplotlib's ``savefig.pad_inches``: the margin the notebook's tight crop keeps around what a figure draws.
TIGHT_PAD_INCHES = 0.1
#: The key of a glued figure's output metadata under which ``glue_figure`` stores :func:`record`.
METADATA_KEY = "feature_learning"


def shown_inches(fig: Figure) -> float:
    """The width the figure is saved at in a notebook: its tight bounding box (what it draws, which can reach past
    the figure's size, e.g. a legend outside the axes) plus the crop's padding."""
    try:
        box = fig.get_tightbbox(fig.canvas.get_renderer())
    except (AttributeError, RuntimeError, ValueError):  # a canvas without a renderer: the figure's own size
        box = None
    if box is None or not box.width > 0:
        return float(fig.get_size_inches()[0])
    return float(box.width) + 2 * TIGHT_PAD_INCHES


def shown_scale(fig: Figure) -> float:
    """The factor the browser scales the figure by: 1 if it fits the column, else column width over its width."""
    return min(1.0, COLUMN_INCHES / shown_inches(fig))


def texts(fig: Figure) -> list[Text]:
    """Every visible, non-empty text of the figure (titles, labels, tick labels, legends, annotations)."""
    found = fig.findobj(lambda a: isinstance(a, Text) and a.get_visible() and bool(a.get_text().strip()))
    return [t for t in found if t.figure is not None and _shown(t)]


def _shown(text: Text) -> bool:
    """False for the text of an axes that is turned off (the blank cells of a wrapped grid)."""
    axes = text.axes
    return axes is None or axes.axison or text in (axes.title, axes._left_title, axes._right_title)


def smallest_font(fig: Figure) -> float:
    """The smallest font size of the figure's visible text in points at the shown size (inf without text)."""
    scale = shown_scale(fig)
    return min((t.get_fontsize() * scale for t in texts(fig)), default=float("inf"))


def problems(fig: Figure, min_points: float = MIN_POINTS) -> list[str]:
    """What is too small to read at the shown size: one line per distinct text under ``min_points``."""
    width = shown_inches(fig)
    scale = min(1.0, COLUMN_INCHES / width)
    small = sorted({(round(t.get_fontsize() * scale, 1), t.get_text()[:30]) for t in texts(fig)
                    if t.get_fontsize() * scale < min_points - 1e-9})
    return [f"{text!r} at {points} pt (figure {width:.2f} in wide, shown at {scale:.0%})" for points, text in small]


def record(fig: Figure) -> dict:
    """What :meth:`~feature_learning.book.chapter.Chapter.glue_figure` stores with a glued figure: its saved width,
    the scale the page shows it at, its smallest font there and its :func:`problems`."""
    return {"legibility": {"inches": round(shown_inches(fig), 3), "scale": round(shown_scale(fig), 3),
                           "smallest_points": round(smallest_font(fig), 2), "problems": problems(fig)}}


def notebook_problems(notebook: dict) -> list[str]:
    """Every figure of an executed notebook (a dict as stored) that a reader cannot read, one line each, and every
    figure without a legibility record (shown by a cell, or glued other than through ``glue_figure``: never
    checked)."""
    found = []
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        for out in cell.get("outputs", []):
            metadata = out.get("metadata", {})
            if not any(key.endswith("image/png") or key.endswith("image/svg+xml") for key in out.get("data", {})):
                continue
            name = metadata.get("scrapbook", {}).get("name") or f"a figure shown by cell {number}"
            checked = metadata.get(METADATA_KEY, {}).get("legibility")
            if checked is None:
                found.append(f"{name}: never checked for legibility (glue it with chapter.glue_figure)")
            elif checked["problems"]:
                count = len(checked["problems"])
                found.append(f"{name}: {count} text{'s' * (count > 1)} under {MIN_POINTS:g} pt at the shown size, "
                             f"the smallest {checked['problems'][0]}")
    return found


def fit_to_column(fig: Figure, width: float = 6.5, layout: str = "tight") -> Figure:
    """Make a figure drawn by a shared plotting function legible in the book's column: at most ``width`` inches wide
    (its height kept), no text under :data:`MIN_POINTS` at the shown size, then laid out again by ``layout``
    ("tight", or "constrained" for a figure with a colour bar, which the tight layout misplaces). Returns ``fig``."""
    w, h = fig.get_size_inches()
    if w > width:
        fig.set_size_inches(width, h)
    scale = shown_scale(fig)
    for text in texts(fig):
        if text.get_fontsize() * scale < MIN_POINTS:
            text.set_fontsize(MIN_POINTS / scale)
    fig.set_layout_engine(layout)
    return fig

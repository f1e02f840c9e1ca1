"""Figure helpers shared by every chapter: one function per kind of figure, each returning a Matplotlib Figure.

A chapter never calls ``plt.subplots`` itself. Functions are grouped by the kind of figure, one module each:
:mod:`~feature_learning.plotting.curves`, :mod:`~feature_learning.plotting.neurons`,
:mod:`~feature_learning.plotting.spectra`, :mod:`~feature_learning.plotting.attention`,
:mod:`~feature_learning.plotting.boundaries`, :mod:`~feature_learning.plotting.grids`; import them from there. Every
figure of curves is :func:`~feature_learning.plotting.curves.plot_panels`.

Every figure is drawn for the book's column (:data:`~feature_learning.plotting.legibility.COLUMN_INCHES` wide): a
function given more panels than fit side by side at the panel width it is asked for wraps them into rows of at most
``max_columns`` (by default as many as the column holds, see :func:`columns_that_fit`), and its text is at least
:data:`~feature_learning.plotting.legibility.MIN_POINTS` points, so that the page never shrinks a figure's text below
what a reader can read (:func:`feature_learning.plotting.legibility.problems` checks it).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from feature_learning.plotting.legibility import COLUMN_INCHES, MIN_POINTS

SEED_BAND_ALPHA = 0.25
TEXT_POINTS = MIN_POINTS  # the size of the small print (panel titles, legends) of every shared figure


def to_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def columns_that_fit(width: float, max_columns: int | None = None) -> int:
    """How many panels ``width`` inches wide a row holds: ``max_columns`` when the caller sets it, else as many as
    fit the book's column (at least one)."""
    if max_columns is not None:
        if int(max_columns) < 1:
            raise ValueError(f"max_columns: {max_columns!r}; at least 1")
        return int(max_columns)
    return max(1, int((COLUMN_INCHES + 1e-6) // float(width)))


def wrap(items: list, columns: int) -> list[list]:
    """``items`` in rows of at most ``columns``, in order."""
    return [list(items[i:i + columns]) for i in range(0, len(items), columns)] or [[]]


def panel_row(count: int, width: float = 4.4, height: float = 3.3, *, max_columns: int | None = None, **kwargs):
    """A figure of ``count`` panels, each ``width`` x ``height`` inches, side by side and wrapped into rows of at most
    ``max_columns`` (default: as many as fit the book's column); returns (figure, list of the ``count`` axes in
    reading order) for functions that draw into ``ax``. Cells left over in the last row are turned off."""
    columns = min(count, columns_that_fit(width, max_columns)) if count else 1
    rows = -(-count // columns) if count else 1
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False, **kwargs)
    flat = list(axes.ravel())
    for ax in flat[count:]:
        ax.axis("off")
    return fig, flat[:count]

"""Figure helpers shared by every chapter: one function per kind of figure, each returning a Matplotlib Figure.

A chapter never calls ``plt.subplots`` itself. Functions are grouped by the kind of figure, one module each:
:mod:`~feature_learning.plotting.curves`, :mod:`~feature_learning.plotting.neurons`,
:mod:`~feature_learning.plotting.spectra`, :mod:`~feature_learning.plotting.attention`,
:mod:`~feature_learning.plotting.boundaries`, :mod:`~feature_learning.plotting.grids`; import them from there. Every
figure of curves is :func:`~feature_learning.plotting.curves.plot_panels`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

SEED_BAND_ALPHA = 0.25


def to_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def panel_row(count: int, width: float = 4.4, height: float = 3.3, **kwargs):
    """A figure with ``count`` panels side by side: (figure, list of axes), for functions that draw into ``ax``."""
    fig, axes = plt.subplots(1, count, figsize=(width * count, height), squeeze=False, **kwargs)
    return fig, list(axes[0])

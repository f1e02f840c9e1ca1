"""Figure helpers shared by every chapter: one function per kind of figure, each returning a Matplotlib Figure.

A chapter never calls ``plt.subplots`` itself. Functions are grouped by the kind of figure, one module each:
:mod:`~feature_learning.plotting.curves`, :mod:`~feature_learning.plotting.neurons`,
:mod:`~feature_learning.plotting.spectra`, :mod:`~feature_learning.plotting.attention`,
:mod:`~feature_learning.plotting.boundaries`; import them from there.
"""

from __future__ import annotations

import numpy as np
import torch

SEED_BAND_ALPHA = 0.25


def to_numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

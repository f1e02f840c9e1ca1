"""Fourier pictures: frequency counts and power spectra of trained networks."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from feature_learning.plotting import panel_row, to_numpy


def frequency_and_power(counts, power_init, power_trained, title: str = "", *, width: float = 3.3,
                        height: float = 3.0, max_columns: int | None = None) -> plt.Figure:
    """Figure 4.2 of the source: (a) neurons per dominant frequency, (b) max normalised power at initialisation,
    (c) after training; panels ``width`` x ``height`` inches, in rows of at most ``max_columns`` (default: as many as
    fit the book's column)."""
    fig, axes = panel_row(3, width, height, max_columns=max_columns)
    counts = to_numpy(counts)
    axes[0].bar(np.arange(len(counts)), counts)
    axes[0].set(xlabel="dominant frequency ζ", ylabel="neurons", title="(a) frequency coverage")
    bins = np.linspace(0, 1, 41)
    axes[1].hist(to_numpy(power_init).ravel(), bins=bins, color="gray")
    axes[1].set(xlabel="max normalised power", ylabel="count", title="(b) at initialisation")
    axes[2].hist(to_numpy(power_trained).ravel(), bins=bins, color="C2")
    axes[2].set(xlabel="max normalised power", title="(c) trained")
    fig.suptitle(title)
    fig.tight_layout()
    return fig

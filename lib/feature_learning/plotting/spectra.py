"""Fourier pictures: frequency counts and power spectra of trained networks."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from feature_learning.plotting import to_numpy


def frequency_and_power(counts, power_init, power_trained, title: str = "") -> plt.Figure:
    """Figure 4.2 of the source: (a) neurons per dominant frequency, (b) max normalised power at initialisation,
    (c) after training."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
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

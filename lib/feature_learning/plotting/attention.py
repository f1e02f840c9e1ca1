"""Attention pictures: attention matrices per head, attention rows per layer."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from feature_learning.measure.fourier import power_2d
from feature_learning.plotting import TEXT_POINTS, to_numpy
from feature_learning.plotting.legibility import COLUMN_INCHES


def attention_heads(matrices: torch.Tensor, title: str = "", *, width: float = COLUMN_INCHES,
                    row_height: float = 3.0) -> plt.Figure:
    """Figure 4.3 of the source: each head's p x p attention matrix and its 2-D power spectrum (DC removed,
    frequencies centred), one row per head, ``width`` inches wide (the book's column)."""
    heads = matrices.shape[0]
    fig, axes = plt.subplots(heads, 2, figsize=(width, row_height * heads), squeeze=False)
    for h in range(heads):
        m = to_numpy(matrices[h])
        axes[h, 0].imshow(m, cmap="RdBu_r", vmin=-np.abs(m).max(), vmax=np.abs(m).max())
        axes[h, 0].set(title=rf"head {h + 1}: $E\,W^Q_h (W^K_h)^\top E^\top$", xlabel="key token b",
                       ylabel="query token a")
        spec = np.fft.fftshift(to_numpy(power_2d(matrices[h].double())))
        p = m.shape[0]
        extent = (-(p // 2) - 0.5, p // 2 + 0.5, p // 2 + 0.5, -(p // 2) - 0.5)
        axes[h, 1].imshow(spec, cmap="viridis", extent=extent)
        axes[h, 1].set(title="2-D power spectrum", xlabel="frequency (b)", ylabel="frequency (a)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def position_rows(ax, rows, marker: int | None = None, *, ylabel: str = "layer", title: str = "",
                  marker_label: str = "needle"):
    """Rows of attention over positions (R, T), e.g. one per layer (row 1 on top), as an image, with the position
    ``marker`` (the needle) dashed; returns the image for a colour bar."""
    rows = to_numpy(rows)
    image = ax.imshow(rows, aspect="auto", cmap="viridis",
                      extent=(-0.5, rows.shape[1] - 0.5, rows.shape[0] + 0.5, 0.5))
    if marker is not None:
        ax.axvline(int(marker), color="red", ls="--", lw=1, label=marker_label)
        ax.legend(loc="lower left", fontsize=TEXT_POINTS)
    ax.set(xlabel="position", ylabel=ylabel, yticks=range(1, rows.shape[0] + 1))
    ax.set_title(title, fontsize=TEXT_POINTS)  # as the panels of plot_panels beside it
    ax.figure.colorbar(image, ax=ax)
    return image

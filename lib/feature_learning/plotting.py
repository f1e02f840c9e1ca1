"""Figure helpers shared by chapters: one function per kind of figure, returning the matplotlib Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from feature_learning.measure.fourier import interpolate, one_sided_power, power_2d

SEED_BAND_ALPHA = 0.25


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def mean_band(ax, x, curves, label=None, color=None, **kwargs):
    """Mean over seeds (axis 1 of ``curves``, shape (T, S)) with a min-max band."""
    x, curves = _np(x), _np(curves)
    if curves.ndim == 1:
        curves = curves[:, None]
    (line,) = ax.plot(x, curves.mean(axis=1), label=label, color=color, **kwargs)
    if curves.shape[1] > 1:
        ax.fill_between(x, curves.min(axis=1), curves.max(axis=1), color=line.get_color(), alpha=SEED_BAND_ALPHA)
    return line


def neuron_rows(parts: torch.Tensor, names: list[str], title: str = "") -> plt.Figure:
    """Figure 4.1 of the source: one row per neuron; each part's values (dots) with its band-limited interpolation,
    and the one-sided power spectrum of the part with the largest norm.

    ``parts`` has shape (rows, n_parts, p).
    """
    rows, n_parts, p = parts.shape
    fig, axes = plt.subplots(rows, 2, figsize=(10, 1.7 * rows), squeeze=False, gridspec_kw={"width_ratios": [3, 2]})
    t = torch.linspace(0, p - 1, 400, dtype=torch.float64)
    colors = plt.cm.tab10(np.arange(n_parts))
    for r in range(rows):
        ax, axp = axes[r]
        for j in range(n_parts):
            ax.plot(_np(t), _np(interpolate(parts[r, j].double(), t)), color=colors[j], alpha=0.35, lw=1.2)
            ax.plot(np.arange(p), _np(parts[r, j]), "o", ms=3, color=colors[j], label=names[j] if r == 0 else None)
        largest = int(parts[r].norm(dim=-1).argmax())
        power = _np(one_sided_power(parts[r, largest].double()))
        axp.bar(np.arange(len(power)), power / power.sum(), color=colors[largest])
        axp.set_ylim(0, 1.05)
        ax.set_ylabel(f"neuron {r + 1}", fontsize=8)
        if r == rows - 1:
            ax.set_xlabel("input value a")
            axp.set_xlabel("frequency ζ")
        axp.set_ylabel("power", fontsize=8)
    axes[0, 0].legend(ncol=n_parts, fontsize=7, loc="upper right")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def frequency_and_power(counts, power_init, power_trained, title: str = "") -> plt.Figure:
    """Figure 4.2 of the source: (a) neurons per dominant frequency, (b) max normalised power at initialisation,
    (c) after training."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    counts = _np(counts)
    axes[0].bar(np.arange(len(counts)), counts)
    axes[0].set(xlabel="dominant frequency ζ", ylabel="neurons", title="(a) frequency coverage")
    bins = np.linspace(0, 1, 41)
    axes[1].hist(_np(power_init).ravel(), bins=bins, color="gray")
    axes[1].set(xlabel="max normalised power", ylabel="count", title="(b) at initialisation")
    axes[2].hist(_np(power_trained).ravel(), bins=bins, color="C2")
    axes[2].set(xlabel="max normalised power", title="(c) trained")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def attention_heads(matrices: torch.Tensor, title: str = "") -> plt.Figure:
    """Figure 4.3 of the source: each head's p x p attention matrix and its 2-D power spectrum (DC removed,
    frequencies centred)."""
    heads = matrices.shape[0]
    fig, axes = plt.subplots(heads, 2, figsize=(6.4, 3.0 * heads), squeeze=False)
    for h in range(heads):
        m = _np(matrices[h])
        axes[h, 0].imshow(m, cmap="RdBu_r", vmin=-np.abs(m).max(), vmax=np.abs(m).max())
        axes[h, 0].set(title=f"head {h + 1}: E W^Q W^K^T E^T", xlabel="key token b", ylabel="query token a")
        spec = np.fft.fftshift(_np(power_2d(matrices[h].double())))
        p = m.shape[0]
        extent = (-(p // 2) - 0.5, p // 2 + 0.5, p // 2 + 0.5, -(p // 2) - 0.5)
        axes[h, 1].imshow(spec, cmap="viridis", extent=extent)
        axes[h, 1].set(title="2-D power spectrum", xlabel="frequency (b)", ylabel="frequency (a)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def accuracy_curves(curves: dict, styles: dict | None = None, ax=None, title: str = ""):
    """Test accuracy against training step, one line per entry ``label: (steps, accuracy)`` (Figure 1 of Shi, Wei
    and Liang 2022); ``styles`` maps a label to matplotlib keyword arguments."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    for label, (steps, acc) in curves.items():
        ax.plot(steps, acc, label=label, **(styles or {}).get(label, {}))
    ax.axhline(0.5, color="grey", lw=0.6, ls=":")
    ax.set(xlabel="step", ylabel="test accuracy", title=title, ylim=(0.4, 1.02))
    ax.legend(fontsize=7, ncol=2)
    return ax


def mds_scatter(coords, highlight=None, ax=None, title: str = ""):
    """Points of a 2-D MDS embedding (e.g. of the first-layer weights, Figure 2 of Shi, Wei and Liang 2022);
    ``highlight`` is a dict ``label: (index, colour)`` of points drawn as stars on top."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(3, 3))[1]
    ax.scatter(coords[:, 0], coords[:, 1], s=6, alpha=0.5, color="tab:blue")
    for label, (index, colour) in (highlight or {}).items():
        ax.scatter(coords[index, 0], coords[index, 1], marker="*", s=160, color=colour, edgecolor="k", label=label)
    ax.set(title=title, xticks=[], yticks=[])
    ax.set_aspect("equal", adjustable="datalim")  # MDS distances are only faithful at equal scales
    return ax

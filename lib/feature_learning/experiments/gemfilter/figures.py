"""The figures of the GemFilter chapter."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from feature_learning.experiments.gemfilter.runs import AccuracyGrid, Localisation, Probe
from feature_learning.inference.token_selection import (
    gemfilter_select,
)
from feature_learning.measure.statistics import mean_se
from feature_learning.measure.timing import TimingRow
from feature_learning.models.rope_decoder import RopeDecoder
from feature_learning.plotting.attention import position_rows
from feature_learning.plotting.curves import Curve, Guide, Panel, draw_panel, plot_panels
from feature_learning.plotting.grids import heatmap_panels


def training_figure(history: dict[str, torch.Tensor], converged_at: int | None = None):
    """Loss and exact-match rate of the training batches, with the one-of-four-needles plateau and the step at
    which the batches were answered (the decay of the rate starts there)."""
    steps = history["step"][1:]
    converged = [] if converged_at is None else [Guide(converged_at, axis="v", style=":")]
    return plot_panels([
        Panel([Curve(steps, history["loss"][1:])], xlabel="step", ylabel="training loss (answer tokens)",
              yscale="log", guides=converged),
        Panel([Curve(steps, history["exact"][1:])], xlabel="step", ylabel="exact match, training batch",
              guides=[Guide(0.25, "one of four needles", style=":"), *converged], ylim=(0, 1.02)),
    ], width=3.3, height=3.0)


def layers_figure(model: RopeDecoder, probe: Probe, loc: Localisation, k: int):
    """Three panels: one prompt's last-row attention at every layer (Fig. 9.2), the distance from the kept set to
    the needle (Fig. 9.5), and how often the last row points at the needle (both layouts) or the top-k keeps it."""
    layers = np.arange(1, model.n_layers + 1)
    middle = len(probe) // 2
    rows = torch.stack([torch.softmax(gemfilter_select(model, probe.tokens[[middle]], int(layer), k, pool=1)
                                      .scores[0], -1) for layer in layers])
    dist = loc.ask_last.distance.float().cpu().numpy()
    fig, ax = plt.subplot_mosaic([["rows", "rows"], ["distance", "points"]], figsize=(6.6, 6.6))
    axes = [ax["rows"], ax["distance"], ax["points"]]
    position_rows(axes[0], rows, int(probe.needle_pos[middle]),
                  title="last-row attention (softmax of head-summed logits)")
    mean, se = mean_se(dist, axis=1)
    draw_panel(axes[1], Panel([Curve(layers, mean, style="o", yerr=se)],
                              xlabel="filter layer r", ylabel=r"min$_{j\in J}$ |j - needle|",
                              guides=[Guide(loc.filter_layer, axis="v", style=":")],
                              title="distance to the needle\n(source Fig. 9.5)", ticks_at_x=True))
    draw_panel(axes[2], Panel([Curve(layers, loc.points, "last row points at needle (ask-last)", "o-"),
                               Curve(layers, loc.points_key_last, "same, key-last layout", "s--"),
                               Curve(layers, loc.kept, f"needle kept in top-{k} (ask-last)", "^:")],
                              xlabel="layer r", ylabel="fraction of prompts", ylim=(0, 1.05), ticks_at_x=True,
                              legend=None))
    # the legend goes below the panel: inside it would cover the points of the early layers
    axes[2].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    fig.tight_layout()
    return fig


def heatmap_figure(grid: AccuracyGrid, layer: int, k: int):
    return heatmap_panels({"All KV": grid.full.mean(-1), f"GemFilter (r={layer}, k={k})": grid.gemfilter.mean(-1)},
                          grid.lengths, [f"{100 * d:.0f}%" for d in grid.depths], xlabel="haystack length n",
                          ylabel="needle depth", colorbar="exact match", vline=grid.in_distribution.sum() - 0.5)


def filter_layer_figure(layer_acc: np.ndarray, layer_se: np.ndarray, all_kv: float, table: dict):
    """Left: our accuracy against the filter layer with standard errors and All KV; right: the source's Table 9.2
    averages against its (0-based) filter layer."""
    layers = np.arange(1, len(layer_acc) + 1)
    source = sorted(table)
    return plot_panels([
        Panel([Curve(layers, layer_acc, "GemFilter", "o-", yerr=layer_se)], guides=[Guide(all_kv, "All KV")],
              xlabel="filter layer r", ylabel="exact match", ylim=(0, 1.05), title="our decoder", ticks_at_x=True),
        Panel([Curve(source, [table[layer][1] for layer in source], style="o-")],
              xlabel="filter layer (0-based, as in the source)", ylabel="LongBench average",
              title="source: LLaMA 3.1 8B\n(source Table 9.2)"),
    ], width=3.3, height=3.3)


def speedup_figure(rows: list[TimingRow], limits: dict[str, tuple[float, str]], full_layer: list[float]):
    """Measured prompt-phase speed-up against the prompt length, of our selection (Q, K only at layer r*) and of
    the authors' (``full_layer``: layer r* in full), with the cost model's limits as guides."""
    lengths = [row.length for row in rows]
    guides = [Guide(value, label, style=style) for label, (value, style) in limits.items()]
    curves = [Curve(lengths, [row.speedup for row in rows], "ours: Q, K only at layer r*", "o-"),
              Curve(lengths, full_layer, "authors': layer r* in full", "s--")]
    return plot_panels([Panel(curves, guides=guides,
                              xlabel="prompt length", ylabel="prompt-phase speed-up", xscale="log", ylim=(0, None),
                              ticks_at_x=True)], width=5.5, height=3.4)


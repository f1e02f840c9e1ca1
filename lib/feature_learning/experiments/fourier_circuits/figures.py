"""The figures of the Fourier-circuits chapter (Figures 4.1-4.4 and the training curves)."""

from __future__ import annotations

import torch

from feature_learning.experiments.fourier_circuits.runs import AttentionConcentration, GrokRun, MarginRun, SplitRun
from feature_learning.experiments.fourier_circuits.sizes import GrokSizes
from feature_learning.measure.neurons import neuron_parts
from feature_learning.plotting.attention import attention_heads
from feature_learning.plotting.curves import Curve, Guide, Panel, plot_panels
from feature_learning.plotting.neurons import neuron_rows
from feature_learning.plotting.spectra import frequency_and_power

# -- figures ---------------------------------------------------------------------------------------------------------


def margin_figure(result: MarginRun):
    """The normalised margin over gamma* along training (mean and range over seeds), negative values clipped."""
    h = result.trained.history
    panel = Panel([Curve(h["step"], result.ratio.clamp_min(-0.2), "trained network", color="C0")],
                  f"k={result.k}, p={result.p}, m={result.recipe.width}: margin approaches the bound",
                  "training step", r"normalised margin / $\gamma^*$",
                  [Guide(1.0, r"$\gamma^*$ (Theorem 4.9)", color="k")], ylim=(-0.2, 1.1), legend="lower right")
    return plot_panels([panel], width=6.5, height=3.4)


def neurons_figure(result: MarginRun, generator: torch.Generator, rows: int = 4):
    """Figure 4.1: ``rows`` random neurons of the trained network (seed 0)."""
    order = torch.randperm(result.recipe.width, generator=generator)[:rows]
    parts = neuron_parts(result.trained.model, 0)[order]
    return neuron_rows(parts, [f"$u_{j + 1}$" for j in range(result.k)] + ["$w$"],
                       title=f"Four random neurons of the trained network (k={result.k}, p={result.p})")


def spectra_figure(result: MarginRun):
    """Figure 4.2: neurons per frequency, max normalised power at initialisation and trained."""
    n = result.neurons
    title = f"Frequencies and one-sparsity, k={result.k}, p={result.p}, m={result.recipe.width}"
    return frequency_and_power(n.counts, result.power_init, n.summary.max_power[n.active], title=title)


def split_figure(result: SplitRun):
    """Train and test accuracy of the split run."""
    h = result.trained.history
    panel = Panel([Curve(h["step"], h["train_acc"], "train", color="C0"),
                   Curve(h["step"], h["test_acc"], "test (held-out half)", color="C3")],
                  f"k={result.k}, p={result.p}: 50% split", "training step", "accuracy", ylim=(0, 1.02),
                  legend="lower right")
    return plot_panels([panel], width=6.5, height=3.4)


def attention_figure(result: AttentionConcentration, size: GrokSizes):
    """Figure 4.3: three heads of the replica whose heads are most concentrated, and their 2-D power spectra."""
    return attention_heads(result.trained[result.best_seed, : min(3, size.heads)],
                           title=f"One-layer transformer, k={result.k}, p={result.p} "
                                 f"(replica {result.best_seed + 1} of {result.trained.shape[0]})")


def grokking_figure(grok: dict[int, GrokRun]):
    """Figure 4.4: train and validation accuracy for each k (mean and range over the replicas)."""
    panels = [Panel([Curve(g.trained.history["step"], g.trained.history["train_acc"], "train", color="C0"),
                     Curve(g.trained.history["step"], g.trained.history["test_acc"], "validation", color="C3")],
                    f"k={g.k}, p={g.p}", "training step", "accuracy" if i == 0 else "", ylim=(0, 1.02),
                    legend="lower right" if i == 0 else None)
              for i, g in enumerate(grok.values())]
    return plot_panels(panels, width=6.6 / len(panels), height=3.4, sharey=True)


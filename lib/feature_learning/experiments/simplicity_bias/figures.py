"""The figures of the simplicity-bias chapter."""

from __future__ import annotations

import math

import torch

from feature_learning.experiments.simplicity_bias.runs import (
    DominoResult,
    FourNeuronResult,
    MismatchResult,
    SkewResult,
)
from feature_learning.experiments.simplicity_bias.sizes import FOUR_NEURON_INITS, SKEW_ANGLES
from feature_learning.measure.geometry import neuron_angles
from feature_learning.plotting.curves import Curve, Guide, Panel, plot_panels
from feature_learning.plotting.neurons import angle_vs_relative_scale, scales_and_angles
from feature_learning.theory.simplicity_bias import g_on_circle

SKEW_ANGLE_NAMES = {math.pi / 2: "π/2", math.pi / 3: "π/3"}  # the panel titles of Fig. 2's angles
FOUR_NEURON_WINDOWS = ((0, 3584), (3584, 15872))  # the source's Fig. 1 columns between the whole run and its tail


def four_neurons_figure(result: FourNeuronResult, epochs: int):
    """Fig. 1: the scales and angles of the four neurons of the Fig. 1 initialisation, over the whole run of
    ``epochs`` epochs and the source's three windows of it."""
    windows = [(0, epochs), *FOUR_NEURON_WINDOWS, (FOUR_NEURON_WINDOWS[-1][1], epochs)]
    labels = [f"neuron {k + 1} (u0 = {v:g})" for k, v in enumerate(FOUR_NEURON_INITS["Fig. 1"])]
    return scales_and_angles(result.epochs, result.scales[:, 0], result.angles[:, 0], windows, labels,
                             "Four neurons on XOR (Fig. 1 init)")


def margin_figure(result: FourNeuronResult):
    """The chapter's margin figure (Assumption 5.4, Lemma 5.5): the normalised margin gamma(theta) against the epoch
    of each four-neuron run and the small-init network, with the predicted gamma(theta^mm) dashed."""
    labels = [f"four neurons, init of source {label}" if label in FOUR_NEURON_INITS else label
              for label in result.labels]
    curves = [Curve(result.margin_epochs, values, label) for label, values in zip(labels, result.margins.T,
                                                                                   strict=True)]
    return plot_panels([Panel(curves, xlabel="epoch", ylabel="normalised margin γ(θ)",
                              guides=[Guide(result.gamma_mm, "γ(θ^mm)", color="k")], ylim=(-0.05, 0.14))],
                       width=6.0, height=3.4)


def skew_panels(result: SkewResult, n_grid: int = 2000) -> dict:
    """The inputs of :func:`feature_learning.plotting.neurons.angle_vs_relative_scale` for Fig. 2: G on the circle,
    its extrema, and per angle the scale curves of both widths and the widest network's neurons."""
    nw = len(result.widths)
    phis, gs, panels = [], [], []
    for i, al in enumerate(SKEW_ANGLES):
        r = i * nw + nw - 1
        V, a = result.final.W[r].detach(), result.final.a[r].detach()
        mass = V.pow(2).sum(-1)
        name = SKEW_ANGLE_NAMES.get(al, f"{al:.4f}")
        panels.append(dict(epoch=result.epochs, scale=result.frob[:, i * nw:(i + 1) * nw], widths=result.widths,
                           angle=neuron_angles(V), rel=mass / mass.sum(), sign=torch.sign(a), name=f"α = {name}"))
        ph, g = g_on_circle(*result.data[i], n_grid)
        phis.append(ph)
        gs.append(g)
    return dict(phi=phis, g=gs, extrema=[e[0] for e in result.extrema], panels=panels)


def skew_figure(result: SkewResult):
    """Fig. 2: the scale over training and the final neuron directions on skewed XOR, over G on the circle."""
    panels = skew_panels(result)
    return angle_vs_relative_scale(panels["phi"], panels["g"], panels["extrema"], panels["panels"],
                                   "Skewed XOR: scale over training and final neuron directions")


def probe_figure(result: DominoResult):
    """The Fig. 4 analogue: rows OOD probe accuracy (%) and coefficient RMS (log scale) against the training epoch
    of the features, one column per probe, small and standard init in each panel (mean and standard deviation over
    the training sets)."""
    S = result.seeds

    def panel(curves, ylabel, title="", yscale="linear"):
        return Panel([Curve(result.checkpoints, curves[:, :S], "small init (×2^-7)", "o-", spread="sd",
                            kwargs={"ms": 3}),
                      Curve(result.checkpoints, curves[:, S:], "standard init", "o-", spread="sd", kwargs={"ms": 3})],
                     title, "training epoch of the features", ylabel, yscale=yscale)

    columns = [[panel(100 * result.accuracy[name], "OOD probe accuracy (%)", f"probe {name}"),
                panel(result.rms[name], "probe coefficient RMS", yscale="log")] for name in result.accuracy]
    return plot_panels([list(row) for row in zip(*columns, strict=True)], width=3.3, height=3.25)



def mismatch_figure(perfect: DominoResult, mismatch: MismatchResult):
    """The Fig. 10 analogue: as :func:`probe_figure`, small init only, the perfectly correlated training sets against
    the same sets with a share of the training coins drawn against the label."""
    S = perfect.seeds
    share = f"{100 * mismatch.mismatch:g}% mismatched"

    def panel(full, mixed, ylabel, title="", yscale="linear"):
        return Panel([Curve(perfect.checkpoints, full[:, :S], "perfect correlation", "o-", spread="sd",
                            kwargs={"ms": 3}),
                      Curve(mismatch.checkpoints, mixed, share, "o-", spread="sd", kwargs={"ms": 3})],
                     title, "training epoch of the features", ylabel, yscale=yscale)

    columns = [[panel(100 * perfect.accuracy[name], 100 * mismatch.accuracy[name], "OOD probe accuracy (%)",
                      f"probe {name}"),
                panel(perfect.rms[name], mismatch.rms[name], "probe coefficient RMS", yscale="log")]
               for name in perfect.accuracy]
    return plot_panels([list(row) for row in zip(*columns, strict=True)], width=3.3, height=3.25)

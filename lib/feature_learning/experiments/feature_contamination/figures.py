"""The figures of the chapter "Feature contamination" (Figs. 3, 7-10 of the source redrawn)."""

from __future__ import annotations

from matplotlib.figure import Figure

from feature_learning.experiments.feature_contamination.runs import Mechanism, ReluVsLinear
from feature_learning.experiments.feature_contamination.sizes import SOURCE_TIME
from feature_learning.experiments.feature_contamination.transfer import Distillation, ExtensionResult
from feature_learning.plotting.curves import Curve, Panel, grouped_bars, measured_vs_predicted, plot_panels
from feature_learning.plotting.neurons import neuron_trajectories


def risks_figure(exp: ReluVsLinear) -> Figure:
    """Figs. 3a-c and 8 redrawn: one row per network."""
    def panel(title, curves, ylim=None):
        return Panel([Curve(exp.time, values, label) for label, values in curves.items()], title, SOURCE_TIME,
                     ylim=ylim)

    rows = []
    for name, r in (("ReLU", exp.relu), ("linear", exp.linear)):
        h = r.history
        rows.append([
            panel(f"{name}: risks", {"ID hinge risk": h["id_hinge"], "OOD hinge risk": h["ood_hinge"]}, (-0.03, 1.1)),
            panel(f"{name}: activation rate", {"positive class": h["p_pos"], "negative class": h["p_neg"]},
                  (-0.03, 1.03)),
            panel(f"{name}: mean weight per coordinate", {"core (oriented)": h["core"], "background": h["bg"]}),
            panel(f"{name}: projection norms",
                  {r"$\|P_{core}w_k\|$": h["core_norm"], r"$\|P_{bg}w_k\|$": h["bg_norm"]}),
        ])
    return plot_panels(rows, width=3.7, height=3.0)


def neurons_figure(exp: ReluVsLinear) -> Figure:
    """Fig. 7 redrawn: ten neurons of the first ReLU replica."""
    return neuron_trajectories(exp.time, exp.relu.history["corr_pos"], exp.relu.history["corr_neg"],
                               xlabel=SOURCE_TIME)


def mechanism_figure(mech: Mechanism) -> Figure:
    return measured_vs_predicted(mech.panels, xlabel="formula of Step 2", ylabel="autograd")


def regression_figure(dist: Distillation) -> Figure:
    """Fig. 9 redrawn: ID and OOD regression error of the ReLU and the linear student (log scale)."""
    panels = [Panel([Curve(dist.time, r.history["id_mse"], "ID error"),
                     Curve(dist.time, r.history["ood_mse"], "OOD error")],
                    f"{name} student", SOURCE_TIME, yscale="log")
              for name, r in (("ReLU", dist.relu), ("linear", dist.linear))]
    return plot_panels(panels, width=5.0, height=3.3)


def extension_figure(ext: ExtensionResult) -> Figure:
    """Figs. 3d and 10 redrawn."""
    groups = ["GELU" if a == "gelu" else a.capitalize() if a != "relu" else "ReLU" for a in ext.final]
    series = {"ID logistic loss": [v["id_loss"].mean() for v in ext.final.values()],
              "OOD logistic loss": [v["ood_loss"].mean() for v in ext.final.values()],
              "background projection / init": [v["bg_direction"].mean() for v in ext.final.values()]}
    return grouped_bars(groups, series, log=True, title="two-layer nets with biases, AdamW, concentric balls")

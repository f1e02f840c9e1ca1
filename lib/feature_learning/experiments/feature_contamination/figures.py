"""The figures of the chapter "Feature contamination" (Figs. 3, 7-10 of the source redrawn)."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from feature_learning.experiments.feature_contamination.runs import Mechanism, ReluVsLinear
from feature_learning.experiments.feature_contamination.sizes import SOURCE_TIME
from feature_learning.experiments.feature_contamination.transfer import Distillation, ExtensionResult
from feature_learning.plotting import TEXT_POINTS
from feature_learning.plotting.curves import Curve, Panel, grouped_bars, measured_vs_predicted, plot_panels
from feature_learning.plotting.neurons import neuron_trajectories


def risks_figure(exp: ReluVsLinear) -> Figure:
    """Figs. 3a-c and 8 redrawn: one row per quantity, the ReLU network on the left and the linear one on the right
    (two panels a row, so that the figure fits the book's column)."""
    nets = (("ReLU", exp.relu.history), ("linear", exp.linear.history))
    quantities = [  # (title, y label, {legend: history key}, y limits)
        ("risks", "hinge risk", {"ID": "id_hinge", "OOD": "ood_hinge"}, (-0.03, 1.1)),
        ("activation rate", "share of inputs", {"positive class": "p_pos", "negative class": "p_neg"}, (-0.03, 1.03)),
        ("mean weight per coordinate", "weight", {"core (oriented)": "core", "background": "bg"}, None),
        ("projection norms", "norm", {r"$\|P_{core}w_k\|$": "core_norm", r"$\|P_{bg}w_k\|$": "bg_norm"}, None),
    ]
    rows = [[Panel([Curve(exp.time, h[key], label) for label, key in curves.items()], f"{name}: {title}",
                   SOURCE_TIME, ylabel, ylim=ylim) for name, h in nets]
            for title, ylabel, curves, ylim in quantities]
    fig = plot_panels(rows, width=3.3, height=2.6)
    for ax in fig.axes:  # source steps run to 2e5: three ticks keep their labels apart
        ax.xaxis.set_major_locator(MaxNLocator(3))
    return fig


def neurons_figure(exp: ReluVsLinear) -> Figure:
    """Fig. 7 redrawn: ten neurons of the first ReLU replica."""
    return neuron_trajectories(exp.time, exp.relu.history["corr_pos"], exp.relu.history["corr_neg"],
                               xlabel=SOURCE_TIME)


def mechanism_figure(mech: Mechanism) -> Figure:
    """Autograd's gradients against the contamination rates of Step 3, neuron by neuron (tick labels in scientific
    notation: the gradients are of order 1e-4)."""
    fig = measured_vs_predicted(mech.panels, xlabel="rate of Step 3", ylabel="autograd")
    for ax in fig.axes:
        ax.ticklabel_format(style="sci", scilimits=(-2, 3))
        ax.xaxis.set_major_locator(MaxNLocator(4))
    fig.tight_layout()
    return fig


def regression_figure(dist: Distillation) -> Figure:
    """Fig. 9 redrawn: ID and OOD regression error of the ReLU and the linear student (log scale)."""
    panels = [Panel([Curve(dist.time, r.history["id_mse"], "ID error"),
                     Curve(dist.time, r.history["ood_mse"], "OOD error")],
                    f"{name} student", SOURCE_TIME, "half squared error", yscale="log")
              for name, r in (("ReLU", dist.relu), ("linear", dist.linear))]
    return plot_panels(panels, width=3.3, height=3.0)


def extension_figure(ext: ExtensionResult) -> Figure:
    """Figs. 3d and 10 redrawn."""
    groups = ["GELU" if a == "gelu" else a.capitalize() if a != "relu" else "ReLU" for a in ext.final]
    series = {"ID logistic loss": [v["id_loss"].mean() for v in ext.final.values()],
              "OOD logistic loss": [v["ood_loss"].mean() for v in ext.final.values()],
              "background projection / init": [v["bg_direction"].mean() for v in ext.final.values()]}
    fig = grouped_bars(groups, series, log=True, ylabel="loss, or projection / init (log scale)",
                       title="two-layer nets with biases, AdamW, concentric balls")
    fig.axes[0].legend(fontsize=TEXT_POINTS, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars
    fig.tight_layout()
    return fig

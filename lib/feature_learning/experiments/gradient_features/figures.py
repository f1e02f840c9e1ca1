"""The figures of the chapter "Gradient feature learning": the mean over seeds with error bars of one standard
deviation."""

from __future__ import annotations

from feature_learning.experiments.gradient_features.runs import (
    EmergenceResult,
    MultiIndexResult,
    TicketResult,
    XorResult,
)
from feature_learning.measure.statistics import seed_mean_sd
from feature_learning.plotting.curves import Curve, Guide, Panel, grouped_bars, plot_panels
from feature_learning.plotting.legibility import fit_to_column
from feature_learning.plotting.neurons import cosine_histograms


def _sd_curves(x, series: dict) -> list[Curve]:
    """One :class:`Curve` (mean +- sd over seeds) per ``label: values (len(x), S)``."""
    return [Curve(x, values, label, "o-", spread="sd") for label, values in series.items()]


def cone_figure(em: EmergenceResult):
    """Experiment 1: the fraction of units whose first-step weights lie in the cone C_{D, gamma}, against gamma."""
    series = {"bias +b~, after step 1": em.cone_pos, "bias -b~, after step 1": em.cone_neg,
              "bias +b~, nice: also ||G|| >= B_G/2": em.nice_pos, "at initialisation": em.cone_init}
    return plot_panels([Panel(_sd_curves(em.gammas, {k: v.T for k, v in series.items()}), xlabel=r"cone width $\gamma$",
                        ylabel=r"fraction of units in $C_{D,\gamma}$", xscale="log",
                        ticks_at_x=len(em.gammas) <= 6, ylim=(-0.03, 1.03))], width=5.2, height=3.5)


def ticket_figure(ticket: TicketResult, full):
    """Experiment 3: the lottery ticket's accuracy against its size, beside random units and the re-initialised
    ticket, with the full network's accuracy (``full``: (S,)) and chance as guides."""
    acc = ticket.uniform_accuracy
    curves = _sd_curves(ticket.sizes, {"ticket (Lemma 3.14's units)": acc[0], "random units after step 1": acc[1],
                                       "ticket's units at initialisation": acc[2]})
    return plot_panels([Panel(curves, xlabel="units in the subnetwork", ylabel="test accuracy on the uniform part",
                        guides=[Guide(float(full.mean()), "full network", color="k"),
                                Guide(0.5, "chance", style=":", color="k")], ylim=(0.4, 1.03))],
                 width=5.2, height=3.5)


def xor_figure(xr: XorResult, bayes):
    """Experiment 4, the XOR mixture: accuracy of gradient and random features against d, with the Bayes accuracy
    at each d (``bayes``: (len(dims),)) and chance."""
    curves = _sd_curves(xr.dims, {"gradient features": xr.accuracy[0], "random features": xr.accuracy[1]})
    return plot_panels([Panel(curves + [Curve(xr.dims, bayes, "Bayes", "k--", kwargs={"lw": 1})],
                        xlabel="dimension d", ylabel="test accuracy", xscale="log",
                        ticks_at_x=len(xr.dims) <= 6, guides=[Guide(0.5, "chance", style=":", color="k")],
                        ylim=(0.4, 1.03))], width=5.2, height=3.5)


def multi_index_figure(mr: MultiIndexResult):
    """Experiment 6: the test MSE of gradient and random features against the width, with the zero predictor's."""
    curves = _sd_curves(mr.widths, {"gradient features": mr.test_mse[0], "random features": mr.test_mse[1]})
    return plot_panels([Panel(curves, xlabel="units 4m", ylabel="test MSE", xscale="log",
                        ticks_at_x=len(mr.widths) <= 6,
                        guides=[Guide(mr.baseline_mse, "zero predictor", style=":", color="k")], ylim=(0, 1.2))],
                 width=5.2, height=3.5)


def cosine_figure(em: EmergenceResult, m: int):
    """Experiment 1: histograms of |cos(w, D)| at initialisation and after the first step, units 1..m (bias +b~)
    and m+1..2m (bias -b~)."""
    return fit_to_column(cosine_histograms({
        "units 1..m (bias +b~)": {"initialisation": em.cos_init[:, :m], "after step 1": em.cos_step[:, :m]},
        "units m+1..2m (bias -b~)": {"initialisation": em.cos_init[:, m:], "after step 1": em.cos_step[:, m:]}}))


def parts_figure(parts, accuracy):
    """Experiment 2: test accuracy per part of the structured parity, gradient against random features (mean and
    sd over seeds of ``accuracy``: (2 arms, parts, seeds))."""
    mean, sd = seed_mean_sd(accuracy.cpu().numpy(), axis=-1)
    series = {"gradient features": mean[0], "random features": mean[1]}
    errors = {"gradient features": sd[0], "random features": sd[1]}
    bars = grouped_bars([f"part {name}" for name in parts], series, ylabel="test accuracy", errors=errors)
    return fit_to_column(bars)

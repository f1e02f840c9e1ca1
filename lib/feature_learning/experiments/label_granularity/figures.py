"""The figures of the chapter "Pretraining label granularity"."""

from __future__ import annotations

import numpy as np
import torch

from feature_learning.experiments.label_granularity.runs import LogTime, Sweep
from feature_learning.experiments.label_granularity.sizes import (
    CROSS_BASELINES,
    CROSS_LEVELS,
    CROSS_PROBE,
    CROSS_TABLE3,
    IN1K,
    IN1K_BASELINE,
    IN1K_NAIVE,
    IN21K_BINARY,
    INAT_RESNET34,
    INAT_RESNET50,
    PatchModel,
    SweepSizes,
)
from feature_learning.experiments.label_granularity.summaries import hard_acc_curves, replica_curves
from feature_learning.measure.statistics import mean_se
from feature_learning.plotting.curves import Curve, Guide, Panel, patch_heatmaps, plot_panels
from feature_learning.plotting.legibility import fit_to_column


def empirical_panels() -> list[list[Panel]]:
    """The source's tables as rows of panels for :func:`feature_learning.plotting.curves.plot_panels` (error bars of
    the printed standard deviations, baselines as guides with a band of their own): (1) iNaturalist ResNet-34 and
    ResNet-50 (Tables 5, 7), (2) ImageNet-21k in-dataset (Table 2) and ImageNet-1k (Table 9), (3) cross-dataset
    fine-tuning and linear probing (Tables 3, 4)."""
    def curves(table, fmts=("o-", "v-", "s-", "d-", "^-")):
        return [Curve([r[0] for r in rows], [r[1] for r in rows], name, fmt, yerr=[r[2] for r in rows])
                for (name, rows), fmt in zip(table.items(), fmts, strict=False)]

    def baselines(levels: dict):  # label -> (value, half-width of its band or 0)
        return [Guide(y, label, color=f"C{7 + i % 3}", half_width=half) for i, (label, (y, half)) in
                enumerate(levels.items())]

    def panel(title, ylabel, lines, guides, xlabel="pretraining classes G"):
        return Panel(lines, title=title, xlabel=xlabel, ylabel=ylabel, guides=guides, xscale="log")

    base34, base50 = INAT_RESNET34["manual hierarchy"][0], INAT_RESNET50["manual hierarchy"][0]
    in21k = [Curve([g for _, g, _ in IN21K_BINARY[1:]], [e for _, _, e in IN21K_BINARY[1:]], "pretrained on level",
                   "o-")]
    gs = [g for _, g in CROSS_LEVELS]
    cross = [Curve(gs, CROSS_TABLE3, "fine-tune (Table 3)", "o-"),
             Curve(gs, [a for a, _ in CROSS_PROBE], "linear probe (Table 4)", "s-", yerr=[s for _, s in CROSS_PROBE])]
    error = "validation error (%)"
    return [
        [panel("iNaturalist, ResNet-34 (Table 5)", error, curves(INAT_RESNET34),
               baselines({"retraining baseline (G = 11)": (base34[1], base34[2])})),
         panel("iNaturalist, ResNet-50 (Table 7)", error, curves(INAT_RESNET50),
               baselines({"retraining baseline (G = 11)": (base50[1], base50[2])}))],
        [panel("ImageNet-21k, 'living thing' (Table 2)", error, in21k,
               baselines({"baseline (G = 2)": (IN21K_BINARY[0][2], 0.0)})),
         panel("ImageNet-1k, 1000 classes (Table 9)", error, curves(IN1K),
               baselines({"retraining baseline": IN1K_BASELINE, "one-pass": IN1K_NAIVE}))],
        [panel("ImageNet-21k -> ImageNet-1k (Tables 3, 4)", "validation accuracy (%)", cross,
               baselines({name: (acc, 0.0) for name, acc in CROSS_BASELINES.items()}),
               xlabel="pretraining classes G (ImageNet-21k level)")],
    ]


# ---- figures -------------------------------------------------------------------------------------------------------
def dynamics_figure(sweep: Sweep, model: PatchModel, k: int = 8):
    """A*_common and A*_sub against t (mean over replicas with their range) for coarse and fine labels at one k, with
    the phase times T0 and T11, and the coarse run's growth ratio since initialisation against 1/k."""
    panels = []
    for labels in ("coarse", "fine"):
        r = sweep.runs[(labels, k)]
        phases = r.phase_times(model.d(k), model.lam)
        panels.append(Panel(
            [Curve(r.steps[1:], replica_curves(r.A_common)[1:], "common feature", color="C0"),
             Curve(r.steps[1:], replica_curves(r.A_sub)[1:], "subclass features", color="C1")],
            title=f"{labels} labels, k = {k}", xlabel="t", ylabel=r"$A^*$ (mean over the set, both classes)",
            xscale="log", guides=[Guide(max(phases["T0"], 1), "T0 (F = 1/d)", axis="v", style=":"),
                                  Guide(phases["T11"], "T11 (F = ln λ)", axis="v", style="-.")]))
    coarse = sweep.runs[("coarse", k)]
    panels.append(Panel([Curve(coarse.steps[1:], replica_curves(coarse.ratio_curve())[1:], "measured", color="C0")],
                        title=f"coarse, k = {k}: growth ratio since init", xlabel="t",
                        ylabel=r"$\Delta A^*_{sub}/\Delta A^*_{common}$", xscale="log", guides=[Guide(1 / k, "1/k")]))
    return plot_panels([panels[:2], panels[2:]], width=3.3, height=3.0)


def logtime_figure(lt: LogTime, k: int):
    """The own-class output F_y on normal samples against t (exact and Bernoulli counts), and e^F + F, which the
    logarithmic-time law makes linear in t."""
    t = lt.runs["exact"].steps[1:]
    exact = lt.F_class["exact"]
    return plot_panels([
        Panel([Curve(t, lt.F_class["exact"].mean(-1)[1:], "exact counts", color="C0"),
               Curve(t, lt.F_class["bernoulli"].mean(-1)[1:], "Bernoulli counts", color="C3")],
              title=f"coarse, k = {k}: own-class output on normal samples", xlabel="t", ylabel="$F_y$", xscale="log"),
        Panel([Curve(t, (torch.exp(exact) + exact).flatten(1)[1:], "measured", color="C0")],
              title=r"exact counts: $e^F+F$ is linear in $t$", xlabel="t", ylabel=r"$e^{F}+F$ (per class and seed)",
              xscale="log"),
    ], width=3.3, height=3.0)


def margins_figure(sweep: Sweep, summary: dict):
    """The hard and normal test margins against k (mean ± se over replicas) for coarse and fine labels, with a 1/k
    line through the coarse hard margin at k = 8."""
    curves = []
    for labels, fmt in (("coarse", "o-"), ("fine", "s-")):
        ks = sweep.ks(labels)
        for kind, style in (("hard", fmt), ("normal", fmt[0] + ":")):
            stats = [mean_se(summary[(labels, k)][f"{kind}_margin"]) for k in ks]
            curves.append(Curve(ks, [m for m, _ in stats], f"{labels} labels, {kind}", style,
                                yerr=[se for _, se in stats]))
    ks_c = np.array(sweep.ks("coarse"), dtype=float)
    reference = summary[("coarse", 8)]["hard_margin"].mean() * 8 / ks_c
    curves.append(Curve(ks_c, reference, "∝ 1/k", ":", color="gray", kwargs={"lw": 0.8}))
    return plot_panels([Panel(curves, title="margin F_y - F_y' on test samples", xlabel="k (subclasses per class)",
                        ylabel="margin", xscale="log", yscale="log")], width=5.5, height=3.8)


def robustness_figure(sweep: Sweep, sw: SweepSizes):
    """Hard-sample accuracy against the distractor strength rho (mean over replicas with their range), coarse
    against fine labels (merged to the coarse classes), one panel per fine k of the sweep, with chance 1/2."""
    rhos = np.array(sw.rhos)
    panels = [Panel([Curve(rhos, hard_acc_curves(sweep, "coarse", k), "coarse labels", color="C0"),
                     Curve(rhos, hard_acc_curves(sweep, "fine", k), "fine labels (merged)", color="C1")],
                    title=f"k = {k}", xlabel=r"distractor $\rho$", ylabel="hard-sample accuracy",
                    guides=[Guide(0.5, "1/2")]) for k in sw.fine_ks]
    return plot_panels([panels[i:i + 2] for i in range(0, len(panels), 2)], width=3.3, height=3.0, sharey=True)




def samples_figure(example: dict[str, torch.Tensor]):
    """One normal and one hard sample of subclass (+, 0) as patch x feature heat maps
    (:func:`~.runs.example_samples`)."""
    return fit_to_column(patch_heatmaps([("normal sample of (+, 1)", example["normal"]),
                                       ("hard sample of (+, 1)", example["hard"])]),
                       layout="constrained")


def empirical_figures() -> dict[str, object]:
    """The source's tables as three figures (:func:`empirical_panels`), keyed by the chapter's glue names."""
    rows = zip(("inat", "imagenet", "cross"), empirical_panels(), strict=True)
    return {key: plot_panels([[panel] for panel in row], width=6.5, height=3.4) for key, row in rows}

"""The figures of the chapter "Contrastive learning between universality and label efficiency"."""

from __future__ import annotations

import math

import torch

from feature_learning.experiments.contrastive.runs import Finetuned, Pretrained, TradeoffCurve
from feature_learning.experiments.contrastive.sizes import DTYPE
from feature_learning.plotting.curves import Curve, Panel, grouped_bars, plot_panels
from feature_learning.theory import contrastive as theory


# -- figures ---------------------------------------------------------------------------------------------------------
def block_weights_figure(pre: Pretrained):
    """Mean squared feature weight on S, each P_t and U per pre-training set (mean over replicas), with the closed
    form (Props. 7.3 / 7.4) as the outline bars' targets."""
    m = pre.model
    blocks = ["S"] + [f"P{t}" for t in range(1, m.T + 1)] + ["U"]
    series = {name: [float(pre.block(b)[:, c].mean()) for b in blocks] for c, name in enumerate(pre.names)}
    return grouped_bars(blocks, series, ylabel=r"mean $a_j^2$ on the block", title="learned feature weights")


def tradeoff_figure(curves: list[TradeoffCurve], m: int, bound_Ts=(1, 2, 4, 8, 16)):
    """Target and average probe accuracy against the number of pre-training tasks (mean +- se over replicas and
    labelled sets), one panel per curve, and the bound ratio (T+1)/(2 sqrt T) of Prop. F.8."""
    panels = []
    for c in curves:
        i = c.ms.index(m)
        n = math.sqrt(c.target.shape[-1])
        panels.append(Panel([
            Curve(list(c.ns), c.target[i].mean(-1), "target task", "o-", yerr=c.target[i].std(-1) / n),
            Curve(list(c.ns), c.average[i].mean(-1), f"average over {c.T} tasks", "s--",
                  yerr=c.average[i].std(-1) / n)],
            xlabel="tasks in pre-training", ylabel=f"probe accuracy (m={m})", title=c.label, ticks_at_x=True))
    panels.append(Panel([Curve(list(bound_Ts), [theory.bound_ratio(T) for T in bound_Ts], r"$(T+1)/(2\sqrt{T})$",
                               "k.-")],
                        xlabel="T", ylabel="universal / specific bound", title="Prop. F.8", xscale="log",
                        ticks_at_x=True))
    rows = [panels[i:i + 2] for i in range(0, len(panels), 2)]  # two panels a row: the figure fits the column
    return plot_panels(rows, width=3.3, height=3.0)


def finetune_figure(f: Finetuned):
    """Squared feature weights after contrastive fine-tuning against gamma (replicas' mean, se on the target's
    private features) and Prop. F.9's curve."""
    m = f.model
    grid = torch.linspace(0, max(f.gammas), 200, dtype=DTYPE)
    gammas = list(f.gammas)
    P1 = f.block("P1")
    return plot_panels([Panel([
        Curve(grid, [theory.finetune_beta(m.s, m.T, float(g)) for g in grid],
              r"Prop. F.9: $\min(1,1/\sqrt{T}+\gamma/\sqrt{s})^2$", "k-"),
        Curve(gammas, P1.mean(0).tolist(), "learned: target's private features", "o",
              yerr=(P1.std(0) / math.sqrt(P1.shape[0])).tolist()),
        Curve(gammas, f.block("P2").mean(0).tolist(), "learned: other tasks' private features", "s"),
        Curve(gammas, f.block("S").mean(0).tolist(), "learned: shared features", "^"),
    ], xlabel=r"$\gamma$", ylabel=r"mean $a_j^2$", title="contrastive fine-tuning on the target task")],
        width=6.0, height=3.6)

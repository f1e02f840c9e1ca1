"""The figures of the chapter "Model scale and in-context learning"."""

from __future__ import annotations

import numpy as np
import torch

from feature_learning.experiments.icl_model_scale.parity import Constructions, ParityRobustness
from feature_learning.experiments.icl_model_scale.runs import (
    FlipSweep,
    RiskSweep,
    ScoreSweep,
    Setting,
    Tradeoff,
    Training,
)
from feature_learning.experiments.icl_model_scale.transformers import TransformerSweep
from feature_learning.measure.statistics import mean_se
from feature_learning.plotting.curves import Curve, Guide, Panel, plot_panels
from feature_learning.plotting.legibility import COLUMN_INCHES
from feature_learning.theory import icl as theory

COLUMN = COLUMN_INCHES - 0.05  # a figure as wide as the book's column (two panels side by side at most)


def training_figure(exact: Training, sgd: Training, st: Setting):
    """The full-rank attention in the eigenbasis (exact loss, SGD); the learned diagonal per rank against v*; the
    errors per rank."""
    diagonals = []
    x = np.arange(1, st.d + 1)
    for k, r in enumerate(exact.ranks):
        diagonals.append(Curve(x, torch.diagonal(st.eigen(exact.U[k])), f"r={r}", "o", f"C{k}"))
        diagonals.append(Curve(x, theory.v_star(st.lam, st.N, r), style="k_", kwargs={"ms": 12}))
        if r in sgd.ranks:
            v = torch.diagonal(st.eigen(sgd.U[:, sgd.ranks.index(r)]), dim1=-2, dim2=-1).mean(0)
            diagonals.append(Curve(x + 0.25, v, style="x", color=f"C{k}"))
    v_err = sgd.v_errors(st)
    errors = [
        Curve(exact.ranks, exact.rel_errors, r"exact loss: $\|U-U^*\|/\|U^*\|$", "o-"),
        Curve(sgd.ranks, v_err.mean(0), r"SGD: $\|v-v^*\|/\|v^*\|$", "s-",
              yerr=2 * v_err.std(0) / v_err.shape[0] ** 0.5),
        Curve(sgd.ranks, sgd.rel_errors.mean(0), r"SGD: $\|U-U^*\|/\|U^*\|$", "x--"),
    ]
    return plot_panels([[
        Panel(image=st.eigen(exact.U[-1]), title=rf"$Q^\top UQ$, exact loss, r={exact.ranks[-1]}"),
        Panel(image=st.eigen(sgd.U[0, -1]), title=rf"$Q^\top UQ$, SGD on prompts, r={sgd.ranks[-1]}"),
    ], [
        Panel(diagonals, xlabel="eigen-direction i",
              ylabel=r"$(Q^\top U Q)_{ii}$: exact (o), SGD (x), $v_i^*$ (-)"),
        Panel(errors, xlabel="rank r", ylabel="relative error", yscale="log", guides=[Guide(5e-2, style="-")]),
    ]], width=COLUMN / 2, height=3.3)


def risk_figure(rs: RiskSweep):
    mc, mc_se, th = rs.slopes()
    curves = []
    for j, sigma in enumerate(rs.sigmas):
        curves.append(Curve(rs.ranks, rs.mean[0, j], rf"MC, $\sigma$ = {sigma:g}", "o", f"C{j}", yerr=2 * rs.se[0, j]))
        curves.append(Curve(rs.ranks, rs.closed[0, j], style="-", color=f"C{j}"))
    return plot_panels([
        Panel(curves, xlabel="rank r", ylabel=f"evaluation risk, M={rs.Ms[0]}"),
        Panel([Curve(rs.ranks, th, r"closed form $\sum_{i\leq r}a_i^2/M$", "k-"),
               Curve(rs.ranks, mc, "MC slope", "o", yerr=2 * mc_se)],
              xlabel="rank r", ylabel=r"d risk / d $\sigma^2$"),
    ], width=COLUMN / 2, height=3.4)


def best_rank_figure(tr: Tradeoff):
    curves = []
    for j, sigma in enumerate(tr.best_sigmas):
        label = rf"$\sigma$ = {sigma:g}, best r = {tr.best_closed[j]}"
        curves.append(Curve(tr.ranks, tr.ew_closed[j], label, "-", f"C{j}"))
        curves.append(Curve(tr.ranks, tr.ew_mean[j], style="o", color=f"C{j}", yerr=2 * tr.ew_se[j],
                            kwargs={"ms": 3}))
    return plot_panels([Panel(curves, xlabel="rank r", ylabel=r"$\mathbb{E}_w$ risk, M=16")],
                       width=5.2, height=3.4)


def flips_figure(fs: FlipSweep):
    risk, acc = [], []
    for k, r in enumerate(fs.ranks):
        risk.append(Curve(fs.flips, fs.closed[:, k], f"closed, r={r}", "-", f"C{k}"))
        risk.append(Curve(fs.flips, fs.mean[:, k], f"MC, r={r}", "o", f"C{k}"))
        acc.append(Curve(fs.flips, fs.accuracy[:, k], f"r={r}", "o-", f"C{k}"))
    return plot_panels([
        Panel(risk, xlabel="fraction of flipped context labels", ylabel="risk, M=16"),
        Panel(acc, xlabel="fraction of flipped context labels", ylabel="sign accuracy"),
    ], width=COLUMN / 2, height=3.2)


def scores_figure(sc: ScoreSweep):
    curves = []
    for k, name in enumerate(("relevant (top-4 directions)", "irrelevant (bottom-4)")):
        curves.append(Curve(sc.ranks, sc.closed[k], name, "-", f"C{k}"))
        curves.append(Curve(sc.ranks, sc.mean[k], style="o", color=f"C{k}", yerr=2 * sc.se[k], kwargs={"ms": 3}))
    ylabel = r"$\mathbb{E}(\mathbf{x}^\top U_r^*\mathbf{x}_q)^2$"
    return plot_panels([Panel(curves, xlabel="rank r", ylabel=ylabel)], width=5.2, height=3.4)


def parity_figure(pr: ParityRobustness, con: Constructions):
    names = (f"small, m={2 * (con.nu1 + 1)}", f"large, m={2 * (con.nu2 + 1)}")
    return plot_panels([
        Panel([Curve(pr.Ms, pr.accuracy[:, k], names[k], st) for k, st in enumerate(("o-", "s-"))],
              xscale="log", xlabel="context length M", ylabel="accuracy on S1 tasks"),
        Panel([Curve(pr.flips, pr.flip_accuracy[:, k], names[k].split(",")[0], st)
               for k, st in enumerate(("o-", "s-"))],
              xlabel="fraction of flipped context labels (M=64)", ylabel="accuracy"),
    ], width=COLUMN / 2, height=3.2)


def transformer_flips_figure(ts: TransformerSweep):
    mean, se = mean_se(ts.accuracy, axis=-1)
    curves = [Curve(ts.flips, mean[k], f"width {s[0]}, heads {s[1]}, blocks {s[2]}", "o-", f"C{k}", yerr=2 * se[k])
              for k, s in enumerate(ts.shapes)]
    curves += [Curve(ts.flips, ts.reference[:, 0], "prior rule", "k--"),
               Curve(ts.flips, ts.reference[:, 1], "context rule", "k:")]
    drop, drop_se = mean_se(ts.drop, axis=-1)
    half, half_se = mean_se(ts.drop_half, axis=-1)
    return plot_panels([
        Panel(curves, guides=[Guide(0.5, style="-")], xlabel="fraction of flipped context labels (M=16)",
              ylabel="accuracy against the true label"),
        Panel([Curve(ts.params, drop, "p = 0 -> 1", "o-", yerr=2 * drop_se),
               Curve(ts.params, half, "p = 0 -> 0.5", "s--", yerr=2 * half_se)],
              xscale="log", xlabel="parameters", ylabel="accuracy drop"),
    ], width=COLUMN / 2, height=3.6)

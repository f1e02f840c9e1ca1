"""The figures of the chapter "Rank regularisation for domain generalisation"."""

from __future__ import annotations

import math

import torch

from feature_learning.book.profiles import Run
from feature_learning.data.domain_shift import (
    spurious_2d,
)
from feature_learning.experiments.nuclear_norm.runs import Analogue, FiniteSample, Population, Toy
from feature_learning.measure.statistics import mean_se
from feature_learning.plotting.boundaries import linear_boundaries_2d
from feature_learning.plotting.curves import Curve, Guide, Panel, grouped_bars, plot_panels


# -- figures ---------------------------------------------------------------------------------------------------------
def population_figure(pop: Population):
    """alpha, beta and their ratio against lambda with Lemma 6.1's bounds; OOD accuracy against d - r with the CLT
    curve and Proposition 6.3's threshold d - r = r / gamma^2."""
    p = pop.sizes
    lams = [o.lam for o in pop.optima]
    gaps = [s.gap for s in pop.sweep]
    return plot_panels([[
        Panel([Curve(lams, [o.alpha for o in pop.optima], r"$\alpha$ (invariant)", "o-"),
               Curve(lams, [o.beta for o in pop.optima], r"$\beta$ (environmental)", "s-")],
              title=f"ERM-l2 optimum, r={p.r}, d={p.d}, gamma={p.gamma}", xlabel=r"$\lambda$", ylabel="weight",
              xscale="log", guides=[Guide(1 / math.sqrt(p.r), r"$1/\sqrt{r}$", style="--")]),
        Panel([Curve(lams, [o.ratio for o in pop.optima], r"$\alpha/\beta$", "o-")],
              title=r"$\alpha/\beta$ against Lemma 6.1(3)", xlabel=r"$\lambda$", ylabel="ratio", xscale="log",
              guides=[Guide(3 / (4 * p.gamma), r"$3/(4\gamma)$ (Lemma 6.1)", style="--"),
                      Guide(1 / (2 * p.gamma), r"$1/(2\gamma)$ (large-d heuristic)", style=":")], ylim=(0.9, 1.8)),
    ], [
        Panel([Curve(gaps, [s.ood_accuracy for s in pop.sweep], "Monte Carlo", "o-"),
               Curve(gaps, [s.clt for s in pop.sweep], "CLT", "x--")],
              title=f"OOD accuracy of ERM-l2, r={p.sweep_r}, lambda={p.sweep_lambda}", xlabel="d - r",
              ylabel="OOD accuracy", guides=[Guide(p.sweep_r / p.gamma**2, r"$r/\gamma^2$ (Prop. 6.3)", axis="v")]),
    ]], width=3.3, height=3.2)  # two panels a row: the figure fits the book's column


def finite_sample_figure(fs: FiniteSample):
    """ERM-NU's OOD accuracy against lambda for a batch above and below d, with the stable rank of the OOD features
    on a twin axis and the ERM-l2 / IHT levels as guides."""
    f = fs.sizes
    big, small = fs.nu(f.nu_batch), fs.nu(f.nu_small_batch)
    return plot_panels([Panel(
        [Curve([m.lam for m in big], [m.ood_accuracy for m in big], f"OOD acc, batch {f.nu_batch} > d", "o-"),
         Curve([m.lam for m in small], [m.ood_accuracy for m in small], f"OOD acc, batch {f.nu_small_batch} < d",
               "s-", kwargs={"ms": 9})],  # drawn larger than the twin axis's hollow triangle that may sit on it
        title=f"ERM-NU on the linear model, r={f.r}, d={f.d}, n={f.n}", xlabel=r"$\lambda$", ylabel="OOD accuracy",
        xscale="log", ylim=(-0.05, 1.05), legend="center left",
        guides=[Guide(fs.get("ERM-l2").ood_accuracy, "ERM-l2", style=":")],
        twin=[Curve([m.lam for m in big], [m.stable_rank for m in big], f"stable rank, batch {f.nu_batch}", "C2^--",
                     kwargs={"mfc": "none"})],
        twin_ylabel="stable rank of OOD features",
    )], width=6.0, height=3.6)


def toy_figure(toy: Toy, run: Run, n: int = 800):
    """The 2-D task (ID and OOD samples) with the boundaries learned by ERM, ERM-NU and ERM-l2 (first seed)."""
    lines = {r.name: (torch.stack([r.first[0], r.first[0] * r.slopes[0]]), style)
             for r, style in zip(toy.runs[:3], ("k-", "C2--", "C1-."), strict=True)}
    panels = []
    for title, p in (("in distribution (P(b=+1)=0.7)", 0.7), ("out of distribution (P(b=+1)=0.3)", 0.3)):
        x, y = spurious_2d(n, p, run.generator("toy_plot", p))
        panels.append({"title": title, "x": x, "y": y, "lines": lines})
    return linear_boundaries_2d(panels, width=3.3)


def analogues_figure(analogues: list[Analogue]):
    """Fig. 6.5 analogue: OOD accuracy (mean +- se over seeds) and the stable rank of the OOD features against
    lambda, one panel per data set (x axis symmetric-log so that lambda = 0, ERM, shows)."""
    panels = []
    for a in analogues:
        lams = list(a.lambdas)
        panels.append(Panel(  # (L, S) over seeds: the mean with error bars of one standard error
            [Curve(lams, a.ood_accuracy, "OOD accuracy", "o-", spread="se"),
             Curve(lams, a.id_accuracy, "ID accuracy", "s:", spread="se")],
            title=f"{a.name}: ERM-NU against lambda", xlabel=r"$\lambda$", ylabel="accuracy", xscale="symlog",
            linthresh=1e-3, ylim=(0, 1.05), legend="lower left", guides=[Guide(a.chance, "chance")],
            twin=[Curve(lams, a.stable_rank, "stable rank", "C2^--", spread="se")],
            twin_ylabel="stable rank (OOD features)"))
    return plot_panels([[p] for p in panels], width=6.0, height=3.4)  # one data set a row


def erm_vs_nu_figure(analogues: list[Analogue], lam: float):
    """Fig. 6.4 analogue: ERM against ERM-NU at one lambda, ID and OOD accuracy, mean +- se over seeds."""
    groups, values, errors = [], {"ERM": [], f"ERM-NU (lambda={lam})": []}, {"ERM": [], f"ERM-NU (lambda={lam})": []}
    for a in analogues:
        for split, acc in (("ID", a.id_accuracy), ("OOD", a.ood_accuracy)):
            groups.append(f"{a.name} {split}")
            for key, row in (("ERM", acc[a.index(0.0)]), (f"ERM-NU (lambda={lam})", acc[a.index(lam)])):
                mean, se = mean_se(row.cpu().numpy())
                values[key].append(mean)
                errors[key].append(se)
    return grouped_bars(groups, values, ylabel="accuracy", errors=errors, ylim=(0.5, 1.02))

"""The chapter's figures (the source's Figures 1, 2, 9, 11, 13, 15 and 16 analogues), each at most the book's column
wide (:data:`feature_learning.plotting.legibility.COLUMN_INCHES`) with no text under 9 pt there."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.experiments.feature_emergence.runs import (
    DigitsClusterResult,
    GroupResult,
    InjectionResult,
    MixtureResult,
    SelectionResult,
    spherical_two_means,
)
from feature_learning.measure.geometry import cosine_to
from feature_learning.plotting import legibility
from feature_learning.plotting.curves import Curve, Guide, Panel, plot_panels
from feature_learning.plotting.neurons import mds_panels

MODEL_NAMES = {"net": "Network", "ntk": "NTK", "rf": "RF"}
MODEL_COLOURS = {"net": "tab:red", "ntk": "tab:blue", "rf": "tab:green"}
COLUMNS = 2  # accuracy panels per row: two fit the column at a readable size




def accuracy_figure(panels: list[tuple[str, GroupResult, tuple[int, ...]]], ylim=(0.4, 1.02)):
    """Test accuracy against step of the network, the NTK and the random-feature model, one panel per (title,
    group, settings): setting 0 (with structure, solid) and/or 1 (without, dashed), mean and standard deviation over
    the group's seeds (Figures 1, 9, 11 and 13 of the source); chance (0.5) dotted, and the majority rate as a
    dash-dotted line where the classes are imbalanced. Two panels a row; the lower limit of ``ylim`` moves down
    where a curve (mean minus sd) would leave the axis."""
    out = []
    low = ylim[0]
    for i, (title, result, settings) in enumerate(panels):
        curves = [Curve(result.history["step"], result.history[key][:, :, setting],
                        name if setting == 0 else f"w/o structure: {name}", "-" if setting == 0 else "--",
                        MODEL_COLOURS[key], spread="sd", kwargs={} if setting == 0 else {"alpha": 0.6})
                  for setting in settings for key, name in MODEL_NAMES.items()]
        for key in MODEL_NAMES:
            for setting in settings:
                y = result.history[key][:, :, setting].double()
                sd = y.std(1) if y.shape[1] > 1 else torch.zeros(y.shape[0], dtype=y.dtype)
                low = min(low, float((y.mean(1) - sd).min()) - 0.02)
        guides = [Guide(0.5, style=":")]
        if result.group.negative_ratio is not None:
            guides.append(Guide(float(result.majority[0, 0]), style="-.", color="k"))
        out.append(Panel(curves, title, "step", "test accuracy" if i % COLUMNS == 0 else "", guides,
                         legend="lower right" if i == 0 else None))
    out = [dataclasses.replace(panel, ylim=(low, ylim[1])) for panel in out]
    rows = [out[i:i + COLUMNS] for i in range(0, len(out), COLUMNS)]
    width = legibility.COLUMN_INCHES / min(COLUMNS, len(out))
    return legibility.fit_to_column(plot_panels(rows, width=width, height=3.0 if len(out) > 1 else 3.6, sharey=True))


def mds_figure(W: dict[str, torch.Tensor], direction: torch.Tensor, names: tuple[str, str]):
    """Figures 2 and 15: MDS of the units after 0, 1 and 2 steps with +-direction as stars."""
    titles = {"init": "initialisation", "one": "after step 1", "two": "after step 2"}
    marks = [(names[0], direction, "tab:red"), (names[1], -direction, "tab:orange")]
    fig = mds_panels([[{"title": f"{titles[key]}\nmax cos {float(cosine_to(W[key][None], direction).max()):.3f}",
                        "W": W[key], "marks": marks} for key in ("init", "one", "two")]],
                     width=legibility.COLUMN_INCHES / 3)
    return legibility.fit_to_column(fig)


def mixture_figure(results: list[MixtureResult]):
    """Figure 16: MDS of the 800 first-layer weights and the cluster centres (stars by label) at initialisation
    (top) and after training (bottom), first seed of each setting."""
    rows = [[], []]
    for e, r in enumerate(results):
        centres, labels = r.centres[0].double(), r.centre_labels[0]
        marks = [(f"centre, y = {int(v):+d}", centres[labels == v], colour)
                 for v, colour in ((1.0, "tab:red"), (-1.0, "tab:orange"))]
        rows[0].append({"title": f"experiment {e + 1}\ninitialisation", "W": r.W_init[0], "marks": marks})
        rows[1].append({"title": f"experiment {e + 1}\nepoch {r.epochs}", "W": r.W[0], "marks": marks})
    return legibility.fit_to_column(mds_panels(rows, width=legibility.COLUMN_INCHES / max(3, len(results))))


def injection_figure(result: InjectionResult):
    """The injected-input protocol: students' test accuracy against the teacher's labels over training, mean and
    standard deviation over the students' seeds; chance (0.5) dotted."""
    curves = [Curve(result.step, result.real_acc[:, :, 0], "mixture student: digits part", color="tab:blue",
                    spread="sd"),
              Curve(result.step, result.injected_acc[:, :, 0], "mixture student: Gaussian part", color="tab:orange",
                    spread="sd"),
              Curve(result.step, result.real_acc[:, :, 1], "digits-only student: digits", "--", "k", spread="sd")]
    return legibility.fit_to_column(plot_panels([Panel(curves, "", "step", "test accuracy", [Guide(0.5, style=":")],
                                       ylim=(0.0, 1.02), legend="lower right")],
                                width=legibility.COLUMN_INCHES, height=3.6))


def digits_cluster_figure(result: DigitsClusterResult):
    """Figures 3 and 17 on digits 0/1: MDS of the first network's 50 first-layer weights at each logged step, with
    the two centres of the final spherical 2-means as stars."""
    W = result.W["real"][:, 0]
    _, centres = spherical_two_means(W[-1:])
    marks = [("final cluster centres", centres[0], "tab:red")]
    panels = [{"title": f"step {int(s)}", "W": w, "marks": marks} for s, w in zip(result.step, W, strict=True)]
    return legibility.fit_to_column(mds_panels([panels], width=legibility.COLUMN_INCHES / len(panels)))


def selection_figure(result: SelectionResult):
    """Fig. 26 on the digits: (a) the teachers' test loss over their width (mean and standard deviation over the
    replicas that measure; Algorithm 1's choice, made on the others, dashed); (b) the students' test loss on Gaussian
    inputs over their width, one curve per teacher (mean and standard deviation over the students' replicas), each
    teacher's width dotted in its colour."""
    widths = torch.tensor(result.widths, dtype=torch.float64)
    teachers = Panel([Curve(widths, result.loss[result.selection:].T, "teachers", "o-", "k", spread="sd")],
                     "(a) teachers on digits", "width m", "test cross-entropy",
                     [Guide(result.widths[result.chosen], "Algorithm 1's choice", axis="v")], xscale="log",
                     legend="upper right")
    colours = ("tab:blue", "tab:orange", "tab:green")
    students = torch.tensor(result.student_widths, dtype=torch.float64)
    curves = [Curve(students, result.student_loss[j].T, f"teacher FC({t})", "o-", colours[j], spread="sd")
              for j, t in enumerate(result.teacher_widths)]
    guides = [Guide(t, axis="v", style=":", color=colours[j]) for j, t in enumerate(result.teacher_widths)]
    panel = Panel(curves, "(b) students on Gaussian inputs", "width m", "test cross-entropy", guides, xscale="log",
                  legend="upper right")
    return legibility.fit_to_column(plot_panels([teachers, panel], width=legibility.COLUMN_INCHES / 2, height=3.2))

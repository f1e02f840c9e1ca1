"""Every shared figure function draws for the book's column: given chapter-sized inputs at its default sizes it fits
the column and has no text under 9 pt at the shown size; a row of more panels than fit wraps into rows of at most
``max_columns``; and a figure glued through ``chapter.glue_figure`` carries its legibility record, which the notebook
test reads back."""

import matplotlib

matplotlib.use("Agg")

import json  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from feature_learning.plotting import (  # noqa: E402
    attention,
    boundaries,
    columns_that_fit,
    grids,
    legibility,
    neurons,
    panel_row,
    spectra,
)
from feature_learning.plotting.curves import (  # noqa: E402
    Curve,
    Guide,
    Panel,
    grouped_bars,
    measured_vs_predicted,
    patch_heatmaps,
    plot_panels,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def rand(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def panel(title="accuracy", n=5):
    x = np.arange(1.0, n + 1)
    return Panel([Curve(x, np.stack([x, x + 1], 1), "network", "o-"), Curve(x, x / 2, "NTK", "s--")],
                 title=title, xlabel="step", ylabel="test accuracy", guides=[Guide(1.0, "chance")])


def circle_panel():
    return {"epoch": torch.arange(20), "scale": rand(20, 2), "widths": [8, 16], "angle": rand(12),
            "rel": rand(12, seed=1), "sign": torch.tensor([1, -1] * 6), "name": "XOR"}


FIGURES = {
    "plot_panels, one row of three": lambda: plot_panels([panel(), panel(), panel()], width=3.2),
    "plot_panels, a 2 x 3 grid": lambda: plot_panels([[panel()] * 3, [panel()] * 3], width=3.2),
    "plot_panels, one wide panel": lambda: plot_panels([panel()], width=6.5),
    "measured_vs_predicted": lambda: measured_vs_predicted([("u", rand(20), rand(20, seed=1)),
                                                            ("v", rand(20), rand(20, seed=2)),
                                                            ("w", rand(20), rand(20, seed=3))]),
    "grouped_bars": lambda: grouped_bars(["a", "b", "c", "d", "e"], {"ERM": [1, 2, 3, 4, 5], "ours": [2, 3, 4, 5, 6]},
                                         ylabel="accuracy", title="bars"),
    "patch_heatmaps": lambda: patch_heatmaps([("normal", rand(4, 10)), ("hard", rand(4, 10, seed=1))]),
    "attention_heads": lambda: attention.attention_heads(torch.randn(2, 7, 7, generator=torch.Generator()), "t"),
    "linear_boundaries_2d": lambda: boundaries.linear_boundaries_2d(
        [{"title": t, "x": torch.randn(50, 2, generator=torch.Generator()), "y": torch.tensor([1, -1] * 25),
          "lines": {"ERM": (torch.tensor([1.0, 1.0]), "k-")}} for t in ("ERM", "ours", "oracle")]),
    "heatmap_panels": lambda: grids.heatmap_panels({"All KV": rand(3, 4), "GemFilter": rand(3, 4, seed=1)},
                                                   [1, 2, 3, 4], ["a", "b", "c"], xlabel="length", ylabel="depth",
                                                   colorbar="accuracy"),
    "neuron_rows": lambda: neurons.neuron_rows(torch.randn(3, 3, 11, generator=torch.Generator()), ["u", "v", "w"],
                                               title="neurons"),
    "neuron_trajectories": lambda: neurons.neuron_trajectories(torch.arange(6), rand(6, 10), rand(6, 10, seed=1)),
    "scales_and_angles": lambda: neurons.scales_and_angles(torch.arange(1, 41), rand(40, 3) + 0.1, rand(40, 3),
                                                           [(1, 10), (10, 20), (20, 30), (30, 40)], ["a", "b", "c"]),
    "angle_vs_relative_scale": lambda: neurons.angle_vs_relative_scale(
        [torch.linspace(-3, 3, 30)] * 2, [torch.sin(torch.linspace(-3, 3, 30))] * 2,
        [torch.tensor([0.5])] * 2, [circle_panel(), circle_panel()]),
    "mds_panels": lambda: neurons.mds_panels([[{"title": f"step {s}", "W": rand(30, 5, seed=s) - 0.5,
                                                "marks": [("D", torch.ones(5), "red")]} for s in range(3)]]),
    "cosine_histograms": lambda: neurons.cosine_histograms({t: {"units": rand(40)} for t in ("init", "1", "2")}),
    "frequency_and_power": lambda: spectra.frequency_and_power(torch.tensor([0, 3, 2, 1]), rand(10), rand(10, seed=1),
                                                               title="k = 2"),
}


@pytest.mark.parametrize("name", FIGURES)
def test_shared_figures_fit_the_column_and_read_at_nine_points(name):
    fig = FIGURES[name]()
    assert legibility.problems(fig) == [], legibility.problems(fig)
    assert legibility.shown_inches(fig) <= legibility.COLUMN_INCHES * 1.03, legibility.shown_inches(fig)


def test_rows_wrap_at_max_columns_in_reading_order():
    fig = plot_panels([panel(f"p{i}") for i in range(5)], width=3.2)  # two fit the column
    visible = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in visible] == [f"p{i}" for i in range(5)]
    assert len(fig.axes) == 6 and fig.get_size_inches() == pytest.approx((6.4, 3 * 3.3))
    fig = plot_panels([panel(f"p{i}") for i in range(5)], width=2.0, max_columns=5)  # the caller decides
    assert len(fig.axes) == 5 and fig.get_size_inches() == pytest.approx((10.0, 3.3))
    fig = plot_panels([[panel("a"), panel("b"), panel("c")], [panel("d")]], width=3.2)  # a grid wraps row by row
    assert [ax.get_title() for ax in fig.axes if ax.axison] == ["a", "b", "c", "d"]
    assert [ax.axison for ax in fig.axes] == [True, True, True, False, True, False]
    assert columns_that_fit(4.0) == 1 and columns_that_fit(3.3) == 2 and columns_that_fit(2.2) == 3
    with pytest.raises(ValueError, match="max_columns"):
        columns_that_fit(3.0, 0)
    fig, axes = panel_row(3, 3.2, 3.0)
    assert len(axes) == 3 and len(fig.axes) == 4 and not fig.axes[3].axison


def test_a_glued_figure_carries_its_legibility_and_the_notebook_check_reads_it(monkeypatch):
    from feature_learning.book import chapter as chapter_module

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append((a, k)))
    frame = chapter_module.Chapter(name="x", prefix="x", run=None, size=None, ledger=None)
    fig, ax = plt.subplots(figsize=(13.0, 3.0))
    ax.set_title("a title too small", fontsize=8)
    frame.glue_figure("wide", fig)
    (bundle,), options = shown[0]
    metadata = options["metadata"]
    assert options["raw"] and metadata["scrapbook"] == {"name": "x_wide",
                                                        "mime_prefix": "application/papermill.record/"}
    assert bundle and all(key.startswith("application/papermill.record/") for key in bundle)  # hidden, as glue's
    record = metadata[legibility.METADATA_KEY]["legibility"]
    assert record["scale"] < 0.7 and any("a title too small" in p for p in record["problems"])
    # what the executed notebook stores, as read back by the notebook test
    notebook = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "data": {"application/papermill.record/image/png": "x"},
         "metadata": json.loads(json.dumps(metadata))},
        {"output_type": "display_data", "data": {"application/papermill.record/image/png": "x"},
         "metadata": {"scrapbook": {"name": "x_bypass"}}},
        {"output_type": "display_data", "data": {"application/papermill.record/text/plain": "1"},
         "metadata": {"scrapbook": {"name": "x_number"}}},
        {"output_type": "display_data", "data": {"image/png": "x"}, "metadata": {}}]}]}
    found = legibility.notebook_problems(notebook)
    assert any(f.startswith("x_wide: ") and "the smallest 'a title too small' at" in f for f in found), found
    assert any(f.startswith("x_bypass: never checked") for f in found)
    assert any(f.startswith("a figure shown by cell 1: never checked") for f in found) and len(found) == 3
    assert not any("x_number" in f for f in found)

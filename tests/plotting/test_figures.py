"""Smoke tests of every plotting module besides curves (tested in test_curves.py): each figure function draws from
small synthetic inputs, with the panels, labels and marks its docstring promises."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from feature_learning.plotting import attention, boundaries, grids, neurons, spectra  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_neuron_rows_draws_a_signal_and_a_spectrum_per_neuron():
    p = 7
    a = torch.arange(p, dtype=torch.float64)
    parts = torch.stack([torch.stack([torch.cos(2 * np.pi * z * a / p), torch.sin(2 * np.pi * z * a / p)])
                         for z in (1, 2, 3)])  # (3 rows, 2 parts, p)
    fig = neurons.neuron_rows(parts, ["u", "v"], title="t")
    assert len(fig.axes) == 6 and fig.axes[0].get_ylabel() == "neuron 1"
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["u", "v"]
    bars = [patch.get_height() for patch in fig.axes[1].patches]
    assert sum(bars) == pytest.approx(1.0) and int(np.argmax(bars)) == 1  # frequency 1 carries the power


def test_neuron_trajectories_one_panel_per_neuron_and_blank_cells_off(gen):
    t = torch.arange(5)
    fig = neurons.neuron_trajectories(t, torch.randn(5, 7, generator=gen()), torch.randn(5, 7, generator=gen(1)))
    visible = [ax for ax in fig.axes if ax.axison]
    assert len(fig.axes) == 9 and len(visible) == 7 and visible[-1].get_title() == "neuron 7"  # 3 per row fit
    fig = neurons.neuron_trajectories(t, torch.randn(5, 7, generator=gen()), torch.randn(5, 7, generator=gen(1)),
                                      max_columns=5)
    assert len(fig.axes) == 10 and fig.get_size_inches()[0] == pytest.approx(5 * 2.2)


def test_scales_and_angles_has_a_log_scale_row_and_an_angle_row_per_window(gen):
    epochs = torch.arange(1, 11)
    scales, angles = torch.rand(10, 3, generator=gen()) + 0.1, torch.rand(10, 3, generator=gen(1))
    fig = neurons.scales_and_angles(epochs, scales, angles, [(1, 5), (5, 10)], ["a", "b", "c"])
    assert len(fig.axes) == 4 and fig.axes[0].get_yscale() == "log" and fig.axes[0].get_title() == "epochs 1-5"


def test_angle_vs_relative_scale_marks_the_extrema(gen):
    m = 6
    panel = {"epoch": torch.arange(4), "scale": torch.rand(4, 2, generator=gen()), "widths": [8, 16],
             "angle": torch.rand(m, generator=gen()), "rel": torch.rand(m, generator=gen()),
             "sign": torch.tensor([1, -1] * 3), "name": "XOR"}
    phi = torch.linspace(-np.pi, np.pi, 20)
    fig = neurons.angle_vs_relative_scale([phi], [torch.sin(phi)], [torch.tensor([0.5, 2.0])], [panel])
    assert len(fig.axes) == 3  # scale, angles, and G on the twin axis
    assert sum(1 for line in fig.axes[1].get_lines() if line.get_linestyle() == "--") == 2


def test_mds_panels_embeds_units_and_marks(gen):
    W = torch.randn(12, 5, generator=gen())
    fig = neurons.mds_panels([[{"title": "init", "W": W, "marks": [("D", torch.ones(5), "red")]}]])
    (ax,) = fig.axes
    assert ax.get_title() == "init" and len(ax.collections) == 2  # the units and the star


def test_cosine_histograms_share_the_unit_interval_and_sum_to_one(gen):
    fig = neurons.cosine_histograms({"init": {"all": torch.rand(50, generator=gen())},
                                     "step 1": {"all": torch.rand(50, generator=gen(1))}})
    assert len(fig.axes) == 2 and fig.axes[0].get_xlim()[1] >= 1.0
    assert sum(p.get_height() for p in fig.axes[0].patches) == pytest.approx(1.0)


def test_frequency_and_power_three_panels(gen):
    fig = spectra.frequency_and_power(torch.tensor([0, 3, 2, 1]), torch.rand(10, generator=gen()),
                                      torch.rand(10, generator=gen(1)), title="k = 2")
    titles = ["(a) frequency coverage", "(b) at initialisation", "(c) trained"]
    assert [ax.get_title() for ax in fig.axes if ax.axison] == titles
    assert [p.get_height() for p in fig.axes[0].patches] == [0, 3, 2, 1]


def test_heatmap_panels_share_a_colour_scale_and_show_the_mean():
    scores = {"GemFilter": np.full((2, 3), 0.5), "full": np.ones((2, 3))}
    fig = grids.heatmap_panels(scores, [1, 2, 3], ["top", "bottom"], xlabel="length", vline=1.5, colorbar="acc")
    titles = [ax.get_title() for ax in fig.axes[:2]]
    assert titles == ["GemFilter: mean 0.50", "full: mean 1.00"] and len(fig.axes) == 3  # + the colour bar
    assert fig.axes[0].images[0].get_clim() == fig.axes[1].images[0].get_clim() == (0.0, 1.0)


def test_linear_boundaries_draw_each_line_including_a_vertical_one(gen):
    x = torch.randn(40, 2, generator=gen())
    y = torch.where(x[:, 0] > 0, 1, -1)
    fig = boundaries.linear_boundaries_2d([{"title": "ERM", "x": x, "y": y,
                                            "lines": {"ERM": (torch.tensor([1.0, 1.0]), "k-"),
                                                      "vertical": (torch.tensor([1.0, 0.0]), "k--")}}])
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"ERM", "vertical", "y=+1", "y=-1"} == set(labels)


def test_attention_heads_and_position_rows(gen):
    p = 5
    fig = attention.attention_heads(torch.randn(2, p, p, generator=gen()), title="t")
    assert len(fig.axes) == 4 and fig.axes[1].get_title() == "2-D power spectrum"
    fig, ax = plt.subplots()
    image = attention.position_rows(ax, torch.rand(3, 10, generator=gen()), marker=4, title="rows")
    assert image.get_array().shape == (3, 10) and ax.get_title() == "rows"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["needle"]

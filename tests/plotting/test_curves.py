"""plot_panels draws what its Curve, Guide and Panel say: means, bands, error bars over seeds, guides, scales."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.container import ErrorbarContainer

from feature_learning.plotting.curves import Curve, Guide, Panel, draw_panel, plot_panels

X = np.arange(5.0)
Y = np.stack([X, X + 2.0, X + 4.0], axis=1)  # (T, S): three seeds


def only_axes(panel: Panel):
    return plot_panels([panel]).axes[0]


def test_band_is_the_mean_with_the_min_max_range():
    ax = only_axes(Panel([Curve(X, Y, "seeds")]))
    np.testing.assert_allclose(ax.lines[0].get_ydata(), X + 2.0)
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    vertices = band.get_paths()[0].vertices
    assert vertices[:, 1].min() == pytest.approx(0.0) and vertices[:, 1].max() == pytest.approx(8.0)


@pytest.mark.parametrize("spread, scale", [("sd", 1.0), ("se", 1 / np.sqrt(3))])
def test_error_bars_are_one_standard_deviation_or_error_over_seeds(spread, scale):
    ax = only_axes(Panel([Curve(X, Y, "seeds", spread=spread)]))
    (bars,) = ax.containers
    assert isinstance(bars, ErrorbarContainer)
    segments = bars.lines[2][0].get_segments()
    half = [(s[1, 1] - s[0, 1]) / 2 for s in segments]
    np.testing.assert_allclose(half, 2.0 * scale)  # the sd of (x, x+2, x+4) is 2


def test_explicit_error_bars_win_and_lines_draw_one_line_per_seed():
    ax = only_axes(Panel([Curve(X, X, "given", yerr=0.5 * np.ones(5)), Curve(X, Y, "each", spread="lines")]))
    half = [(s[1, 1] - s[0, 1]) / 2 for s in ax.containers[0].lines[2][0].get_segments()]
    np.testing.assert_allclose(half, 0.5)
    # the error-bar curve is a line and two cap lines, then one thin line per seed with one legend entry
    assert sum(line.get_label() == "each" for line in ax.lines) == 1 and len(ax.lines) == 3 + 3


def test_guides_scales_ticks_legend_and_twin():
    panel = Panel([Curve(X + 1, X, "_hidden"), Curve(X + 1, X, "shown")], guides=[Guide(1.0, "bound"),
                  Guide(2.0, axis="v", half_width=0.5)], xscale="log", ticks_at_x=True, ylim=(0, 9),
                  twin=[Curve(X + 1, 2 * X, "twin")], twin_ylabel="rank", title="t")
    ax = only_axes(panel)
    assert ax.get_xscale() == "log" and ax.get_ylim() == (0, 9) and list(ax.get_xticks()) == list(X + 1)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["shown", "bound", "twin"]
    assert ax.figure.axes[1].get_ylabel() == "rank"


def test_a_grid_turns_off_the_empty_cells_and_bad_arguments_are_named():
    fig = plot_panels([[Panel([Curve(X, X)]), Panel([Curve(X, X)])], [Panel(image=np.eye(3))]], width=3.2)
    assert [ax.axison for ax in fig.axes[:4]] == [True, True, True, False]
    with pytest.raises(ValueError, match="spread"):
        Curve(X, X, spread="minmax")
    with pytest.raises(ValueError, match="axis"):
        Guide(0.0, axis="x")
    fig = plot_panels([Panel([Curve(X, 3.0, "constant")], legend=None)])
    assert fig.axes[0].get_legend() is None and list(fig.axes[0].lines[0].get_ydata()) == [3.0] * 5
    draw_panel(fig.axes[0], Panel([Curve(X, X)]))

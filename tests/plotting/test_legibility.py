import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from feature_learning.plotting import legibility  # noqa: E402


def test_a_figure_wider_than_the_column_shrinks_its_fonts():
    fig, ax = plt.subplots(figsize=(2 * legibility.COLUMN_INCHES, 3))
    ax.set_title("title", fontsize=12)
    ax.set_xlabel("x", fontsize=12)
    fig.tight_layout()  # the notebook saves what the figure draws: with tight_layout, about its whole width
    assert legibility.shown_scale(fig) == pytest.approx(0.5, abs=0.02)
    assert legibility.smallest_font(fig) <= 6.0
    assert any("'title' at 6." in p for p in legibility.problems(fig))
    plt.close(fig)


def test_a_column_wide_figure_with_large_fonts_has_no_problems():
    fig, ax = plt.subplots(figsize=(legibility.COLUMN_INCHES, 3))
    ax.set_title("title", fontsize=11)
    ax.tick_params(labelsize=9)
    ax.plot([0, 1], [0, 1], label="a")
    ax.legend(fontsize=9)
    assert legibility.shown_scale(fig) == 1.0
    assert legibility.problems(fig) == []
    plt.close(fig)


def test_fit_to_column_narrows_a_wide_figure_and_raises_its_small_text():
    fig, ax = plt.subplots(figsize=(12, 3))
    ax.set_title("title", fontsize=6)
    legibility.fit_to_column(fig)
    assert fig.get_size_inches()[0] == 6.5 and legibility.problems(fig) == []
    plt.close(fig)

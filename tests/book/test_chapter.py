"""The chapter frame: open_chapter validates and picks sizes, timed/glue prefix names, close finishes the ledger."""

import dataclasses

import pytest

from feature_learning.book import chapter as chapter_module
from feature_learning.book.claims import ClaimFailed, Null
from feature_learning.book.profiles import ParameterError


@dataclasses.dataclass(frozen=True)
class Sizes:
    n: int


TABLE = {"ci": Sizes(2), "book": Sizes(5), "full": Sizes(50)}


@pytest.fixture
def glued(monkeypatch):
    seen = {}
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.__setitem__(name, value))
    return seen


def open_test_chapter(**kw):
    args = dict(prefix="tc", profile="ci", seed=3, device="cpu", sizes=TABLE)
    args.update(kw)
    return chapter_module.open_chapter("test_chapter", "A test chapter", **args)


def test_open_chapter_picks_the_profile_sizes_and_shows_what_differs():
    ch = open_test_chapter()
    assert ch.size == Sizes(2) and ch.run.seed == 3 and ch.ledger.meta["profile"] == "ci"
    page = ch._repr_html_()
    assert "<code>n</code>" in page and "font-weight:bold\">2<" in page and ">50<" in page


def test_open_chapter_refuses_bad_parameters_by_name():
    with pytest.raises(ParameterError, match="profile"):
        open_test_chapter(profile="paper")
    with pytest.raises(ParameterError, match="seed"):
        open_test_chapter(seed=-1)


def test_sizes_function_gets_its_arguments_for_every_profile():
    calls = []

    def sizes(profile, k):
        calls.append((profile, k))
        return Sizes(k * {"ci": 1, "book": 2, "full": 3}[profile])

    ch = open_test_chapter(sizes=sizes, k=4)
    assert ch.size == Sizes(4) and {p for p, _ in calls} == {"ci", "book", "full"}


def test_glue_names_carry_the_prefix_and_timed_glues_seconds(glued, tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_CLAIMS_DIR", str(tmp_path))
    ch = open_test_chapter()
    ch.glue_values({"a": 1, "b": 2.5})
    with ch.timed("step"):
        pass
    ch.ledger.at_least("x", "x is large", "Thm 1", kind="reproduction", measured=2.0, bound=1.0,
                       null=Null(0.0, "untrained"))
    ch.ledger.source("thm1", "Thm 1", "x is large", ["x"])
    assert "<code>x</code>" in ch.checks()._repr_html_()
    assert "<td" not in ch.checks()._repr_html_().split("<tbody>")[1]  # nothing new since the last call
    assert "1 not run at the source's scale yet" in ch.close()._repr_html_()
    assert glued["tc_a"] == 1 and glued["tc_b"] == 2.5 and glued["tc_step_seconds"] >= 0
    assert glued["tc_profile"] == "ci" and "tc_chapter_seconds" in glued and "tc_chapter_minutes" in glued
    assert glued["tc_source_headline"].startswith("0 of 1 results reproduced at the source's scale")
    assert (tmp_path / "test_chapter.json").exists()


def test_numpy_and_torch_scalars_are_glued_as_python_numbers(glued):
    import numpy as np
    import torch

    ch = open_test_chapter()
    ch.glue_values({"f": np.float32(0.25), "t": torch.tensor(3), "v": np.arange(2)})
    assert type(glued["tc_f"]) is float and glued["tc_f"] == 0.25 and type(glued["tc_t"]) is int
    assert isinstance(glued["tc_v"], np.ndarray)  # arrays are glued as they are


def test_close_fails_when_a_claim_fails(glued, tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_CLAIMS_DIR", str(tmp_path))
    ch = open_test_chapter()
    ch.ledger.at_most("y", "y is small", "Thm 2", kind="derivation", measured=2.0, bound=1.0)
    with pytest.raises(ClaimFailed, match="y"):
        ch.close()


def test_markdown_table_formats_numbers_and_escapes_pipes():
    from feature_learning.book.display import markdown_table

    text = markdown_table(["a", "b"], [["x|y", 0.123456], [3, 1234567.0]])
    assert text.splitlines() == ["| a | b |", "| --- | --- |", "| x\\|y | 0.1235 |", "| 3 | 1.235e6 |"]


def test_glued_math_joins_a_relation_once_and_shows_nothing_in_the_cell(monkeypatch):
    import sympy as sp

    from feature_learning.book import display
    from feature_learning.book.display import math_line

    glued = {}
    monkeypatch.setattr(display, "glue", lambda name, value, display=True: glued.__setitem__(name, value))

    x = sp.Symbol("x")
    assert math_line(x**2, r"f(x)") == "f(x) = x^{2}"
    assert math_line(x**2, r"\|\theta\|^2\le") == r"\|\theta\|^2\le x^{2}"
    assert math_line(x**2, "n =") == "n = x^{2}" and math_line(x**2) == "x^{2}"
    out = open_test_chapter().glue_math("eq", x**2, "y")
    assert out.latex == "y = x^{2}" and out._ipython_display_() is None
    assert glued["tc_eq"].data == "y = x^{2}" and glued["tc_eq_inline"].data == "$y = x^{2}$"

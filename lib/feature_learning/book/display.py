"""Showing SymPy results in the book: every closed form on a page is glued from the notebook that computed it."""

from __future__ import annotations

import sympy as sp
from IPython.display import Markdown, Math
from myst_nb import glue

from feature_learning.book.claims import format_value


def latex_of(value) -> str:
    return value if isinstance(value, str) else sp.latex(value)


# A left-hand side that already ends in a relation is joined to the right-hand side without another "=".
RELATIONS = ("=", "<", ">", r"\le", r"\ge", r"\leq", r"\geq", r"\approx", r"\sim", r"\propto", r"\ne",
             r"\neq", r"\equiv", r"\lesssim", r"\gtrsim", r"\to")


def math_line(rhs, lhs: str | None = None) -> str:
    """``lhs = rhs`` in LaTeX, or ``lhs rhs`` when ``lhs`` ends in a relation (``\\le``, ``=``, ...)."""
    if not lhs:
        return latex_of(rhs)
    joiner = " " if lhs.rstrip().endswith(RELATIONS) else " = "
    return lhs.rstrip() + joiner + latex_of(rhs)


class Glued:
    """What :func:`glue_math` returns: the LaTeX it glued. It shows nothing in the cell, so that an equation appears
    once on the page, where the prose pastes it."""

    def __init__(self, latex: str):
        self.latex = latex

    def _ipython_display_(self) -> None:
        pass


def glue_math(name: str, rhs, lhs: str | None = None) -> Glued:
    """Glue ``lhs = rhs`` (rhs a SymPy expression or LaTeX) as display math (``{glue:math}`name```) and as inline
    math (``{glue:md}`name_inline:myst```, parsed as MyST so that its $...$ renders). The cell shows nothing: the
    prose pastes it."""
    latex = math_line(rhs, lhs)
    glue(name, Math(latex), display=False)
    glue(f"{name}_inline", Markdown(f"${latex}$"), display=False)
    return Glued(latex)


def markdown_table(columns: list[str], rows: list[list]) -> str:
    """A Markdown table; cells are formatted as the claims ledger formats numbers (4 significant digits)."""
    def cell(value) -> str:
        return (value if isinstance(value, str) else format_value(value)).replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)

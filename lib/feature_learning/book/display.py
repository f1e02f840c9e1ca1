"""Showing SymPy results in the book: every closed form on a page is glued from the notebook that computed it."""

from __future__ import annotations

import sympy as sp
from IPython.display import Markdown, Math
from myst_nb import glue


def latex_of(value) -> str:
    return value if isinstance(value, str) else sp.latex(value)


def glue_math(name: str, rhs, lhs: str | None = None) -> Math:
    """Glue ``lhs = rhs`` (rhs a SymPy expression or LaTeX) as display math (``{glue:math}`name```) and as inline
    math (``{glue:md}`name_inline:myst```, parsed as MyST so that its $...$ renders);
    returns the Math object so the cell can also show it."""
    latex = (f"{lhs} = " if lhs else "") + latex_of(rhs)
    glue(name, Math(latex), display=False)
    glue(f"{name}_inline", Markdown(f"${latex}$"), display=False)
    return Math(latex)


def markdown_table(columns: list[str], rows: list[list]) -> str:
    """A Markdown table; cells are formatted as the claims ledger formats numbers (4 significant digits)."""
    from feature_learning.book.claims import format_value

    def cell(value) -> str:
        return (value if isinstance(value, str) else format_value(value)).replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)

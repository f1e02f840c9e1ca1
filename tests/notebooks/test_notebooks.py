"""The chapter notebooks themselves: stored clean, parametrised, and all executed by this test run.

`make test` executes every notebook of the table of contents at the `ci` profile (feature_learning.build.execute, the
executor of `make book` too) before these tests run, and names the folder of those executions in BOOK_EXECUTED.
"""

import ast
import dataclasses
import importlib
import json
import os
import re
from pathlib import Path

import pytest

from feature_learning.build.notebooks import cells_with_outputs, parameters_cell, toc_files, toc_notebooks

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = toc_notebooks(ROOT)


def test_toc_lists_existing_pages_and_at_least_one_chapter():
    for entry in toc_files(ROOT):
        assert (ROOT / f"{entry}.md").exists() or (ROOT / f"{entry}.ipynb").exists(), entry
    assert NOTEBOOKS, "the table of contents lists no chapter notebook"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_notebook_is_stored_without_outputs(notebook):
    assert cells_with_outputs(ROOT / notebook) == [], f"{notebook} is stored with outputs"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_notebook_has_a_parameters_cell_with_profile_seed_device(notebook):
    cell = parameters_cell(ROOT / notebook)
    assert cell is not None, f"{notebook} has no cell tagged 'parameters'"
    source = "".join(cell["source"])
    for name in ("profile", "seed", "device"):
        assert f"{name} =" in source, f"{notebook}'s parameters cell does not set {name}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_notebook_is_executed_by_this_run_at_ci_profile(notebook):
    folder = os.environ.get("BOOK_EXECUTED")
    assert folder, "BOOK_EXECUTED names the folder of this run's executions; run `make test`"
    executed = Path(folder) / notebook
    assert executed.exists(), f"{notebook} is in _toc.yml but this test run did not execute it"
    nb = json.loads(executed.read_text())
    injected = [c for c in nb["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    assert injected and 'profile = "ci"' in "".join(injected[0]["source"])
    record = nb["metadata"]["feature_learning"]["execution"]
    assert record["ok"], f"{notebook} failed at the ci profile: {record['error']}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_ledger_id_is_the_notebook_name(notebook):
    """The reproduction report matches ledgers to chapters by name: the chapter opens with that name."""
    import re

    source = "\n".join("".join(c["source"]) for c in json.loads((ROOT / notebook).read_text())["cells"])
    names = re.findall(r"(?:open_chapter|ClaimLedger)\(\s*\"([^\"]+)\"", source)
    assert names == [notebook.stem], f"{notebook} must open one chapter (ledger) with the id {notebook.stem!r}: {names}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_inline_glued_math_is_parsed_as_myst(notebook):
    """{glue:md} pastes as CommonMark unless told `:myst`, which would print glue_math's $...$ verbatim."""
    import re

    pastes = re.findall(r"\{glue:md\}`([^`]*)`", (ROOT / notebook).read_text())
    assert all(p.endswith(":myst") for p in pastes), [p for p in pastes if not p.endswith(":myst")]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_myst_roles_are_well_formed(notebook):
    """A role is {name}`content`: a brace left open ({cite`key`) prints verbatim, and {glue:math} is a directive only
    (inline it stops the strict build)."""
    import re

    cells = json.loads((ROOT / notebook).read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert not re.findall(r"\{[a-z][a-z:-]*`", prose), re.findall(r".{20}\{[a-z][a-z:-]*`.{20}", prose)
    assert "{glue:math}`" not in prose



# CONTRIBUTING's rules for the code a reader sees ("The notebook"): no function defined in a notebook, no code cell
# over MAX_CELL_LINES lines (non-blank, non-comment; the parameters cell aside), and one alias for the ledger and the
# sizes, the statement `ledger, size = chapter.ledger, chapter.size` (no other name for them or for a part of the
# sizes, no `chapter.ledger.` spelling).
MAX_CELL_LINES = 25
THE_ALIAS = "ledger, size = (chapter.ledger, chapter.size)"  # as ast.unparse writes it


def code_cells(notebook: Path) -> list[tuple[int, dict, str]]:
    """(index, cell, source) of every code cell, IPython magics and shell lines blanked so that ``ast`` parses it."""
    cells = json.loads(notebook.read_text())["cells"]
    out = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).split("\n")
            out.append((i, cell, "\n".join("" if line.lstrip()[:1] in ("%", "!") else line for line in lines)))
    return out


def defined_functions(source: str) -> list[str]:
    return [n.name for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def code_lines(source: str) -> int:
    return sum(1 for line in source.split("\n") if line.strip() and not line.lstrip().startswith("#"))


def attribute_path(node) -> list[str] | None:
    """``chapter.size.xor`` -> ["chapter", "size", "xor"]; None for anything but a name and its attributes."""
    path = []
    while isinstance(node, ast.Attribute):
        path.insert(0, node.attr)
        node = node.value
    return [node.id, *path] if isinstance(node, ast.Name) else None


def alias_violations(source: str, sizes=None) -> list[str]:
    """Every other name for the ledger, the sizes or a part of the sizes, and every `chapter.ledger.<x>`.

    A part of the sizes is a name bound to `chapter.size.<path>`, or to `size.<path>` where that path of ``sizes``
    (the chapter's `ci` sizes) is itself a dataclass (`p = size.population`); a number read from the sizes
    (`k = size.margin.k`) is no alias."""

    def is_part(path):
        if path[:2] in (["chapter", "ledger"], ["chapter", "size"]):
            return True
        if path[0] != "size" or len(path) < 2 or sizes is None:
            return False
        value = sizes
        for attr in path[1:]:
            value = getattr(value, attr, None)
        return dataclasses.is_dataclass(value)

    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and attribute_path(node.value) == ["chapter", "ledger"]:
            out.append(f"chapter.ledger.{node.attr}")
        if not isinstance(node, ast.Assign) or ast.unparse(node) == THE_ALIAS:
            continue
        for target in node.targets:
            pairs = (zip(target.elts, node.value.elts, strict=False) if isinstance(target, ast.Tuple)
                     and isinstance(node.value, ast.Tuple) else [(target, node.value)])
            for name, value in pairs:
                path = attribute_path(value)
                if path and is_part(path):
                    out.append(f"{ast.unparse(name)} = {'.'.join(path)}")
    return out


def chapter_sizes(notebook: Path):
    """The chapter's `ci` sizes (``SIZES["ci"]`` of its experiment module), or None."""
    try:
        module = importlib.import_module(f"feature_learning.experiments.{notebook.stem}")
    except ModuleNotFoundError:
        return None
    return getattr(module, "SIZES", {}).get("ci")


@dataclasses.dataclass
class _Part:
    n: int = 3


@dataclasses.dataclass
class _Sizes:
    part: _Part = dataclasses.field(default_factory=_Part)


def test_the_notebook_rule_checks_see_what_they_forbid():
    assert defined_functions("x = 1\nif x:\n    def f():\n        pass\n") == ["f"]
    assert code_lines("a = 1\n\n# note\n  # indented note\nb = 2  # trailing\n") == 2
    ok = "ledger, size = chapter.ledger, chapter.size\nchapter.size.steps\nn = size.part.n\nrun(chapter.size)\n"
    assert alias_violations(ok, _Sizes()) == []
    bad = ("L, s = chapter.ledger, chapter.size\nc = chapter.ledger\nchapter.ledger.holds(1)\n"
           "size, ledger = chapter.size, chapter.ledger\np = size.part\nx = chapter.size.part\n")
    assert sorted(alias_violations(bad, _Sizes())) == sorted([
        "L = chapter.ledger", "s = chapter.size", "c = chapter.ledger", "size = chapter.size",
        "ledger = chapter.ledger", "p = size.part", "x = chapter.size.part", "chapter.ledger.holds"])


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_no_function_is_defined_in_a_notebook(notebook):
    found = {i: names for i, _, source in code_cells(ROOT / notebook) if (names := defined_functions(source))}
    assert not found, f"{notebook} defines functions (cell index: names): {found}"


# Cells a reader does not see as code: folded into a closed "Show code cell source" (claim cells) or removed from the
# page with their output kept (the glue plumbing).
FOLDED_TAGS = ("hide-input", "remove-input", "remove-cell", "parameters")


def shown_glue_calls(source: str) -> list[int]:
    """Line numbers of the ``chapter.glue*(...)`` calls of a cell's source (glue plumbing: the book keeps it off the
    page, in a following cell tagged remove-input)."""
    return sorted(n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Attribute) and n.func.attr.startswith("glue")
                  and isinstance(n.func.value, ast.Name) and n.func.value.id == "chapter")


def test_the_glue_check_sees_glue_calls():
    source = "x = f()\nchapter.glue_values({'a': x})\nfor p in ps:\n    chapter.glue_math(p, 1)\n"
    assert shown_glue_calls(source) == [2, 4]
    assert shown_glue_calls("x = chapter.run\nglue(1)\n") == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_no_glue_plumbing_is_shown_as_code(notebook):
    shown = {i: lines for i, cell, source in code_cells(ROOT / notebook)
             if not set(cell.get("metadata", {}).get("tags", [])) & set(FOLDED_TAGS)
             and (lines := shown_glue_calls(source))}
    assert not shown, f"{notebook}: glue calls in cells shown as code (cell index: lines): move them into a cell " \
                      f"tagged remove-input after it: {shown}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_no_code_cell_is_over_the_limit(notebook):
    long = {i: n for i, cell, source in code_cells(ROOT / notebook)
            if "parameters" not in cell.get("metadata", {}).get("tags", [])
            and (n := code_lines(source)) > MAX_CELL_LINES}
    assert not long, f"{notebook}: code cells over {MAX_CELL_LINES} lines (cell index: lines): {long}"


# Chapters that still name parts of their sizes with short aliases (`p = size.population`): still to be renamed, each
# to be replaced by `size.<part>` (the rewrite pushes lines over the length limit and needs re-wrapping). Strict: a
# chapter that is fixed passes and must leave this list.
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_ledger_and_sizes_have_one_alias(notebook):
    sizes = chapter_sizes(notebook)
    found = {i: v for i, _, source in code_cells(ROOT / notebook) if (v := alias_violations(source, sizes))}
    assert not found, f"{notebook}: write `ledger, size = chapter.ledger, chapter.size` (cell index: uses): {found}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_every_figure_is_cited_from_the_prose(notebook):
    """Each glued figure's name is used by a {numref} in its chapter (figures cross-linked)."""
    text = (ROOT / notebook).read_text()
    names = re.findall(r"\{glue:figure\}[^\n]*\\n\",\s*\":name: ([\w-]+)", text)
    assert names, f"{notebook}: no named figure found"
    unreferenced = [name for name in names if f"{{numref}}`{name}`" not in text]
    assert not unreferenced, f"{notebook}: figures never cited with {{numref}}: {unreferenced}"

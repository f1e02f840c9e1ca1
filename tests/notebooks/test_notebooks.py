"""The chapter notebooks themselves: stored clean, parametrised, and all executed by this test run.

`make test` executes every notebook of the table of contents at the `ci` profile (feature_learning.book.execute, the
executor of `make book` too) before these tests run, and names the folder of those executions in BOOK_EXECUTED.
"""

import json
import os
from pathlib import Path

import pytest

from feature_learning.book.notebooks import cells_with_outputs, parameters_cell, toc_files, toc_notebooks

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

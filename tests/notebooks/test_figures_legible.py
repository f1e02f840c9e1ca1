"""Every figure a chapter glues is legible at the size the book shows it: no text under 9 pt once the figure is
scaled to the 6.65 in column (:mod:`feature_learning.plotting.legibility`).

``chapter.glue_figure`` measures each figure when the chapter runs and stores the result in the glued output's
metadata; this test reads it back from the notebooks this test run executed (``BOOK_EXECUTED``, as in
``test_notebooks.py``) and fails listing each figure that is too small to read, or that was glued without the check.
"""

import json
import os
from pathlib import Path

import pytest

from feature_learning.build.notebooks import toc_notebooks
from feature_learning.plotting.legibility import notebook_problems

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = toc_notebooks(ROOT)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=str)
def test_every_glued_figure_is_legible_at_its_shown_size(notebook):
    folder = os.environ.get("BOOK_EXECUTED")
    assert folder, "BOOK_EXECUTED names the folder of this run's executions; run `make test`"
    executed = Path(folder) / notebook
    assert executed.exists(), f"{notebook} is in _toc.yml but this test run did not execute it"
    found = notebook_problems(json.loads(executed.read_text()))
    assert not found, f"{len(found)} figure(s) of {notebook.stem} a reader cannot read:\n" + "\n".join(found)

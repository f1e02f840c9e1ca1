"""pytest plugin: keep what nbval executed. ``make test`` loads it (``-p feature_learning.book.nbval_capture``).

nbval runs each notebook cell in a kernel and checks it, but writes nothing. This plugin copies each cell's outputs
into the notebook nbval read and, when the session ends, writes the notebook back, but only for prepared copies
under a ``_build`` folder (never the stored sources). The HTML book of a test run is then built from exactly these
executions (``feature_learning.book.site``), with no second execution.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

_EXECUTED: dict[Path, object] = {}  # notebook path -> nbval's file node, whose ``nb`` holds the cells


def _is_prepared_copy(path: Path) -> bool:
    return "_build" in path.parts


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    cell = getattr(item, "cell", None)
    path = Path(str(item.fspath)).resolve()
    if cell is None or getattr(item, "test_outputs", None) is None or not _is_prepared_copy(path):
        return
    cell.execution_count = item.cell_num + 1
    cell.outputs = [nbformat.from_dict(out) for out in item.test_outputs]
    for out in cell.outputs:
        if out.output_type == "execute_result":
            out.execution_count = cell.execution_count
    _EXECUTED[path] = item.parent


def pytest_sessionfinish(session, exitstatus):
    for path, node in _EXECUTED.items():
        nbformat.write(node.nb, str(path))

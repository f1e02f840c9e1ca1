"""`make nbval`: a re-executed chapter must give the stored outputs; glued wall times and addresses may differ.

Each test runs `pytest --nbval` on a two-cell notebook in a subprocess (a kernel each, a few seconds)."""

import json
import re
import subprocess
import sys
from pathlib import Path

from feature_learning.build.nbval_outputs import comparable

ROOT = Path(__file__).resolve().parents[2]
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"

def glue_source(name: str, value: str) -> str:
    """A cell that glues ``value`` (Python source of a string) under ``name`` as myst-nb's glue does."""
    return ("from IPython.display import display\n"
            f"display({{'application/papermill.record/text/plain': {value}}}, raw=True,\n"
            f"        metadata={{'scrapbook': {{'name': {name!r}, 'mime_prefix': 'application/papermill.record/'}}}})")


def glued(name: str, value: str) -> dict:
    return {"output_type": "display_data", "data": {"application/papermill.record/text/plain": value},
            "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}}}


def notebook(stored_value: str, stored_seconds: str, stored_repr: str) -> dict:
    cells = [
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": glue_source("lt_gap", "'0.25'"),
         "outputs": [glued("lt_gap", stored_value)]},
        {"cell_type": "code", "execution_count": 2, "metadata": {},
         "source": "import time\n" + glue_source("lt_run_seconds", "repr(time.perf_counter())") + "\nobject()",
         "outputs": [glued("lt_run_seconds", stored_seconds),
                     {"output_type": "execute_result", "execution_count": 2, "metadata": {},
                      "data": {"text/plain": stored_repr}}]},
    ]
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def nbval(tmp_path: Path, notebooks: dict[str, dict]) -> subprocess.CompletedProcess:
    for name, nb in notebooks.items():
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                           "feature_learning.build.nbval_outputs", "--nbval", "--nbval-current-env",
                           "--nbval-sanitize-with", str(SANITIZE), "--rootdir", str(tmp_path), "-rA",
                           *(f"{name}.ipynb" for name in notebooks)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_the_glued_wall_times_are_left_out_and_nothing_else():
    outputs = [glued("lt_fit_seconds", "1.5"), glued("lt_chapter_minutes", "0.4"), glued("lt_gap", "0.25"),
               {"output_type": "stream", "name": "stdout", "text": "3 seconds\n"}]
    assert comparable(outputs) == outputs[2:]


def test_a_changed_output_fails_and_a_changed_wall_time_or_address_does_not(tmp_path):
    """One pytest run over two stored notebooks (one kernel each): the same outputs as stored but for the wall time
    and the memory address, and the same with a measured value changed."""
    result = nbval(tmp_path, {"same": notebook("0.25", "12.5", "<object at 0x7f8a502bd7d0>"),
                              "changed": notebook("0.26", "12.5", "<object at 0x7f8a502bd7d0>")})
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    assert re.search(r"^PASSED same\.ipynb::Cell 0", out, re.M) and re.search(r"^PASSED same\.ipynb::Cell 1", out, re.M)
    assert re.search(r"^FAILED changed\.ipynb::Cell 0", out, re.M), out[-3000:]
    assert re.search(r"^PASSED changed\.ipynb::Cell 1", out, re.M), out[-3000:]
    assert "0.26" in out

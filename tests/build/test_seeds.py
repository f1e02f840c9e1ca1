"""build/seeds.py: the claim-by-claim ledger diff that checks a refactor left every number alone."""

import json
from pathlib import Path

from feature_learning.build.seeds import ledger_differences, main


def ledger(**measured):
    return {"claims": [{"id": cid, "measured": value, "status": "pass", "kind": "reproduction"}
                       for cid, value in measured.items()], "sources": [{"id": "Thm 1", "status": "reproduced"}]}


def test_identical_ledgers_have_no_differences_and_a_seed_record_is_read_through_its_ledger():
    assert ledger_differences(ledger(a=1.0, b=2.0), {"ledger": ledger(a=1.0, b=2.0), "seed": 3}) == []


def test_a_moved_number_a_lost_claim_and_a_changed_source_map_are_each_listed():
    new = ledger(a=1.5, c=0.0)
    new["sources"][0]["status"] = "not reproduced"
    assert ledger_differences(ledger(a=1.0, b=2.0), new) == [
        "a.measured: 1.0 -> 1.5", "b: only in the old ledger", "c: only in the new ledger", "the source map differs"]


def test_the_diff_command_exits_one_on_a_difference(tmp_path, capsys):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(ledger(a=1.0)))
    new.write_text(json.dumps(ledger(a=1.0)))
    assert main(["diff", str(old), str(new)]) == 0
    new.write_text(json.dumps(ledger(a=2.0)))
    assert main(["diff", str(old), str(new)]) == 1
    assert "a.measured: 1.0 -> 2.0" in capsys.readouterr().out


def test_a_run_stopped_by_sigterm_keeps_its_written_ledger_and_says_how_far_it_got(tmp_path):
    """A real papermill run of a three-cell notebook: the second cell writes the ledger where `chapter.close()`
    would, the third hangs. SIGTERM to the run's process group: the record says stopped, carries the ledger and
    the cells done, and the kernel (in a session of its own) is gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import nbformat

    from feature_learning.build.seeds import claims_folder, descendants

    (tmp_path / "_toc.yml").write_text("root: tiny\n")
    cells = [nbformat.v4.new_code_cell("profile = 'ci'\nseed = 0", metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell("import json, os, pathlib\npathlib.Path(os.environ['BOOK_CLAIMS_DIR'], "
                                       "'tiny.json').write_text(json.dumps({'claims': [], 'provenance': "
                                       "{'sizes_digest': 'abc'}}))"),
             nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(0.1)")]
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                        "display_name": "Python 3"}})
    nbformat.write(nb, tmp_path / "tiny.ipynb")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "feature_learning.build.seeds", "run", "--notebook", "tiny.ipynb",
                             "--profile", "ci", "--seed", "0", "--out", str(out)], cwd=tmp_path,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ledger, executed = claims_folder(out, "tiny", 0) / "tiny.json", out / "tiny" / "seed0.ipynb"
    def hanging() -> bool:  # papermill has saved the notebook with its last cell running
        try:
            return json.loads(executed.read_text())["cells"][-1]["metadata"]["papermill"]["status"] == "running"
        except (OSError, ValueError, KeyError):
            return False

    waited = time.time()
    while not (ledger.exists() and hanging()):
        assert proc.poll() is None and time.time() - waited < 120, proc.communicate()[0][-2000:]
        time.sleep(0.2)
    kernels = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    record = json.loads((out / "tiny" / "seed0.json").read_text())
    assert record["stopped"] and not record["ok"] and record["error"].startswith("stopped (SIGTERM) after ")
    assert record["ledger"]["provenance"] == {"sizes_digest": "abc"} == record["provenance"]
    assert record["progress"]["cells_done"] == 3 and record["progress"]["cells_total"] == 4  # papermill's own cell
    assert record["progress"]["last_cell"]["code"] == "import time"
    time.sleep(0.5)
    assert kernels and not any(Path(f"/proc/{pid}").exists() for pid in kernels)


def test_a_kept_full_run_carries_the_provenance_its_time_and_memory_and_how_far_it_got(tmp_path):
    """The runner's own time and memory win; without them, those chapter.close() measured; a stopped run keeps its
    progress; the executed notebook is kept without images beside the records."""
    from feature_learning.build.seeds import keep_full_runs

    provenance = {"sizes_digest": "abc", "wall_seconds": 250.0, "peak_gpu_gb": 12.5, "commit": "f6322b4"}
    executed = tmp_path / "seed0.ipynb"
    executed.write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": [
        {"data": {"application/papermill.e+image/png": "AAAA", "text/plain": "glued"}}]}]}))
    done = {"chapter": "a", "profile": "full", "seed": 0, "ok": True, "error": None,
            "ledger": {"claims": [], "provenance": provenance}, "notebook": str(executed)}
    stopped = {"chapter": "b", "profile": "full", "seed": 0, "ok": False, "stopped": True, "seconds": 513,
               "error": "stopped (SIGTERM) after 513 s", "ledger": None, "progress": {"cells_done": 13},
               "notebook": str(tmp_path / "absent.ipynb")}
    keep_full_runs([done, {**done, "chapter": "c", "seconds": 260.1, "peak_gpu_gb": 14.0}, stopped], tmp_path / "full")
    a, b, c = (json.loads((tmp_path / "full" / f"{x}.json").read_text()) for x in "abc")
    assert (a["seconds"], a["peak_gpu_gb"], a["provenance"]) == (250.0, 12.5, provenance)
    assert (c["seconds"], c["peak_gpu_gb"]) == (260.1, 14.0)
    assert b["stopped"] and b["progress"] == {"cells_done": 13} and "notebook" not in b and "provenance" not in b
    kept = json.loads((tmp_path / "full" / a["notebook"]).read_text())
    assert kept["cells"][0]["outputs"][0]["data"] == {"application/papermill.e+image/png": "(removed)",
                                                      "text/plain": "glued"}

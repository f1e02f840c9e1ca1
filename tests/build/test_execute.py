"""The executor of `make book` and `make test` (feature_learning.build.execute), on tiny synthetic notebooks."""

import io
import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from feature_learning.build.execute import (
    RECORDS,
    Task,
    carry_prose,
    code_hash,
    execute,
    main,
    report,
    tasks_for,
    thread_environment,
)
from feature_learning.build.site import _drop_from_toc, tree_digest

ROOT = Path(__file__).resolve().parents[2]
INPUTS = {"library": "abc", "torch": "2.13.0", "device": "cpu"}

# A chapter in miniature: a parameters cell, prose, and a cell that writes its ledger (with the thread cap it saw).
WRITE_LEDGER = """import json, os, pathlib
folder = pathlib.Path(os.environ["BOOK_CLAIMS_DIR"]); folder.mkdir(parents=True, exist_ok=True)
(folder / "{name}.json").write_text(json.dumps({{"chapter": "{name}", "profile": profile,
    "omp": os.environ.get("OMP_NUM_THREADS"), "claims": []}}))"""
TORCH_THREADS = """import torch
(folder / "torch_threads.txt").write_text(str(torch.get_num_threads()))"""


def _notebook(path: Path, name: str, fail: bool = False, prose: str = "Some prose.", torch: bool = False) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('profile = "book"\nseed = 0')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {name}"), params, nbformat.v4.new_markdown_cell(prose),
                nbformat.v4.new_code_cell(WRITE_LEDGER.format(name=name))]
    if torch:
        nb.cells.append(nbformat.v4.new_code_cell(TORCH_THREADS))
    if fail:
        nb.cells.append(nbformat.v4.new_code_cell('raise RuntimeError("claim failed: too far from the bound")'))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def _tasks(tmp_path, names, fail=()):
    src, out = tmp_path / "src", tmp_path / "out"
    tasks = []
    for name in names:
        rel = Path("book/chapters") / f"{name}.ipynb"
        _notebook(src / rel, name, fail=name in fail, torch=name == "alpha")
        tasks.append(Task(rel, src / rel, out, {"profile": "ci"}, threads=1, timeout=120))
    return tasks


def _run(tasks, inputs=INPUTS, **kw):
    stream = io.StringIO()
    records = execute(tasks, workers=2, inputs=inputs, heartbeat=kw.pop("heartbeat", 60), stream=stream, **kw)
    return records, stream.getvalue()


def test_chapters_execute_two_at_a_time_one_thread_each_and_a_failure_is_reported(tmp_path, monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)  # the executor itself caps the kernels' threads
    tasks = _tasks(tmp_path, ["alpha", "beta"], fail=["beta"])
    records, lines = _run(tasks, heartbeat=0.5)
    alpha, beta = records
    assert alpha["ok"] and alpha["method"] == "executed" and alpha["parameters"] == {"profile": "ci"}
    ledger = json.loads((tasks[0].ledger).read_text())
    assert ledger["profile"] == "ci" and ledger["omp"] == "1", "profile injected, one thread per kernel"
    assert (tasks[0].claims / "torch_threads.txt").read_text() == "1", "torch's intra-op threads follow OMP"
    # the failed chapter still leaves its executed notebook (with the traceback) and its record
    assert not beta["ok"] and "claim failed" in beta["error"]
    executed = json.loads(tasks[1].target.read_text())
    assert any(o.get("output_type") == "error" for c in executed["cells"] for o in c.get("outputs", []))
    assert executed["metadata"]["feature_learning"]["execution"]["ok"] is False
    assert json.loads((tasks[1].out / RECORDS / "beta.json").read_text())["ok"] is False
    # progress: which chapter runs, how many are done of how many, the time so far
    assert re.search(r"^\[execute \d+m\d\ds\] 0/2 done \| alpha: started", lines, re.M)
    assert re.search(r"^\[execute \d+m\d\ds\] [12]/2 done \| alpha: ok \(", lines, re.M)
    assert re.search(r"^\[execute \d+m\d\ds\] [12]/2 done \| beta: FAILED: .*claim failed", lines, re.M)
    assert re.search(r"\| running: .*\(\d+m\d\ds\)", lines), "a heartbeat names the chapters still running"
    out = io.StringIO()
    assert report(records, tasks[0].out, out) == 1
    assert "1 of 2 notebook(s) FAILED" in out.getvalue() and "beta: " in out.getvalue()
    assert str(tasks[1].target) in out.getvalue()


def test_a_cache_hit_is_skipped_and_a_key_or_code_change_executes_again(tmp_path):
    tasks = _tasks(tmp_path, ["alpha", "beta"])
    _run(tasks)
    records, lines = _run(tasks)
    assert [r["method"] for r in records] == ["cache", "cache"] and "started" not in lines
    assert "alpha: unchanged, from the cache" in lines
    # a prose edit reaches the executed copy without an execution
    _notebook(tasks[0].source, "alpha", prose="Better prose.", torch=True)
    records, lines = _run(tasks)
    assert "started" not in lines
    assert "Better prose." in tasks[0].target.read_text() and '"output_type"' not in lines
    cells = json.loads(tasks[0].target.read_text())["cells"]
    assert "injected-parameters" in cells[2]["metadata"]["tags"] and cells[4]["execution_count"]  # kept as executed
    # another library, dependency or device (the cache key) executes everything again
    records, lines = _run(tasks, inputs={**INPUTS, "library": "changed"})
    assert [r["method"] for r in records] == ["executed", "executed"]
    # a code change executes that chapter only; so does --force for all
    nb = json.loads(tasks[1].source.read_text())
    nb["cells"][3]["source"] += "\nx = 1"
    tasks[1].source.write_text(json.dumps(nb))
    records, lines = _run(tasks, inputs={**INPUTS, "library": "changed"})
    assert [r["method"] for r in records] == ["cache", "executed"]
    records, _ = _run(tasks, inputs={**INPUTS, "library": "changed"}, force=True)
    assert [r["method"] for r in records] == ["executed", "executed"]


def test_a_failed_chapter_is_never_a_cache_hit_and_a_missing_ledger_executes_again(tmp_path):
    tasks = _tasks(tmp_path, ["alpha", "beta"], fail=["beta"])
    _run(tasks)
    tasks[0].ledger.unlink()
    records, lines = _run(tasks)
    assert [r["method"] for r in records] == ["executed", "executed"]
    assert "alpha: started" in lines and "beta: started" in lines


def test_code_hash_ignores_prose_and_carry_prose_keeps_outputs():
    nb = {"metadata": {"kernelspec": {"name": "python3"}}, "cells": [
        {"cell_type": "markdown", "source": "old", "metadata": {}},
        {"cell_type": "code", "source": "p = 1", "metadata": {"tags": ["parameters"]}, "outputs": []},
        {"cell_type": "code", "source": "print(p)", "metadata": {}, "outputs": []}]}
    edited = {**nb, "cells": [{**nb["cells"][0], "source": "new"}, *nb["cells"][1:]]}
    assert code_hash(nb) == code_hash(edited)
    assert code_hash(nb) != code_hash({**nb, "cells": [*nb["cells"][:2], {**nb["cells"][2], "source": "print(2)"}]})
    injected = {"cell_type": "code", "source": "p = 2", "metadata": {"tags": ["injected-parameters"]}, "outputs": []}
    executed = {**nb, "metadata": {"papermill": {}}, "cells": [nb["cells"][0], nb["cells"][1], injected,
                                                               {**nb["cells"][2], "outputs": ["2"]}]}
    merged = carry_prose(edited, executed)
    assert [c["source"] for c in merged["cells"]] == ["new", "p = 1", "p = 2", "print(p)"]
    assert merged["cells"][3]["outputs"] == ["2"] and merged["metadata"] == {"papermill": {}}
    with pytest.raises(ValueError):
        carry_prose({**nb, "cells": nb["cells"][:2]}, executed)


def test_thread_caps_and_chapter_selection(tmp_path):
    assert thread_environment(1)["OMP_NUM_THREADS"] == "1" and thread_environment(1)["MKL_NUM_THREADS"] == "1"
    assert thread_environment(0) == {}
    toc = {"format": "jb-book", "root": "book/intro",
           "parts": [{"caption": "A", "chapters": [{"file": "book/a"}, {"file": "book/b"}]},
                     {"caption": "B", "chapters": [{"file": "book/c"}]}]}
    (tmp_path / "book").mkdir()
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(toc))
    for name in "abc":
        _notebook(tmp_path / "book" / f"{name}.ipynb", name)
    tasks = tasks_for(tmp_path / "out", "ci", ["a", "c"], root=tmp_path, seed=3)
    assert [t.chapter for t in tasks] == ["a", "c"] and tasks[0].parameters == {"profile": "ci", "seed": 3}
    with pytest.raises(SystemExit, match="unknown chapters"):
        tasks_for(tmp_path / "out", "ci", ["zeta"], root=tmp_path)
    assert _drop_from_toc(toc, {"book/c"})["parts"] == toc["parts"][:1]  # a part left empty goes


def test_status_lists_failures(tmp_path, capsys):
    (tmp_path / RECORDS).mkdir()
    (tmp_path / RECORDS / "a.json").write_text(json.dumps({"chapter": "a", "ok": True, "notebook": "a.ipynb"}))
    assert main(["status", "--out", str(tmp_path)]) == 0
    (tmp_path / RECORDS / "b.json").write_text(json.dumps({"chapter": "b", "ok": False, "error": "boom",
                                                           "notebook": "b.ipynb"}))
    assert main(["status", "--out", str(tmp_path)]) == 1 and "b: boom" in capsys.readouterr().out


def test_the_site_digest_sees_every_staged_file(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.md").write_text("a")
    before = tree_digest(tmp_path, INPUTS)
    (tmp_path / "_build").mkdir()
    (tmp_path / "_build" / "x").write_text("built output is not a source")
    assert tree_digest(tmp_path, INPUTS) == before
    assert tree_digest(tmp_path, {**INPUTS, "torch": "2.14"}) != before
    (tmp_path / "book" / "a.md").write_text("b")
    assert tree_digest(tmp_path, INPUTS) != before


def _recipe(makefile: str, target: str) -> str:
    """The recipe lines of ``target`` (both branches of an ifdef)."""
    lines = makefile.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    body = []
    for line in lines[start + 1:]:
        if line and not line[0].isspace() and not line.startswith(("ifdef", "ifndef", "else", "endif")):
            break
        body.append(line)
    return "\n".join(body)


def test_make_book_and_make_test_execute_the_chapters_with_the_same_executor():
    makefile = (ROOT / "Makefile").read_text()
    executor = re.search(r"^EXECUTE\s*:=\s*(.+)$", makefile, re.M).group(1)
    assert executor.strip() == "$(BIN)/python -m feature_learning.build.execute run"
    book, test = _recipe(makefile, "book"), _recipe(makefile, "test")
    for recipe in (book, test):
        assert "$(EXECUTE) --profile" in recipe
        assert "feature_learning.build.site build" in recipe or "$(MAKE) --no-print-directory site" in recipe
        assert "jupyter-book build . " not in recipe, "no chapter executes inside the Sphinx build"
    assert "--profile ci" in test and "--profile $(BOOK_PROFILE)" in book
    assert "--nbval" not in test, "the chapters execute once, through the executor"
    nbval = _recipe(makefile, "nbval")
    assert "--nbval" in nbval and "$(NBVAL_NOTEBOOKS)" in nbval, "make nbval re-executes what make test executed"
    assert "$(MAKE) --no-print-directory nbval" in test


def test_carry_prose_takes_the_sources_cell_tags_with_the_executed_outputs():
    from feature_learning.build.execute import carry_prose

    source = {"cells": [{"cell_type": "markdown", "source": "new prose", "metadata": {}},
                        {"cell_type": "code", "source": "x = 1", "metadata": {"tags": ["hide-input"]}}]}
    executed = {"metadata": {"kernel": 1},
                "cells": [{"cell_type": "markdown", "source": "old prose", "metadata": {}},
                          {"cell_type": "code", "source": "x = 1", "outputs": ["out"],
                           "metadata": {"papermill": {"duration": 1.0}}}]}
    out = carry_prose(source, executed)
    assert out["cells"][0]["source"] == "new prose" and out["cells"][1]["outputs"] == ["out"]
    assert out["cells"][1]["metadata"] == {"papermill": {"duration": 1.0}, "tags": ["hide-input"]}


def test_a_fresh_clone_runs_the_longest_chapters_first_by_the_committed_times(tmp_path):
    """Without a history in _build (a fresh clone) the order comes from the committed typical times; this machine's
    own history, once written, takes precedence."""
    tasks = _tasks(tmp_path, ["alpha", "beta", "gamma"])
    typical = tmp_path / "typical.json"
    typical.write_text(json.dumps({"ci": {"alpha": 1.0, "beta": 30.0, "gamma": 5.0}}))
    history = tmp_path / "history.json"
    _, lines = _run(tasks, typical=typical, history=history, force=True)
    started = re.findall(r"(\w+): started", lines)
    assert started[0] == "beta" and started.index("gamma") < started.index("alpha")
    history.write_text(json.dumps({"ci": {"alpha": 50.0, "beta": 1.0, "gamma": 2.0}}))
    _, lines = _run(tasks, typical=typical, history=history, force=True)
    assert re.findall(r"(\w+): started", lines)[0] == "alpha"


def test_the_committed_typical_times_name_every_chapter_at_ci_and_book():
    from feature_learning.build.execute import TYPICAL_TIMES
    from feature_learning.build.notebooks import toc_notebooks

    times = json.loads((ROOT / TYPICAL_TIMES).read_text())
    chapters = {nb.stem for nb in toc_notebooks(ROOT)}
    assert set(times["ci"]) == chapters and set(times["book"]) == chapters

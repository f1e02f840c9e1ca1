"""`make gpu`: which stored runs are redone and in what order, the deadline arithmetic, the stop (SIGTERM, a grace
period, SIGKILL) with the record written for a run that left none, and the dry run's path with a fake chapter."""

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from feature_learning.build import gpu
from feature_learning.build.seeds import claims_folder

DIGEST = "0123456789abcdef"


def stored(written, ok=True, digest=DIGEST, ledger=True, stopped=False, seconds=None):
    ledger_json = {"claims": [], **({"provenance": {"sizes_digest": digest}} if digest else {})}
    return {"ok": ok, "written": written, "ledger": ledger_json if ledger else None, "stopped": stopped,
            "seconds": seconds}


def test_each_reason_to_rerun_and_a_current_record():
    assert gpu.reason_to_run(None, DIGEST) == "missing"
    assert gpu.reason_to_run(stored("2026-11-27", ledger=False, ok=False, stopped=True), DIGEST) == "no ledger"
    assert gpu.reason_to_run(stored("2026-11-27", ok=False), DIGEST) == "failing"
    assert gpu.reason_to_run(stored("2026-11-27", ok=False, stopped=True), DIGEST) == "stopped"
    assert gpu.reason_to_run(stored("2026-11-27", digest=None), DIGEST) == "no sizes digest"
    assert gpu.reason_to_run(stored("2026-11-27", digest="fedcba9876543210"), DIGEST) == "sizes changed"
    assert gpu.reason_to_run(stored("2026-11-27"), DIGEST) is None


def test_missing_records_go_first_then_the_oldest_and_current_ones_are_left_out():
    records = {"b": stored("2026-11-27T11:00", ok=False), "c": stored("2026-11-26T20:00", digest=None),
               "d": stored("2026-11-28T01:00")}
    runs = gpu.select(["a", "b", "c", "d"], records, dict.fromkeys("abcd", DIGEST))
    assert runs == [("a", "missing"), ("c", "no sizes digest"), ("b", "failing")]
    table = gpu.plan_table(["a", "b", "d", "nuclear_norm"], records, runs)
    assert "| a | none |" in table and "run (failing)" in table and "| d | ok |" in table and "current" in table
    assert "CPU chapter: not run here" in table


def test_a_stored_records_digest_is_compared_with_the_chapters_current_sizes():
    digest = gpu.current_digest("looped_transformers")
    assert digest != gpu.current_digest("looped_transformers", "ci")
    assert gpu.reason_to_run(stored("2026-11-27", digest=digest), digest) is None


def test_the_deadline_in_minutes_or_unix_time_and_each_chapters_limit():
    now = 1_800_000_000.0
    assert gpu.parse_deadline("55", now) == now + 55 * 60
    assert gpu.parse_deadline("1800003600", now) == 1_800_003_600.0
    assert gpu.time_limit(None, 600) == 600
    assert gpu.time_limit(stored("x", seconds=310), 600) == 930  # three times the last finished run
    assert gpu.time_limit(stored("x", seconds=100), 600) == 600
    assert gpu.time_limit(stored("x", seconds=513, stopped=True, ok=False), 600) == 600  # stopped: length unknown


def child(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(body))
    return [sys.executable, str(script)]


def test_a_run_past_its_limit_gets_sigterm_then_sigkill_after_the_grace_period(tmp_path):
    """The child notes SIGTERM and keeps running: it is killed once the grace period is over, not before."""
    job = gpu.Job("stubborn", child(tmp_path, f"""
        import pathlib, signal, time
        signal.signal(signal.SIGTERM, lambda *a: pathlib.Path({str(tmp_path / 'term')!r}).write_text('TERM'))
        pathlib.Path({str(tmp_path / 'ready')!r}).write_text('')
        while True:
            time.sleep(0.05)
    """), limit=1.0)
    job.start(tmp_path)
    while not (tmp_path / "ready").exists():
        time.sleep(0.05)
    start = time.time()
    gpu.supervise([job], grace=1.5, poll=0.05)
    assert (tmp_path / "term").read_text() == "TERM"
    assert job.stopped and job.killed and job.proc.returncode == -9
    assert time.time() - start >= 1.5 + 0.5  # the limit (less the start) and the whole grace period


def test_a_run_that_ends_on_sigterm_is_not_killed(tmp_path):
    job = gpu.Job("polite", child(tmp_path, """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))
        time.sleep(60)
    """), limit=0.5)
    job.start(tmp_path)
    gpu.supervise([job], grace=30, poll=0.05)
    assert job.stopped and not job.killed and job.proc.returncode == 3 and job.seconds < 5


def test_a_killed_run_gets_a_stopped_record_with_the_ledger_it_had_written(tmp_path):
    """The run wrote its ledger (chapter.close() does, before the failing claims raise) and its partial notebook,
    then hung: the record written for it carries the ledger, how far it got and where it stopped."""
    notebook, out = Path("book/x/demo.ipynb"), tmp_path / "out"
    ledger = claims_folder(out, "demo", 0) / "demo.json"
    executed = out / "demo" / "seed0.ipynb"
    cells = [{"cell_type": "code", "source": "x = 1", "metadata": {"papermill": {"status": "completed",
                                                                               "duration": 2.5}}},
             {"cell_type": "code", "source": "# train\nrun_all()", "metadata": {"papermill": {
                 "status": "running", "start_time": "2026-11-29T01:00:00"}}},
             {"cell_type": "code", "source": "chapter.close()", "metadata": {"papermill": {"status": "pending"}}}]
    job = gpu.Job("full:demo", child(tmp_path, f"""
        import json, pathlib, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        ledger = pathlib.Path({str(ledger)!r})
        ledger.parent.mkdir(parents=True)
        ledger.write_text(json.dumps({{"claims": [{{"id": "a", "status": "pass"}}],
                                       "provenance": {{"sizes_digest": "{DIGEST}"}}}}))
        pathlib.Path({str(executed)!r}).write_text(json.dumps({{"cells": {cells!r}}}))
        while True:
            time.sleep(0.05)
    """), limit=1.5)
    job.start(tmp_path)
    gpu.supervise([job], grace=0.5, poll=0.05)
    record = gpu.finish(job, notebook, "full", out, "cuda", grace=0.5)
    assert record == json.loads((out / "demo" / "seed0.json").read_text())
    assert record["stopped"] and not record["ok"] and record["ledger"]["claims"][0]["id"] == "a"
    assert record["provenance"] == {"sizes_digest": DIGEST}
    assert record["progress"]["cells_done"] == 1 and record["progress"]["cells_total"] == 3
    assert record["progress"]["last_cell"]["number"] == 2 and record["progress"]["last_cell"]["code"] == "run_all()"
    assert record["error"].startswith("stopped at its 2 s limit, killed 0 s after SIGTERM after 2 s: 1 of 3 code "
                                      "cells done; ")


def fake_chapter(tmp_path):
    """A command standing for `seeds run`: writes the ledger where the chapter would, a one-cell executed notebook
    with an image, and the record, as seeds.run_one does."""
    def command(notebook, profile, out, device):
        return child(tmp_path, f"""
            import json, pathlib
            from feature_learning.build.seeds import claims_folder, write_record
            out, nb = pathlib.Path({str(out)!r}), pathlib.Path({str(notebook)!r})
            folder = claims_folder(out, nb.stem, 0)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / (nb.stem + ".json")).write_text(json.dumps({{"claims": [], "written": "2026-11-29T01:00:00"}}))
            (out / nb.stem / "seed0.ipynb").write_text(json.dumps({{"cells": [{{"cell_type": "code", "source": "",
                "outputs": [{{"data": {{"image/png": "AAAA", "text/plain": "fig"}}}}]}}]}}))
            write_record(nb, {profile!r}, 0, out, {device!r}, error=None, seconds=1.0)
        """)
    return command


def test_the_dry_run_stores_one_ci_record_outside_results_full_through_the_same_path(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu, "chapter_command", fake_chapter(tmp_path))
    monkeypatch.setattr(gpu.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "scratch"))
    kept_before = sorted(p.name for p in (gpu.project_root() / "results" / "full").glob("*"))
    assert gpu.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "| looped_transformers | none |" in out and "dry run: the record, its ledger and its notebook" in out
    record = json.loads((tmp_path / "scratch" / "results" / "looped_transformers.json").read_text())
    assert record["profile"] == "ci" and record["ok"] and record["notebook"] == "notebooks/looped_transformers.ipynb"
    notebook = json.loads((tmp_path / "scratch" / "results" / "notebooks" / "looped_transformers.ipynb").read_text())
    assert notebook["cells"][0]["outputs"][0]["data"] == {"image/png": "(removed)", "text/plain": "fig"}
    assert sorted(p.name for p in (gpu.project_root() / "results" / "full").glob("*")) == kept_before


def test_no_run_starts_with_less_than_a_minute_before_the_deadline(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu, "chapter_command", lambda *a: pytest.fail("a run started after the deadline"))
    monkeypatch.setattr(gpu.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "scratch"))
    assert gpu.main(["--dry-run", "--deadline", "0.5"]) == 1
    assert "looped_transformers: not started (missing)" in capsys.readouterr().out


def test_the_dry_run_end_to_end_executes_looped_transformers_at_ci_on_the_cpu(tmp_path, monkeypatch, capsys):
    """`make gpu DRY_RUN=1` as CI runs it: the real chapter (the fastest) at `ci` on the CPU through papermill, its
    record, ledger and stripped notebook stored outside results/full (about 30 s on one core)."""
    monkeypatch.setattr(gpu.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "scratch"))
    kept_before = sorted(p.name for p in (gpu.project_root() / "results" / "full").glob("*"))
    assert gpu.main(["--dry-run"]) == 0
    record = json.loads((tmp_path / "scratch" / "results" / "looped_transformers.json").read_text())
    assert record["ok"] and record["profile"] == "ci" and record["ledger"]["claims"]
    assert record["ledger"]["provenance"]["sizes_digest"] and record["seconds"] > 0
    assert (tmp_path / "scratch" / "results" / "notebooks" / "looped_transformers.ipynb").exists()
    assert sorted(p.name for p in (gpu.project_root() / "results" / "full").glob("*")) == kept_before

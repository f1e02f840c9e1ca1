"""The run journal (results/runs/<kind>.json) and the tables built from it and from the stored full records."""

import json
from pathlib import Path

import pytest

from feature_learning.build import runs

ROOT = Path(__file__).resolve().parents[2]


def write_kind(root: Path, kind: str, data: dict) -> None:
    folder = root / runs.RUNS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{kind}.json").write_text(json.dumps(data))


JOURNAL = {"title": "make test", "about": "wall time", "runs": [
    {"date": "2026-11-24", "command": "make test", "start": "warm", "machine": "m1", "seconds": 466,
     "outcome": "exit 0"},
    {"date": "2026-11-27", "time": "19:28-19:40", "command": "make test", "start": "warm", "commit": "7d7650d",
     "machine": "m1", "conditions": "idle", "seconds": 687, "outcome": "exit 0", "phases": {"browser tests": 109}},
    {"date": "2026-11-27", "time": "09:02-09:16", "command": "make test", "start": "warm", "machine": "m1",
     "seconds": 818, "outcome": "exit 0"},
    {"date": "2026-11-28", "command": "make test", "start": "cold", "machine": "m2", "seconds": 1980,
     "approximate": True, "outcome": "exit 0"},
]}


@pytest.mark.parametrize(("seconds", "approximate", "text"), [
    (3.3, False, "3.3 s"), (687, False, "11 min 27 s"), (6462, False, "1 h 47 min 42 s"), (1980, True, "about 33 min"),
    (120, False, "2 min"), (None, False, "-")])
def test_durations_read_as_a_person_writes_them(seconds, approximate, text):
    assert runs.duration(seconds, approximate) == text


def test_the_latest_run_of_each_command_and_start_is_by_date_and_time_not_by_order():
    latest = runs.latest(JOURNAL)
    assert [(r["start"], r["seconds"]) for r in latest] == [("warm", 687), ("cold", 1980)]
    rows = runs.latest_rows({"ci": JOURNAL})
    assert rows[0] == ["make test", "warm", "2026-11-27 19:28-19:40, commit 7d7650d", "m1", "11 min 27 s", "exit 0"]
    assert rows[1][4] == "about 33 min"


def test_the_history_is_newest_first_with_every_measurement():
    rows = runs.history_rows(JOURNAL)
    assert [row[0] for row in rows] == ["2026-11-28", "2026-11-27 19:28-19:40, commit 7d7650d",
                                        "2026-11-27 09:02-09:16", "2026-11-24"]
    assert all(len(row) == len(runs.HISTORY_COLUMNS) for row in rows)
    assert rows[1][1] == "make test (warm)" and rows[1][3] == "idle" and rows[1][6] == "browser tests 1 min 49 s"


def test_a_command_costs_one_sentence_from_its_latest_row():
    kinds = {"ci": JOURNAL}
    assert runs.command_cost(kinds, "ci", "make test", "cold") == "about 33 min (2026-11-28, m2, exit 0)"
    assert runs.command_cost(kinds, "ci", "make test", "cached") == "not measured"
    assert runs.command_cost(kinds, "book", "make book", "warm") == "not measured"


def test_chapter_values_of_sessions_and_load_runs():
    run = {"chapters": {"a": 310, "b": [446, 78.3, "CUDA out of memory"], "c": [16.1, 1.57]}, "detail": "note"}
    assert runs.details(run) == ("a: 5 min 10 s; b: 7 min 26 s, 78.3 GB, CUDA out of memory; "
                                 "c: 16.1 s alone, 1.57x beside a busy process. note")


def test_full_rows_say_held_claims_stops_crashes_and_missing_runs():
    claims = [{"id": "x", "status": "pass"}, {"id": "y", "status": "fail"}]
    records = {
        "done": {"written": "2026-11-27T02:30:08+00:00", "device": "cuda", "machine": "NVIDIA H100", "seconds": 310,
                 "peak_gpu_gb": 18, "ok": False, "ledger": {"claims": claims}},
        "stopped": {"written": "2026-11-27T11:23:05+00:00", "device": "cuda", "ledger": None, "stopped": True,
                    "error": "at the limit", "seconds": 513},
        "crashed": {"written": "2026-11-27T11:23:05+00:00", "device": "cuda", "ledger": None, "error": "OOM"},
    }
    rows = runs.full_rows(records, ["done", "stopped", "crashed", "never"])
    assert rows[0] == ["done", "2026-11-27", "cuda", "NVIDIA H100", "5 min 10 s", "18 GB",
                       "1 of 2 claims hold; FAIL: y"]
    assert rows[1][6] == "stopped: at the limit" and rows[1][5] == "-"
    assert rows[2][6] == "crashed: OOM"
    assert rows[3] == ["never", "-", "-", "-", "-", "-", "no run stored"]


def test_load_kinds_keeps_the_page_order(tmp_path):
    for kind in ("seeds", "zeta", "ci"):
        write_kind(tmp_path, kind, {"title": kind, "runs": []})
    assert list(runs.load_kinds(tmp_path)) == ["ci", "seeds", "zeta"]
    assert runs.load_kinds(tmp_path / "nowhere") == {}


def test_every_committed_run_names_its_date_command_machine_and_measurement():
    kinds = runs.load_kinds(ROOT)
    assert {"ci", "book", "seeds", "gpu-sessions"} <= set(kinds)
    for kind, data in kinds.items():
        assert data["title"] and data["about"], kind
        for run in data["runs"]:
            assert len(run["date"]) == 10 and run["date"][4] == "-", (kind, run)
            assert run["command"] and run["machine"], (kind, run)
            assert run.get("seconds") is not None or run.get("chapters") or run.get("outcome"), (kind, run)
            assert run.get("start") in (None, *runs.STARTS, "empty execution cache"), (kind, run)
    for command, kind in (("make test", "ci"), ("make book", "book")):
        for start in ("cold", "warm"):
            assert runs.command_cost(kinds, kind, command, start) != "not measured", (command, start)


def test_the_page_keeps_a_date_on_one_line_and_escapes_the_text():
    from feature_learning.build.sphinx_runs import _cells

    assert _cells([["2026-11-27 19:28-19:40, commit 7d7650d", "a <b> beside `make book`"]]) == [
        ["<span class='report-line'>2026-11-27 19:28-19:40</span>, commit 7d7650d",
         "a &lt;b&gt; beside <code>make book</code>"]]

"""The journal of measured runs, as data: ``results/runs/<kind>.json``, one file per kind of run.

Each file holds a ``title``, an ``about`` (what is measured) and ``runs``, oldest first, each a dated measurement::

    {"date": "2026-11-28", "time": "09:02-09:16", "command": "make test", "start": "cold", "commit": "2cc0aff",
     "machine": "...", "conditions": "...", "seconds": 1980, "approximate": true, "outcome": "exit 0",
     "phases": {"execution": 513}, "chapters": {"fourier_circuits": 254}, "detail": "..."}

``start`` says what the command found: ``cold`` (a fresh machine, nothing cached, no pip cache), ``warm`` (a fresh
clone, pip's cache warm) or ``cached`` (the same clone again). ``time``, ``commit``, ``phases``, ``chapters`` and
``detail`` are optional; a chapter's value is seconds, or a list of numbers and words (a GPU session's seconds, peak
GPU memory and outcome).

The functions here turn those files, and the stored ``full`` records (``results/full/<chapter>.json``), into the rows
of the tables of the book's page "Run times and runs at the source's scale" (:mod:`feature_learning.build.sphinx_runs`)
and of the README's two commands (:mod:`feature_learning.build.readme`). Cells are plain text.
"""

from __future__ import annotations

import json
from pathlib import Path

from feature_learning.book.claims import ACCEPTED

#: Where the data files live, under the project root.
RUNS = Path("results") / "runs"
#: The kinds in the order the page shows them; a file not named here comes after them, by name.
KINDS = ("ci", "book", "seeds", "gpu-sessions", "full-cpu", "chapters", "load", "plan")
#: What each ``start`` is called in the tables (the page says what each means).
STARTS = {"cold": "cold", "warm": "warm", "cached": "again"}
#: The columns of a kind's history.
HISTORY_COLUMNS = ("when", "command", "machine", "conditions", "time", "outcome", "details")
#: The columns of the table of the latest runs.
LATEST_COLUMNS = ("command", "start", "when", "machine", "time", "outcome")
#: The columns of the table of stored full runs.
FULL_COLUMNS = ("chapter", "date", "device", "machine", "time", "peak GPU memory", "outcome")


def load_kinds(root: Path) -> dict[str, dict]:
    """Every ``results/runs/<kind>.json`` under ``root``, by kind, in the page's order."""
    folder = Path(root) / RUNS
    files = {p.stem: p for p in folder.glob("*.json")} if folder.exists() else {}
    order = [k for k in KINDS if k in files] + sorted(set(files) - set(KINDS))
    return {kind: json.loads(files[kind].read_text()) for kind in order}


def duration(seconds: float | None, approximate: bool = False) -> str:
    """``11 min 27 s``, ``1 h 47 min 42 s``, ``3.3 s``; ``about 33 min`` where ``approximate`` (whole minutes)."""
    if seconds is None:
        return "-"
    if seconds < 60:
        text = f"{seconds:g} s"
    elif approximate:
        text = f"{round(seconds / 60)} min"
    else:
        hours, rest = divmod(round(seconds), 3600)
        minutes, secs = divmod(rest, 60)
        text = " ".join(part for part in (f"{hours} h" if hours else "", f"{minutes} min" if minutes else "",
                                          f"{secs} s" if secs else "") if part)
    return f"about {text}" if approximate else text


def when(run: dict) -> str:
    """The run's date, its time of day (UTC) where recorded, and its commit where known."""
    text = run["date"] + (f" {run['time']}" if run.get("time") else "")
    return text + (f", commit {run['commit']}" if run.get("commit") else "")


def _chapter_value(value) -> str:
    """A chapter's seconds; [seconds, peak GPU GB, outcome] (a GPU session); [seconds alone, slowdown] (load)."""
    if isinstance(value, list) and len(value) == 3:
        seconds, gpu, outcome = value
        return f"{duration(seconds)}, {gpu:g} GB, {outcome}"
    if isinstance(value, list) and len(value) == 2:
        seconds, factor = value
        return f"{duration(seconds)} alone, {factor:.2f}x beside a busy process"
    return duration(value) if isinstance(value, (int, float)) else str(value)


def details(run: dict) -> str:
    """The run's phases, its chapters' times, CPU time and memory, and its note, as one text."""
    parts = []
    if run.get("phases"):
        parts.append("; ".join(f"{name} {duration(s)}" for name, s in run["phases"].items()))
    if run.get("cpu_seconds"):
        parts.append(f"CPU time {duration(run['cpu_seconds'])}")
    if run.get("peak_memory_gb"):
        parts.append(f"peak memory {run['peak_memory_gb']:g} GB")
    if run.get("chapters"):
        parts.append("; ".join(f"{name}: {_chapter_value(v)}" for name, v in run["chapters"].items()))
    if run.get("detail"):
        parts.append(run["detail"])
    return ". ".join(parts)


def history_rows(data: dict) -> list[list[str]]:
    """Every run of one kind, newest first, as cells under :data:`HISTORY_COLUMNS`."""
    runs = sorted(enumerate(data["runs"]), key=lambda ir: (ir[1]["date"], ir[1].get("time", ""), ir[0]),
                  reverse=True)
    return [[when(run), run["command"] + (f" ({STARTS.get(run['start'], run['start'])})" if run.get("start") else ""),
             run["machine"],
             run.get("conditions", ""), duration(run.get("seconds"), run.get("approximate", False)),
             run.get("outcome", ""), details(run)] for _, run in runs]


def latest(data: dict) -> list[dict]:
    """The latest run of each (command, start) of one kind, in the order each pair first appears."""
    out: dict[tuple, dict] = {}
    for run in data["runs"]:
        key = (run["command"], run.get("start"))
        if key not in out or (run["date"], run.get("time", "")) >= (out[key]["date"], out[key].get("time", "")):
            out[key] = run
    return list(out.values())


def latest_rows(kinds: dict[str, dict]) -> list[list[str]]:
    """The latest run of each command and start of every kind, as cells under :data:`LATEST_COLUMNS`."""
    return [[run["command"], STARTS.get(run.get("start"), run.get("start") or "-"), when(run),
             run["machine"], duration(run.get("seconds"), run.get("approximate", False)), run.get("outcome", "")]
            for data in kinds.values() for run in latest(data)]


def command_cost(kinds: dict[str, dict], kind: str, command: str, start: str) -> str:
    """One sentence on the latest ``start`` run of ``command`` in ``kind``: its time, date, machine and outcome."""
    runs = [run for run in latest(kinds.get(kind, {"runs": []})) if run["command"] == command
            and run.get("start") == start]
    if not runs:
        return "not measured"
    run = runs[0]
    outcome = f", {run['outcome']}" if run.get("outcome") and run["outcome"] != "not recorded" else ""
    return (f"{duration(run.get('seconds'), run.get('approximate', False))} ({when(run)}, {run['machine']}"
            f"{outcome})")


def full_outcome(record: dict) -> str:
    """What a stored ``full`` run showed: claims held of all, or how it stopped or crashed."""
    ledger = record.get("ledger")
    if ledger is None:
        why = record.get("error") or "no error recorded"
        return f"stopped: {why}" if record.get("stopped") else f"crashed: {why}"
    claims = ledger.get("claims", [])
    failed = [c["id"] for c in claims if c["status"] not in ACCEPTED]
    text = f"{len(claims) - len(failed)} of {len(claims)} claims hold"
    return text + (f"; FAIL: {', '.join(failed)}" if failed else "")


def full_rows(records: dict[str, dict], chapters: list[str] | None = None) -> list[list[str]]:
    """One row per chapter (in ``chapters``' order, else by name) from its stored ``full`` record, under
    :data:`FULL_COLUMNS`; a chapter without one says so."""
    rows = []
    for chapter in chapters or sorted(records):
        record = records.get(chapter)
        if record is None:
            rows.append([chapter, "-", "-", "-", "-", "-", "no run stored"])
            continue
        gpu = record.get("peak_gpu_gb")
        rows.append([chapter, str(record.get("written", "?"))[:10], str(record.get("device", "?")),
                     record.get("machine") or "-", duration(record.get("seconds")),
                     f"{gpu:g} GB" if gpu is not None else "-", full_outcome(record)])
    return rows

"""Execute the book's chapter notebooks several at a time, one thread each, into a cache of executed copies.

``make book`` and ``make test`` both execute the chapters through this module (then build the HTML book from the
executed copies with execution off, :mod:`feature_learning.build.site`)::

    python -m feature_learning.build.execute run --profile book --out _build/executed/book [--chapters a b]
    python -m feature_learning.build.execute status --out _build/executed/book

``run`` executes each notebook of the table of contents (or the ``--chapters`` named) with papermill at the profile,
in a pool of ``--workers`` processes (default: one per usable core), each kernel with one OpenMP/MKL/torch thread
(``--threads``; two kernels competing for two cores with a thread per core each slow each other down several-fold).
It writes, under ``--out``:

* ``book/chapters/<part>/<chapter>.ipynb``: the executed copy, laid out like the book (a failed chapter's copy too,
  with its traceback), and the run's record in its metadata (``feature_learning.execution``);
* ``_claims/<chapter>.json``: the chapter's claims ledger;
* ``_execution/<chapter>.json``: the record: cache key, code hash, parameters, status, seconds, error.

A chapter is skipped (a cache hit) when its record says it succeeded under the same cache key
(:mod:`feature_learning.build.cache_key`: the library's source, ``pyproject.toml``, the package versions, the device
class), the same hash of its code cells and the same parameters, and its executed copy and ledger are there. A prose
edit is then carried into the executed copy without executing anything. A failed chapter is always re-executed.

Progress goes to stdout, one flushed line per event: which chapter starts, which finishes (with its time), how many
are done of how many, the time so far, and every ``--heartbeat`` seconds the chapters still running. Chapters start
longest first (by their last recorded time), which shortens the whole run on a few cores. ``run`` goes on past a
failed chapter and exits 1 at the end with the list of failures.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import datetime as _dt
import hashlib
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

from feature_learning.book.claims import project_root
from feature_learning.book.profiles import check_profile
from feature_learning.build import cache_key
from feature_learning.build.notebooks import toc_notebooks

RECORDS = "_execution"
CLAIMS = "_claims"
METADATA_KEY = "feature_learning"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS")
HISTORY = "execution-times.json"
# Seconds per chapter and profile measured on a 2-core machine (one thread per kernel; results/runs), committed so that
# a fresh clone, with no history in _build yet, still starts the longest chapters first.
TYPICAL_TIMES = Path("benchmarks") / "execution-times.json"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def thread_environment(threads: int) -> dict[str, str]:
    """The environment variables that cap a kernel's threads (torch takes its intra-op count from OMP_NUM_THREADS);
    ``threads`` 0 caps nothing."""
    return {name: str(threads) for name in THREAD_VARIABLES} if threads > 0 else {}


def code_hash(notebook: dict) -> str:
    """A hash of what executes: the code cells' sources in order and the kernel. Prose is not hashed."""
    digest = hashlib.sha256()
    kernel = notebook.get("metadata", {}).get("kernelspec", {}).get("name", "")
    digest.update(kernel.encode())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            digest.update(b"\0cell\0" + source.encode())
    return digest.hexdigest()


def _is_injected(cell: dict) -> bool:
    return "injected-parameters" in cell.get("metadata", {}).get("tags", [])


def carry_prose(source: dict, executed: dict) -> dict:
    """The current ``source`` notebook with the outputs of ``executed`` (same code cells, older prose): markdown
    cells from the source, code cells (and papermill's injected parameters cell) from the executed copy, with the
    source's cell tags (folding a cell with ``hide-input`` changes no output, so it executes nothing)."""
    code = [c for c in executed["cells"] if c["cell_type"] == "code" and not _is_injected(c)]
    injected = [c for c in executed["cells"] if _is_injected(c)]
    cells, k = [], 0
    for cell in source["cells"]:
        if cell["cell_type"] == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            meta = {key: v for key, v in code[k].get("metadata", {}).items() if key != "tags"}
            cells.append({**code[k], "metadata": {**meta, **({"tags": tags} if tags else {})}})
            k += 1
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                cells.extend(injected)
        else:
            cells.append(cell)
    if k != len(code):
        raise ValueError("the executed copy's code cells do not match the source's")
    return {**executed, "cells": cells}


@dataclasses.dataclass
class Task:
    """One notebook to execute: where it is, where its copy, record and ledger go, and how to run it."""

    rel: Path
    source: Path
    out: Path
    parameters: dict
    threads: int = 1
    timeout: int | None = 3600

    @property
    def chapter(self) -> str:
        return self.rel.stem

    @property
    def target(self) -> Path:
        return self.out / self.rel

    @property
    def record_path(self) -> Path:
        return self.out / RECORDS / f"{self.chapter}.json"

    @property
    def claims(self) -> Path:
        return self.out / CLAIMS

    @property
    def ledger(self) -> Path:
        return self.claims / f"{self.chapter}.json"


def run_notebook(task: Task) -> dict:
    """Execute one notebook with papermill (in a pool worker): the kernel inherits the thread caps and the claims
    folder through the environment. Returns ``ok``, ``error`` (the exception's last line) and ``seconds``."""
    import papermill

    os.environ.update(thread_environment(task.threads))
    os.environ["BOOK_CLAIMS_DIR"] = str(task.claims)
    task.target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    error = None
    try:
        papermill.execute_notebook(
            str(task.source), str(task.target), parameters=task.parameters, cwd=str(task.source.parent),
            progress_bar=False, log_output=False, execution_timeout=task.timeout,
        )
    except Exception as exc:  # a failed claim or a crash: recorded, and the run goes on
        error = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:500] or type(exc).__name__
    return {"ok": error is None, "error": error, "seconds": round(time.perf_counter() - start, 1)}


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _dump_notebook(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def cache_hit(task: Task, key: str, hashed: str) -> bool:
    record = _read(task.record_path)
    return bool(
        record and record.get("ok") and record.get("key") == key and record.get("code_hash") == hashed
        and record.get("parameters") == task.parameters and task.target.exists() and task.ledger.exists()
    )


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m{seconds % 60:02d}s" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


class Progress:
    """Flushed progress lines: ``[execute 3m05s] 4/11 done | ...``."""

    def __init__(self, total: int, stream=None):
        self.total, self.done, self.stream = total, 0, stream or sys.stdout
        self.start = time.perf_counter()

    def line(self, text: str) -> None:
        elapsed = _clock(time.perf_counter() - self.start)
        print(f"[execute {elapsed}] {self.done}/{self.total} done | {text}", file=self.stream, flush=True)


def _finish(task: Task, result: dict, key: str, inputs: dict, hashed: str, method: str) -> dict:
    """Write the record, and stamp it into the executed copy's metadata (the execution statistics page reads it)."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    record = {"chapter": task.chapter, "notebook": task.rel.as_posix(), "parameters": task.parameters,
              "threads": task.threads, "key": key, "inputs": inputs, "code_hash": hashed, "finished": now,
              "method": method, **result}
    if not task.target.exists():  # papermill could not even start the kernel: leave a notebook that says so
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell(f"**Not executed**: {result.get('error')}")]
        task.target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(task.target))
    nb = json.loads(task.target.read_text())
    try:  # prose cells exactly as a later cache hit writes them (papermill rewrites them slightly), so that the
        nb = carry_prose(json.loads(task.source.read_text()), nb)  # first unchanged rebuild changes nothing
    except (ValueError, IndexError):
        pass
    nb.setdefault("metadata", {})[METADATA_KEY] = {"execution": {
        k: record[k] for k in ("method", "ok", "error", "seconds", "finished", "parameters", "threads")}}
    task.target.write_text(_dump_notebook(nb))
    task.record_path.parent.mkdir(parents=True, exist_ok=True)
    task.record_path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record


def execute(tasks: list[Task], workers: int | None = None, inputs: dict | None = None, force: bool = False,
            heartbeat: float = 60.0, history: Path | None = None, stream=None,
            typical: Path | None = None) -> list[dict]:
    """Execute ``tasks`` (skipping cache hits unless ``force``), ``workers`` at a time, the longest first (by the
    seconds in ``history``, this machine's last runs, else in ``typical``, committed times from a 2-core machine, so
    that a fresh clone does not start the longest chapter last); return one record each."""

    inputs = inputs if inputs is not None else cache_key.inputs(project=project_root())
    key = cache_key.key(inputs)
    workers = max(1, workers or usable_cores())
    progress = Progress(len(tasks), stream)
    records: dict[str, dict] = {}
    to_run = []
    for task in tasks:
        source = json.loads(task.source.read_text())
        hashed = code_hash(source)
        if not force and cache_hit(task, key, hashed):
            try:
                _write_if_changed(task.target, _dump_notebook(carry_prose(source, json.loads(task.target.read_text()))))
            except (ValueError, IndexError, KeyError):
                to_run.append((task, hashed))
                continue
            previous = _read(task.record_path)
            progress.done += 1
            records[task.chapter] = {**previous, "method": "cache"}
            progress.line(f"{task.chapter}: unchanged, from the cache (ran {previous['seconds']} s on "
                          f"{previous['finished']})")
        else:
            to_run.append((task, hashed))
    times = (_read(history) or {}) if history else {}
    defaults = (_read(typical) or {}) if typical else {}
    profile_times = {}
    for task, _ in to_run:
        profile = str(task.parameters.get("profile"))
        profile_times[task.chapter] = times.get(profile, {}).get(
            task.chapter, defaults.get(profile, {}).get(task.chapter, 0.0))
    to_run.sort(key=lambda item: -profile_times[item[0].chapter])  # longest first; stable otherwise
    if to_run:
        progress.line(f"executing {len(to_run)} notebook(s), {min(workers, len(to_run))} at a time, "
                      f"{to_run[0][0].threads or 'unlimited'} thread(s) each")
    pending = list(to_run)
    running: dict[cf.Future, tuple[Task, str, float]] = {}
    with cf.ProcessPoolExecutor(max_workers=min(workers, max(1, len(to_run))),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        while pending or running:
            while pending and len(running) < workers:
                task, hashed = pending.pop(0)
                if task.ledger.exists():
                    task.ledger.unlink()  # a crash must not leave the previous run's ledger behind
                running[pool.submit(run_notebook, task)] = (task, hashed, time.perf_counter())
                progress.line(f"{task.chapter}: started (profile {task.parameters.get('profile')})")
            done, _ = cf.wait(running, timeout=heartbeat, return_when=cf.FIRST_COMPLETED)
            if not done:
                now = time.perf_counter()
                progress.line("running: " + ", ".join(
                    f"{t.chapter} ({_clock(now - s)})" for t, _, s in running.values()))
            for future in done:
                task, hashed, _ = running.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # the worker itself died
                    result = {"ok": False, "error": f"worker failed: {exc!r}"[:500], "seconds": None}
                record = _finish(task, result, key, inputs, hashed, "executed")
                records[task.chapter] = record
                progress.done += 1
                verdict = "ok" if record["ok"] else f"FAILED: {record['error']}"
                progress.line(f"{task.chapter}: {verdict} ({record['seconds']} s)")
    if history and to_run:
        for task, _ in to_run:
            seconds = records[task.chapter].get("seconds")
            if seconds:
                times.setdefault(str(task.parameters.get("profile")), {})[task.chapter] = seconds
        history.parent.mkdir(parents=True, exist_ok=True)
        history.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n")
    return [records[t.chapter] for t in tasks]


def failures(records: list[dict]) -> list[dict]:
    return [r for r in records if not r.get("ok")]


def report(records: list[dict], out: Path, stream=None) -> int:
    """Print the failed chapters (where their executed copies are); 1 if any failed."""
    stream = stream or sys.stdout
    failed = failures(records)
    if not failed:
        print(f"execute: all {len(records)} notebook(s) ok ({out})", file=stream, flush=True)
        return 0
    print(f"execute: {len(failed)} of {len(records)} notebook(s) FAILED:", file=stream)
    for r in failed:
        print(f"  {r['chapter']}: {r['error']}\n    executed copy: {out / r['notebook']}", file=stream)
    stream.flush()
    return 1


def tasks_for(out: Path, profile: str, chapters: list[str] | None = None, root: Path | None = None,
              threads: int = 1, timeout: int | None = 3600, **parameters) -> list[Task]:

    check_profile(profile)
    root = root or project_root()
    notebooks = toc_notebooks(root)
    if chapters:
        unknown = sorted(set(chapters) - {nb.stem for nb in notebooks})
        if unknown:
            raise SystemExit(f"execute: unknown chapters {unknown}; allowed: {sorted(nb.stem for nb in notebooks)}")
        notebooks = [nb for nb in notebooks if nb.stem in chapters]
    return [Task(rel, root / rel, Path(out).resolve(), {"profile": profile, **parameters}, threads, timeout)
            for rel in notebooks]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute the chapters (cache hits skipped), then list the failures")
    run.add_argument("--profile", required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--chapters", nargs="*", default=None, help="notebook names (default: every chapter)")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--workers", type=int, default=None, help="notebooks at a time (default: usable cores)")
    run.add_argument("--threads", type=int, default=1, help="threads per kernel (0: leave unset)")
    run.add_argument("--timeout", type=int, default=3600, help="seconds per cell")
    run.add_argument("--force", action="store_true", help="execute even the cache hits")
    run.add_argument("--heartbeat", type=float, default=60.0, help="seconds between 'running:' lines")
    status = sub.add_parser("status", help="list the recorded runs under --out; 1 if any failed")
    status.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "status":
        records = [_read(p) for p in sorted((args.out / RECORDS).glob("*.json"))]
        return report([r for r in records if r], args.out)
    extra = {} if args.seed is None else {"seed": args.seed}
    tasks = tasks_for(args.out, args.profile, args.chapters, threads=args.threads, timeout=args.timeout, **extra)
    history = project_root() / "_build" / HISTORY
    records = execute(tasks, args.workers, force=args.force, heartbeat=args.heartbeat, history=history,
                      typical=project_root() / TYPICAL_TIMES)
    return report(records, args.out.resolve())


if __name__ == "__main__":
    raise SystemExit(main())

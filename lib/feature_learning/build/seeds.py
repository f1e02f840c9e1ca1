"""Seed sweeps: run chapters at one profile for several seeds, then summarise each claim's verdict per seed.

The Snakemake workflow ``workflow/Snakefile`` (``make seeds``) calls the two commands of this module:

``python -m feature_learning.build.seeds run --notebook book/chapters/.../x.ipynb --profile ci --seed 3 --out DIR``
    executes one chapter with papermill and writes ``DIR/x/seed3.json``: the chapter's claims ledger (if the
    notebook got as far as writing it, into ``DIR/x/seed3.claims/``, where it outlives the run), the run's exit
    status, wall time and, if it failed or was stopped, the error's last line and how far the executed notebook
    ``DIR/x/seed3.ipynb`` got.

``python -m feature_learning.build.seeds summarize DIR/*/seed*.json --out DIR/summary.json``
    gathers those records: for each chapter and claim id, each seed's status and measured value, and the share of
    seeds at which the claim's verdict is acceptable (*pass*, *not reproduced*, *inconclusive* or *not testable*), and
    the share of seeds at which its test passed (``pass_rate``: what an inconclusive claim's rate is).

A claim "holds at every seed" when that share is 1 for every swept seed; a run that crashed before its ledger was
written counts against every claim of its chapter. A claim can hold at every swept seed and still sit close to
failing: each seed's claim keeps its margin and standard error, and ``summarize`` prints the passing claims whose
distance from failing (|margin| - 2 se) averages fewer than ``--near`` (default 3) of its own standard deviations over
the seeds (:func:`feature_learning.book.status.failing_distances`), so that they are enlarged or re-examined before a
new seed fails them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

from feature_learning.book.claims import ACCEPTED, full_runs_dir, project_root
from feature_learning.book.provenance import git_commit
from feature_learning.book.status import FAILING_DISTANCE_SDS, failing_distances


@contextlib.contextmanager
def claimed_gpu(device: str, locks: Path):
    """On a machine with several GPUs and no ``CUDA_VISIBLE_DEVICES`` (a scheduler such as SLURM sets it), hold a
    lock on one free GPU for the duration of the run and make it the only visible one. Otherwise do nothing."""
    if device not in ("cuda", "auto") or "CUDA_VISIBLE_DEVICES" in os.environ:
        yield
        return
    import fcntl

    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        yield
        return
    locks.mkdir(parents=True, exist_ok=True)
    while True:
        for index in range(count):
            handle = open(locks / f"gpu{index}.lock", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
            try:
                yield
            finally:
                del os.environ["CUDA_VISIBLE_DEVICES"]
                handle.close()
            return
        time.sleep(5)


class Stopped(BaseException):
    """A run told to stop (SIGTERM, from a time limit), with how far its notebook had got (:func:`progress`) when
    the signal came: papermill then marks the interrupted cell completed, so the notebook it saves cannot say.
    Not an ``Exception``: no handler between the signal and :func:`run_one` (papermill's, nbclient's) may take it
    for a failed cell."""

    def __init__(self, signal_name: str, done: dict | None):
        super().__init__(signal_name)
        self.done = done


@contextlib.contextmanager
def stop_on_sigterm(executed: Path):
    """Within the block, SIGTERM raises :class:`Stopped` in the main thread (elsewhere signals cannot be caught),
    carrying the progress of the notebook ``executed`` as papermill last saved it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Stopped(signal.Signals(signum).name, progress(executed))

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (from ``/proc``; empty where there is none). A papermill kernel starts in
    its own session, so a signal to the run's process group does not reach it: it has to be found by ancestry."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        out += below
        todo += below
    return out


def claims_folder(out: Path, chapter: str, seed: int) -> Path:
    """Where a run's ledger is written (``BOOK_CLAIMS_DIR``): beside its record, so that a ledger written by
    ``chapter.close()`` survives the run however it ends."""
    return out / chapter / f"seed{seed}.claims"


def progress(executed: Path) -> dict | None:
    """How far an executed (possibly partial) notebook got, from papermill's per-cell metadata: the code cells done
    of the total, the seconds of each one done, and the cell that was running or failed (its number among the code
    cells, first line of code and seconds). None if there is no readable notebook."""
    try:
        cells = [c for c in json.loads(executed.read_text())["cells"] if c["cell_type"] == "code"]
    except (OSError, ValueError, KeyError):
        return None
    meta = [c.get("metadata", {}).get("papermill", {}) for c in cells]
    # papermill marks the cells it never reached "completed" too when a run is interrupted; those have no duration
    done = [m for m in meta if m.get("status") == "completed" and m.get("duration") is not None]
    out = {"cells_done": len(done), "cells_total": len(cells),
           "cell_seconds": [round(m["duration"], 1) for m in done]}
    for number, (cell, m) in enumerate(zip(cells, meta, strict=True), start=1):
        if m.get("status") in ("running", "failed"):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            lines = [line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            seconds = m["duration"] if m.get("duration") is not None else _since(m.get("start_time"))
            out["last_cell"] = {"number": number, "status": m["status"], "code": (lines or [""])[0][:120],
                                "seconds": round(seconds, 1)}
            break
    return out


def _since(iso: str | None) -> float:
    """Seconds from papermill's ``start_time`` (UTC, with or without its offset) to now; 0 if unknown."""
    try:
        then = _dt.datetime.fromisoformat(str(iso))
    except ValueError:
        return 0.0
    then = then if then.tzinfo else then.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (_dt.datetime.now(_dt.timezone.utc) - then).total_seconds())


def stopped_error(reason: str, seconds: float, done: dict | None) -> str:
    """One line on a run that did not finish: why, after how long, how far it got and where it was."""
    text = f"{reason} after {seconds:.0f} s"
    if done:
        text += f": {done['cells_done']} of {done['cells_total']} code cells done"
        last = done.get("last_cell")
        if last:
            text += f"; {last['seconds']:.0f} s into code cell {last['number']} ({last['code']})"
    return text


def write_record(notebook: Path, profile: str, seed: int, out: Path, device: str | None, *, error: str | None,
                 seconds: float, stopped: bool = False, done: dict | None = None) -> dict:
    """Write and return a run's record (``<out>/<chapter>/seed<k>.json``): its exit status and error, wall time, the
    ledger if the notebook wrote it (with the provenance ``chapter.close()`` put in it), and for a run that did not
    finish, how far it got (``done``, else read from its executed notebook). Called by the run itself, or by
    whoever stopped or outlived it."""
    chapter = notebook.stem
    record_path = out / chapter / f"seed{seed}.json"
    ledger_file = claims_folder(out, chapter, seed) / f"{chapter}.json"
    ledger = json.loads(ledger_file.read_text()) if ledger_file.exists() else None
    record = {"chapter": chapter, "profile": profile, "seed": seed, "device": device or "auto", "ok": error is None,
              "error": error, "seconds": round(seconds, 1), "ledger": ledger}
    if ledger and ledger.get("provenance"):
        record["provenance"] = ledger["provenance"]
    if stopped:
        record["stopped"] = True
    if error is not None:
        record["progress"] = done or progress(record_path.with_suffix(".ipynb"))
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record


def run_one(notebook: Path, profile: str, seed: int, out: Path, root: Path | None = None,
            device: str | None = None) -> dict:
    """Execute ``notebook`` at ``profile`` and ``seed`` (and ``device``, if given); write and return its record
    (:func:`write_record`), with the executed notebook and the ledger's folder beside it. SIGTERM stops the run:
    papermill keeps the partial notebook, the kernel is ended, and the record says the run was stopped and where."""
    import papermill

    root = root or project_root()
    chapter = notebook.stem
    claims = claims_folder(out, chapter, seed)
    executed = out / chapter / f"seed{seed}.ipynb"
    shutil.rmtree(claims, ignore_errors=True)  # a ledger or notebook left by an earlier run must not be read as ours
    executed.unlink(missing_ok=True)
    claims.mkdir(parents=True)
    previous = os.environ.get("BOOK_CLAIMS_DIR")
    os.environ["BOOK_CLAIMS_DIR"] = str(claims.resolve())
    error, done, stopped, start = None, None, False, time.perf_counter()
    parameters = {"profile": profile, "seed": seed, **({"device": device} if device else {})}
    try:
        with stop_on_sigterm(executed), claimed_gpu(device or "auto", root / "_build" / ".gpu-locks"):
            papermill.execute_notebook(
                str(root / notebook), str(executed), parameters=parameters,
                cwd=str((root / notebook).parent), progress_bar=False, log_output=False,
            )
    except (Stopped, KeyboardInterrupt) as exc:
        stopped, done = True, getattr(exc, "done", None) or progress(executed)
        error = stopped_error(f"stopped ({str(exc) or type(exc).__name__})", time.perf_counter() - start, done)
        for pid in descendants(os.getpid()):  # the kernel, still running its cell
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    except Exception as exc:  # a failed claim raises ClaimFailed inside the notebook: recorded, not fatal
        error = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:500]
    finally:
        if previous is None:
            os.environ.pop("BOOK_CLAIMS_DIR", None)
        else:
            os.environ["BOOK_CLAIMS_DIR"] = previous
    return write_record(notebook, profile, seed, out, device, error=error, seconds=time.perf_counter() - start,
                        stopped=stopped, done=done)


def summarize(records: list[dict]) -> dict:
    """Per chapter and claim: each seed's status and measured value, and the share of seeds it holds at; per chapter
    also the ledger of its lowest seed (its source map and claims), from which the README grades each source result
    against the stored ``full`` record and this sweep."""
    chapters: dict[str, dict] = {}
    for rec in sorted(records, key=lambda r: (r["chapter"], r["seed"])):
        chapter = chapters.setdefault(rec["chapter"], {"profile": rec["profile"], "seeds": [], "runs_failed": {},
                                                        "claims": {}})
        chapter["seeds"].append(rec["seed"])
        if rec.get("ledger") and "ledger" not in chapter:  # the lowest seed's: its source map grades the chapter
            chapter["ledger"] = {k: v for k, v in rec["ledger"].items() if k != "graded_by"}
        if not rec["ok"]:
            chapter["runs_failed"][str(rec["seed"])] = rec["error"]
        for claim in (rec["ledger"] or {}).get("claims", []):
            entry = chapter["claims"].setdefault(
                claim["id"], {"kind": claim.get("kind"), "statement": claim["statement"], "per_seed": {}}
            )
            if claim.get("near_bound"):
                entry["near_bound"] = claim["near_bound"]
            entry["per_seed"][str(rec["seed"])] = {"status": claim["status"], "measured": claim["measured"],
                                                   "margin": claim.get("margin"), "se": claim.get("se"),
                                                   "passed": claim.get("passed"), "relation": claim.get("relation")}
    for chapter in chapters.values():
        n = len(chapter["seeds"])
        for entry in chapter["claims"].values():
            held = [s for s, v in entry["per_seed"].items() if v["status"] in ACCEPTED]
            entry["held"] = len(held)
            entry["hold_rate"] = len(held) / n if n else 0.0
            entry["passed_at"] = sum(bool(v.get("passed")) for v in entry["per_seed"].values())
            entry["pass_rate"] = entry["passed_at"] / n if n else 0.0
            entry["failing_seeds"] = [s for s in chapter["seeds"] if str(s) not in held]
        chapter["all_hold"] = not chapter["runs_failed"] and all(
            e["held"] == n for e in chapter["claims"].values()
        )
    return {
        "written": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "all_hold": all(c["all_hold"] for c in chapters.values()),
        "chapters": chapters,
    }


def default_summary_path(root: Path | None = None) -> Path:
    return (root or project_root()) / "_build" / "seeds" / "summary.json"


def load_summary(path: Path | None = None) -> dict | None:
    """The latest seed-sweep summary, if a sweep has been run."""
    path = path or default_summary_path()
    return json.loads(path.read_text()) if path.exists() else None


def strip_images(nb: dict) -> dict:
    """An executed notebook without its images (glued ones included): its text outputs and papermill's per-cell
    timings kept, so that a ``full`` run's notebook can be stored in the repository."""
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for mime in [m for m in data if "image/" in m]:
                data[mime] = "(removed)"
    return nb


def keep_full_runs(records: list[dict], out: Path, machine: str | None = None, profile: str = "full") -> list[Path]:
    """Store the ledgers of ``full``-profile runs in the repository (``results/full/<chapter>.json``), separate from
    the ``ci`` and ``book`` ledgers of the build folders: for each chapter its latest record (the run's device, date,
    exit status and error, and its ledger if the notebook got as far as writing it). The reproduction report shows
    them per chapter. ``machine`` (e.g. "NVIDIA H100 80GB HBM3, 16 cores") is stored beside the device, and the run's
    ``seconds`` and ``peak_gpu_gb`` where its record or its ledger's provenance has them (chapters paste them in
    their full sections), with the provenance itself; a record with ``"stopped": true`` is a run stopped unfinished
    (at a time limit), its ``error`` and ``progress`` saying how far it got. A record's ``notebook`` (the path of its
    executed notebook) is kept without images as ``notebooks/<chapter>.ipynb`` beside the records. Records of other
    profiles are left out (``profile`` names another only for a dry run of the storing, at ``ci``)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for rec in records:
        if rec.get("profile") != profile:
            continue
        ledger = rec.get("ledger") or {}
        provenance = ledger.get("provenance") or rec.get("provenance")
        entry = {"chapter": rec["chapter"], "profile": profile, "seed": rec["seed"], "ok": rec["ok"],
                 "error": rec.get("error"), "device": ledger.get("device", rec.get("device")),
                 "written": ledger.get("written") or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                 "ledger": rec.get("ledger")}
        if machine or rec.get("machine"):
            entry["machine"] = machine or rec.get("machine")
        # the runner's measurement first (it spans the whole process), else the one chapter.close() made
        for key, measured in (("seconds", "wall_seconds"), ("peak_gpu_gb", "peak_gpu_gb")):
            value = rec[key] if rec.get(key) is not None else (provenance or {}).get(measured)
            if value is not None:
                entry[key] = value
        if rec.get("stopped"):
            entry["stopped"] = True
        if rec.get("progress"):
            entry["progress"] = rec["progress"]
        if provenance:
            entry["provenance"] = provenance
        executed = Path(rec["notebook"]) if rec.get("notebook") else None
        if executed and executed.exists():
            kept = out / "notebooks" / f"{rec['chapter']}.ipynb"
            kept.parent.mkdir(exist_ok=True)
            kept.write_text(json.dumps(strip_images(json.loads(executed.read_text())), indent=1,
                                       ensure_ascii=False) + "\n")
            entry["notebook"] = f"notebooks/{kept.name}"
        path = out / f"{rec['chapter']}.json"
        path.write_text(json.dumps(entry, indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    return written


def load_full_runs(folder: Path | None = None) -> dict[str, dict]:
    """The stored ``full`` runs (:func:`keep_full_runs`), by chapter; ``BOOK_RESULTS_DIR`` overrides the folder
    (default ``<project root>/results/full``)."""
    folder = folder or full_runs_dir()
    if not folder.exists():
        return {}
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


LEDGER_FIELDS = ("measured", "se", "null", "status", "kind", "relation", "source_value")


def ledger_differences(old: dict, new: dict) -> list[str]:
    """Claim by claim, what differs between two ledgers (a chapter's ``_claims/<chapter>.json`` from the executor or a
    seed run's record with its ``ledger``): claims only in one, and each of ``LEDGER_FIELDS`` that changed, as
    ``"<id>.<field>: old -> new"``; a changed source map is one line. Empty when a refactor left the numbers alone."""
    old, new = old.get("ledger", old), new.get("ledger", new)
    before, after = ({c["id"]: c for c in d["claims"]} for d in (old, new))
    out = []
    for cid in sorted(before.keys() | after.keys()):
        if cid not in before or cid not in after:
            out.append(f"{cid}: only in the {'new' if cid in after else 'old'} ledger")
            continue
        out += [f"{cid}.{key}: {before[cid].get(key)!r} -> {after[cid].get(key)!r}"
                for key in LEDGER_FIELDS if before[cid].get(key) != after[cid].get(key)]
    if json.dumps(old.get("sources", []), sort_keys=True) != json.dumps(new.get("sources", []), sort_keys=True):
        out.append("the source map differs")
    return out


def print_summary(summary: dict, near_sds: float) -> None:
    """Print a sweep summary: per chapter its seeds and the claims failing at some seed, then the claims passing at
    every seed but within ``near_sds`` seed-level sd of failing, with the reason a claim gives for staying close."""
    for name, chapter in summary["chapters"].items():
        bad = {cid: e["failing_seeds"] for cid, e in chapter["claims"].items() if e["failing_seeds"]}
        print(f"{name}: seeds {chapter['seeds']}, {len(chapter['claims'])} claims, "
              f"{'every claim holds at every seed' if chapter['all_hold'] else 'NOT at every seed'}")
        for seed, err in chapter["runs_failed"].items():
            print(f"  seed {seed} failed: {err}")
        for cid, seeds in bad.items():
            print(f"  {cid}: fails at seeds {seeds}")
    near = failing_distances(summary, near_sds)
    if near:
        print(f"passing at every seed but close to failing (|margin| - 2 se averages < {near_sds:g} sd over seeds):")
    for row in near:
        print(f"  {row['chapter']} {row['claim']}: {row['z']:.2f} sd, distances "
              f"{[float(f'{d:.3g}') for d in row['distances']]}" + (f"; why: {row['reason']}" if row['reason'] else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute one chapter at one profile and seed")
    run.add_argument("--notebook", type=Path, required=True)
    run.add_argument("--profile", required=True)
    run.add_argument("--seed", type=int, required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--device", default=None, help="the notebook's device parameter (default: its own, auto)")
    summ = sub.add_parser("summarize", help="gather per-seed records into one summary")
    summ.add_argument("records", type=Path, nargs="+")
    summ.add_argument("--out", type=Path, required=True)
    summ.add_argument("--near", type=float, default=FAILING_DISTANCE_SDS,
                      help="list passing claims whose distance from failing averages fewer sds than this")
    check = sub.add_parser("check", help="exit 1 unless every claim of the summary holds at every seed")
    check.add_argument("summary", type=Path)
    keep = sub.add_parser("keep-full", help="store full-profile run records as results/full/<chapter>.json")
    keep.add_argument("records", type=Path, nargs="+")
    keep.add_argument("--out", type=Path, default=None, help="default: <project root>/results/full")
    keep.add_argument("--machine", default=None, help="the machine the runs ran on (stored beside the device)")
    diff = sub.add_parser("diff", help="compare two ledgers claim by claim (exit 1 if anything differs)")
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    if args.command == "diff":
        old, new = (json.loads(p.read_text()) for p in (args.old, args.new))
        lines = ledger_differences(old, new)
        print("\n".join(lines + [f"{len(new.get('ledger', new)['claims'])} claims compared; {len(lines)} differences"]))
        return 1 if lines else 0
    if args.command == "keep-full":
        records = [{**json.loads(p.read_text()), "notebook": str(p.with_suffix(".ipynb"))} for p in args.records]
        paths = keep_full_runs(records, args.out or project_root() / "results" / "full", args.machine)
        print("\n".join(str(p) for p in paths) or "no full-profile records given")
        return 0
    if args.command == "check":
        summary = json.loads(args.summary.read_text())
        print_summary(summary, FAILING_DISTANCE_SDS)
        print("every claim holds at every seed" if summary["all_hold"] else "some claims do NOT hold at every seed")
        return 0 if summary["all_hold"] else 1
    if args.command == "run":
        rec = run_one(args.notebook, args.profile, args.seed, args.out, device=args.device)
        print(f"{rec['chapter']} seed {rec['seed']}: {'ok' if rec['ok'] else 'FAILED: ' + str(rec['error'])}")
        return 0
    summary = summarize([json.loads(p.read_text()) for p in args.records])
    args.out.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print_summary(summary, args.near)
    print(f"summary: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One command for a GPU hour (``make gpu``): the CUDA smoke of every chapter, then every chapter whose stored
``full`` run needs a new one, longest-unverified first and one at a time, each within its own time limit and all
within a deadline; each record is stored into ``results/full`` as its run ends.

    python -m feature_learning.build.gpu --deadline <unix time, or minutes from now> [--limit S] [--grace S]
                                         [--chapters a b ...] [--no-smoke] [--plan] [--dry-run]

Which chapters run (:func:`reason_to_run`, :func:`select`): those whose stored record
(``results/full/<chapter>.json``) is missing, has no ledger, failed or stopped, carries no sizes digest
(:mod:`feature_learning.book.provenance`, written by ``chapter.close()``) or one that differs from the digest of the
chapter's current ``SIZES["full"]``. Missing records go first, then the oldest. The chapters that run entirely on
the CPU (``CPU_CHAPTERS``) are listed and never run here: a GPU hour is not spent on them.

Before anything runs, the command prints per chapter what its last stored run took and on what (seconds, peak GPU
memory, device and machine, date) and whether it runs now; ``--plan`` prints only that.

Every run is ``python -m feature_learning.build.seeds run`` in its own process group (:class:`Job`). At its limit it
gets SIGTERM, and writes a record saying how far it got (its ledger included, if ``chapter.close()`` had written it);
``--grace`` seconds later it and every process below it (the notebook's kernel, which runs in a session of its own)
get SIGKILL, and a run that left no record gets one written for it (:func:`finish`). A sampler of ``nvidia-smi``
keeps each run's peak GPU memory. Running the chapters one at a time makes each record the chapter's cost alone.

``--dry-run`` is the same code path on the CPU, for CI: looped transformers (the fastest chapter) at ``ci`` on the
CPU, no smoke, into a temporary folder (its records never reach ``results/full``); it fails unless the record, its
ledger and its notebook were stored.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from feature_learning.book.claims import full_runs_dir, project_root
from feature_learning.book.provenance import gpu_processes, sizes_digest
from feature_learning.build.notebooks import toc_notebooks
from feature_learning.build.seeds import (
    descendants,
    keep_full_runs,
    load_full_runs,
    progress,
    stopped_error,
    write_record,
)

# The chapters whose `full` run needs no GPU (looped transformers and nuclear norm run entirely on the CPU;
# feature contamination's runs are CPU-bound at its sizes). The Snakemake workflow gives their jobs no GPU token.
CPU_CHAPTERS = ("looped_transformers", "nuclear_norm", "feature_contamination")
GRACE = 20.0  # seconds between SIGTERM and SIGKILL: enough for a run to write its record and end its kernel
FLOOR = 600.0  # the least time limit of a chapter; a chapter whose last run finished gets three times its seconds
SMOKE_LIMIT = 900.0  # every chapter at ci on the GPU, four at a time (about 5 min on an H100 shared by nine runs)
MIN_RUN = 60.0  # a run is not started with less time left than this before the deadline


# -- which chapters run ---------------------------------------------------------------------------------------------
def current_digest(chapter: str, profile: str = "full") -> str:
    """The digest of the chapter's sizes at ``profile`` as the code now has them."""
    return sizes_digest(importlib.import_module(f"feature_learning.experiments.{chapter}").SIZES[profile])


def reason_to_run(record: dict | None, digest: str) -> str | None:
    """Why a chapter's stored run must be redone, or None if it is current: missing, no ledger, stopped or failing,
    no sizes digest (a run from before the ledger carried its provenance), or sizes changed since."""
    if record is None:
        return "missing"
    if not record.get("ledger"):
        return "no ledger"
    if not record.get("ok"):
        return "stopped" if record.get("stopped") else "failing"
    provenance = record["ledger"].get("provenance") or record.get("provenance") or {}
    if not provenance.get("sizes_digest"):
        return "no sizes digest"
    if provenance["sizes_digest"] != digest:
        return "sizes changed"
    return None


def select(chapters: list[str], stored: dict[str, dict], digests: dict[str, str]) -> list[tuple[str, str]]:
    """(chapter, reason) of each chapter to run, longest-unverified first: missing records, then by date written."""
    due = [(c, reason) for c in chapters if (reason := reason_to_run(stored.get(c), digests[c]))]
    return sorted(due, key=lambda item: (item[0] in stored, str(stored.get(item[0], {}).get("written", ""))))


def parse_deadline(text: str, now: float) -> float:
    """A deadline as a unix time, or as minutes from ``now`` (any number below 10^8: about three years)."""
    value = float(text)
    return value if value > 1e8 else now + 60.0 * value


def time_limit(record: dict | None, floor: float) -> float:
    """A chapter's own limit: three times its last finished run (an upper bound if it shared the machine), at least
    ``floor``; a run that was stopped tells nothing of its length, so only the floor applies."""
    seconds = (record or {}).get("seconds")
    finished = record is not None and not record.get("stopped") and seconds
    return max(floor, 3.0 * seconds) if finished else floor


def plan_table(chapters: list[str], stored: dict[str, dict], runs: list[tuple[str, str]],
               not_here: tuple[str, ...] = CPU_CHAPTERS) -> str:
    """Per chapter: the last stored run's seconds, peak GPU memory, device and date, and what happens now (the
    chapters ``not_here`` run on a CPU elsewhere)."""
    chosen = dict(runs)
    rows = ["| chapter | last run | seconds | peak GPU GB | on | written | now |", "|---|---|---|---|---|---|---|"]
    for chapter in chapters:
        rec = stored.get(chapter) or {}
        status = ("stopped" if rec.get("stopped") else "ok" if rec.get("ok") else "failed") if rec else "none"
        now = ("CPU chapter: not run here" if chapter in not_here
               else f"run ({chosen[chapter]})" if chapter in chosen else "current")
        rows.append(f"| {chapter} | {status} | {rec.get('seconds', '')} | {rec.get('peak_gpu_gb', '')} | "
                    f"{rec.get('machine') or rec.get('device', '')} | {str(rec.get('written', ''))[:16]} | {now} |")
    return "\n".join(rows)


# -- running and stopping -------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Job:
    """A command in its own process group, with a time limit in seconds from its start."""

    name: str
    command: list[str]
    limit: float
    threads: int = 1
    log: Path | None = None
    proc: subprocess.Popen | None = None
    began: float = 0.0
    seconds: float | None = None
    stopped: bool = False
    killed: bool = False
    _term_at: float | None = None
    _below: list[int] = dataclasses.field(default_factory=list)

    def start(self, cwd: Path, env: dict | None = None) -> None:
        threads = str(self.threads)
        env = {**(env or os.environ), "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "PYTHONUNBUFFERED": "1"}
        out = open(self.log, "w") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        if self.log:
            out.close()
        self.began = time.time()

    def step(self, now: float, grace: float) -> bool:
        """Advance the job at time ``now``; True once it has ended. At its limit: SIGTERM to its group; ``grace``
        seconds later: SIGKILL to its group and to every process that was below it (a kernel in its own session)."""
        if self.proc.poll() is not None:
            self.seconds = self.seconds if self.seconds is not None else now - self.began
            for pid in self._below:  # a kernel its run left behind
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            return True
        if self._term_at is None and now >= self.began + self.limit:
            self.stopped, self._term_at = True, now
            self._below = descendants(self.proc.pid)
            self.seconds = now - self.began
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGTERM)
        elif self._term_at is not None and now >= self._term_at + grace:
            self.killed = True
            for pid in self._below + descendants(self.proc.pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return True
        return False


def supervise(jobs: list[Job], grace: float = GRACE, poll: float = 0.5,
              on_end: Callable[[Job], None] | None = None) -> None:
    """Wait for started jobs, stopping each at its limit (:meth:`Job.step`); ``on_end`` is called as each ends."""
    pending = list(jobs)
    while pending:
        now = time.time()
        for job in [j for j in pending if j.step(now, grace)]:
            pending.remove(job)
            print(f"{time.strftime('%H:%M:%S')} {job.name}: {'STOPPED at its limit' if job.stopped else 'ended'} "
                  f"after {job.seconds:.0f} s{' (killed after the grace period)' if job.killed else ''}, "
                  f"exit {job.proc.returncode}", flush=True)
            if on_end:
                on_end(job)
        if pending:
            time.sleep(poll)


def gpu_samples() -> list[tuple[int, int]]:
    """(pid, used MiB) of every process on the GPU now; empty without ``nvidia-smi``."""
    return [(p["pid"], p["used_mib"]) for p in gpu_processes()]


def owner(pid: int) -> str | None:
    """'<profile>:<chapter>' of the run a GPU process belongs to: the kernel's parent is ``seeds run --notebook``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        args = Path(f"/proc/{ppid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except (OSError, ValueError, IndexError):
        return None
    if "--notebook" not in args or "--profile" not in args:
        return None
    return f"{args[args.index('--profile') + 1]}:{Path(args[args.index('--notebook') + 1]).stem}"


@contextlib.contextmanager
def gpu_peaks():
    """While the block runs, the peak GPU MiB of each run ('<profile>:<chapter>'), sampled every two seconds."""
    peaks: dict[str, int] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for pid, mib in gpu_samples():
                key = owner(pid)
                if key:
                    peaks[key] = max(peaks.get(key, 0), mib)
            stop.wait(2.0)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        yield peaks
    finally:
        stop.set()


def chapter_command(notebook: Path, profile: str, out: Path, device: str) -> list[str]:
    return [sys.executable, "-m", "feature_learning.build.seeds", "run", "--notebook", str(notebook), "--profile",
            profile, "--seed", "0", "--out", str(out), "--device", device]


def finish(job: Job, notebook: Path, profile: str, out: Path, device: str, grace: float) -> dict:
    """The run's record, written for it if it left none (killed after the grace period, or crashed): how far its
    executed notebook got, and its ledger if ``chapter.close()`` had written it."""
    path = out / notebook.stem / "seed0.json"
    if path.exists():
        return json.loads(path.read_text())
    executed = path.with_suffix(".ipynb")
    if job.stopped:
        reason = f"stopped at its {job.limit:.0f} s limit, killed {grace:.0f} s after SIGTERM"
    else:
        tail = job.log.read_text(errors="replace").strip().splitlines()[-1:] if job.log and job.log.exists() else []
        reason = f"crashed (exit {job.proc.returncode}{': ' + tail[0][:300] if tail else ''})"
    return write_record(notebook, profile, 0, out, device, error=stopped_error(reason, job.seconds, progress(executed)),
                        seconds=job.seconds, stopped=job.stopped)


def run_and_store(job: Job, notebook: Path, profile: str, out: Path, device: str, results: Path, grace: float,
                  peaks: dict[str, int], root: Path) -> dict:
    """Run one chapter's job to its end or its limit, and store its record (with its wall time, the peak GPU memory
    sampled and its notebook without images) into ``results`` at once: a later deadline cannot lose it."""
    job.start(root)
    supervise([job], grace)
    record = finish(job, notebook, profile, out, device, grace)
    record["seconds"] = round(job.seconds, 1)
    if job.name in peaks:
        record["peak_gpu_gb"] = round(peaks[job.name] * 2**20 / 1e9, 1)
    keep_full_runs([{**record, "notebook": str(out / notebook.stem / "seed0.ipynb")}], results, machine_line(device),
                   profile=profile)
    return record


def machine_line(device: str) -> str:
    """The machine the runs ran on, for the stored records (no host name)."""
    import torch

    cores = os.cpu_count()
    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)}, {cores} cores, torch {torch.__version__}, one run at a time"
    return f"CPU, {cores} cores, torch {torch.__version__}, one run at a time"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deadline", default=None, help="unix time, or minutes from now, by which every run ends")
    parser.add_argument("--limit", type=float, default=FLOOR, help="the least time limit of a chapter, seconds")
    parser.add_argument("--grace", type=float, default=GRACE, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("--chapters", nargs="*", default=None, help="consider only these (default: every chapter)")
    parser.add_argument("--no-smoke", action="store_true", help="skip the CUDA smoke")
    parser.add_argument("--plan", action="store_true", help="print the table of stored runs and what would run")
    parser.add_argument("--dry-run", action="store_true", help="looped_transformers at ci on the CPU, for CI")
    parser.add_argument("--results", type=Path, default=None, help="the stored records (default: results/full)")
    args = parser.parse_args(argv)
    root = project_root()
    notebooks = {nb.stem: nb for nb in toc_notebooks(root)}
    unknown = sorted(set(args.chapters or []) - set(notebooks))
    if unknown:
        parser.error(f"unknown chapters {unknown}")
    now = time.time()
    if args.dry_run:
        profile, device, threads, smoke = "ci", "cpu", 1, False
        chapters = ["looped_transformers"]
        scratch = Path(tempfile.mkdtemp(prefix="gpu-dry-run-"))
        results, out = scratch / "results", scratch / "runs"
        deadline = parse_deadline(args.deadline or "20", now)
    else:
        profile, device, threads, smoke = "full", "cuda", os.cpu_count() or 1, not args.no_smoke
        chapters = [c for c in (args.chapters or notebooks) if c not in CPU_CHAPTERS]
        results, out = args.results or full_runs_dir(), root / "_build" / "gpu-full"
        if args.deadline is None and not args.plan:
            parser.error("say by when every run must end: --deadline <unix time, or minutes from now>")
        deadline = parse_deadline(args.deadline or "0", now)
    stored = load_full_runs(results)
    digests = {c: current_digest(c, profile) for c in chapters}
    runs = select(chapters, stored, digests)
    if args.dry_run:
        print(plan_table(chapters, stored, runs, not_here=()))
    else:
        print(plan_table(list(args.chapters or notebooks), stored, runs))
    last = [stored[c] for c, _ in runs if c in stored]
    unfinished = sum(not r.get("ok") and not r.get("ledger") for r in last)
    total = sum(r.get("seconds") or 0 for r in last)
    print(f"to run, in this order: {' '.join(c for c, _ in runs) or 'none'}; their last stored runs took {total:.0f} s "
          f"({total / 60:.0f} min) in all, {unfinished} of them stopped or crashed before the end", flush=True)
    if args.plan:
        return 0
    if not args.dry_run:
        import torch

        if not torch.cuda.is_available():
            print("make gpu: no CUDA device here (torch.cuda.is_available() is False); nothing run")
            return 0
    print(f"deadline {time.strftime('%H:%M:%S', time.localtime(deadline))} ({(deadline - now) / 60:.0f} min); "
          f"results into {results}", flush=True)
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ok = True
    with gpu_peaks() as peaks:
        if smoke:
            limit = min(SMOKE_LIMIT, deadline - time.time() - args.grace)
            job = Job("smoke", [sys.executable, "-m", "feature_learning.build.cuda_smoke", "--jobs", "4", "--threads",
                                str(max(1, threads // 4)), "--out", str(root / "_build" / "cuda-smoke")],
                      limit, threads, logs / "smoke.log")
            if limit < MIN_RUN:
                print(f"smoke: not started, {max(limit, 0):.0f} s left before the deadline")
            else:
                job.start(root)
                supervise([job], args.grace)
                print(job.log.read_text(errors="replace").strip()[-4000:])
                ok &= job.proc.returncode == 0 and not job.stopped
        stored_now = []
        for chapter, reason in runs:
            left = deadline - time.time() - args.grace
            if left < MIN_RUN:
                print(f"{chapter}: not started ({reason}), {max(left, 0):.0f} s left before the deadline")
                continue
            notebook = notebooks[chapter]
            (out / chapter / "seed0.json").unlink(missing_ok=True)
            job = Job(f"{profile}:{chapter}", chapter_command(notebook, profile, out, device),
                      min(time_limit(stored.get(chapter), args.limit), left), threads, logs / f"{chapter}.log")
            print(f"{time.strftime('%H:%M:%S')} {chapter} ({reason}): started, limit {job.limit:.0f} s", flush=True)
            record = run_and_store(job, notebook, profile, out, device, results, args.grace, peaks, root)
            stored_now.append(chapter)
            ok &= bool(record["ok"])
            print(f"{chapter}: {'ok' if record['ok'] else 'FAILED: ' + str(record['error'])}; stored in {results}",
                  flush=True)
    if args.dry_run:
        kept = load_full_runs(results).get("looped_transformers")
        if not kept or not kept.get("ledger") or not (results / "notebooks" / "looped_transformers.ipynb").exists():
            print(f"dry run: FAILED, no record with its ledger and notebook stored in {results}")
            return 1
        print(f"dry run: the record, its ledger and its notebook were stored in {results}")
    print(f"make gpu: {len(stored_now)} run(s) stored; " + ("all ok" if ok else "some FAILED or stopped"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""One lent GPU session, as one prepared script: the CUDA smoke of every chapter at ``ci``
(``feature_learning.build.cuda_smoke``, the code path of ``make test-cuda``) and, beside it, as many chapters at
``full`` as a fixed deadline allows (``feature_learning.build.seeds run --profile full --device cuda``), all on the
one GPU at once, each process with the CPU threads given below so that the machine's cores are not oversubscribed.
``make gpu`` (``feature_learning.build.gpu``) runs the chapters one at a time instead, each alone on the machine;
this script trades that for the most runs in a short window.

    python benchmarks/gpu_session.py --until <unix time> --out <folder> [--full a b ...] [--smoke-jobs 5]
                                     [--threads chapter=N ...] [--grace 20]

``--grace`` seconds before the deadline every run still going gets SIGTERM (it writes its record, saying how far it
got, with its ledger if the chapter had written it), and SIGKILL at the deadline (``feature_learning.build.gpu.Job``);
a run that left no record gets one written for it. The peak GPU memory of each run is sampled from ``nvidia-smi``.
Written to ``--out``: ``session.json`` (device, versions, per run: what, threads, seconds, exit code, finished or
stopped, peak GPU memory), ``records.tar.gz`` (each run's record with its claims ledger, and its log) and
``<folder>-notebooks.tar.gz`` (the executed notebooks, finished or partial, images removed, papermill's per-cell
timings kept). Unpacked here, ``python -m feature_learning.build.seeds keep-full _build/seeds-full/*/seed0.json``
stores the full runs in ``results/full`` with their notebooks. On a machine without CUDA it says so and runs nothing.

The times measured here are of runs that shared the GPU and the cores with each other: upper bounds on a run alone.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from feature_learning.build.gpu import GRACE, Job, chapter_command, finish, gpu_peaks, supervise  # noqa: E402
from feature_learning.build.notebooks import toc_notebooks  # noqa: E402
from feature_learning.build.seeds import strip_images  # noqa: E402

# CPU threads of each full run: the chapters whose CPU parts are heavy get two (ICL's CPU-side parity
# constructions, the contrastive allocation grid); every other one, and every smoke chapter, one.
THREADS = {"icl_model_scale": 2, "contrastive": 2}


def pack(out: Path, folders: list[Path]) -> None:
    """records.tar.gz (every run's record and log), <folder>-notebooks.tar.gz (its executed notebooks)."""
    with tarfile.open(out / "records.tar.gz", "w:gz") as records:
        for path in sorted((out / "logs").glob("*.log")):
            records.add(path, arcname=f"logs/{path.name}")
        for folder in folders:
            for path in sorted(folder.glob("*/seed*.json")):
                records.add(path, arcname=f"{folder.name}/{path.parent.name}/{path.name}")
    for folder in folders:
        with tarfile.open(out / f"{folder.name}-notebooks.tar.gz", "w:gz") as notebooks:
            for path in sorted(folder.glob("*/seed*.ipynb")):
                try:
                    data = json.dumps(strip_images(json.loads(path.read_text()))).encode()
                except (OSError, ValueError):
                    continue
                info = tarfile.TarInfo(f"{folder.name}/{path.parent.name}/{path.name}")
                info.size = len(data)
                notebooks.addfile(info, io.BytesIO(data))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, required=True, help="unix time by which every run has ended")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--full", nargs="*", default=[], help="chapters to run at full (notebook names)")
    parser.add_argument("--smoke-jobs", type=int, default=5)
    parser.add_argument("--no-smoke", action="store_true")
    parser.add_argument("--threads", nargs="*", default=[], metavar="CHAPTER=N",
                        help="CPU threads of a --full run instead of THREADS' (e.g. contrastive=5)")
    parser.add_argument("--grace", type=float, default=GRACE, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("--profile", default="full", help="of the --full runs (ci tries this script on a CPU)")
    parser.add_argument("--device", default="cuda", help="of the --full runs (cpu tries this script on a CPU)")
    args = parser.parse_args()
    import torch

    session = {"torch": torch.__version__, "cuda": torch.cuda.is_available(), "python": sys.version.split()[0],
               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": []}
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here: nothing run")
        return 0
    if torch.cuda.is_available():
        session["device"] = torch.cuda.get_device_name(0)
        session["device_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    session["cpus"] = os.cpu_count()
    notebooks = {nb.stem: nb for nb in toc_notebooks(ROOT)}
    threads = dict(THREADS)
    for item in args.threads:
        chapter, _, count = item.partition("=")
        if chapter not in notebooks or not count.isdigit() or int(count) < 1:
            parser.error(f"--threads: expected CHAPTER=N with a known chapter and N >= 1, got {item!r}")
        threads[chapter] = int(count)
    unknown = sorted(set(args.full) - set(notebooks))
    if unknown:
        parser.error(f"--full: unknown chapters {unknown}")
    args.out.mkdir(parents=True, exist_ok=True)
    smoke_out, full_out = ROOT / "_build" / "cuda-smoke", ROOT / "_build" / "seeds-full"
    logs = args.out / "logs"
    logs.mkdir(exist_ok=True)
    limit = args.until - args.grace - time.time()  # SIGTERM at until - grace, SIGKILL at until
    jobs = []
    if not args.no_smoke:
        jobs.append(Job("smoke", [sys.executable, "-m", "feature_learning.build.cuda_smoke", "--jobs",
                                  str(args.smoke_jobs), "--threads", "1", "--out", str(smoke_out)], limit,
                        args.smoke_jobs, logs / "smoke.log"))
    for chapter in args.full:
        (full_out / chapter / "seed0.json").unlink(missing_ok=True)
        jobs.append(Job(f"{args.profile}:{chapter}", chapter_command(notebooks[chapter], args.profile, full_out,
                                                                     args.device),
                        limit, threads.get(chapter, 1), logs / f"full-{chapter}.log"))
    with gpu_peaks() as peaks:
        for job in jobs:
            job.start(ROOT)
        supervise(jobs, args.grace, poll=1.0)
    for job in jobs:
        session["runs"].append({"run": job.name, "threads": job.threads, "seconds": round(job.seconds),
                                "finished": not job.stopped, "exit": job.proc.returncode,
                                "killed": job.killed})
        if job.name == "smoke":
            continue
        chapter = job.name.split(":", 1)[1]
        record = finish(job, notebooks[chapter], args.profile, full_out, args.device, args.grace)
        record["seconds"] = round(job.seconds)
        if job.name in peaks:  # each full run's record gets its time and memory, for `seeds keep-full`
            record["peak_gpu_gb"] = round(peaks[job.name] * 2**20 / 1e9, 1)
        (full_out / chapter / "seed0.json").write_text(json.dumps(record, indent=1) + "\n")
    session["peak_gpu_mib"] = peaks
    (args.out / "session.json").write_text(json.dumps(session, indent=1) + "\n")
    pack(args.out, [smoke_out, full_out])
    for path in logs.glob("*.log"):
        path.unlink()
    logs.rmdir()
    print(json.dumps(session["runs"]))
    print("peak GPU MiB:", json.dumps(peaks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

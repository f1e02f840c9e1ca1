"""One lent GPU session, as one prepared script (issue 22, item 6): the CUDA smoke of every chapter at ``ci``
(``feature_learning.build.cuda_smoke``, the code path of ``make test-cuda``) and, beside it, as many chapters at
``full`` as a fixed deadline allows (``feature_learning.build.seeds run --profile full --device cuda``), all on the
one GPU at once, each process with the CPU threads given below so that the machine's cores are not oversubscribed.

    python benchmarks/gpu_session.py --until <unix time> --out <folder> [--full a b ...] [--smoke-jobs 5]
                                     [--threads chapter=N ...]

At the deadline every run still going is stopped (its partial executed notebook stays: papermill saves it after
each cell). A monitor samples ``nvidia-smi`` every two seconds and keeps each run's peak GPU memory (the kernel
process's, found through its parent's command line). Written to ``--out``: ``session.json`` (device, versions, per
run: what, threads, seconds, exit code, finished or stopped, peak GPU memory), ``records.tar.gz`` (each run's record
with its claims ledger, and its log) and ``<folder>-notebooks.tar.gz`` (the executed notebooks, finished or partial,
images removed, papermill's per-cell timings kept). On a machine without CUDA it says so and runs nothing.

The times measured here are of runs that shared the GPU and the cores with each other: upper bounds on a run alone.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from feature_learning.build.notebooks import toc_notebooks  # noqa: E402

# CPU threads of each full run: the chapters whose CPU parts are heavy get two (README: ICL's CPU-side parity
# constructions, the contrastive allocation grid); every other one, and every smoke chapter, one.
THREADS = {"icl_model_scale": 2, "contrastive": 2}


def gpu_samples() -> list[tuple[int, int]]:
    """(pid, used MiB) of every process on the GPU now."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True)
    except OSError:
        return []
    out = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            out.append((int(parts[0]), int(parts[1])))
    return out


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


def monitor(peaks: dict[str, int], stop: threading.Event) -> None:
    while not stop.is_set():
        for pid, mib in gpu_samples():
            key = owner(pid)
            if key:
                peaks[key] = max(peaks.get(key, 0), mib)
        stop.wait(2.0)


def strip_images(path: Path) -> bytes:
    """An executed notebook without its images (its text outputs and papermill's per-cell timings kept)."""
    nb = json.loads(path.read_text())
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for mime in [m for m in data if m.startswith("image/")]:
                data[mime] = "(removed)"
    return json.dumps(nb).encode()


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
                    data = strip_images(path)
                except (OSError, ValueError):
                    continue
                info = tarfile.TarInfo(f"{folder.name}/{path.parent.name}/{path.name}")
                info.size = len(data)
                notebooks.addfile(info, io.BytesIO(data))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, required=True, help="unix time at which every run still going stops")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--full", nargs="*", default=[], help="chapters to run at full (notebook names)")
    parser.add_argument("--smoke-jobs", type=int, default=5)
    parser.add_argument("--no-smoke", action="store_true")
    parser.add_argument("--threads", nargs="*", default=[], metavar="CHAPTER=N",
                        help="CPU threads of a --full run instead of THREADS' (e.g. contrastive=5)")
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
    runs = []  # (name, threads, Popen, start, log)

    def start(name: str, cmd: list[str], threads: int) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
               "PYTHONUNBUFFERED": "1"}
        log = open(logs / f"{name.replace(':', '-')}.log", "w")
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        runs.append((name, threads, proc, time.time(), log))

    peaks: dict[str, int] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=monitor, args=(peaks, stop), daemon=True)
    watcher.start()
    if not args.no_smoke:
        start("smoke", [sys.executable, "-m", "feature_learning.build.cuda_smoke", "--jobs", str(args.smoke_jobs),
                        "--threads", "1", "--out", str(smoke_out)], args.smoke_jobs)
    for chapter in args.full:
        start(f"full:{chapter}", [sys.executable, "-m", "feature_learning.build.seeds", "run", "--notebook",
                                  str(notebooks[chapter]), "--profile", args.profile, "--seed", "0", "--out",
                                  str(full_out), "--device", args.device], threads.get(chapter, 1))
    ended: dict[str, float] = {}
    while len(ended) < len(runs) and time.time() < args.until:
        for name, _, proc, began, _ in runs:
            if name not in ended and proc.poll() is not None:
                ended[name] = time.time() - began
                print(f"{time.strftime('%H:%M:%S')} {name} ended after {ended[name]:.0f} s, exit {proc.returncode}",
                      flush=True)
        time.sleep(1.0)
    for name, _, proc, _, _ in runs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            print(f"{time.strftime('%H:%M:%S')} {name} STOPPED at the deadline", flush=True)
    stop.set()
    for name, threads, proc, began, log in runs:
        proc.wait()
        log.close()
        session["runs"].append({"run": name, "threads": threads, "seconds": round(ended.get(name, time.time() - began)),
                                "finished": name in ended, "exit": proc.returncode if name in ended else None})
    session["peak_gpu_mib"] = peaks
    (args.out / "session.json").write_text(json.dumps(session, indent=1) + "\n")
    for run in session["runs"]:  # each full run's record gets its time and memory, for `seeds keep-full`
        chapter = run["run"].removeprefix("full:")
        record = full_out / chapter / "seed0.json"
        if run["run"].startswith("full:") and record.exists():
            data = json.loads(record.read_text())
            data["seconds"] = run["seconds"]
            if f"{args.profile}:{chapter}" in peaks:
                data["peak_gpu_gb"] = round(peaks[f"{args.profile}:{chapter}"] * 2**20 / 1e9, 1)
            record.write_text(json.dumps(data, indent=1) + "\n")
    pack(args.out, [smoke_out, full_out])
    for path in (logs).glob("*.log"):
        path.unlink()
    logs.rmdir()
    print(json.dumps(session["runs"]))
    print("peak GPU MiB:", json.dumps(peaks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How much a chapter slows down beside a competing CPU-bound process: alone, then loaded, through the book's executor.

    .venv/bin/python benchmarks/load.py --chapters looped_transformers nuclear_norm   # default: every chapter
    .venv/bin/python benchmarks/load.py --chapters looped_transformers --threads 0    # threads left unset

Each chapter executes at the profile (default ``ci``) with ``feature_learning.build.execute`` (one kernel, ``--threads``
threads: 1 as ``make book`` and ``make test`` run them, 0 to leave OpenMP/MKL/torch to pick one per core), first
alone, then while ``--competitors`` busy-looping Python processes (default 1) hold cores. The slowdown factor is the
loaded wall time over the alone one. Results are merged into _build/benchmarks/load.json under the thread setting,
with the machine's core count and its load average before each run (on a shared machine "alone" is only as alone as
the others let it be: read the load averages).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from feature_learning.book.claims import project_root
from feature_learning.build import cache_key
from feature_learning.build.execute import execute, tasks_for, usable_cores

ROOT = project_root(Path(__file__).resolve().parent)
BUSY = "while True:\n    pass\n"


def timed(task, inputs) -> tuple[float, bool, float]:
    load = os.getloadavg()[0]
    start = time.perf_counter()
    (record,) = execute([task], workers=1, inputs=inputs, force=True, stream=open(os.devnull, "w"))
    return round(time.perf_counter() - start, 1), bool(record["ok"]), round(load, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="*", default=None, help="notebook names (default: every chapter)")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--threads", type=int, default=1, help="threads per kernel (0: unset)")
    parser.add_argument("--competitors", type=int, default=1, help="busy-looping processes beside the chapter")
    args = parser.parse_args()
    inputs = cache_key.inputs(project=ROOT)
    out_file = ROOT / "_build" / "benchmarks" / "load.json"
    results = json.loads(out_file.read_text()) if out_file.exists() else {}
    setting = results.setdefault(f"threads={args.threads or 'unset'}", {})
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks_for(Path(tmp), args.profile, args.chapters, root=ROOT, threads=args.threads):
            alone, ok_alone, load_alone = timed(task, inputs)
            busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.competitors)]
            try:
                time.sleep(1)
                loaded, ok_loaded, load_loaded = timed(task, inputs)
            finally:
                for proc in busy:
                    proc.kill()
                    proc.wait()
            row = {"profile": args.profile, "alone_s": alone, "loaded_s": loaded,
                   "slowdown": round(loaded / alone, 2), "competitors": args.competitors, "ok": ok_alone and ok_loaded,
                   "loadavg_before_alone": load_alone, "loadavg_before_loaded": load_loaded, "cores": usable_cores(),
                   "measured": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
            setting[task.chapter] = row
            print(f"{task.chapter} (threads={args.threads or 'unset'}): alone {alone} s, beside "
                  f"{args.competitors} busy process(es) {loaded} s: slowdown {row['slowdown']}x "
                  f"(load average {load_alone} / {load_loaded})", flush=True)
            out_file.parent.mkdir(parents=True, exist_ok=True)
            out_file.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out_file}")


if __name__ == "__main__":
    main()

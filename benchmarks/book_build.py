"""Time `make book` from an empty build, then an unchanged rebuild (the README's budgets: 45 min and 2 min).

    .venv/bin/python benchmarks/book_build.py            # removes _build/html and the execution cache first
    .venv/bin/python benchmarks/book_build.py --keep     # times two builds on the cache as it stands

Writes _build/benchmarks/book_build.json (wall seconds of each build and the chapters' own execution times as
myst-nb reported them). Run it on an otherwise idle machine: the chapters execute one after the other.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = re.compile(r"(\S+\.ipynb): Executed notebook in ([0-9.]+) seconds")


def timed_build() -> tuple[float, dict[str, float], int]:
    start = time.perf_counter()
    done = subprocess.run(["make", "--no-print-directory", "book"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    chapters = {Path(path).stem: float(s) for path, s in EXECUTED.findall(done.stdout + done.stderr)}
    return seconds, chapters, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the execution cache (no build from scratch)")
    args = parser.parse_args()
    if not args.keep:
        for name in ("html", ".jupyter_cache", "jupyter_execute"):
            shutil.rmtree(ROOT / "_build" / name, ignore_errors=True)
    results = {}
    for label in ("first", "unchanged rebuild"):
        seconds, chapters, code = timed_build()
        results[label] = {"seconds": round(seconds, 1), "exit": code, "executed": chapters}
        print(f"{label}: {seconds / 60:.1f} min (exit {code}), executed {len(chapters)} chapters")
        for name, s in chapters.items():
            print(f"    {name:28s} {s:7.1f} s")
    out = ROOT / "_build" / "benchmarks" / "book_build.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

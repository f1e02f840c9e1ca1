"""Time `make book` from an empty execution cache, then an unchanged rebuild.

    .venv/bin/python benchmarks/book_build.py                 # removes the book's execution cache and site first
    .venv/bin/python benchmarks/book_build.py --keep          # times two builds on the cache as it stands
    .venv/bin/python benchmarks/book_build.py --profile ci --chapters looped_transformers nuclear_norm

Writes _build/benchmarks/book_build.json: the wall seconds of each build and each chapter's record from the
executor (its seconds, and whether it was executed or reused from the cache). The chapters execute several at a
time (one per core), so run it on an otherwise idle machine for numbers to quote.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_build(profile: str, chapters: list[str]) -> tuple[float, int, str]:
    command = ["make", "--no-print-directory", "book", f"PROFILE={profile}"]
    if chapters:
        command.append(f"CHAPTERS={' '.join(chapters)}")
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the execution cache (no build from scratch)")
    parser.add_argument("--profile", default="book")
    parser.add_argument("--chapters", nargs="*", default=[])
    args = parser.parse_args()
    runs = ROOT / "_build" / "executed" / args.profile
    if not args.keep:
        for path in (runs, ROOT / "_build" / "site-book", ROOT / "_build" / "html"):
            shutil.rmtree(path, ignore_errors=True)
    results = {"profile": args.profile, "chapters": args.chapters or "all"}
    for label in ("first", "unchanged rebuild"):
        seconds, code, stdout = timed_build(args.profile, args.chapters)
        executed = sum(": started" in line for line in stdout.splitlines())
        records = {p.stem: json.loads(p.read_text()) for p in sorted((runs / "_execution").glob("*.json"))}
        results[label] = {"seconds": round(seconds, 1), "exit": code, "executed": executed,
                          "chapter_seconds": {k: r.get("seconds") for k, r in records.items()}}
        print(f"{label}: {seconds / 60:.1f} min (exit {code}), executed {executed} chapter(s)")
    out = ROOT / "_build" / "benchmarks" / "book_build.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

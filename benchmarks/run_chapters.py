"""Time every chapter notebook of the table of contents at a profile (default: ci), one after the other.

    .venv/bin/python benchmarks/run_chapters.py --profile ci

Prints one line per chapter with its wall time and writes them to _build/benchmarks/<profile>.json.
Chapters run with papermill in a fresh kernel each, the way CI runs them (minus nbval's bookkeeping).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import papermill

from feature_learning.book.claims import project_root
from feature_learning.build.notebooks import toc_notebooks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--only", default=None, help="substring of the notebook path to time")
    args = parser.parse_args()
    root = project_root(Path(__file__).resolve().parent)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("BOOK_CLAIMS_DIR", str(Path(tmp) / "claims"))
        for rel in toc_notebooks(root):
            if args.only and args.only not in str(rel):
                continue
            start = time.perf_counter()
            papermill.execute_notebook(str(root / rel), str(Path(tmp) / rel.name), parameters={"profile": args.profile},
                                       cwd=str((root / rel).parent), progress_bar=False)
            results[str(rel)] = round(time.perf_counter() - start, 1)
            print(f"{rel}: {results[str(rel)]} s at profile {args.profile}", flush=True)
    out = root / "_build" / "benchmarks" / f"{args.profile}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"profile": args.profile, "cpus": os.cpu_count(), "seconds": results}, indent=2))


if __name__ == "__main__":
    main()

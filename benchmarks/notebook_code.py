"""How much code each chapter notebook holds: code lines (non-blank, non-comment), code cells, median and largest
cell, functions defined in cells, and lines in cells shown to the reader (not tagged hide-input or remove-input).

    python benchmarks/notebook_code.py [--ref REV]     # every chapter of _toc.yml, at the working tree or at REV
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

from feature_learning.build.notebooks import toc_notebooks

ROOT = Path(__file__).resolve().parents[1]


def cell_lines(cell: dict) -> int:
    lines = "".join(cell["source"]).splitlines()
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def measure(notebook: dict) -> dict:
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"
            and "parameters" not in c.get("metadata", {}).get("tags", [])]
    sizes = [cell_lines(c) for c in code]
    hidden = sum(n for c, n in zip(code, sizes, strict=True)
                 if {"hide-input", "remove-input"} & set(c.get("metadata", {}).get("tags", [])))
    defs = sum("".join(c["source"]).count("\ndef ") + "".join(c["source"]).startswith("def ") for c in code)
    return {"code_lines": sum(sizes), "cells": len(sizes), "median": statistics.median(sizes) if sizes else 0,
            "max": max(sizes, default=0), "defs": defs, "shown": sum(sizes) - hidden}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", help="a git revision to measure instead of the working tree")
    args = parser.parse_args()
    print(f"{'chapter':28} {'lines':>6} {'cells':>6} {'median':>7} {'max':>5} {'defs':>5} {'shown':>6}")
    for rel in toc_notebooks(ROOT):
        if args.ref:
            text = subprocess.run(["git", "show", f"{args.ref}:{rel}"], cwd=ROOT, capture_output=True, text=True)
            if text.returncode:
                continue
            notebook = json.loads(text.stdout)
        else:
            notebook = json.loads((ROOT / rel).read_text())
        m = measure(notebook)
        print(f"{rel.stem:28} {m['code_lines']:6} {m['cells']:6} {m['median']:7} {m['max']:5} {m['defs']:5} "
              f"{m['shown']:6}")


if __name__ == "__main__":
    main()

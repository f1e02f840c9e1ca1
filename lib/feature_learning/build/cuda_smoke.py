"""CUDA smoke test (``make test-cuda``): every chapter at the ``ci`` profile with ``device=cuda``, several at a time.

``python -m feature_learning.build.cuda_smoke [--jobs 4] [--out _build/cuda-smoke] [--chapters a b ...]``

Each chapter runs as ``python -m feature_learning.build.seeds run --profile ci --seed 0 --device cuda`` (papermill),
its record and executed notebook in ``--out``; the command prints one line per chapter (status, seconds, claims) and
exits 1 if any chapter crashed or failed a claim. Where ``torch.cuda.is_available()`` is false it runs nothing, says
so and exits 0: the CPU-only CI skips it, and a GPU machine runs it before any ``full`` run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from feature_learning.book.claims import project_root
from feature_learning.build.notebooks import toc_notebooks
from feature_learning.build.seeds import ACCEPTED

SKIP_MESSAGE = ("test-cuda: SKIPPED, no CUDA device here (torch.cuda.is_available() is False); no chapter ran. "
                "Run it on a machine with a GPU.")


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def run_chapter(notebook: Path, out: Path, root: Path, threads: int) -> dict:
    """One chapter at ci on CUDA in its own process; its record (see ``seeds.run_one``) plus the wall time."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "feature_learning.build.seeds", "run", "--notebook", str(notebook),
                           "--profile", "ci", "--seed", "0", "--out", str(out), "--device", "cuda"],
                          cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    record_path = out / notebook.stem / "seed0.json"
    if proc.returncode != 0 or not record_path.exists():
        return {"chapter": notebook.stem, "ok": False, "seconds": seconds, "ledger": None,
                "error": (proc.stderr.strip().splitlines() or ["no record written"])[-1][:500]}
    return {**json.loads(record_path.read_text()), "seconds": seconds}


def smoke(notebooks: list[Path], out: Path, root: Path, jobs: int, threads: int,
          runner: Callable[[Path, Path, Path, int], dict] = run_chapter) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda nb: runner(nb, out, root, threads), notebooks))


def report(records: list[dict]) -> tuple[str, bool]:
    lines, ok = [], True
    for rec in records:
        claims = (rec.get("ledger") or {}).get("claims", [])
        passed = sum(c.get("status") in ACCEPTED for c in claims)
        status = "ok" if rec["ok"] else f"FAILED: {rec.get('error')}"
        ok &= bool(rec["ok"])
        lines.append(f"{rec['chapter']:<24} {rec['seconds']:7.1f} s  claims {passed}/{len(claims)} accepted  {status}")
    lines.append(f"test-cuda: {sum(r['ok'] for r in records)}/{len(records)} chapters ran at ci on CUDA"
                 + ("" if ok else " -- FAILED"))
    return "\n".join(lines), ok


def main(argv: list[str] | None = None, available: Callable[[], bool] = cuda_available) -> int:

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4, help="chapters at a time on the GPU")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of each chapter")
    parser.add_argument("--out", type=Path, default=Path("_build/cuda-smoke"))
    parser.add_argument("--chapters", nargs="*", default=None, help="notebook names (default: every chapter)")
    args = parser.parse_args(argv)
    if not available():
        print(SKIP_MESSAGE)
        return 0
    root = project_root()
    notebooks = toc_notebooks(root)
    if args.chapters:
        unknown = sorted(set(args.chapters) - {nb.stem for nb in notebooks})
        if unknown:
            parser.error(f"unknown chapters {unknown}")
        notebooks = [nb for nb in notebooks if nb.stem in args.chapters]
    start = time.perf_counter()
    text, ok = report(smoke(notebooks, (root / args.out).resolve(), root, args.jobs, args.threads))
    print(text)
    print(f"wall time {time.perf_counter() - start:.0f} s with {args.jobs} at a time; records in {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

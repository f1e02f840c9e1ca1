"""The kernels' allocator settings (``ALLOCATOR_ENVIRONMENT`` of ``feature_learning.build.execute``) against glibc's
defaults, on the training loops of four chapters, each in a fresh process with one thread, alternating:

    python benchmarks/allocator.py [--rounds 2] [--only fourier_transformer fourier_split ...]

The settings keep freed heap memory (``MALLOC_TRIM_THRESHOLD_``) and serve blocks up to 32 MiB from the heap
(``MALLOC_MMAP_THRESHOLD_``; glibc ignores larger values), so that a loop's temporaries are not mapped afresh, page
by page, at every step. Measured on the idle 2-core development machine, 2026-11-27 (seconds of each process,
imports included, two rounds; glibc defaults -> kernel settings): the Fourier chapter's transformer (200 steps of each
grokking pair) 23.3, 24.4 -> 23.5, 22.8; its polynomial network (600 steps of the split run) 34.4, 35.0 -> 25.5, 25.2;
contrastive regularisation at ci 27.3, 28.6 -> 25.9, 27.3; feature emergence's parity program at ci 54.7, 48.8 ->
42.3, 42.9. No number changes: only where memory comes from.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from feature_learning.build.execute import ALLOCATOR_ENVIRONMENT

SETUP = """
import dataclasses, torch
torch.set_num_threads(1)
from feature_learning.book.profiles import start_run
"""
WORKLOADS = {
    "fourier_transformer": """
from feature_learning.experiments import fourier_circuits as ex
size = dataclasses.replace(ex.SIZES["book"].grok, steps=200)
ex.grokking_sweep(size, start_run("book", 0, "cpu"))
""",
    "fourier_split": """
from feature_learning.experiments import fourier_circuits as ex
size = dataclasses.replace(ex.SIZES["book"].split, steps=600, original_steps=300)
ex.split_run(size, start_run("book", 0, "cpu"))
""",
    "contrastive_regularisation": """
from feature_learning.experiments import contrastive as ex
ex.regularisation_table(ex.SIZES["ci"], start_run("ci", 0, "cpu"))
""",
    "feature_emergence_parity": """
from feature_learning.experiments import feature_emergence as ex
ex.parity_experiment(ex.SIZES["ci"], start_run("ci", 0, "cpu"))
""",
}


def timed(code: str, extra: dict[str, str]) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for name in ALLOCATOR_ENVIRONMENT:
        env.pop(name, None)
    env.update(extra)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", SETUP + code], env=env, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=list(WORKLOADS), choices=list(WORKLOADS))
    args = parser.parse_args()
    print(f"{'workload':<28} {'glibc defaults (s)':>20} {'kernel settings (s)':>20}")
    for name in args.only:
        plain, tuned = [], []
        for _ in range(args.rounds):
            plain.append(timed(WORKLOADS[name], {}))
            tuned.append(timed(WORKLOADS[name], ALLOCATOR_ENVIRONMENT))
        print(f"{name:<28} {', '.join(f'{t:.1f}' for t in plain):>20} {', '.join(f'{t:.1f}' for t in tuned):>20}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

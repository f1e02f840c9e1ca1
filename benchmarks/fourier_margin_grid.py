"""The Fourier-circuit chapter's main run (S1) over its tested range of (k, p) and over seeds.

The chapter's notebook parameters k and p change only the main run: the network of eq. (4.2) trained on all of
Z_p^k with Definition 4.1's objective (``experiments.fourier_circuits.margin_run``, recipe ``margin_recipe(k, p)``).
This script runs it exactly as the notebook does at a profile (default ``ci``) for every (k, p) of
``TESTED_PAIRS`` and every seed, and checks the claims of the notebook's two S1 sections with the notebook's bounds.

    python benchmarks/fourier_margin_grid.py [--seeds 0 1 2 3 4 5] [--pairs 2,5 3,7] [--profile ci] [--json out.json]

It exits with status 1 if a claim fails at some (k, p) and seed.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from feature_learning.book.profiles import start_run
from feature_learning.experiments import fourier_circuits as experiment
from feature_learning.theory.fourier_circuits import gamma_star

# the notebook's S1 claims: id -> (summary key, test); keep in step with fourier_circuits.ipynb
CLAIMS = {
    "trained_margin_ratio": ("margin_ratio", lambda v, k, p: v >= 0.9),
    "trained_margin_never_above": ("margin_ratio_max", lambda v, k, p: v <= 1 + 1e-9),
    "one_sparse_neurons": ("power_median", lambda v, k, p: v >= 0.99),
    "same_frequency": ("same_frequency", lambda v, k, p: v >= 0.95),
    "phase_law_trained": ("phase_median", lambda v, k, p: v <= 0.1),
    "frequency_coverage": ("frequencies_used_sparse", lambda v, k, p: v == (p - 1) // 2),
    "frequency_balance": ("balance_sparse", lambda v, k, p: v <= 0.5),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--pairs", nargs="+", default=None, help="k,p pairs (default: the tested range)")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--json", default=None, help="write every run's summary here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    pairs = [tuple(int(x) for x in kp.split(",")) for kp in args.pairs] if args.pairs else experiment.TESTED_PAIRS
    rows, failures = [], 0
    print(f"{'k':>2} {'p':>3} {'seed':>4} {'width':>5}  {'margin/γ*':>9} {'max':>7} {'power':>7} {'vs init':>7} "
          f"{'same ζ':>6} {'phase':>6} {'used':>5} {'balance':>7} {'cpu s':>6}  failed")
    for k, p in pairs:
        size = experiment.sizes(args.profile, k=k, p=p).margin
        gamma = float(gamma_star(k, p))
        for seed in args.seeds:
            start = time.process_time()
            result = experiment.margin_run(size, start_run(args.profile, seed, "cpu"), gamma)
            s = result.summary()
            s["power_above_init"] = s["power_median"] - s["power_init_q99"]
            failed = [c for c, (key, test) in CLAIMS.items() if not test(s[key], k, p)]
            failures += bool(failed)
            cpu = time.process_time() - start
            rows.append({"k": k, "p": p, "seed": seed, "width": result.recipe.width, "cpu_s": cpu, **s,
                         "failed": failed})
            print(f"{k:2d} {p:3d} {seed:4d} {result.recipe.width:5d}  {s['margin_ratio']:9.4f} "
                  f"{s['margin_ratio_max']:7.4f} {s['power_median']:7.4f} {s['power_above_init']:7.3f} "
                  f"{s['same_frequency']:6.3f} {s['phase_median']:6.4f} "
                  f"{s['frequencies_used_sparse']:2d}/{(p - 1) // 2:<2d} {s['balance_sparse']:7.3f} {cpu:6.1f}  "
                  f"{' '.join(failed) or '-'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"{len(rows)} runs, {failures} with a failing claim")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""GemFilter's timed speed-up under a changing load: the phases timed one after the other against timed in turn.

    .venv/bin/python benchmarks/gemfilter_timing_load.py                  # 10 repetitions, two bursty competitors
    .venv/bin/python benchmarks/gemfilter_timing_load.py --reps 4 --competitors 0

The claim ``prompt_speedup_full_layer`` (book/chapters/foundation_models/gemfilter.ipynb) is the full prefill's CPU
time over that of GemFilter's selection with layer r* in full, averaged over the `ci` prompts of 1024 tokens or more;
the cost model gives m/r*. Until 2026-11-27 the two phases were timed one after the other
(``full_layer_seconds`` after ``timing``); CI then measured 1.495 against m/r* = 4/3, within noise of the 20% bound,
while another notebook shared the two cores. This script times the same phases both ways on an untrained decoder of
the `ci` shape (timing does not depend on the weights) while ``--competitors`` processes alternate, at random, between
0.3-2 s of matrix products and memory traffic and 0.3-2 s of sleep, as another notebook's phases do. For each
repetition it prints both estimates with their standard error over the prompt lengths and the distance, in standard
errors, from the nearer edge of the claim's bound [0.8, 1.2] * m/r*: the ledger fails a claim within 2.

Measured on an unnamed 2-core machine, 2026-11-27, two competitors, r* = 3 (m/r* = 1.333), 10 repetitions:
one after the other 1.237-1.415, nearest 2.0 se from the bound; in turn 1.296-1.336, nearest 6.0 se. Writes
_build/benchmarks/gemfilter_timing_load.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def compete(seconds: float, seed: int) -> None:
    """Alternate at random between busy spells (matrix products and a pass over 256 MB) and sleep."""
    torch.set_num_threads(1)
    rng, end = random.Random(seed), time.time() + seconds
    big, a = torch.randn(64_000_000), torch.randn(1024, 1024)
    while time.time() < end:
        until = time.time() + rng.uniform(0.3, 2.0)
        if rng.random() < 0.5:
            while time.time() < until:
                big.mul_(1.0001)
                a @ a
        else:
            time.sleep(max(0.0, until - time.time()))


def estimate(values: list[float], limit: float) -> dict:
    mean, se = statistics.mean(values), statistics.stdev(values) / len(values) ** 0.5
    return {"mean": mean, "se": se, "ses_from_bound": min(mean - 0.8 * limit, 1.2 * limit - mean) / se}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--competitors", type=int, default=2)
    parser.add_argument("--layer", type=int, default=3, help="the filter layer r* (of m = 4)")
    parser.add_argument("--compete", nargs=2, type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compete:
        compete(*args.compete)
        return
    from feature_learning.book.profiles import Run
    from feature_learning.experiments import gemfilter as experiment
    from feature_learning.experiments.gemfilter import runs
    from feature_learning.models.rope_decoder import RopeDecoder

    torch.manual_seed(0)
    size, run = experiment.CI, Run("ci", 0, torch.device("cpu"))
    model = RopeDecoder(size.model).eval()
    limit = size.model.n_layers / args.layer
    competitors = [subprocess.Popen([sys.executable, __file__, "--compete", "3600", str(i)])
                   for i in range(args.competitors)]
    rows = []
    try:
        for rep in range(args.reps):
            timing = runs.timing(model, args.layer, size, run)
            sequential = [row.full_seconds / s for row, s in
                          zip(timing, runs.full_layer_seconds(model, args.layer, size, run), strict=True)]
            in_turn = [full / select for full, select in
                       runs.interleaved_full_layer_seconds(model, args.layer, size, run)]
            long = [i for i, row in enumerate(timing) if row.length >= 1024]
            row = {"sequential": estimate([sequential[i] for i in long], limit),
                   "in_turn": estimate([in_turn[i] for i in long], limit)}
            rows.append(row)
            print(rep, "  ".join(f"{k} {v['mean']:.3f} ± {v['se']:.3f} ({v['ses_from_bound']:.1f} se from the bound)"
                                 for k, v in row.items()), flush=True)
    finally:
        for p in competitors:
            p.kill()
    out = ROOT / "_build" / "benchmarks" / "gemfilter_timing_load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"competitors": args.competitors, "layer": args.layer, "limit": limit, "reps": rows},
                              indent=1))
    for key in ("sequential", "in_turn"):
        means = [r[key]["mean"] for r in rows]
        print(f"{key}: {min(means):.3f}-{max(means):.3f}, nearest {min(r[key]['ses_from_bound'] for r in rows):.1f} "
              "se from the bound")


if __name__ == "__main__":
    main()

"""Diagnosis of the simplicity-bias `full` failures of 2026-11-27 (`early_clustering`, `directions_kept`): the
skewed-XOR experiment at the `full` sizes (widths 512 and 4096, step 2^-4) for its first EPOCHS epochs on the CPU,
snapshots every EPOCHS/128 epochs, printing each run's loss and the mass within 0.1 rad of G's extrema over flow
time, and the early checkpoint (mean loss 1% below ln 2) with each run's mass there.

    python benchmarks/simplicity_bias_full_early.py full 1024     # about 3 min on two threads
    python benchmarks/simplicity_bias_full_early.py book          # the book's run, whole, for comparison

The output of the first line is results/diagnostics/simplicity_bias_full_early.txt.
"""

import dataclasses
import sys
import time

import torch

from feature_learning.book.profiles import Run
from feature_learning.experiments import simplicity_bias as sb
from feature_learning.experiments.simplicity_bias import runs as R

profile = sys.argv[1]
size = (sb.FULL if profile == "full" else sb.BOOK).skew
size = dataclasses.replace(size, resamples=2, epochs=int(sys.argv[2]) if len(sys.argv) > 2 else size.epochs)
run = Run(profile, 0, torch.device("cpu"))
captured = {}
train = R.logistic_gd


def keep_history(*args, **kwargs):  # the run returns no history: keep it on the way out
    captured["h"] = train(*args, **kwargs)
    return captured["h"]


R.logistic_gd = keep_history
start = time.perf_counter()
res = R.skewed_xor_run(size, run)
print(f"seconds {time.perf_counter() - start:.0f}, early epoch {res.early_epoch}, "
      f"flow time {res.early_epoch * size.lr}")
for r in res.runs:
    print(f"alpha={r.alpha:.3f} width={r.width} mass_init={r.mass_init:.3f} mass_early={r.mass_early:.3f} "
          f"mass_end={r.mass_end:.3f} centre_shift={r.centre_shift:.3f}")
h, nw = captured["h"], len(size.widths)
for s in range(0, len(h["step"]), max(1, len(h["step"]) // 32)):
    mass = [float(R.mass_near(h["W"][s, i * nw + j:i * nw + j + 1, :w], res.extrema[i][0], 0.1)[1][0])
            for i in range(len(res.extrema)) for j, w in enumerate(size.widths)]
    print(f"t={float(h['step'][s]) * size.lr:6.1f} mean loss {float(h['loss'][s].mean()):.4f} "
          f"loss per run {[round(float(x), 4) for x in h['loss'][s]]} "
          f"mass within 0.1 rad {[round(m, 3) for m in mass]}")

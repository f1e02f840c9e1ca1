"""A plan before the spend (``make plan``): each chapter's ``full`` time and memory, predicted on the present device.

``python -m feature_learning.build.plan [--chapters a b ...] [--steps 2] [--device auto] [--limit 600]``

For each chapter it builds the ``full`` sizes and runs the chapter's experiments (the calls its notebook makes, in
order) twice, with every step count (training steps, epochs, iterations: the fields listed in ``STEP_FIELDS``) cut to
a fraction q and then 2q of its ``full`` value, q chosen so that the smallest step count is ``--steps``. Every other
size (widths, batches, samples, replicas, Monte-Carlo draws) stays at ``full``. The time is extrapolated linearly in
q: t(q) = a + b q fitted to the two runs, predicted ``full`` time t(1) = a + b (at least the larger run's time). The
memory is the peak measured in the larger run (CPU: the process's maximum resident set; CUDA: the allocator's peak),
not extrapolated: memory that grows with the step count (logged histories) is not counted. Each chapter runs in its
own process, under ``--limit`` seconds; claims are not checked (the notebooks do that).

Where the linear model fails (a schedule whose cost per step changes with the step count, early stopping, parts
that only run past some step) the prediction is off; it says how many seconds were measured so a reader can judge.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from feature_learning.book.profiles import override, resolve_device, start_run

# The step counts of each chapter's `full` sizes (dotted paths into its size dataclass), cut by the plan.
STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "feature_emergence": ("parity.steps", "injection.teacher_steps", "injection.student_steps"),
    "gradient_features": ("parity.steps", "parity.ticket_steps", "xor.steps", "uniform.steps"),
    "simplicity_bias": ("four.epochs", "four.lemma_epochs", "capture.steps", "skew.epochs", "domino.epochs"),
    "feature_contamination": ("classification.steps", "regression.steps", "extension.steps", "digits.steps"),
    "label_granularity": ("sweep.steps", "logtime.steps", "pruning.steps", "hierarchy.steps"),
    "fourier_circuits": ("split.steps", "grok.steps"),  # and the margin recipe's steps (patched below)
    "icl_model_scale": ("exact.max_iter", "sgd.steps", "transformer.steps"),
    "looped_transformers": ("train.steps",),
    "gemfilter": ("training.steps",),
    "nuclear_norm": ("finite.steps", "finite.nu_steps", "toy.steps", "analogue.steps"),
    "contrastive": ("pretrain.steps", "finetune.steps", "regularisation.steps"),
}
MARGIN_STEPS = 3000  # fourier_circuits.margin_recipe's steps (not a size field)


def _get(obj, path: str):
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def _set(obj, path: str, value):
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: _set(getattr(obj, head), rest, value)})


def base_fraction(chapter: str, steps: int) -> float:
    """q such that the smallest step count of the chapter's ``full`` sizes becomes ``steps``."""
    full = importlib.import_module(f"feature_learning.experiments.{chapter}").SIZES["full"]
    smallest = min([_get(full, f) for f in STEP_FIELDS[chapter]]
                   + ([MARGIN_STEPS] if chapter == "fourier_circuits" else []))
    return min(1.0, steps / smallest)


def cut_sizes(chapter: str, q: float):
    """The chapter's ``full`` sizes with every step count scaled by q (at least 1), and the fix-ups some fields need
    (logging intervals and checkpoints that must lie within the cut run)."""
    ex = importlib.import_module(f"feature_learning.experiments.{chapter}")
    size = ex.SIZES["full"]
    for path in STEP_FIELDS[chapter]:
        size = _set(size, path, max(1, round(q * _get(size, path))))
    if chapter == "feature_emergence":
        size = override(size, parity={"log_every": min(size.parity.log_every, size.parity.steps)})
    elif chapter == "simplicity_bias":
        epochs = max(12, size.four.epochs)  # the growth check reads epoch 12
        size = override(size, four={"epochs": epochs, "lemma_epochs": max(epochs, size.four.lemma_epochs),
                                    "snapshot_every": min(size.four.snapshot_every, epochs)})
        e = max(4, 4 * (size.domino.epochs // 4))
        size = override(size, domino={"epochs": e, "checkpoints": (0, e // 4, e)})
    elif chapter == "feature_contamination":
        size = override(size, classification={"log_every": min(size.classification.log_every,
                                                                size.classification.steps)})
    elif chapter == "label_granularity":
        size = override(size, sweep={"n_log": min(size.sweep.n_log, size.sweep.steps)})
    elif chapter == "gemfilter":
        size = override(size, training={"log_every": min(size.training.log_every, size.training.steps)})
    return size


def _sequence(chapter: str) -> Callable:
    """The experiments the chapter's notebook runs, in its order (figures and claims left out)."""
    ex = importlib.import_module(f"feature_learning.experiments.{chapter}")
    if chapter == "feature_emergence":
        def run_all(s, run, t):
            t("parity_experiment", ex.parity_experiment, s, run)
            t("interval_experiment", ex.interval_experiment, s.interval, run)
            t("sample_size_experiment", ex.sample_size_experiment, s, run)
            t("hidden_representation_experiment", ex.hidden_representation_experiment, s.hidden, run)
            t("gaussian_mixture_experiment", ex.gaussian_mixture_experiment, s.mixture, run)
            t("injection_experiment", ex.injection_experiment, s.injection, run)
    elif chapter == "gradient_features":
        def run_all(s, run, t):
            t("emergence", ex.emergence, s.emergence, run)
            par = t("parity_comparison", ex.parity_comparison, s.parity, run)
            t("lottery_ticket", ex.lottery_ticket, s.parity, run, par)
            t("xor_mixture", ex.xor_mixture, s.xor, run)
            t("uniform_sparse_parity", ex.uniform_sparse_parity, s.uniform, run)
            t("multi_index", ex.multi_index, s.multi_index, run)
    elif chapter == "simplicity_bias":
        def run_all(s, run, t):
            four = t("four_neuron_run", ex.four_neuron_run, s.four, run)
            t("capture_run", ex.capture_run, s.capture, run, four.X, four.y, four.extrema)
            t("skewed_xor_run", ex.skewed_xor_run, s.skew, run)
            t("domino_probe_run", ex.domino_probe_run, s.domino, run)
    elif chapter == "feature_contamination":
        def run_all(s, run, t):
            exp = t("relu_vs_linear", ex.relu_vs_linear, s, run)
            t("theory_checks", ex.theory_checks, s, run, exp)
            t("controls", ex.controls, s, run, exp)
            t("gradient_mechanism", ex.gradient_mechanism, s, run, exp)
            t("regression", ex.regression, s, run)
            t("extension", ex.extension, s, run)
            t("digits", ex.digits, s, run)
    elif chapter == "label_granularity":
        def run_all(s, run, t):
            t("run_lucky_count", ex.run_lucky_count, s, run)
            t("run_sweep", ex.run_sweep, s, run)
            t("run_logtime", ex.run_logtime, s, run)
            t("run_pruning", ex.run_pruning, s, run)
            t("run_hierarchy", ex.run_hierarchy, s, run)
    elif chapter == "fourier_circuits":
        def run_all(s, run, t):
            from feature_learning.theory import fourier_circuits as theory

            gamma = theory.derive_gamma_star().gamma.subs({theory.k_sym: s.margin.k, theory.p_sym: s.margin.p})
            t("margin_run", ex.margin_run, s.margin, run, float(gamma))
            t("split_run", ex.split_run, s.split, run)
            t("grokking_sweep", ex.grokking_sweep, s.grok, run)
    elif chapter == "icl_model_scale":
        def run_all(s, run, t):
            st = t("setting", ex.setting, s, run)
            t("reduction_check", ex.reduction_check, st, run)
            t("exact_training", ex.exact_training, s, run, st)
            t("sgd_training", ex.sgd_training, s, run, st)
            t("pretraining_loss_mc", ex.pretraining_loss_mc, s, run, st)
            t("eval_risk_sweep", ex.eval_risk_sweep, s, run, st)
            t("scale_tradeoff", ex.scale_tradeoff, s, run, st)
            t("flip_sweep", ex.flip_sweep, s, run, st)
            t("parity_robustness", ex.parity_robustness, s, run, ex.parity_constructions(s))
            t("score_sweep", ex.score_sweep, s, run, st)
            t("transformer_scale_sweep", ex.transformer_scale_sweep, s, run)
    elif chapter == "looped_transformers":
        def run_all(s, run, t):
            t("loop_equals_gd", ex.loop_equals_gd, s, run)
            t("figure_81", ex.figure_81, s, run)
            t("error_against_context", ex.error_against_context, s, run)
            t("fixed_step", ex.fixed_step, s, run)
            t("trained_loops", ex.trained_loops, s, run)
    elif chapter == "gemfilter":
        def run_all(s, run, t):
            model = t("train_decoder", ex.train_decoder, s, run).model
            layer = max(1, s.model.n_layers // 4)  # the notebook locates r*; the grid and timing cost alike at any
            t("accuracy_grid", ex.accuracy_grid, model, layer, s, run)
            t("timing", ex.timing, model, layer, s, run)
    elif chapter == "nuclear_norm":
        def run_all(s, run, t):
            t("population", ex.population, s, run)
            t("finite_sample", ex.finite_sample, s, run)
            t("toy_2d", ex.toy_2d, s, run)
            t("domain_analogue synthetic", ex.domain_analogue, s, run, "synthetic")
            t("domain_analogue digits", ex.domain_analogue, s, run, "digits")
    elif chapter == "contrastive":
        def run_all(s, run, t):
            t("allocation", ex.allocation, s, run)
            pre = t("pretrain", ex.pretrain, s, run)
            t("tradeoff", ex.tradeoff, s, run, pre)
            t("finetune", ex.finetune, s, run)
            t("regularisation_table", ex.regularisation_table, s, run)
    else:
        raise ValueError(f"no plan for chapter {chapter!r}; known: {sorted(STEP_FIELDS)}")
    return run_all


def probe(chapter: str, q: float, device: str) -> dict:
    """Run the chapter's experiments once at step fraction q; seconds and peak memory (bytes) of this process."""
    import torch

    ex = importlib.import_module(f"feature_learning.experiments.{chapter}")
    size = cut_sizes(chapter, q)
    run = start_run("full", 0, device)
    restore = None
    if chapter == "fourier_circuits":
        original = ex.margin_recipe
        restore = original

        def cut_recipe(k, p):
            recipe = original(k, p)
            return dataclasses.replace(recipe, optim=dataclasses.replace(
                recipe.optim, steps=max(1, round(q * recipe.optim.steps))))

        ex.margin_recipe = cut_recipe
    cuda = run.device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    stages: dict[str, float] = {}
    incomplete: dict[str, str] = {}

    def timed(label, fn, *args):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        try:  # a check on the cut run's outcome (say, a loss that had no time to fall) may raise after the work
            out = fn(*args)
        except (ValueError, TypeError, AttributeError, RuntimeError, IndexError, ZeroDivisionError) as exc:
            if isinstance(exc, torch.OutOfMemoryError):
                raise
            out = None
            incomplete[label] = f"{type(exc).__name__}: {str(exc)[:120]}"
        if cuda:
            torch.cuda.synchronize()
        stages[label] = time.perf_counter() - start
        print(f"[plan] {chapter} q={q:.4g} {label}: {stages[label]:.1f} s"
              + (f" (raised {incomplete[label]})" if label in incomplete else ""), file=sys.stderr, flush=True)
        return out

    try:
        _sequence(chapter)(size, run, timed)
    finally:
        if restore is not None:
            ex.margin_recipe = restore
    return {"q": q, "seconds": sum(stages.values()), "stages": stages, "incomplete": incomplete,
            "cpu_peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "device_peak_bytes": torch.cuda.max_memory_allocated() if cuda else None}


def _line(q1: float, t1: float, q2: float, t2: float) -> tuple[float, float]:
    """(a, b) of t(q) = a + b q through two probes, both at least 0."""
    b = max(0.0, (t2 - t1) / (q2 - q1)) if q2 > q1 else 0.0
    return max(0.0, t2 - b * q2), b


def predict(first: dict, second: dict) -> dict:
    """Per experiment, t(q) = a + b q through the two probes, predicted at q = 1 (at least the larger probe's time);
    the chapter's prediction is the sum."""
    stages = {}
    for label, t2 in second["stages"].items():
        a, b = _line(first["q"], first["stages"].get(label, t2), second["q"], t2)
        stages[label] = {"fixed_seconds": a, "predicted_seconds": max(t2, a + b)}
    return {"fixed_seconds": sum(v["fixed_seconds"] for v in stages.values()),
            "predicted_seconds": sum(v["predicted_seconds"] for v in stages.values()),
            "measured_seconds": first["seconds"] + second["seconds"], "stages": stages,
            "incomplete": sorted(set(first["incomplete"]) | set(second["incomplete"]))}


def plan_chapter(chapter: str, steps: int, device: str, limit: float, max_memory_gb: float | None) -> dict:
    """Both probes of one chapter in a child process (its own peak memory), within ``limit`` seconds."""
    cmd = [sys.executable, "-m", "feature_learning.build.plan", "--child", chapter, "--steps", str(steps),
           "--device", device] + (["--max-memory-gb", str(max_memory_gb)] if max_memory_gb else [])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        done = [line.split(" ", 3)[-1] for line in err.splitlines() if line.startswith("[plan]")]
        return {"chapter": chapter, "error": f"over the limit of {limit:.0f} s for the two probes",
                "timed_before_the_limit": done}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return {"chapter": chapter, "error": tail}
    return json.loads(lines[-1])


def _child(chapter: str, steps: int, device: str, max_memory_gb: float | None) -> None:
    if max_memory_gb:
        limit = int(max_memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    q = base_fraction(chapter, steps)
    first, second = probe(chapter, q, device), probe(chapter, min(1.0, 2 * q), device)
    out = {"chapter": chapter, "device": str(resolve_device(device)), "steps": steps, "probes": [first, second],
           **predict(first, second), "cpu_peak_bytes": second["cpu_peak_bytes"],
           "device_peak_bytes": second["device_peak_bytes"]}
    print(json.dumps(out))


def _gb(value) -> str:
    return "-" if value is None else f"{value / 2**30:.1f} GiB"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _notes(row: dict) -> str:
    slowest = max(row["stages"].items(), key=lambda kv: kv[1]["predicted_seconds"])
    note = f"slowest: {slowest[0]} {_minutes(slowest[1]['predicted_seconds'])}"
    if row["incomplete"]:
        note += "; raised on the cut run (timed up to the raise): " + ", ".join(row["incomplete"])
    return note


def table(rows: list[dict]) -> str:
    head = ("| chapter | predicted `full` time | fixed part | measured (two probes) | peak memory (CPU) "
            "| peak memory (device) | notes |\n| --- | --- | --- | --- | --- | --- | --- |")
    lines = [head]
    for r in rows:
        if "error" in r:
            done = r.get("timed_before_the_limit") or []
            note = ("timed before the limit: " + "; ".join(done)) if done else ""
            lines.append(f"| {r['chapter']} | not predicted: {r['error']} | | | | | {note} |")
            continue
        lines.append(f"| {r['chapter']} | {_minutes(r['predicted_seconds'])} | {_minutes(r['fixed_seconds'])} "
                     f"| {_minutes(r['measured_seconds'])} | {_gb(r['cpu_peak_bytes'])} "
                     f"| {_gb(r['device_peak_bytes'])} | {_notes(r)} |")
    done = [r for r in rows if "error" not in r]
    total = sum(r["predicted_seconds"] for r in done)
    lines.append(f"\nTotal predicted for the {len(done)} chapter(s) predicted: {_minutes(total)}, one after another.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="*", default=None, help="notebook names (default: every chapter)")
    parser.add_argument("--steps", type=int, default=4, help="the smallest step count of the first probe")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--limit", type=float, default=600, help="seconds for one chapter's two probes")
    parser.add_argument("--max-memory-gb", type=float, default=None, help="address-space limit per chapter (CPU)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("FEATURE_LEARNING_PROGRESS", "0")
    if args.child:
        _child(args.child, args.steps, args.device, args.max_memory_gb)
        return 0
    chapters = args.chapters or list(STEP_FIELDS)
    unknown = sorted(set(chapters) - set(STEP_FIELDS))
    if unknown:
        parser.error(f"unknown chapters {unknown}; known: {sorted(STEP_FIELDS)}")
    device = str(resolve_device(args.device))
    print(f"Plan of the `full` profile on {device} ({os.environ.get('OMP_NUM_THREADS', 'default')} CPU threads): "
          f"every step count cut to q and 2q of `full` (smallest step count {args.steps}), all other sizes at "
          "`full`; time extrapolated linearly in q to q = 1; memory: the larger probe's peak, not extrapolated.\n")
    rows = []
    for chapter in chapters:
        row = plan_chapter(chapter, args.steps, args.device, args.limit, args.max_memory_gb)
        rows.append(row)
        print(f"  {chapter}: " + (row["error"] if "error" in row else
                                  f"{_minutes(row['predicted_seconds'])}, {_gb(row['cpu_peak_bytes'])} CPU, "
                                  f"{_gb(row['device_peak_bytes'])} device"), flush=True)
    print()
    print(table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The Snakemake workflow of the seed sweeps plans one job per (chapter, seed) and one summary (dry run)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from feature_learning.build.gpu import CPU_CHAPTERS
from feature_learning.build.notebooks import toc_notebooks

ROOT = Path(__file__).resolve().parents[2]


def dry_run(*config: str, options: tuple[str, ...] = ("--quiet", "rules")) -> str:
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    result = subprocess.run(
        [str(Path(bindir) / "snakemake"), "-s", "workflow/Snakefile", "-d", str(ROOT), "-n", "--cores", "2",
         "--forceall", *options, "--config", *config],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout + result.stderr


def test_sweep_plans_one_job_per_chapter_and_seed():
    out = dry_run("seeds=0 1 2", "chapters=looped_transformers fourier_circuits")
    counts = dict(re.findall(r"^(chapter_at_seed|summary|total)\s+(\d+)\s*$", out, flags=re.M))
    assert counts == {"chapter_at_seed": "6", "summary": "1", "total": "7"}


def test_empty_chapters_as_make_seeds_passes_them_means_every_chapter():
    out = dry_run("profile=ci", "seeds=0", "chapters=")
    counts = dict(re.findall(r"^(chapter_at_seed|summary|total)\s+(\d+)\s*$", out, flags=re.M))
    assert int(counts["chapter_at_seed"]) == len(toc_notebooks(ROOT))


def test_full_profile_on_gpus_is_planned_and_unknown_chapters_are_refused():
    assert "chapter_at_seed" in dry_run("profile=full", "seeds=0", "device=cuda", "gpus=1",
                                        options=("--quiet", "rules", "--resources", "gpu=1"))
    bindir = str(Path(sys.executable).parent)
    result = subprocess.run(
        [str(Path(bindir) / "snakemake"), "-s", "workflow/Snakefile", "-d", str(ROOT), "-n", "--cores", "1",
         "--config", "chapters=no_such_chapter"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")},
    )
    assert result.returncode != 0 and "no_such_chapter" in result.stdout + result.stderr


def readme_gpu_command() -> str:
    """The README's command that runs every chapter at `full` on one GPU."""
    lines = [line.strip() for line in (ROOT / "README.md").read_text().splitlines()
             if "snakemake -s workflow/Snakefile" in line and "profile=full" in line and "gpu=1" in line]
    assert len(lines) == 1, f"README.md: expected one one-GPU full command, found {lines}"
    return lines[0].strip("`")


def test_readmes_one_gpu_command_plans_every_chapter_once_one_gpu_job_at_a_time_with_cpu_threads():
    """The exact README line, in Snakemake's dry-run mode: one seed of every chapter at `full`, each job declaring the
    one GPU (so `--resources gpu=1` runs them one at a time) and more than one CPU thread."""
    command = readme_gpu_command()
    assert command.startswith("PATH=$PWD/.venv/bin:$PATH snakemake ") and "--cores" in command
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    result = subprocess.run(["bash", "-c", command + " -n --forceall"], cwd=ROOT, env=env, capture_output=True,
                            text=True)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-2000:]
    counts = dict(re.findall(r"^(chapter_at_seed|summary|total)\s+(\d+)\s*$", out, flags=re.M))
    chapters = len(toc_notebooks(ROOT))
    assert counts == {"chapter_at_seed": str(chapters), "summary": "1", "total": str(chapters + 1)}
    assert set(re.findall(r"seeds-full/\w+/seed(\d+)\.json", out)) == {"0"}
    jobs = re.findall(r"rule chapter_at_seed:.*?output: \S+/(\w+)/seed0\.json.*?threads: (\d+)\s+resources: ([^\n]*)",
                      out, flags=re.S)
    assert len(jobs) == chapters and all(int(t) > 1 for _, t, _ in jobs)
    # the chapters that need no GPU hold none, so that they run beside the GPU jobs
    assert {c for c, _, r in jobs if "gpu=0" in r} == set(CPU_CHAPTERS)
    assert all("gpu=1" in r for c, _, r in jobs if c not in CPU_CHAPTERS)
    assert re.search(r"--resources gpu=1\b", command)  # the machine's one GPU: at most one job on it at a time


def test_a_time_limit_wraps_each_run_so_that_it_is_told_to_stop_before_it_is_killed():
    """`timeout=` makes every job's command `timeout --signal=TERM --kill-after=30 <s> python -m ... seeds run`: the
    run gets SIGTERM first (it then writes its record) and keeps its exit status; without it, no limit."""
    out = dry_run("profile=full", "seeds=0", "chapters=gemfilter looped_transformers", "device=cuda", "gpus=1",
                  "timeout=900", options=("--resources", "gpu=1", "--printshellcmds"))
    assert out.count("timeout --preserve-status --signal=TERM --kill-after=30 900 python -m feature_learning.build"
                     ".seeds run") == 2
    assert "looped_transformers.ipynb --profile full --seed 0 --out _build/seeds-full --device cpu" in out
    assert "gemfilter.ipynb --profile full --seed 0 --out _build/seeds-full --device cuda" in out
    assert "timeout" not in dry_run("seeds=0", "chapters=looped_transformers", options=("--printshellcmds",))


def test_gpu_jobs_without_the_gpu_count_are_refused():
    """Without `--resources gpu=N` Snakemake would start every GPU job at once on one GPU."""
    bindir = str(Path(sys.executable).parent)
    result = subprocess.run(
        [str(Path(bindir) / "snakemake"), "-s", "workflow/Snakefile", "-d", str(ROOT), "-n", "--cores", "16",
         "--config", "profile=full", "device=cuda", "gpus=1"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")},
    )
    assert result.returncode != 0 and "--resources gpu=" in result.stdout + result.stderr

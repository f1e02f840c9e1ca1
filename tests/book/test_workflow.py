"""The Snakemake workflow of the seed sweeps plans one job per (chapter, seed) and one summary (dry run)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from feature_learning.book.notebooks import toc_notebooks

ROOT = Path(__file__).resolve().parents[2]


def dry_run(*config: str) -> str:
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    result = subprocess.run(
        [str(Path(bindir) / "snakemake"), "-s", "workflow/Snakefile", "-d", str(ROOT), "-n", "--cores", "2",
         "--quiet", "rules", "--forceall", "--config", *config],
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
    assert "chapter_at_seed" in dry_run("profile=full", "seeds=0", "device=cuda", "gpus=1")
    bindir = str(Path(sys.executable).parent)
    result = subprocess.run(
        [str(Path(bindir) / "snakemake"), "-s", "workflow/Snakefile", "-d", str(ROOT), "-n", "--cores", "1",
         "--config", "chapters=no_such_chapter"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")},
    )
    assert result.returncode != 0 and "no_such_chapter" in result.stdout + result.stderr

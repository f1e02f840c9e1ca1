"""`make test-cuda`: skipped with a clear message without CUDA; with CUDA, every chapter runs and failures count."""

import subprocess
import sys
from pathlib import Path

from feature_learning.build import cuda_smoke
from feature_learning.build.notebooks import toc_notebooks

ROOT = Path(__file__).resolve().parents[2]


def test_without_cuda_nothing_runs_and_the_skip_is_said(monkeypatch, capsys):
    def no_run(*args, **kwargs):
        raise AssertionError("a chapter ran without CUDA")

    monkeypatch.setattr(cuda_smoke, "smoke", no_run)
    assert cuda_smoke.main([], available=lambda: False) == 0
    out = capsys.readouterr().out
    assert "SKIPPED" in out and "torch.cuda.is_available() is False" in out


def test_make_test_cuda_on_this_machine_skips_or_runs():
    """The make target's command itself: on a CPU-only machine (CI) it skips and succeeds."""
    import torch

    if torch.cuda.is_available():
        return  # a GPU machine runs the real smoke with `make test-cuda`
    result = subprocess.run([sys.executable, "-m", "feature_learning.build.cuda_smoke"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0 and cuda_smoke.SKIP_MESSAGE in result.stdout


def test_with_cuda_every_chapter_is_run_several_at_a_time_and_a_failure_fails(monkeypatch, tmp_path, capsys):
    seen = []

    def fake(notebook, out, root, threads):
        seen.append(notebook.stem)
        ok = notebook.stem != "simplicity_bias"
        claims = [{"status": "pass"}, {"status": "fail" if not ok else "pass"}]
        return {"chapter": notebook.stem, "ok": ok, "seconds": 1.0, "error": None if ok else "ClaimFailed",
                "ledger": {"claims": claims}}

    monkeypatch.setattr(cuda_smoke, "run_chapter", fake)
    monkeypatch.setattr(cuda_smoke, "smoke", lambda nbs, out, root, jobs, threads: [fake(nb, out, root, threads)
                                                                                    for nb in nbs])
    assert cuda_smoke.main(["--out", str(tmp_path)], available=lambda: True) == 1
    assert sorted(seen) == sorted(nb.stem for nb in toc_notebooks(ROOT))
    out = capsys.readouterr().out
    assert "simplicity_bias" in out and "FAILED" in out and "claims 1/2 accepted" in out


def test_smoke_runs_jobs_concurrently(tmp_path):
    import threading

    active, peak, lock = [0], [0], threading.Lock()

    def runner(nb, out, root, threads):
        import time

        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        return {"chapter": nb.stem, "ok": True, "seconds": 0.2, "ledger": None}

    records = cuda_smoke.smoke([Path(f"{i}.ipynb") for i in range(6)], tmp_path, ROOT, 3, 1, runner=runner)
    assert len(records) == 6 and peak[0] == 3

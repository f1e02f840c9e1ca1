"""A run's provenance: a sizes digest that is stable and changes with any size, and every field on the CPU."""

import dataclasses
import subprocess
import sys
import time

from feature_learning.book import provenance
from feature_learning.experiments import looped_transformers


@dataclasses.dataclass(frozen=True)
class Inner:
    widths: tuple = (8, 16)
    rate: float = 0.1


@dataclasses.dataclass(frozen=True)
class Outer:
    inner: Inner = Inner()
    steps: int = 100


def test_the_digest_is_16_hex_digits_stable_and_changes_with_any_size_however_deep():
    digest = provenance.sizes_digest(Outer())
    assert len(digest) == 16 and int(digest, 16) >= 0
    assert provenance.sizes_digest(Outer()) == digest
    changed = [Outer(steps=101), Outer(inner=Inner(widths=(8, 17))), Outer(inner=Inner(rate=0.1000001))]
    assert len({digest, *map(provenance.sizes_digest, changed)}) == 4


def test_the_digest_of_a_chapters_sizes_is_the_same_in_another_process():
    """Hash randomisation or dict order must not enter the digest: a fresh interpreter gets the same one."""
    code = ("from feature_learning.book.provenance import sizes_digest; "
            "from feature_learning.experiments.looped_transformers import SIZES; print(sizes_digest(SIZES['full']))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == provenance.sizes_digest(looped_transformers.SIZES["full"])
    assert other != provenance.sizes_digest(looped_transformers.SIZES["ci"])


def test_a_cpu_runs_provenance_has_every_field_and_no_gpu_memory():
    started = time.perf_counter() - 2.0
    out = provenance.run_provenance(Outer(), started, "cpu")
    assert set(out) == {"commit", "sizes_digest", "wall_seconds", "peak_cpu_gb", "peak_gpu_gb", "torch", "device",
                        "machine", "shared_with"}
    assert out["sizes_digest"] == provenance.sizes_digest(Outer())
    assert out["wall_seconds"] >= 2.0 and out["peak_cpu_gb"] > 0 and out["peak_gpu_gb"] is None
    assert out["device"] == "cpu" and out["machine"]["cores"] >= 1 and "gpu" not in out["machine"]
    assert len(out["shared_with"]["load_average"]) == 3
    assert out["commit"] is None or len(out["commit"]) == 40


def test_without_nvidia_smi_or_git_there_are_no_gpu_processes_no_commit_and_no_error(monkeypatch):
    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.delenv("BOOK_COMMIT", raising=False)
    monkeypatch.setattr(provenance.subprocess, "run", missing)
    assert provenance.gpu_processes() == [] and provenance.git_commit() is None
    monkeypatch.setenv("BOOK_COMMIT", "6b7cde5")  # a copy of the tree without its history, sent with its commit
    assert provenance.git_commit() == "6b7cde5"

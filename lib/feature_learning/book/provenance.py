"""What a run was: the code, the sizes, the machine, its cost and what else ran beside it.

:meth:`feature_learning.book.chapter.Chapter.close` puts :func:`run_provenance` into the ledger's metadata, so every
runner (the executor, a seed sweep, a GPU session) keeps it with the claims. A stored ``full`` run is then judged
against the chapter's current sizes by :func:`sizes_digest` alone (a stale record is one whose digest differs), and
its time and memory are read back as measurements of that run, with the load it shared the machine with beside them:
a time measured beside four other runs is an upper bound, not the chapter's cost alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import resource
import subprocess
import time
from pathlib import Path
from typing import Any


def git_commit(folder: Path | None = None) -> str | None:
    """The commit checked out where ``folder`` (default: this library's) lies; None outside a git checkout.
    ``BOOK_COMMIT`` overrides it: a copy of the working tree without its history (as sent to a lent GPU machine)
    cannot say which commit it is, and whoever sent it can."""
    if os.environ.get("BOOK_COMMIT"):
        return os.environ["BOOK_COMMIT"]
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=folder or Path(__file__).parent, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def sizes_digest(sizes: Any) -> str:
    """The first 16 hex digits of the SHA-256 of the sizes' canonical JSON: keys sorted, tuples as lists, floats in
    Python's shortest round-trip form, so that the same sizes give the same digest on every machine and any changed
    field (however deep in the nested dataclasses) gives another."""
    data = dataclasses.asdict(sizes) if dataclasses.is_dataclass(sizes) else sizes
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cpu_model() -> str | None:
    """The CPU's model name from ``/proc/cpuinfo`` (None where there is none, as on macOS)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return None


def gpu_processes() -> list[dict]:
    """Every process on the GPUs now, as ``nvidia-smi`` lists it (pid, name, memory in MiB and in GB); empty without
    it."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    out = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit() and parts[2].isdigit():
            used_gb = round(int(parts[2]) * 2**20 / 1e9, 2)
            out.append({"pid": int(parts[0]), "process": Path(parts[1]).name, "used_mib": int(parts[2]),
                        "used_gb": used_gb})
    return out


def run_provenance(sizes: Any, started: float, device: Any) -> dict:
    """The provenance of a run that began at ``started`` (a ``time.perf_counter()`` value) with ``sizes`` on
    ``device``: the commit, the sizes' digest, the wall time, the process's peak CPU memory (its own, not its
    children's) and, on CUDA, torch's peak GPU memory; torch's version, the device and the machine (CPU model and
    core count, GPU name; no host name); and what shared the machine at the end (the load averages over 1, 5 and 15
    minutes and, on CUDA, the other processes on the GPU)."""
    import torch

    on_cuda = str(device).startswith("cuda") and torch.cuda.is_available()
    # ru_maxrss is in KiB on Linux
    peak_cpu_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    machine = {"cpu": cpu_model(), "cores": os.cpu_count()}
    shared = {"load_average": [round(x, 2) for x in os.getloadavg()]}
    if on_cuda:
        machine["gpu"] = torch.cuda.get_device_name(torch.device(device))
        shared["gpu_processes"] = [p for p in gpu_processes() if p["pid"] != os.getpid()]
    return {
        "commit": git_commit(),
        "sizes_digest": sizes_digest(sizes),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "peak_cpu_gb": round(peak_cpu_gb, 2),
        "peak_gpu_gb": round(torch.cuda.max_memory_allocated(torch.device(device)) / 1e9, 2) if on_cuda else None,
        "torch": torch.__version__,
        "device": str(device),
        "machine": machine,
        "shared_with": shared,
    }

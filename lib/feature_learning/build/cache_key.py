"""Never publish stale numbers: the book's execution cache is keyed on everything that can change a chapter.

Jupyter Book 1.x reuses a chapter's executed notebook when its code cells are unchanged (jupyter-cache hashes only
the cells' source). A change in the library, in a profile's sizes (which live in the library), in a dependency's
version or in the device class would still be served from the cache, with its old numbers and its old "pass". This
Sphinx extension computes a key over those inputs when the build starts and, if it differs from the key the cache was
filled under, clears the whole cache before anything executes (all chapters re-run: simpler than tracking which
chapter imports what, and a library change is rare next to edits of prose).

``make book`` and ``make test`` execute the chapters themselves (:mod:`feature_learning.build.execute`, which keys its
cache on :func:`inputs` too) and build the HTML with execution off. For that build this extension hands each executed
notebook's record (its ``feature_learning.execution`` metadata: when, how long, whether it succeeded) to myst-nb, so
that the execution statistics page (``{nb-exec-table}``) lists those runs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import metadata
from pathlib import Path

import feature_learning

PACKAGES = ("torch", "numpy", "scipy", "sympy", "matplotlib", "scikit-learn", "myst-nb", "jupyter-book")
KEY_FILE = "feature-learning-cache-key.json"


def library_root() -> Path:
    return Path(feature_learning.__file__).resolve().parent


def device_class() -> str:
    import torch

    return f"cuda:{torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "cpu"


def inputs(lib: Path | None = None, project: Path | None = None) -> dict[str, str]:
    """What the key covers: a hash of the library's source (and pyproject.toml and the stored results that chapters
    read: the full runs ``results/full/*.json``, the seed sweep ``results/seeds/summary.json`` (each chapter grades
    its source results with both), the CUDA smoke ``results/cuda-smoke.json`` and the diagnostics
    ``results/diagnostics/*``), the versions, the device class."""
    lib = lib or library_root()
    digest = hashlib.sha256()
    files = [(str(p.relative_to(lib.parent)), p) for p in sorted(lib.rglob("*.py"))]
    if project is not None and (project / "pyproject.toml").exists():
        files.append(("pyproject.toml", project / "pyproject.toml"))
    if project is not None:  # the stored results that chapters paste into their pages (full sections, diagnoses)
        results = project / "results"
        stored = [*sorted((results / "full").glob("*.json")), results / "seeds" / "summary.json",
                  results / "cuda-smoke.json",
                  *sorted(p for p in (results / "diagnostics").glob("*") if p.is_file())]
        files += [(str(p.relative_to(project)), p) for p in stored if p.exists()]
    for name, path in files:
        digest.update(name.encode())
        digest.update(path.read_bytes())
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return {"library": digest.hexdigest(), **versions, "device": device_class()}


def key(values: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def evict_if_stale(cache: Path, values: dict[str, str]) -> bool:
    """Clear ``cache`` unless it was filled under the same key; record the key. True if something was evicted."""
    cache = Path(cache)
    stamp = cache / KEY_FILE
    current = key(values)
    previous = json.loads(stamp.read_text()).get("key") if stamp.exists() else None
    evicted = False
    if previous != current and cache.exists() and any(p.name != KEY_FILE for p in cache.iterdir()):
        shutil.rmtree(cache)
        evicted = True
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"key": current, "inputs": values}, indent=1) + "\n")
    return evicted


def _builder_inited(app):
    from sphinx.util import logging

    if getattr(app.config, "nb_execution_mode", None) != "cache":
        return
    # myst-nb's default place for the cache (it opens the cache only when a notebook executes, after this)
    cache = Path(getattr(app.config, "nb_execution_cache_path", "") or Path(app.outdir).parent / ".jupyter_cache")
    values = inputs(project=Path(app.confdir))
    if evict_if_stale(cache, values):
        logging.getLogger(__name__).info(f"execution cache {cache} was filled under other inputs: cleared")


def exec_data(notebook: dict) -> dict | None:
    """myst-nb's execution record for a notebook executed by :mod:`feature_learning.build.execute`, else None."""
    import datetime as _dt

    record = notebook.get("metadata", {}).get("feature_learning", {}).get("execution")
    if not record:
        return None
    finished = _dt.datetime.fromisoformat(record["finished"]).timestamp() if record.get("finished") else None
    profile = (record.get("parameters") or {}).get("profile")
    return {"mtime": finished, "runtime": record.get("seconds"), "succeeded": bool(record.get("ok")),
            "method": f"papermill ({profile})" if profile else "papermill", "error": record.get("error")}


def _doctree_read(app, doctree):
    if getattr(app.config, "nb_execution_mode", None) != "off":
        return
    path = Path(app.env.doc2path(app.env.docname))
    if path.suffix != ".ipynb":
        return
    data = exec_data(json.loads(path.read_text()))
    if data is not None:
        from myst_nb.sphinx_ import NbMetadataCollector

        NbMetadataCollector.set_exec_data(app.env, app.env.docname, data)


def setup(app):
    app.connect("builder-inited", _builder_inited, priority=100)  # before myst-nb reads its configuration
    app.connect("doctree-read", _doctree_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

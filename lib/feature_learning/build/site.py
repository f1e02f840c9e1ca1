"""Build the HTML book from notebooks executed elsewhere (no second execution).

``python -m feature_learning.build.site stage --from DIR --out _build/site`` copies the book's sources
(``_config.yml``, ``_toc.yml``, ``book/``) into ``--out``, replaces every chapter notebook by its executed copy from
``DIR`` and switches execution off, so that ``jupyter-book build`` renders exactly those runs. Their claims ledgers
are gathered into ``<out>/_claims/`` for the reproduction report (set ``BOOK_CLAIMS_DIR`` to it for the build).

``DIR`` may be laid out in either of two ways:

* like the book: ``DIR/book/chapters/<part>/<chapter>.ipynb`` (what ``make test`` leaves in ``_build/ci-notebooks``),
  with the ledgers in a separate folder (``--claims``);
* like a seed sweep (``make seeds``, or the Snakemake workflow at the ``full`` profile on a cluster):
  ``DIR/<chapter>/seed<k>.ipynb`` with the record ``DIR/<chapter>/seed<k>.json`` holding the ledger; ``--seed`` picks k.
  A run that failed before writing its ledger (its record says so) is staged as it stopped and listed in
  ``<out>/_claims/failed/``: the reproduction report names it, and the other chapters build. The sweep's own
  ``DIR/summary.json`` goes to ``<out>/_claims/sweep/`` for the report's robustness table.

``python -m feature_learning.build.site build --from DIR --out _build/site [--html-root .]`` stages, then runs
``jupyter-book build`` on the staged folder (the HTML lands in ``<html-root>/_build/html``, default ``<out>``), unless
nothing changed since its last successful build: the staged files, the library's source and the package versions
(:mod:`feature_learning.build.cache_key`) are hashed, and an unchanged rebuild only says so. ``--partial`` leaves out
of the staged table of contents the chapters ``DIR`` holds no executed copy of (``make book CHAPTERS=...``); such a
partial book is built without ``-W``, since the prose links to the chapters left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from feature_learning.book.claims import project_root
from feature_learning.build import cache_key
from feature_learning.build.notebooks import toc_notebooks

SOURCES = ("_config.yml", "_toc.yml", "_static", "book")
BUILT_STAMP = ".built.json"


# Inside <out>/_claims (beside the ledgers, which are its *.json files): the records of runs that failed without a
# ledger, and the sweep's summary.
FAILED = "failed"
SWEEP = "sweep"


class StagingError(RuntimeError):
    """The folder of executed notebooks does not hold a complete, executed book."""


def _executed_copy(from_dir: Path, rel: Path, seed: int) -> tuple[Path, dict | None, dict | None]:
    """The executed notebook for the chapter ``rel`` in ``from_dir``, its ledger if the layout carries one, and the
    sweep record if the run failed (crashed, or a claim failed) without writing its ledger."""
    book_layout = from_dir / rel
    if book_layout.exists():
        return book_layout, None, None
    sweep = from_dir / rel.stem / f"seed{seed}.ipynb"
    if sweep.exists():
        record_path = sweep.with_suffix(".json")
        record = json.loads(record_path.read_text()) if record_path.exists() else {}
        failed = record if record and not record.get("ok", True) and record.get("ledger") is None else None
        return sweep, record.get("ledger"), failed
    raise StagingError(f"no executed notebook for {rel} in {from_dir} (looked for {book_layout} and {sweep})")


def _has_outputs(notebook: Path) -> bool:
    cells = json.loads(notebook.read_text())["cells"]
    return any(c.get("outputs") for c in cells if c["cell_type"] == "code")


def _drop_from_toc(toc: dict, files: set[str]) -> dict:
    """``toc`` without the entries whose ``file`` is in ``files`` (and without parts left empty)."""

    def keep(entries):
        kept = []
        for entry in entries or []:
            if entry.get("file") in files:
                continue
            if "sections" in entry:
                entry = {**entry, "sections": keep(entry["sections"])}
            kept.append(entry)
        return kept

    toc = dict(toc)
    if "parts" in toc:
        toc["parts"] = [{**p, "chapters": keep(p.get("chapters"))} for p in toc["parts"]]
        toc["parts"] = [p for p in toc["parts"] if p["chapters"]]
    if "chapters" in toc:
        toc["chapters"] = keep(toc["chapters"])
    return toc


def stage(from_dir: Path, out: Path, claims: Path | None = None, seed: int = 0, root: Path | None = None,
          partial: bool = False) -> Path:
    """Write the book sources with the executed notebooks of ``from_dir`` into ``out``; return ``out``. With
    ``partial``, chapters without an executed copy in ``from_dir`` are left out of the staged table of contents."""
    root = root or project_root()
    from_dir, out = Path(from_dir).resolve(), Path(out).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in SOURCES:
        src = root / name
        if not src.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, out / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        else:
            shutil.copy2(src, out / name)
    config = yaml.safe_load((out / "_config.yml").read_text())
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    ledgers_out = out / "_claims"
    ledgers_out.mkdir()
    if (from_dir / "summary.json").exists():  # a sweep's own summary, for the report's robustness table
        (ledgers_out / SWEEP).mkdir()
        shutil.copy2(from_dir / "summary.json", ledgers_out / SWEEP / "summary.json")
    missing = set()
    for rel in toc_notebooks(root):
        try:
            executed, ledger, failed = _executed_copy(from_dir, rel, seed)
        except StagingError:
            if not partial:
                raise
            missing.add(rel.with_suffix("").as_posix())
            (out / rel).unlink()
            continue
        if failed is not None:  # one crashed chapter is reported by the book, not a reason to withhold the rest
            (ledgers_out / FAILED).mkdir(exist_ok=True)
            keep = ("chapter", "profile", "seed", "device", "error")
            (ledgers_out / FAILED / f"{rel.stem}.json").write_text(
                json.dumps({k: failed.get(k) for k in keep} | {"chapter": rel.stem}, indent=1) + "\n")
            shutil.copy2(executed, out / rel)
            continue
        if not _has_outputs(executed):
            raise StagingError(f"{executed} has no outputs: it was not executed")
        shutil.copy2(executed, out / rel)
        if ledger is None and claims is not None and (Path(claims) / f"{rel.stem}.json").exists():
            ledger = json.loads((Path(claims) / f"{rel.stem}.json").read_text())
        if ledger is None:
            raise StagingError(f"no claims ledger for {rel.stem} (a sweep record or --claims folder holds it)")
        (ledgers_out / f"{rel.stem}.json").write_text(json.dumps(ledger, indent=1, ensure_ascii=False) + "\n")
    if missing:
        toc = yaml.safe_load((out / "_toc.yml").read_text())
        (out / "_toc.yml").write_text(yaml.safe_dump(_drop_from_toc(toc, missing), sort_keys=False))
    return out


def tree_digest(folder: Path, extra: dict | None = None) -> str:
    """A hash of every file under ``folder`` (path and bytes; its ``_build`` and the build stamp excluded) and of
    ``extra``."""
    digest = hashlib.sha256(json.dumps(extra or {}, sort_keys=True).encode())
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and rel.parts[0] != "_build" and rel.name != BUILT_STAMP:
            digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build(from_dir: Path, out: Path, claims: Path | None = None, seed: int = 0, html_root: Path | None = None,
          partial: bool = False, root: Path | None = None, jupyter_book: str | None = None) -> int:
    """Stage ``from_dir`` into ``out`` and build its HTML (strict) into ``<html_root>/_build/html``, unless the staged
    sources, library and package versions are those of the last successful build there. Returns the exit status."""

    root = root or project_root()
    out = Path(out).resolve()
    html_root = Path(html_root).resolve() if html_root else out
    staging = out.with_name(out.name + ".staging")
    stage(from_dir, staging, claims, seed, root, partial)
    # the report also reads the seed sweep (fresh or stored) and the stored full runs, and the page of run times the
    # measured runs: a new one rebuilds the site
    report_inputs = sorted([*root.glob("results/seeds/*.json"), *root.glob("_build/seeds/summary.json"),
                            *root.glob("results/full/*.json"), *root.glob("results/runs/*.json")])
    digest = tree_digest(staging, {"inputs": cache_key.inputs(project=root), "html_root": str(html_root),
                                   "report": {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                                              for p in report_inputs}})
    built = out / BUILT_STAMP
    html = html_root / "_build" / "html"
    if built.exists() and json.loads(built.read_text()).get("digest") == digest and (html / "index.html").exists():
        shutil.rmtree(staging)
        print(f"site: nothing changed since the last build of {html}: not rebuilt", flush=True)
        return 0
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    for name in ("html", ".doctrees", "jupyter_execute"):  # a full build: nothing from an older tree survives
        shutil.rmtree(html_root / "_build" / name, ignore_errors=True)
    command = [jupyter_book or str(Path(sys.executable).with_name("jupyter-book")), "build", str(out), "-n",
               "--keep-going"]
    if partial:  # the prose links to the chapters left out: those warnings are expected, and not fatal
        print("site: a partial book (chapters left out): built without -W", flush=True)
    else:
        command.insert(3, "-W")
    if html_root != out:
        command += ["--path-output", str(html_root)]
    print("site: " + " ".join(command), flush=True)
    code = subprocess.call(command, env={**os.environ, "BOOK_CLAIMS_DIR": str(out / "_claims")})
    if code == 0:
        built.write_text(json.dumps({"digest": digest, "html": str(html)}) + "\n")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stage", help="copy the book sources with executed notebooks, execution off")
    st.add_argument("--from", dest="from_dir", type=Path, required=True)
    st.add_argument("--out", type=Path, required=True)
    st.add_argument("--claims", type=Path, default=None, help="folder of ledgers, for the book layout")
    st.add_argument("--seed", type=int, default=0, help="which seed of a sweep layout")
    st.add_argument("--partial", action="store_true", help="leave chapters without an executed copy out")
    bd = sub.add_parser("build", help="stage, then build the HTML with jupyter-book unless nothing changed")
    for flag, kw in (("--from", {"dest": "from_dir", "type": Path, "required": True}),
                     ("--out", {"type": Path, "required": True}), ("--claims", {"type": Path, "default": None}),
                     ("--seed", {"type": int, "default": 0}), ("--html-root", {"type": Path, "default": None})):
        bd.add_argument(flag, **kw)
    bd.add_argument("--partial", action="store_true", help="leave chapters without an executed copy out")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            return build(args.from_dir, args.out, args.claims, args.seed, args.html_root, args.partial)
        out = stage(args.from_dir, args.out, args.claims, args.seed, partial=args.partial)
    except StagingError as exc:
        parser.exit(2, f"{args.command}: {exc}\n")
    print(f"staged {out} (execution off; ledgers in {out / '_claims'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

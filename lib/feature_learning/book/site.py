"""Build the HTML book from notebooks executed elsewhere (no second execution).

``python -m feature_learning.book.site stage --from DIR --out _build/site`` copies the book's sources
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
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import yaml

from feature_learning.book.claims import project_root
from feature_learning.book.notebooks import toc_notebooks

SOURCES = ("_config.yml", "_toc.yml", "_static", "book")


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


def stage(from_dir: Path, out: Path, claims: Path | None = None, seed: int = 0, root: Path | None = None) -> Path:
    """Write the book sources with the executed notebooks of ``from_dir`` into ``out``; return ``out``."""
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
    for rel in toc_notebooks(root):
        executed, ledger, failed = _executed_copy(from_dir, rel, seed)
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
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stage", help="copy the book sources with executed notebooks, execution off")
    st.add_argument("--from", dest="from_dir", type=Path, required=True)
    st.add_argument("--out", type=Path, required=True)
    st.add_argument("--claims", type=Path, default=None, help="folder of ledgers, for the book layout")
    st.add_argument("--seed", type=int, default=0, help="which seed of a sweep layout")
    args = parser.parse_args(argv)
    try:
        out = stage(args.from_dir, args.out, args.claims, args.seed)
    except StagingError as exc:
        parser.exit(2, f"stage: {exc}\n")
    print(f"staged {out} (execution off; ledgers in {out / '_claims'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

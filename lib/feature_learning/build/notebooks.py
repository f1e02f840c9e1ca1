"""The book's notebooks: which ones the table of contents lists, and preparing them for a run at a profile.

``python -m feature_learning.build.notebooks prepare --profile ci --out _build/ci`` writes a copy of every chapter
notebook with papermill's parameters injected (``prepare_only``: nothing executes), for running them in another
harness (nbval, say). ``make book`` and ``make test`` execute the chapters through
:mod:`feature_learning.build.execute`, which injects the parameters itself.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from feature_learning.book.claims import project_root
from feature_learning.book.profiles import check_profile


def toc_files(root: Path | None = None) -> list[str]:
    """Every ``file`` entry of ``_toc.yml`` (the root page first), without suffix, in book order."""
    root = root or project_root()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def toc_notebooks(root: Path | None = None) -> list[Path]:
    """The notebooks listed in the table of contents, relative to the project root."""
    root = root or project_root()
    return [Path(f + ".ipynb") for f in toc_files(root) if (root / (f + ".ipynb")).exists()]


def parameters_cell(notebook: Path) -> dict | None:
    """The code cell tagged ``parameters``, if any."""
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return cell
    return None


def cells_with_outputs(notebook: Path) -> list[int]:
    """Indices of code cells stored with outputs or execution counts (notebooks are stored clean)."""
    cells = json.loads(notebook.read_text())["cells"]
    return [
        i for i, c in enumerate(cells) if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))
    ]


def prepare(profile: str, out: Path, root: Path | None = None, **parameters) -> list[Path]:
    """Copy every table-of-contents notebook to ``out`` (same relative path) with ``profile`` injected."""
    import papermill

    check_profile(profile)
    root = root or project_root()
    written = []
    for rel in toc_notebooks(root):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        papermill.execute_notebook(
            str(root / rel), str(target), parameters={"profile": profile, **parameters}, prepare_only=True,
            progress_bar=False, log_output=False,
        )
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="inject parameters into copies of the chapter notebooks")
    prep.add_argument("--profile", required=True)
    prep.add_argument("--out", type=Path, required=True)
    prep.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    extra = {} if args.seed is None else {"seed": args.seed}
    for path in prepare(args.profile, args.out, **extra):
        print(f"prepared {path} (profile={args.profile})")


if __name__ == "__main__":
    main()

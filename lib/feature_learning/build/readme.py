"""The README's generated blocks, from the data committed with the code, so that they cannot drift from it.

Each block sits between marker comments in ``README.md`` (``<!-- name:start -->`` ... ``<!-- name:end -->``):

* ``commands``: what ``make book`` and ``make test`` cost, cold and warm, one row each (the latest measured runs of
  ``results/runs/book.json`` and ``results/runs/ci.json``, :mod:`feature_learning.build.runs`);
* ``chapters``: one row per chapter of the table of contents: its source results by verdict (its source map, stored
  with the seed sweep, graded by the stored ``full`` record and the sweep), its stored ``full`` run
  (``results/full/<chapter>.json``) and the stored seed sweep (``results/seeds/summary.json``), the cells from
  :func:`chapter_row`;
* ``gpu-hour``: what the stored ``full`` runs on a GPU took, per chapter and in all.

``python -m feature_learning.build.readme`` rewrites the blocks; ``--check`` rewrites nothing and exits 1 if one is
out of date (a test runs it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from feature_learning.book.claims import ACCEPTED, ClaimLedger, project_root
from feature_learning.book.status import ran_other_sizes, source_headline
from feature_learning.build import runs
from feature_learning.build.notebooks import toc_notebooks
from feature_learning.build.seeds import load_full_runs

README = "README.md"
STORED_SWEEP = Path("results") / "seeds" / "summary.json"
BLOCKS = ("commands", "chapters", "gpu-hour")


def _seeds(seeds: list[int]) -> str:
    seeds = sorted(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def _where(record: dict) -> str:
    """The device a run used, by the machine's first words where recorded (``NVIDIA H200``), and its date."""
    machine = (record.get("machine") or "").split(",")[0].strip()
    device = machine or str(record.get("device", "?")).upper()
    return f"{device}, {str(record.get('written', '?'))[:10]}"


def full_cell(record: dict | None, digest: str | None = None) -> str:
    """A chapter's stored ``full`` run in a few words: claims held of all, or how it stopped, with device and date,
    and whether it ran other ``full`` sizes than the chapter's present ones (``digest``: theirs), so grades nothing."""
    if record is None:
        return "no run"
    where = _where(record)
    if record.get("seconds"):
        where += f", {runs.duration(record['seconds'])}"
    if ran_other_sizes(record, digest):
        where += "; other `full` sizes than the present ones, so it grades no result"
    ledger = record.get("ledger")
    if ledger is None:
        return f"stopped ({where})" if record.get("stopped") else f"crashed ({where})"
    claims = ledger.get("claims", [])
    held = sum(c["status"] in ACCEPTED for c in claims)
    return f"{held} of {len(claims)} claims hold ({where})"


def sweep_cell(chapter: str, sweep: dict | None) -> str:
    """A chapter's claims in the stored seed sweep: whether every claim holds at every seed."""
    entry = (sweep or {}).get("chapters", {}).get(chapter)
    if entry is None:
        return "not in the sweep"
    seeds, claims = entry.get("seeds", []), entry.get("claims", {})
    where = f"seeds {_seeds(seeds)} (`{entry.get('profile', '?')}`)"
    if entry.get("runs_failed"):
        return f"runs failed at seeds {_seeds([int(s) for s in entry['runs_failed']])}"
    every = sum(c.get("held") == len(seeds) for c in claims.values())
    if every == len(claims):
        return f"all {len(claims)} claims hold at {where}"
    return f"{every} of {len(claims)} claims hold at every one of {where}"


def results_cell(chapter: str, full_record: dict | None, sweep: dict | None) -> str:
    """A chapter's source results by verdict (:func:`~feature_learning.book.status.source_headline`): its source map,
    stored with the sweep's lowest seed, graded by the stored ``full`` record and the sweep."""
    ledger = (sweep or {}).get("chapters", {}).get(chapter, {}).get("ledger")
    if ledger is None:
        return "no source map stored with the sweep"
    graded = ClaimLedger.from_json(ledger)
    graded.attach_stored(full=full_record, sweep=sweep, sizes_digest=graded.sizes_digest)
    return source_headline(graded.to_json()).rstrip(".")


def chapter_row(chapter: str, full_record: dict | None, sweep: dict | None) -> list[str]:
    """The verdict cells of one chapter's row of the README's table: its source results by verdict, its stored
    ``full`` run, and the stored seed sweep."""
    digest = ((sweep or {}).get("chapters", {}).get(chapter, {}).get("ledger") or {}).get("full_sizes_digest")
    return [results_cell(chapter, full_record, sweep), full_cell(full_record, digest), sweep_cell(chapter, sweep)]


def _title(notebook: Path) -> str:
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return notebook.stem


def chapters_block(root: Path, records: dict[str, dict], sweep: dict | None) -> str:
    head = ["| | chapter | the source's results | the `full` run's claims | seed sweep |",
            "| --- | --- | --- | --- | --- |"]
    lines = []
    for number, rel in enumerate(toc_notebooks(root), start=1):
        cells = chapter_row(rel.stem, records.get(rel.stem), sweep)
        lines.append(f"| {number} | [{_title(root / rel)}]({rel.as_posix()}) | " + " | ".join(cells) + " |")
    return "\n".join(head + lines)


def commands_block(kinds: dict[str, dict]) -> str:
    rows = ["| command | cold: fresh machine, no pip cache | warm: fresh clone, pip cache warm |",
            "| --- | --- | --- |"]
    for command, kind in (("make book", "book"), ("make test", "ci")):
        rows.append(f"| `{command}` | " + " | ".join(runs.command_cost(kinds, kind, command, start)
                                                      for start in ("cold", "warm")) + " |")
    return "\n".join(rows)


def gpu_hour_block(records: dict[str, dict]) -> str:
    """What one GPU hour buys, from the wall times of the stored ``full`` runs on a GPU."""
    gpu = {name: r for name, r in sorted(records.items()) if r.get("device") == "cuda" and r.get("seconds")}
    if not gpu:
        return "No `full` run on a GPU is stored yet."
    finished = {name: r for name, r in gpu.items() if r.get("ledger") is not None}
    unfinished = {name: r for name, r in gpu.items() if r.get("ledger") is None}
    total = sum(r["seconds"] for r in finished.values())
    hours = total / 3600
    head = (f"one GPU hour covers the {len(finished)} chapters whose stored `full` run finished on a GPU"
            if hours <= 1 else f"the {len(finished)} chapters whose stored `full` run finished on a GPU take "
            f"{hours:.1f} GPU hours")
    text = (f"{head[0].upper()}{head[1:]}: {runs.duration(total)} one after another, each time measured while the "
            "GPU was shared with other runs, so an upper bound on a run alone ("
            + "; ".join(f"{name} {runs.duration(r['seconds'])} on {_where(r).split(',')[0]}"
                        for name, r in finished.items()) + ").")
    if unfinished:
        text += (" " + " and ".join(f"{name} ({'stopped' if r.get('stopped') else 'crashed'} after "
                                    f"{runs.duration(r['seconds'])})" for name, r in unfinished.items())
                 + " have no whole time yet.")
    cpu = sorted(name for name, r in records.items() if r.get("device") == "cpu")
    if cpu:
        text += f" {', '.join(cpu[:-1])} and {cpu[-1]} ran at `full` on a CPU." if len(cpu) > 1 else \
            f" {cpu[0]} ran at `full` on a CPU."
    return text


def blocks(root: Path) -> dict[str, str]:
    records = load_full_runs(root / "results" / "full")
    sweep_path = root / STORED_SWEEP
    sweep = json.loads(sweep_path.read_text()) if sweep_path.exists() else None
    return {"commands": commands_block(runs.load_kinds(root)), "chapters": chapters_block(root, records, sweep),
            "gpu-hour": gpu_hour_block(records)}


def _pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- {re.escape(name)}:start -->)\n?(.*?)\n?(<!-- {re.escape(name)}:end -->)", re.S)


def rewrite(text: str, new: dict[str, str]) -> str:
    """``text`` with each block between its markers replaced; a block without markers is an error."""
    for name, body in new.items():
        pattern = _pattern(name)
        if not pattern.search(text):
            raise ValueError(f"README: no <!-- {name}:start --> ... <!-- {name}:end --> block")
        text = pattern.sub(lambda m, body=body: f"{m.group(1)}\n{body}\n{m.group(3)}", text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is out of date; rewrite nothing")
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args(argv)
    root = args.root or project_root()
    path = root / README
    old = path.read_text()
    new = rewrite(old, blocks(root))
    if new == old:
        print("README: every generated block is up to date")
        return 0
    if args.check:
        print("README: generated blocks out of date; run python -m feature_learning.build.readme", file=sys.stderr)
        return 1
    path.write_text(new)
    print("README: generated blocks rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())

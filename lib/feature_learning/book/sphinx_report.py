"""Sphinx extension: the ``reproduction-report`` directive gathers every chapter ledger into one table.

Chapters write their ledgers while the book is read (when their notebooks execute), so the table is filled
in late, at ``doctree-resolved`` (the write phase), after every chapter has run; the report page is marked
outdated on every build so it is always rewritten from the current ledgers.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util import logging

from feature_learning.book.claims import (
    COLUMN_WIDTHS,
    COLUMNS,
    KINDS,
    STATUS_NOT_REPRODUCED,
    STATUS_PASS,
    claim_row,
    claims_dir,
    headline,
    load_ledgers,
    tally,
)
from feature_learning.book.notebooks import toc_notebooks
from feature_learning.book.seeds import load_summary

logger = logging.getLogger(__name__)

CLAIM_WIDTHS = COLUMN_WIDTHS


class report_placeholder(nodes.General, nodes.Element):
    """Replaced by the report table in the write phase."""


class ReproductionReport(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.reproduction_report_docs = getattr(env, "reproduction_report_docs", set()) | {env.docname}
        return [report_placeholder()]


def _table(rows: list[list[str]], columns: tuple[str, ...], widths: tuple[int, ...] | None = None) -> nodes.table:
    """A table that fits the page: relative column ``widths`` (default equal), wrapped cells (see _static/book.css)."""
    table = nodes.table(classes=["reproduction-report", "colwidths-given"])
    group = nodes.tgroup(cols=len(columns))
    table += group
    for width in widths or (1,) * len(columns):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    head += nodes.row("", *(nodes.entry("", nodes.paragraph(text=c)) for c in columns))
    body = nodes.tbody()
    group += body
    for cells in rows:
        body += nodes.row("", *(nodes.entry("", nodes.paragraph(text=c)) for c in cells))
    return table


def _summary_rows(ledgers: list[dict], sweep: dict | None) -> list[list[str]]:
    """One row per chapter: its run, its claims by kind and status, and its seed-sweep pass rate."""
    rows = []
    for ledger in ledgers:
        counts = tally(ledger["claims"])
        cells = [ledger["title"], f"{ledger['profile']}, seed {ledger['seed']}, {ledger['device']}"]
        for kind in KINDS:
            by_status = counts.get(kind, {})
            n = sum(by_status.values())
            ok = by_status.get(STATUS_PASS, 0)
            documented = by_status.get(STATUS_NOT_REPRODUCED, 0)
            failing = n - ok - documented
            text = f"{ok}/{n}" + (f", {documented} documented" if documented else "")
            cells.append(text + (f", {failing} FAILING" if failing else ""))
        chapter = (sweep or {}).get("chapters", {}).get(ledger["chapter"])
        if chapter is None:
            cells.append("not swept")
        else:
            held = sum(1 for e in chapter["claims"].values() if e["held"] == len(chapter["seeds"]))
            cells.append(f"{held}/{len(chapter['claims'])} claims at all {len(chapter['seeds'])} seeds")
        rows.append(cells)
    return rows


def _sweep_nodes(sweep: dict | None) -> list[nodes.Node]:
    if sweep is None:
        return [nodes.paragraph(text="No seed sweep has been run for this build (the command make seeds writes one).")]
    out = [nodes.paragraph(text=(
        f"Seed sweep of {sweep['written']}: each chapter executed at its sweep profile for every seed listed. "
        "A claim holds at a seed when it passes there, or when its documented failure is confirmed there. "
        + ("Every claim holds at every seed." if sweep["all_hold"] else "Some claims do not hold at every seed:")
    ))]
    rows = []
    for name, chapter in sweep["chapters"].items():
        for seed, error in chapter["runs_failed"].items():
            rows.append([name, "(whole run)", "", f"run failed at seed {seed}: {error}"])
        for cid, entry in chapter["claims"].items():
            if entry["failing_seeds"]:
                rows.append([name, cid, entry.get("kind") or "?",
                             f"{entry['held']}/{len(chapter['seeds'])}; fails at seeds {entry['failing_seeds']}"])
    if rows:
        out.append(_table(rows, ("chapter", "claim", "kind", "held at"), (20, 25, 12, 43)))
    return out


def report_nodes(ledgers: list[dict], sweep: dict | None = None) -> list[nodes.Node]:
    """The headline, a per-chapter summary, the seed sweep, then one table of claims per chapter."""
    if not ledgers:
        return [nodes.paragraph(text="No chapter ledgers were found: no chapter has run in this build.")]
    claims = [c for ledger in ledgers for c in ledger["claims"]]
    intro = f"{len(ledgers)} chapter(s), {len(claims)} claims: {headline(claims)}"
    out: list[nodes.Node] = [nodes.paragraph(text=intro)]
    summary_columns = ("chapter", "run", *(f"{k} (pass/all)" for k in KINDS), "seed sweep")
    out.append(_table(_summary_rows(ledgers, sweep), summary_columns, (24, 14, 16, 14, 14, 18)))
    sweep_section = nodes.section(ids=["seed-sweep"])
    sweep_section += nodes.title(text="Robustness over seeds")
    sweep_section.extend(_sweep_nodes(sweep))
    out.append(sweep_section)
    for ledger in ledgers:
        section = nodes.section(ids=[f"claims-{ledger['chapter'].replace('_', '-')}"])
        section += nodes.title(text=ledger["title"])
        section += nodes.paragraph(text=f"{headline(ledger['claims'])} Run: profile {ledger['profile']}, "
                                   f"seed {ledger['seed']}, device {ledger['device']}, written {ledger['written']}.")
        section += _table([claim_row(c) for c in ledger["claims"]], COLUMNS, CLAIM_WIDTHS)
        out.append(section)
    return out


def missing_ledgers(root: Path, ledgers: list[dict]) -> list[str]:
    """Chapters of the table of contents without a ledger (each chapter's ledger id is its notebook's name)."""
    have = {ledger["chapter"] for ledger in ledgers}
    return [nb.stem for nb in toc_notebooks(root) if nb.stem not in have]


def failed_runs(folder: Path | None = None) -> list[dict]:
    """The runs staged without a ledger because they failed (``site.stage`` writes ``<claims>/failed/*.json``)."""
    folder = (Path(folder) if folder is not None else claims_dir()) / "failed"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.exists() else []


def staged_summary(folder: Path | None = None) -> dict | None:
    """The sweep summary staged with the ledgers (a book built FROM a sweep), else the latest ci sweep's."""
    path = (Path(folder) if folder is not None else claims_dir()) / "sweep" / "summary.json"
    return json.loads(path.read_text()) if path.exists() else load_summary()


def failed_nodes(failed: list[dict]) -> list[nodes.Node]:
    if not failed:
        return []
    section = nodes.section(ids=["failed-runs"])
    section += nodes.title(text="Runs that failed")
    section += nodes.paragraph(text=f"{len(failed)} chapter run(s) stopped before writing their claims ledger; "
                                    "their pages show the notebook as it stopped, and their claims are not counted "
                                    "above.")
    items = nodes.bullet_list()
    for run in failed:
        item = nodes.list_item()
        item += nodes.paragraph(text=f"{run['chapter']} (profile {run.get('profile')}, seed {run.get('seed')}, "
                                     f"device {run.get('device')}): {run.get('error')}")
        items += item
    section += items
    return [section]


def _fill(app, doctree, docname):
    for node in doctree.findall(report_placeholder):
        ledgers = load_ledgers()
        failed = failed_runs()
        crashed = {run["chapter"] for run in failed}
        for chapter in missing_ledgers(Path(app.srcdir), ledgers):
            if chapter in crashed:
                continue
            # A chapter whose notebook came from the execution cache of an earlier build whose ledgers were
            # deleted: the report would silently leave it out, so the (strict) build fails instead.
            logger.warning(
                f"reproduction report: no claims ledger for chapter {chapter!r}; rebuild with `make clean book`",
                location=node,
            )
        node.replace_self(failed_nodes(failed) + report_nodes(ledgers, staged_summary()))


def _always_outdated(app, env, added, changed, removed):
    return sorted(getattr(env, "reproduction_report_docs", set()))


def setup(app):
    app.add_node(report_placeholder)
    app.add_directive("reproduction-report", ReproductionReport)
    app.connect("doctree-resolved", _fill)
    app.connect("env-get-outdated", _always_outdated)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}

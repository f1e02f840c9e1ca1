"""Sphinx extension: the ``reproduction-report`` directive gathers every chapter ledger into one table.

Chapters write their ledgers while the book is read (when their notebooks execute), so the table is filled
in late, at ``doctree-resolved`` (the write phase), after every chapter has run; the report page is marked
outdated on every build so it is always rewritten from the current ledgers.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util import logging

from feature_learning.book.claims import COLUMNS, claim_row, load_ledgers
from feature_learning.book.notebooks import toc_notebooks

logger = logging.getLogger(__name__)


class report_placeholder(nodes.General, nodes.Element):
    """Replaced by the report table in the write phase."""


class ReproductionReport(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.reproduction_report_docs = getattr(env, "reproduction_report_docs", set()) | {env.docname}
        return [report_placeholder()]


def _table(rows: list[list[str]], columns: tuple[str, ...]) -> nodes.table:
    table = nodes.table(classes=["reproduction-report"])
    group = nodes.tgroup(cols=len(columns))
    table += group
    for _ in columns:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += nodes.row("", *(nodes.entry("", nodes.paragraph(text=c)) for c in columns))
    body = nodes.tbody()
    group += body
    for cells in rows:
        body += nodes.row("", *(nodes.entry("", nodes.paragraph(text=c)) for c in cells))
    return table


def report_nodes(ledgers: list[dict]) -> list[nodes.Node]:
    """The summary paragraph and one table over all chapters' claims."""
    if not ledgers:
        return [nodes.paragraph(text="No chapter ledgers were found: no chapter has run in this build.")]
    claims = [(ledger, c) for ledger in ledgers for c in ledger["claims"]]
    counts = {}
    for _, c in claims:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    intro = nodes.paragraph(text=f"{len(claims)} claims from {len(ledgers)} chapter(s): {summary}.")
    runs = nodes.bullet_list()
    for ledger in ledgers:
        runs += nodes.list_item(
            "",
            nodes.paragraph(
                text=f"{ledger['title']} ({ledger['chapter']}): profile {ledger['profile']}, seed {ledger['seed']}, "
                f"device {ledger['device']}, written {ledger['written']}"
            ),
        )
    rows = [[ledger["chapter"], *claim_row(c)] for ledger, c in claims]
    return [intro, runs, _table(rows, ("chapter", *COLUMNS))]


def missing_ledgers(root: Path, ledgers: list[dict]) -> list[str]:
    """Chapters of the table of contents without a ledger (each chapter's ledger id is its notebook's name)."""
    have = {ledger["chapter"] for ledger in ledgers}
    return [nb.stem for nb in toc_notebooks(root) if nb.stem not in have]


def _fill(app, doctree, docname):
    for node in doctree.findall(report_placeholder):
        ledgers = load_ledgers()
        for chapter in missing_ledgers(Path(app.srcdir), ledgers):
            # A chapter whose notebook came from the execution cache of an earlier build whose ledgers were
            # deleted: the report would silently leave it out, so the (strict) build fails instead.
            logger.warning(
                f"reproduction report: no claims ledger for chapter {chapter!r}; rebuild with `make clean book`",
                location=node,
            )
        node.replace_self(report_nodes(ledgers))


def _always_outdated(app, env, added, changed, removed):
    return sorted(getattr(env, "reproduction_report_docs", set()))


def setup(app):
    app.add_node(report_placeholder)
    app.add_directive("reproduction-report", ReproductionReport)
    app.connect("doctree-resolved", _fill)
    app.connect("env-get-outdated", _always_outdated)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}

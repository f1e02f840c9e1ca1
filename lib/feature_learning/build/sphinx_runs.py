"""Sphinx extension: the ``run-times`` directive, the tables of the page "Run times and runs at the source's scale".

Built when the page is read, from the data committed with the code (no chapter's execution is needed)::

    ```{run-times} latest
    ```      the latest run of each command and start, over every kind of run (results/runs/<kind>.json)
    ```{run-times} history
    ```      per kind: what it measures, every run newest first, and a link to its data file
    ```{run-times} full
    ```      one row per chapter from its stored full record (results/full/<chapter>.json)

The page depends on those files (a changed file rebuilds it), and they are copied beside the site as
``_static/runs/<kind>.json``. Rows come from :mod:`feature_learning.build.runs`.
"""

from __future__ import annotations

import html
import json
import posixpath
import re
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives

from feature_learning.book.claims import html_table, project_root
from feature_learning.build import runs
from feature_learning.build.notebooks import toc_notebooks
from feature_learning.build.seeds import load_full_runs

TABLE = "claims-table report-table"
STATIC = "_static/runs"


DATE = re.compile(r"\b(\d{4}-\d\d-\d\d(?: \d\d:\d\d(?:-\d\d:\d\d)?)?)")


CODE = re.compile(r"`([^`]+)`")


def _html(text: str) -> str:
    """Plain text with `code` spans as HTML, a date (and time of day) kept on one line (class report-line)."""
    return DATE.sub(r"<span class='report-line'>\1</span>", CODE.sub(r"<code>\1</code>", html.escape(text)))


def _cells(rows) -> list[list[str]]:
    return [[_html(cell) for cell in row] for row in rows]


def _table(columns, rows) -> nodes.raw:
    return nodes.raw("", html_table(columns, _cells(rows), TABLE, box=None), format="html")


def _data_files(root: Path) -> list[Path]:
    folder = root / runs.RUNS
    return sorted(folder.glob("*.json")) if folder.exists() else []


class RunTimes(Directive):
    required_arguments = 1
    option_spec = {"class": directives.unchanged}

    def run(self):
        env = self.state.document.settings.env
        root = project_root()
        which = self.arguments[0]
        for path in _data_files(root) + sorted((root / "results" / "full").glob("*.json")):
            env.note_dependency(str(path))
        if which == "latest":
            return [_table(runs.LATEST_COLUMNS, runs.latest_rows(runs.load_kinds(root)))]
        if which == "history":
            out = []
            for kind, data in runs.load_kinds(root).items():
                link = posixpath.relpath(f"{STATIC}/{kind}.json", posixpath.dirname(env.docname) or ".")
                head = (f"<p><strong>{html.escape(data['title'])}</strong> "
                        f"(<a href='{html.escape(link)}'>{html.escape(kind)}.json</a>): "
                        f"{_html(data.get('about', ''))}</p>")
                rows = runs.history_rows(data)
                table = html_table(runs.HISTORY_COLUMNS, _cells(rows), TABLE, box=None)
                out.append(nodes.raw("", f"{head}<details><summary>{len(rows)} run(s)</summary>{table}</details>",
                                     format="html"))
            return out
        if which == "full":
            chapters = [nb.stem for nb in toc_notebooks(root)]
            return [_table(runs.FULL_COLUMNS, runs.full_rows(load_full_runs(), chapters))]
        raise self.error(f"run-times: unknown table {which!r}; allowed: latest, history, full")


def _copy_data(app, exc):
    """The data files beside the site, as ``_static/runs/<kind>.json``, for the page's links."""
    if exc is not None or app.builder.format != "html":
        return
    folder = Path(app.outdir) / STATIC
    folder.mkdir(parents=True, exist_ok=True)
    for path in _data_files(project_root()):
        json.loads(path.read_text())  # a broken file fails here, not in a reader's browser
        shutil.copy2(path, folder / path.name)


def setup(app):
    app.add_directive("run-times", RunTimes)
    app.connect("build-finished", _copy_data)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

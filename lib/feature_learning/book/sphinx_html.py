"""Sphinx extension: small fixes to the HTML pages of the Jupyter Book 1.x stack, found by the browser tests.

* sphinx-thebe's inline configuration script reaches the page twice, once registered with the file name ``None`` and
  once with ``''`` (so Sphinx's own de-duplication misses it), and the browser reports ``Identifier 'THEBE_JS_URL'
  has already been declared``: scripts equal up to that difference are dropped.
* The page's download button serves ``_sources/<page>.ipynb``, the notebook as stored (without outputs). A reader
  who downloads a chapter should get what the book shows: the executed notebook (myst-nb's ``jupyter_execute``
  copy) replaces it.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def _drop_repeated_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _serve_executed_notebooks(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    executed = Path(app.outdir).parent / "jupyter_execute"
    for docname in app.env.found_docs:
        source = Path(app.env.doc2path(docname))
        copy = executed / f"{docname}.ipynb"
        target = Path(app.outdir) / "_sources" / f"{docname}.ipynb"
        if source.suffix == ".ipynb" and copy.exists() and target.parent.exists():
            shutil.copyfile(copy, target)


def setup(app):
    app.connect("html-page-context", _drop_repeated_scripts)
    app.connect("build-finished", _serve_executed_notebooks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

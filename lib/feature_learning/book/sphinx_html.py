"""Sphinx extension: small fixes to the HTML pages of the Jupyter Book 1.x stack, found by the browser tests.

* sphinx-thebe's inline configuration script reaches the page twice, once registered with the file name ``None`` and
  once with ``''`` (so Sphinx's own de-duplication misses it), and the browser reports ``Identifier 'THEBE_JS_URL'
  has already been declared``: scripts equal up to that difference are dropped.
* The page's download button serves ``_sources/<page>.ipynb``, the notebook as stored (without outputs). A reader
  who downloads a chapter should get what the book shows: the executed notebook (myst-nb's ``jupyter_execute``
  copy) replaces it.
* The cell that papermill injects into a notebook run at another profile (tag ``injected-parameters``) is removed
  from the page: the reader sees the chapter's own ``parameters`` cell, and the run's profile in the line that
  opens the chapter (before sphinx-codeautolink, which links the names in code cells to the library reference,
  reads the page's code blocks).
* A glued figure's image gets its caption as alternative text (myst-nb leaves the file path).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from docutils import nodes


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


def _remove_injected_parameters(app, doctree):
    for node in list(doctree.findall(nodes.container)):
        if "tag_injected-parameters" in node.get("classes", []) and node.parent is not None:
            node.parent.remove(node)


def _alt_text_from_captions(app, doctree, docname):
    for figure in doctree.findall(nodes.figure):
        captions = [c for c in figure.findall(nodes.caption)]
        if not captions:
            continue
        text = " ".join(captions[0].astext().split())
        for image in figure.findall(nodes.image):
            if not image.get("alt") or image.get("alt") == image.get("uri"):
                image["alt"] = text


def setup(app):
    # before sphinx-codeautolink reads the code blocks (priority 490): it must not look for the removed cell
    app.connect("doctree-read", _remove_injected_parameters, priority=480)
    app.connect("doctree-resolved", _alt_text_from_captions)
    app.connect("html-page-context", _drop_repeated_scripts)
    app.connect("build-finished", _serve_executed_notebooks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

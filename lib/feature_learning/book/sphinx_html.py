"""Sphinx extension: small fixes to the HTML pages of the Jupyter Book 1.x stack, found by the browser tests.

* sphinx-thebe's inline configuration script reaches the page twice, once registered with the file name ``None`` and
  once with ``''`` (so Sphinx's own de-duplication misses it), and the browser reports ``Identifier 'THEBE_JS_URL'
  has already been declared``: scripts equal up to that difference are dropped.
"""

from __future__ import annotations


def _drop_repeated_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _drop_repeated_scripts)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

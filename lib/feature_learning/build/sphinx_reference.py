"""Sphinx extension: the book's "Library reference" page, generated from the package itself.

The directive ``library-reference`` walks the package ``feature_learning`` and documents every module with autodoc, one
section per sub-package (data, models, training, inference, measure, theory, plotting, experiments, the chapter
runtime, the build tooling). With an argument (``.. library-reference:: models``) it documents one sub-package:
the book has one page per layer (``book/reference/<layer>.md``). A module added or removed is picked up by the next
build: the pages cannot fall out of step with the code.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

PACKAGE = "feature_learning"
SECTIONS = (
    ("data", "Data models"),
    ("models", "Models"),
    ("training", "Training"),
    ("inference", "Inference"),
    ("measure", "Measurements"),
    ("theory", "Theory (closed forms and SymPy)"),
    ("plotting", "Figures"),
    ("experiments", "Experiments (one module per chapter)"),
    ("book", "The chapter runtime"),
    ("build", "The build tooling"),
)


def modules(package: str = PACKAGE) -> dict[str, list[str]]:
    """Every module of the package, grouped by sub-package (``{"models": ["feature_learning.models.two_layer"]}``)."""
    root = importlib.import_module(package)
    groups: dict[str, list[str]] = {}
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        parts = info.name.split(".")
        if len(parts) < 2 or parts[-1].startswith("_"):
            continue
        groups.setdefault(parts[1], []).append(info.name)
    return {key: sorted(names) for key, names in groups.items()}


class LibraryReference(SphinxDirective):
    has_content = False
    optional_arguments = 1

    def run(self):
        groups = modules()
        unknown = sorted(set(groups) - {key for key, _ in SECTIONS})
        if unknown:
            raise self.error(f"library-reference: sub-packages without a section: {unknown}")
        wanted = self.arguments[0] if self.arguments else None
        if wanted is not None and wanted not in dict(SECTIONS):
            raise self.error(f"library-reference: no layer {wanted!r}; one of {[key for key, _ in SECTIONS]}")
        lines = []
        for key, title in SECTIONS:
            if key not in groups or wanted not in (None, key):
                continue
            if wanted is None:
                lines += [title, "-" * len(title), ""]
            for name in groups[key]:
                lines += [f".. automodule:: {name}", "   :members:", "   :member-order: bysource", ""]
        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(StringList(lines, source="library-reference"), self.content_offset, container,
                                match_titles=True)
        return container.children


# A word ending in an underscore before a space or punctuation (rho, underscore, minus) is a hyperlink reference to
# reStructuredText; docstrings mean a subscript.
TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=$|[\s\-.,:;!?/'\")\]}>])")


def escape_docstring_markup(app, what, name, obj, options, lines):
    """Docstrings write norms and absolute values as |x|, which reStructuredText reads as a substitution, and
    subscripts written as a trailing underscore, which it reads as a reference: escape both."""
    lines[:] = [TRAILING_UNDERSCORE.sub(r"\\_", line.replace("|", "\\|")) for line in lines]


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.connect("autodoc-process-docstring", escape_docstring_markup)
    app.add_directive("library-reference", LibraryReference)
    app.config.autodoc_typehints = "none"
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

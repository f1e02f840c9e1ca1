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
* A glued figure's image gets its caption as alternative text (myst-nb leaves the file path), its math as plain
  text (``\\mathbb E_{\\mathbf x}`` reads "E_x", ``\\alpha=\\pi/2`` "α=π/2").
"""

from __future__ import annotations

import re
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


_TEX_STYLES = set("mathbf mathbb mathrm mathcal mathsf mathit boldsymbol operatorname textrm text left right big Big "
                  "bigg Bigg displaystyle".split())


_TEX_SYMBOLS = dict(zip(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta kappa lambda mu nu xi pi rho sigma tau phi varphi chi "
    "psi omega Gamma Delta Theta Lambda Sigma Phi Omega ell langle rangle pm in cdot times le leq ge geq approx ne "
    "neq to infty sum".split(),
    "αβγδεεζηθκλμνξπρστφφχψωΓΔΘΛΣΦΩℓ⟨⟩±∈·×≤≤≥≥≈≠≠→∞Σ", strict=True))


def tex_to_text(tex: str) -> str:
    """Inline TeX as a reader hears it in alternative text: style commands and braces dropped, Greek letters and
    common symbols as Unicode (``\\alpha=\\pi/2`` reads "α=π/2"), other commands by name, spacing as spaces."""
    text = re.sub(r"\\[,;:! ]", " ", tex)
    text = re.sub(r"\\([A-Za-z]+)\s*",
                  lambda m: "" if m[1] in _TEX_STYLES else _TEX_SYMBOLS.get(m[1], f" {m[1]} "), text)
    text = text.replace("\\", "").replace("{", "").replace("}", "")
    return " ".join(text.split())


def caption_text(caption: nodes.Node) -> str:
    """A caption's text with its math as plain text (:func:`tex_to_text`)."""
    parts = [tex_to_text(str(t)) if isinstance(t.parent, nodes.math) else str(t) for t in caption.findall(nodes.Text)]
    return " ".join("".join(parts).split())


def _alt_text_from_captions(app, doctree, docname):
    for figure in doctree.findall(nodes.figure):
        captions = [c for c in figure.findall(nodes.caption)]
        if not captions:
            continue
        text = caption_text(captions[0])
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

"""The library-reference page documents every module of the package, each under a section of its layer."""

import pkgutil

import feature_learning
from feature_learning.build.sphinx_reference import SECTIONS, modules


def test_every_module_is_in_a_section():
    groups = modules()
    names = {name for group in groups.values() for name in group}
    expected = {info.name for info in pkgutil.walk_packages(feature_learning.__path__, prefix="feature_learning.")
                if not info.name.rsplit(".", 1)[-1].startswith("_")}
    assert names == expected
    assert set(groups) <= {key for key, _ in SECTIONS}


def test_docstring_bars_and_trailing_underscores_are_escaped():
    from docutils.core import publish_doctree

    from feature_learning.build.sphinx_reference import escape_docstring_markup

    lines = ["the rates (rho_+ + rho_-)/2, |x| and q_ alone; x_i and ``keep`` stay"]
    escape_docstring_markup(None, "function", "f", None, {}, lines)
    assert lines == [r"the rates (rho_+ + rho\_-)/2, \|x\| and q\_ alone; x_i and ``keep`` stay"]
    doctree = publish_doctree("\n".join(lines), settings_overrides={"report_level": 5})
    assert "rho_+ + rho_-" in doctree.astext() and "|x|" in doctree.astext()
    assert not doctree.traverse(lambda n: n.tagname in ("reference", "substitution_reference", "problematic"))


def test_every_layer_has_a_reference_page_listed_in_the_toc():
    from pathlib import Path

    from feature_learning.build.notebooks import toc_files

    root = Path(__file__).resolve().parents[2]
    files = toc_files(root)
    for key, _ in SECTIONS:
        page = root / "book" / "reference" / f"{key}.md"
        assert f".. library-reference:: {key}" in page.read_text(), key
        assert f"book/reference/{key}" in files, key

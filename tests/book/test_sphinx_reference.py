"""The library-reference page documents every module of the package, each under a section of its layer."""

import pkgutil

import feature_learning
from feature_learning.book.sphinx_reference import SECTIONS, modules


def test_every_module_is_in_a_section():
    groups = modules()
    names = {name for group in groups.values() for name in group}
    expected = {info.name for info in pkgutil.walk_packages(feature_learning.__path__, prefix="feature_learning.")
                if not info.name.rsplit(".", 1)[-1].startswith("_")}
    assert names == expected
    assert set(groups) <= {key for key, _ in SECTIONS}

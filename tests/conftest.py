"""Records which notebooks this pytest run executes (nbval collects them), for tests/test_notebooks.py."""

from pathlib import Path

import pytest

COLLECTED_NOTEBOOKS: set[Path] = set()


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.suffix == ".ipynb":
            COLLECTED_NOTEBOOKS.add(path.resolve())


@pytest.fixture
def collected_notebooks() -> set[Path]:
    return COLLECTED_NOTEBOOKS

"""Staging the book from notebooks executed elsewhere (feature_learning.book.site)."""

import json

import nbformat
import pytest
import yaml

from feature_learning.book.site import StagingError, stage

TOC = {"format": "jb-book", "root": "book/intro", "chapters": [{"file": "book/ch/demo"}]}


def _notebook(path, executed: bool):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("1 + 1")
    if executed:
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
    nb.cells = [cell]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "book" / "ch").mkdir(parents=True)
    (root / "_toc.yml").write_text(yaml.safe_dump(TOC))
    (root / "_config.yml").write_text(yaml.safe_dump({"title": "t", "execute": {"execute_notebooks": "cache"}}))
    (root / "book" / "intro.md").write_text("# Intro\n")
    _notebook(root / "book" / "ch" / "demo.ipynb", executed=False)
    return root


def test_book_layout_with_a_claims_folder(root, tmp_path):
    run = tmp_path / "run"
    _notebook(run / "book" / "ch" / "demo.ipynb", executed=True)
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "demo.json").write_text(json.dumps({"chapter": "demo", "claims": []}))
    out = stage(run, tmp_path / "site", claims=tmp_path / "claims", root=root)
    assert yaml.safe_load((out / "_config.yml").read_text())["execute"]["execute_notebooks"] == "off"
    staged = json.loads((out / "book" / "ch" / "demo.ipynb").read_text())
    assert staged["cells"][0]["outputs"], "the executed notebook replaces the stored one"
    assert json.loads((out / "_claims" / "demo.json").read_text())["chapter"] == "demo"
    assert (out / "book" / "intro.md").exists()


def test_sweep_layout_takes_the_chosen_seed_and_its_ledger(root, tmp_path):
    sweep = tmp_path / "sweep"
    for seed in (0, 3):
        _notebook(sweep / "demo" / f"seed{seed}.ipynb", executed=True)
        (sweep / "demo" / f"seed{seed}.json").write_text(json.dumps({"ledger": {"chapter": "demo", "seed": seed}}))
    out = stage(sweep, tmp_path / "site", seed=3, root=root)
    assert json.loads((out / "_claims" / "demo.json").read_text())["seed"] == 3


def test_unexecuted_or_missing_notebooks_and_ledgers_are_refused(root, tmp_path):
    with pytest.raises(StagingError, match="no executed notebook"):
        stage(tmp_path / "nothing", tmp_path / "site", root=root)
    run = tmp_path / "run"
    _notebook(run / "book" / "ch" / "demo.ipynb", executed=False)
    with pytest.raises(StagingError, match="not executed"):
        stage(run, tmp_path / "site", root=root)
    _notebook(run / "book" / "ch" / "demo.ipynb", executed=True)
    with pytest.raises(StagingError, match="no claims ledger"):
        stage(run, tmp_path / "site", root=root)

"""Staging the book from notebooks executed elsewhere (feature_learning.build.site)."""

import json

import nbformat
import pytest
import yaml

from feature_learning.build.site import StagingError, stage

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


def test_a_sweep_run_that_crashed_is_staged_and_listed_not_fatal(root, tmp_path):
    """A chapter that stopped before writing its ledger (say, a CUDA error) does not withhold the rest of the book:
    its notebook is staged as it stopped and its record goes to _claims/failed/ for the report."""
    from feature_learning.build.sphinx_report import failed_nodes, failed_runs, staged_summary

    sweep = tmp_path / "sweep"
    _notebook(sweep / "demo" / "seed0.ipynb", executed=True)
    (sweep / "demo" / "seed0.json").write_text(json.dumps(
        {"chapter": "demo", "profile": "full", "seed": 0, "device": "cuda", "ok": False, "ledger": None,
         "error": "RuntimeError: Expected all tensors to be on the same device"}))
    (sweep / "summary.json").write_text(json.dumps({"all_hold": False, "chapters": {}}))
    out = stage(sweep, tmp_path / "site", root=root)
    assert (out / "book" / "ch" / "demo.ipynb").exists() and not (out / "_claims" / "demo.json").exists()
    failed = failed_runs(out / "_claims")
    assert failed == [{"chapter": "demo", "profile": "full", "seed": 0, "device": "cuda",
                       "error": "RuntimeError: Expected all tensors to be on the same device"}]
    assert staged_summary(out / "_claims") == {"all_hold": False, "chapters": {}}  # the sweep's own summary
    text = failed_nodes(failed)[0].astext()
    assert "Runs that failed" in text and "demo" in text and "same device" in text


def test_build_skips_an_unchanged_site_and_rebuilds_a_changed_one(root, tmp_path, capsys):
    from feature_learning.build.site import build

    run = tmp_path / "run"
    _notebook(run / "book" / "ch" / "demo.ipynb", executed=True)
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "demo.json").write_text(json.dumps({"chapter": "demo", "claims": []}))
    calls = tmp_path / "calls"
    fake = tmp_path / "jupyter-book"  # stands in for jupyter-book: counts its calls, writes the index
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n'
                    'mkdir -p "$2/_build/html" && touch "$2/_build/html/index.html"\n')
    fake.chmod(0o755)
    kw = {"claims": tmp_path / "claims", "root": root, "jupyter_book": str(fake)}
    assert build(run, tmp_path / "site", **kw) == 0
    assert build(run, tmp_path / "site", **kw) == 0
    assert len(calls.read_text().splitlines()) == 1 and "nothing changed" in capsys.readouterr().out
    (root / "book" / "intro.md").write_text("# Intro, revised\n")
    assert build(run, tmp_path / "site", **kw) == 0
    lines = calls.read_text().splitlines()
    assert len(lines) == 2 and "-W" in lines[0].split()

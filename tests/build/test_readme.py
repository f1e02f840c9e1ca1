"""The README's generated blocks (feature_learning.build.readme): the chapters table, the two commands' cost and what
a GPU hour buys, equal to what the stored records say; and the README stays short and undated outside them."""

import json
import re
from pathlib import Path

import pytest

from feature_learning.build import readme

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_says_what_the_stored_ledgers_and_runs_say():
    text = (ROOT / "README.md").read_text()
    expected = readme.rewrite(text, readme.blocks(ROOT))
    assert text == expected, ("README.md differs from results/full, results/seeds and results/runs: run "
                              "`python -m feature_learning.build.readme`")


def test_the_readme_is_short_and_dates_only_generated_measurements():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    outside = text
    for name in readme.BLOCKS:
        outside = readme._pattern(name).sub("", outside)
    assert not re.findall(r"\b20\d\d-\d\d-\d\d\b", outside), "a dated measurement belongs in results/runs/"
    assert not re.search(r"\b(stop \d+|helpers?|issue \d+)\b", text, flags=re.I)


LEDGER = {"claims": [{"id": "a", "status": "pass"}, {"id": "b", "status": "fail"}, {"id": "c", "status": "pass"}]}


@pytest.mark.parametrize(("record", "cell"), [
    ({"device": "cuda", "machine": "NVIDIA H200, torch 2.11", "written": "2026-11-27T11:17:15+00:00", "seconds": 267,
      "ledger": LEDGER}, "2 of 3 claims hold (NVIDIA H200, 2026-11-27, 4 min 27 s)"),
    ({"device": "cpu", "written": "2026-11-26T20:15:41+00:00", "ledger": LEDGER},
     "2 of 3 claims hold (CPU, 2026-11-26)"),
    ({"device": "cuda", "machine": "NVIDIA H200", "written": "2026-11-27T11:23:05+00:00", "ledger": None,
      "stopped": True, "seconds": 513}, "stopped (NVIDIA H200, 2026-11-27, 8 min 33 s)"),
    ({"device": "cuda", "written": "2026-11-27T11:23:05+00:00", "ledger": None, "error": "OOM"},
     "crashed (CUDA, 2026-11-27)"),
    (None, "no run"),
])
def test_a_chapters_full_cell(record, cell):
    assert readme.chapter_row("x", record, None)[1] == cell


def test_a_full_run_with_other_sizes_says_it_grades_nothing():
    record = {"device": "cpu", "written": "2026-11-26T20:15:41+00:00", "ledger": LEDGER,
              "provenance": {"sizes_digest": "old"}}
    assert readme.full_cell(record, "old") == "2 of 3 claims hold (CPU, 2026-11-26)"
    assert readme.full_cell(record, "new") == ("2 of 3 claims hold (CPU, 2026-11-26; other `full` sizes than the "
                                               "present ones, so it grades no result)")


def test_a_chapters_sweep_cell():
    def claim(held):
        return {"held": held}

    sweep = {"chapters": {
        "all": {"profile": "ci", "seeds": [0, 1, 2, 3, 4, 5], "claims": {"a": claim(6), "b": claim(6)}},
        "some": {"profile": "ci", "seeds": [0, 2], "claims": {"a": claim(2), "b": claim(1)}},
        "crashed": {"profile": "ci", "seeds": [0, 1], "claims": {}, "runs_failed": {"1": "error"}},
    }}
    assert readme.chapter_row("all", None, sweep)[2] == "all 2 claims hold at seeds 0-5 (`ci`)"
    assert readme.chapter_row("some", None, sweep)[2] == "1 of 2 claims hold at every one of seeds 0, 2 (`ci`)"
    assert readme.chapter_row("crashed", None, sweep)[2] == "runs failed at seeds 1"
    assert readme.chapter_row("none", None, sweep)[2] == "not in the sweep"
    assert readme.chapter_row("none", None, None)[2] == "not in the sweep"


def test_a_chapters_results_cell_grades_its_stored_source_map_by_the_stored_runs():
    from feature_learning.book.claims import ClaimLedger, Null

    CHANCE = Null(0.5, "chance")
    led = ClaimLedger("demo", "Demo", profile="ci", seed=0)
    led.at_least("r1", "s", "w", kind="reproduction", measured=1, bound=0.9, null=CHANCE)
    led.at_least("r2", "s", "w", kind="reproduction", measured=1, bound=0.9, null=CHANCE)
    led.source("s1", "Fig 1", "a", ["r1"])
    led.source("s2", "Fig 2", "b", ["r2"], analogue="synthetic images")
    led.source("s3", "Tab 1", "c", not_attempted="ImageNet")
    data = json.loads(json.dumps(led.to_json()))
    sweep = {"chapters": {"demo": {"profile": "ci", "seeds": [0], "claims": {}, "ledger": data}}}
    assert readme.results_cell("demo", None, sweep) == (
        "0 of 3 results reproduced at the source's scale (0 more on analogues at their full size), 0 only below it, "
        "2 not run at the source's scale yet, 0 theorem verifications; 1 not attempted; attempted: 2 of 3 (66%); "
        "0 errata (0 confirmed by a check)")
    full = {"written": "2026-11-27T00:00:00+00:00", "ledger": {"claims": [dict(c) for c in data["claims"]]}}
    full["ledger"]["claims"][1].update(passed=False, status="FAIL")
    assert readme.results_cell("demo", full, sweep).startswith(
        "1 of 3 results reproduced at the source's scale (0 more on analogues at their full size), 1 only below it, "
        "0 not run")
    assert readme.results_cell("other", None, sweep) == "no source map stored with the sweep"


def _project(root: Path, readme_text: str) -> None:
    (root / "book" / "chapters" / "one").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: One\n    chapters:\n"
                                   "      - file: book/chapters/one/demo\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "book" / "chapters" / "one" / "demo.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["(label)=\n", "# A demo chapter\n"]}]}))
    (root / "results" / "full").mkdir(parents=True)
    (root / "results" / "full" / "demo.json").write_text(json.dumps(
        {"chapter": "demo", "device": "cpu", "written": "2026-11-26T20:15:41+00:00", "ledger": LEDGER}))
    (root / "README.md").write_text(readme_text)


def test_check_fails_on_a_stale_block_and_the_rewrite_fixes_it(tmp_path, capsys):
    blocks = "".join(f"<!-- {name}:start -->\nold\n<!-- {name}:end -->\n\n" for name in readme.BLOCKS)
    _project(tmp_path, "# Title\n\n" + blocks + "The end.\n")
    assert readme.main(["--check", "--root", str(tmp_path)]) == 1
    assert readme.main(["--root", str(tmp_path)]) == 0
    text = (tmp_path / "README.md").read_text()
    assert ("| 1 | [A demo chapter](book/chapters/one/demo.ipynb) | no source map stored with the sweep | "
            "2 of 3 claims hold (CPU, 2026-11-26) | not in the sweep |") in text
    assert "| `make test` | not measured | not measured |" in text
    assert text.startswith("# Title\n") and text.endswith("The end.\n")
    assert readme.main(["--check", "--root", str(tmp_path)]) == 0


def test_a_readme_without_a_block_is_an_error():
    with pytest.raises(ValueError, match="chapters"):
        readme.rewrite("no markers", {"chapters": "x"})

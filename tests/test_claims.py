import json

import pytest

from feature_learning.book.claims import (
    STATUS_NOT_REPRODUCED,
    STATUS_PASS,
    ClaimFailed,
    ClaimLedger,
    load_ledgers,
)
from feature_learning.book.sphinx_report import report_nodes


def ledger():
    return ClaimLedger("demo", "Demo chapter", profile="ci", seed=0)


def test_passing_ledger_is_written_as_json(tmp_path):
    led = ledger()
    led.close_to("c1", "a constant", "Thm 1", source_value=1.0, measured=1.0 + 1e-13, atol=1e-12)
    led.at_least("c2", "an accuracy", "Fig 2", measured=0.97, bound=0.95, source_value="about 1")
    led.finish(tmp_path)
    data = json.loads((tmp_path / "demo.json").read_text())
    assert [c["status"] for c in data["claims"]] == [STATUS_PASS, STATUS_PASS]
    assert data["profile"] == "ci" and data["chapter"] == "demo"
    assert "<table>" in led._repr_html_()


def test_failed_claim_raises_after_writing(tmp_path):
    led = ledger()
    led.at_most("c1", "never above the bound", "Thm 1", measured=1.1, bound=1.0)
    with pytest.raises(ClaimFailed, match="c1"):
        led.finish(tmp_path)
    assert (tmp_path / "demo.json").exists()


def test_close_to_relative_tolerance():
    led = ledger()
    assert led.close_to("a", "s", "w", source_value=100.0, measured=104.0, rtol=0.05).passed
    assert not led.close_to("b", "s", "w", source_value=100.0, measured=106.0, rtol=0.05).passed


def test_nan_never_passes():
    led = ledger()
    assert not led.at_least("a", "s", "w", measured=float("nan"), bound=0.0).passed
    assert not led.at_most("b", "s", "w", measured=float("nan"), bound=0.0).passed


def test_documented_failure_is_reported_not_raised_and_unexpected_pass_raises(tmp_path):
    led = ledger()
    led.at_least("c1", "a claim that does not reproduce", "Fig 9", measured=0.2, bound=0.9, known_failure="why")
    led.finish(tmp_path)
    assert led.claims[0].status == STATUS_NOT_REPRODUCED
    led2 = ledger()
    led2.at_least("c1", "documented failure now passing", "Fig 9", measured=0.95, bound=0.9, known_failure="why")
    with pytest.raises(ClaimFailed):
        led2.finish(tmp_path)


def test_duplicate_ids_and_empty_ledgers_are_refused(tmp_path):
    led = ledger()
    led.at_least("c1", "s", "w", measured=1, bound=0)
    with pytest.raises(ValueError, match="twice"):
        led.at_least("c1", "s", "w", measured=1, bound=0)
    with pytest.raises(ClaimFailed, match="no claims"):
        ledger().finish(tmp_path)


def test_report_gathers_all_ledgers(tmp_path):
    for name in ("b_chapter", "a_chapter"):
        led = ClaimLedger(name, name.title(), profile="book", seed=1)
        led.holds("x", "a condition", "Sec 1", measured=True, condition=True, relation="holds")
        led.write(tmp_path)
    ledgers = load_ledgers(tmp_path)
    assert [d["chapter"] for d in ledgers] == ["a_chapter", "b_chapter"]
    intro, runs, table = report_nodes(ledgers)
    assert "2 claims from 2 chapter(s)" in intro.astext()
    assert "a_chapter" in table.astext() and "b_chapter" in table.astext()


def test_report_without_ledgers_says_so():
    (node,) = report_nodes([])
    assert "No chapter ledgers" in node.astext()


def test_report_names_chapters_without_a_ledger(tmp_path):
    from pathlib import Path

    from feature_learning.book.sphinx_report import missing_ledgers

    root = Path(__file__).resolve().parents[1]
    assert "fourier_circuits" in missing_ledgers(root, [])
    assert "fourier_circuits" not in missing_ledgers(root, [{"chapter": "fourier_circuits"}])

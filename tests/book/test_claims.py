import json

import pytest

from feature_learning.book.claims import (
    STATUS_NOISE,
    STATUS_NOT_REPRODUCED,
    STATUS_PASS,
    ClaimFailed,
    ClaimLedger,
    headline,
    load_ledgers,
)
from feature_learning.book.seeds import near_bounds, summarize
from feature_learning.book.sphinx_report import report_nodes

R, D, C = "reproduction", "derivation", "consistency"


def ledger():
    return ClaimLedger("demo", "Demo chapter", profile="ci", seed=0)


def test_passing_ledger_is_written_as_json_with_kinds(tmp_path):
    led = ledger()
    led.close_to("c1", "a constant", "Thm 1", kind=D, source_value=1.0, measured=1.0 + 1e-13, atol=1e-12)
    led.at_least("c2", "an accuracy", "Fig 2", kind=R, measured=0.97, bound=0.95, source_value="about 1")
    led.finish(tmp_path)
    data = json.loads((tmp_path / "demo.json").read_text())
    assert [c["status"] for c in data["claims"]] == [STATUS_PASS, STATUS_PASS]
    assert [c["kind"] for c in data["claims"]] == [D, R]
    assert data["profile"] == "ci" and data["chapter"] == "demo"
    html = led._repr_html_()
    assert "<table>" in html and "<th style='text-align:left'>kind</th>" in html


def test_every_claim_needs_a_known_kind():
    led = ledger()
    with pytest.raises(TypeError):
        led.at_least("a", "s", "w", measured=1, bound=0)  # kind is a required keyword
    with pytest.raises(ValueError, match="kind must be one of"):
        led.at_least("b", "s", "w", kind="empirical", measured=1, bound=0)


def test_failed_claim_raises_after_writing(tmp_path):
    led = ledger()
    led.at_most("c1", "never above the bound", "Thm 1", kind=R, measured=1.1, bound=1.0)
    with pytest.raises(ClaimFailed, match="c1"):
        led.finish(tmp_path)
    assert (tmp_path / "demo.json").exists()


def test_close_to_relative_tolerance():
    led = ledger()
    assert led.close_to("a", "s", "w", kind=R, source_value=100.0, measured=104.0, rtol=0.05).passed
    assert not led.close_to("b", "s", "w", kind=R, source_value=100.0, measured=106.0, rtol=0.05).passed


def test_nan_never_passes():
    led = ledger()
    assert not led.at_least("a", "s", "w", kind=R, measured=float("nan"), bound=0.0).passed
    assert not led.at_most("b", "s", "w", kind=R, measured=float("nan"), bound=0.0).passed


def test_a_verdict_within_two_standard_errors_of_its_bound_fails_on_either_side():
    led = ledger()
    clear = led.at_least("clear", "s", "w", kind=R, measured=0.95, bound=0.9, se=0.01)
    above = led.at_least("above", "s", "w", kind=R, measured=0.91, bound=0.9, se=0.01)
    below = led.at_most("below", "s", "w", kind=R, measured=0.95, bound=0.96, se=0.01,
                        known_failure="a documented failure on its threshold is no finding either")
    close = led.close_to("close", "s", "w", kind=R, source_value=1.0, measured=1.09, atol=0.1, se=0.01)
    assert clear.status == STATUS_PASS and "se 0.0100" in clear.relation
    assert above.status == below.status == close.status == STATUS_NOISE
    assert {c.id for c in led.failed} == {"above", "below", "close"}
    with pytest.raises(ValueError, match="se must be"):
        led.at_least("neg", "s", "w", kind=R, measured=1, bound=0, se=-1.0)


def test_documented_failure_is_reported_not_raised_and_unexpected_pass_raises(tmp_path):
    led = ledger()
    led.at_least("c1", "a claim that does not reproduce", "Fig 9", kind=R, measured=0.2, bound=0.9,
                 known_failure="why")
    led.finish(tmp_path)
    assert led.claims[0].status == STATUS_NOT_REPRODUCED
    led2 = ledger()
    led2.at_least("c1", "documented failure now passing", "Fig 9", kind=R, measured=0.95, bound=0.9,
                  known_failure="why")
    with pytest.raises(ClaimFailed):
        led2.finish(tmp_path)


def test_duplicate_ids_and_empty_ledgers_are_refused(tmp_path):
    led = ledger()
    led.at_least("c1", "s", "w", kind=R, measured=1, bound=0)
    with pytest.raises(ValueError, match="twice"):
        led.at_least("c1", "s", "w", kind=R, measured=1, bound=0)
    with pytest.raises(ClaimFailed, match="no claims"):
        ledger().finish(tmp_path)


def test_headline_counts_reproductions_apart_from_other_kinds():
    led = ledger()
    led.at_least("r1", "s", "w", kind=R, measured=1, bound=0)
    led.at_least("r2", "s", "w", kind=R, measured=0, bound=1, known_failure="why")
    led.at_least("d1", "s", "w", kind=D, measured=1, bound=0)
    led.at_least("c1", "s", "w", kind=C, measured=1, bound=0)
    claims = led.to_json()["claims"]
    assert headline(claims) == ("1 of 2 source claims reproduced, 1 documented as not reproducing; "
                                "1 of 1 derivation checks pass; 1 of 1 consistency checks pass.")


def test_report_gathers_all_ledgers_per_chapter(tmp_path):
    for name in ("b_chapter", "a_chapter"):
        led = ClaimLedger(name, name.title(), profile="book", seed=1)
        led.holds("x", "a condition", "Sec 1", kind=R, measured=True, condition=True, relation="holds")
        led.write(tmp_path)
    ledgers = load_ledgers(tmp_path)
    assert [d["chapter"] for d in ledgers] == ["a_chapter", "b_chapter"]
    intro, summary, sweep, *chapters = report_nodes(ledgers)
    assert "2 chapter(s), 2 claims: 2 of 2 source claims reproduced" in intro.astext()
    assert "A_Chapter" in summary.astext() and "not swept" in summary.astext()
    assert "No seed sweep" in sweep.astext()
    assert [c.astext().splitlines()[0] for c in chapters] == ["A_Chapter", "B_Chapter"]


def _record(seed, status, ok=True):
    claim = {"id": "x", "kind": R, "statement": "s", "status": status, "measured": seed / 10}
    return {"chapter": "demo", "profile": "ci", "seed": seed, "ok": ok, "error": None if ok else "boom",
            "ledger": {"claims": [claim]}}


def test_seed_summary_counts_each_claims_seeds_and_crashed_runs():
    summary = summarize([_record(0, STATUS_PASS), _record(1, STATUS_NOT_REPRODUCED), _record(2, "FAIL")])
    entry = summary["chapters"]["demo"]["claims"]["x"]
    assert entry["held"] == 2 and entry["failing_seeds"] == [2] and entry["per_seed"]["1"]["measured"] == 0.1
    assert not summary["all_hold"]
    crashed = {**_record(3, STATUS_PASS, ok=False), "ledger": None}
    summary = summarize([_record(0, STATUS_PASS), crashed])
    assert summary["chapters"]["demo"]["runs_failed"] == {"3": "boom"}
    assert summary["chapters"]["demo"]["claims"]["x"]["failing_seeds"] == [3] and not summary["all_hold"]
    assert summarize([_record(0, STATUS_PASS), _record(1, STATUS_PASS)])["all_hold"]


def test_near_bounds_lists_passing_claims_within_noise_of_their_bound():
    def record(seed, margins):
        claims = [{"id": cid, "kind": R, "statement": "s", "status": STATUS_PASS, "measured": 0.0, "margin": m}
                  for cid, m in margins.items()]
        return {"chapter": "demo", "profile": "ci", "seed": seed, "ok": True, "error": None,
                "ledger": {"claims": claims}}

    # "near": margins 0.1, 0.5, 0.9 (mean 0.5, sd 0.4: z 1.25); "far": 10 +- 0.1; "exact": constant; "cond": none
    margins = [{"near": m, "far": 10 + d, "exact": 1.0, "cond": None} for m, d in ((0.1, -0.1), (0.5, 0), (0.9, 0.1))]
    summary = summarize([record(seed, m) for seed, m in enumerate(margins)])
    ((z, chapter, cid, values),) = near_bounds(summary)
    assert (chapter, cid, values) == ("demo", "near", [0.1, 0.5, 0.9]) and z == pytest.approx(1.25)
    assert [row[2] for row in near_bounds(summary, z=200)] == ["near", "far"]
    assert near_bounds(summarize([record(seed, m) for seed, m in enumerate(margins[:2])])) == []  # two seeds


def test_report_lists_claims_failing_some_seed():
    led = ClaimLedger("demo", "Demo", profile="ci", seed=0)
    led.holds("x", "s", "w", kind=R, measured=True, condition=True, relation="holds")
    sweep = summarize([_record(0, STATUS_PASS), _record(1, "FAIL")])
    _, summary, section, _ = report_nodes([led.to_json()], sweep)
    assert "0/1 claims at all 2 seeds" in summary.astext()
    assert "fails at seeds [1]" in section.astext()


def test_report_without_ledgers_says_so():
    (node,) = report_nodes([])
    assert "No chapter ledgers" in node.astext()


def test_report_names_chapters_without_a_ledger(tmp_path):
    from pathlib import Path

    from feature_learning.book.sphinx_report import missing_ledgers

    root = Path(__file__).resolve().parents[2]
    assert "fourier_circuits" in missing_ledgers(root, [])
    assert "fourier_circuits" not in missing_ledgers(root, [{"chapter": "fourier_circuits"}])

import json
from html import escape as html_escape

import pytest
import sympy

from feature_learning.book.claims import (
    STATUS_FAIL,
    STATUS_INCONCLUSIVE,
    STATUS_NO_NULL,
    STATUS_NOISE,
    STATUS_NOT_REPRODUCED,
    STATUS_NOT_TESTABLE,
    STATUS_NULL_PASSES,
    STATUS_PASS,
    STATUS_UNEXPECTED_PASS,
    ClaimFailed,
    ClaimLedger,
    Null,
    claim_cells,
    claim_statement,
    claims_html,
    format_value,
    headline,
    inline_math,
    load_ledgers,
    source_cells,
    source_headline,
    source_map_html,
)
from feature_learning.build.seeds import near_bounds, summarize
from feature_learning.build.sphinx_report import report_nodes
from feature_learning.measure.statistics import Estimate

R, V, P, D, C = "reproduction", "verification", "prediction", "derivation", "consistency"
CHANCE = Null(0.5, "chance")


def ledger():
    return ClaimLedger("demo", "Demo chapter", profile="ci", seed=0)


def test_passing_ledger_is_written_as_json_with_kinds_nulls_and_sources(tmp_path):
    led = ledger()
    led.close_to("c1", "a constant", "Thm 1", kind=D, source_value=1.0, measured=1.0 + 1e-13, atol=1e-12)
    led.at_least("c2", "an accuracy", "Fig 2", kind=R, measured=0.97, bound=0.95, source_value="about 1", null=CHANCE)
    led.source("fig2", "Fig 2", "the network learns", "reproduced", ["c2"])
    shown = led.finish(tmp_path)
    data = json.loads((tmp_path / "demo.json").read_text())
    assert [c["status"] for c in data["claims"]] == [STATUS_PASS, STATUS_PASS]
    assert [c["kind"] for c in data["claims"]] == [D, R]
    assert data["claims"][1]["null"] == 0.5 and data["claims"][1]["null_model"] == "chance"
    assert data["claims"][1]["null_passed"] is False
    assert data["sources"] == [{"id": "fig2", "where": "Fig 2", "what": "the network learns", "status": "reproduced",
                                "claims": ["c2"], "note": None, "analogue": None}]
    assert data["profile"] == "ci" and data["chapter"] == "demo"
    html = led._repr_html_()
    assert "<table class='claims-table mathjax_process'>" in html and "<th>claim</th>" in html
    assert html.startswith("<div class='full-width claims-wide'>"), "a claims table reaches over the margin"
    wide_map = "<div class='full-width claims-wide'><table class='claims-table source-map mathjax_process'>"
    assert shown._repr_html_().count(wide_map) == 1
    report = claims_html(data["claims"], box="report-wide")  # the report: no contents list, a box of its own
    assert report.startswith("<div class='report-wide'>") and "full-width" not in report
    assert claims_html(data["claims"], box=None).startswith("<table")
    assert "<span class='claim-kind'>" in html and "claim-badge claim-pass" in html
    assert "1 of 1 source results reproduced" in shown._repr_html_()


def test_every_claim_needs_a_known_kind():
    led = ledger()
    with pytest.raises(TypeError):
        led.at_least("a", "s", "w", measured=1, bound=0)  # kind is a required keyword
    with pytest.raises(ValueError, match="kind must be one of"):
        led.at_least("b", "s", "w", kind="empirical", measured=1, bound=0)


def test_a_reproduction_needs_a_null_that_fails_its_test():
    led = ledger()
    assert led.at_least("none", "s", "w", kind=R, measured=0.9, bound=0.8).status == STATUS_NO_NULL
    assert led.at_least("weak", "s", "w", kind=R, measured=0.9, bound=0.4, null=CHANCE).status == STATUS_NULL_PASSES
    assert led.at_most("ok", "s", "w", kind=R, measured=0.1, bound=0.4, null=CHANCE).status == STATUS_PASS
    assert led.close_to("near", "s", "w", kind=R, source_value=0.55, measured=0.55, atol=0.1,
                        null=CHANCE).status == STATUS_NULL_PASSES
    cond = led.holds("cond", "s", "w", kind=R, measured="x", condition=True, relation="r",
                     null=Null("y", "prior", passes=True))
    assert cond.status == STATUS_NULL_PASSES
    with pytest.raises(ValueError, match="passes"):
        led.holds("cond2", "s", "w", kind=R, measured="x", condition=True, relation="r", null=Null("y", "prior"))
    with pytest.raises(TypeError, match="Null"):
        led.at_least("raw", "s", "w", kind=R, measured=1, bound=0, null=0.5)
    # verifications, derivations and consistency checks need no null
    assert led.at_least("v", "s", "w", kind=V, measured=1, bound=0).status == STATUS_PASS
    assert {c.id for c in led.failed} == {"none", "weak", "near", "cond"}


def test_a_result_object_carries_value_se_and_null():
    led = ledger()
    est = Estimate.of([0.8, 0.9, 1.0], null=Null(0.1, "untrained network"))
    claim = led.at_least("e", "s", "w", kind=R, measured=est, bound=0.5)
    assert claim.measured == pytest.approx(0.9) and claim.se == pytest.approx(0.0577, abs=1e-4)
    assert claim.null == 0.1 and claim.status == STATUS_PASS


def test_failed_claim_raises_after_writing(tmp_path):
    led = ledger()
    led.at_most("c1", "never above the bound", "Thm 1", kind=V, measured=1.1, bound=1.0)
    with pytest.raises(ClaimFailed, match="c1"):
        led.finish(tmp_path)
    assert (tmp_path / "demo.json").exists()


def test_close_to_relative_tolerance():
    led = ledger()
    assert led.close_to("a", "s", "w", kind=V, source_value=100.0, measured=104.0, rtol=0.05).passed
    assert not led.close_to("b", "s", "w", kind=V, source_value=100.0, measured=106.0, rtol=0.05).passed


def test_nan_never_passes():
    led = ledger()
    assert not led.at_least("a", "s", "w", kind=V, measured=float("nan"), bound=0.0).passed
    assert not led.at_most("b", "s", "w", kind=V, measured=float("nan"), bound=0.0).passed


def test_a_verdict_within_two_standard_errors_of_its_bound_fails_on_either_side():
    led = ledger()
    clear = led.at_least("clear", "s", "w", kind=V, measured=0.95, bound=0.9, se=0.01)
    above = led.at_least("above", "s", "w", kind=V, measured=0.91, bound=0.9, se=0.01)
    below = led.at_most("below", "s", "w", kind=R, measured=0.95, bound=0.96, se=0.01, null=Null(1.0, "prior"),
                        not_reproduced="a documented failure on its threshold is no finding either")
    close = led.close_to("close", "s", "w", kind=V, source_value=1.0, measured=1.09, atol=0.1, se=0.01)
    assert clear.status == STATUS_PASS and clear.noise_distance == pytest.approx(5.0)
    assert above.status == below.status == close.status == STATUS_NOISE
    assert {c.id for c in led.failed} == {"above", "below", "close"}
    with pytest.raises(ValueError, match="se must be"):
        led.at_least("neg", "s", "w", kind=V, measured=1, bound=0, se=-1.0)


def test_the_noise_guard_reads_as_a_distance_in_the_table():
    led = ledger()
    led.at_least("clear", "s", "w", kind=V, measured=0.95, bound=0.9, se=0.01)
    html = claims_html(led.to_json()["claims"])
    assert "5.0 se from its bound" in html and "fails within" not in html


def test_each_claim_is_two_rows_its_numbers_then_its_statement_and_details_across_the_table():
    """The first row holds only what a reader scans down a column (id, values, test, badge); the statement, the kind,
    the place in the source, the null's description and the status's reason go in the row across the table."""
    led = ledger()
    led.at_least("first_claim", "a statement long enough to wrap", "Thm 1", kind=V, measured=0.95, bound=0.9)
    led.at_least("second", "another <statement>", "Fig 2", kind=R, measured=0.97, bound=0.95, null=CHANCE,
                 revised="bound moved after seed 7 failed", inconclusive="holds at some seeds", rate=(3, 4))
    html = claims_html(led.to_json()["claims"])
    assert html.count("<tr class='claim-numbers'>") == 2 and html.count("<tr class='claim-statement'>") == 2
    assert html.count("<td colspan='6'>") == 2 and "another &lt;statement&gt; <em>Revised: bound moved" in html
    numbers = [row.split("</tr>")[0] for row in html.split("<tr class='claim-numbers'>")[1:]]
    assert all(row.count("<td>") == 6 for row in numbers)
    for word in ("a statement long", "verification", "Thm 1", "chance", "holds at some seeds", "3 of 4"):
        assert word not in "".join(numbers) and word in html, word
    assert "<span class='claim-kind'>reproduction</span> · Fig 2 · null: chance · holds in 3 of 4 runs; holds at " \
           "some seeds" in html


def test_source_map_lists_the_carrying_claims_under_each_result():
    led = ledger()
    led.at_least("c2", "an accuracy", "Fig 2", kind=R, measured=0.97, bound=0.95, null=CHANCE)
    led.source("fig2", "Fig 2", "the network learns", "reproduced", ["c2"], note="on an analogue")
    html = source_map_html(led.to_json())
    assert html.count("<th>") == 3 and "<th>result · carried by</th>" in html
    assert "the network learns<br><small>on an analogue</small><br><small>carried by: <code>c2</code></small>" in html


def test_documented_failure_is_reported_not_raised_and_unexpected_pass_raises(tmp_path):
    led = ledger()
    led.at_least("c1", "a claim that does not reproduce", "Fig 9", kind=R, measured=0.2, bound=0.9, null=CHANCE,
                 not_reproduced="why")
    led.source("fig9", "Fig 9", "the claim", "not reproduced", ["c1"], note="why")
    led.finish(tmp_path)
    assert led.claims[0].status == STATUS_NOT_REPRODUCED
    led2 = ledger()
    claim = led2.at_least("c1", "documented failure now passing", "Fig 9", kind=R, measured=0.95, bound=0.9,
                          null=CHANCE, not_reproduced="why")
    assert claim.status == STATUS_UNEXPECTED_PASS
    with pytest.raises(ClaimFailed):
        led2.finish(tmp_path)


def test_inconclusive_and_not_testable_neither_fail_nor_count():
    led = ledger()
    inc = led.at_least("inc", "s", "w", kind=R, measured=0.7, bound=0.8, null=CHANCE, rate=(3, 5),
                       inconclusive="holds for 3 of 5 trained models")
    inc_pass = led.at_least("inc2", "s", "w", kind=R, measured=0.9, bound=0.8, null=CHANCE, inconclusive="varies")
    nt = led.at_least("nt", "s", "w", kind=R, measured=None, bound=0.8, not_testable="our analogue is too short")
    assert inc.status == inc_pass.status == STATUS_INCONCLUSIVE and nt.status == STATUS_NOT_TESTABLE
    assert not inc.passed and inc_pass.passed and not led.failed
    assert "holds in 3 of 5 runs" in claims_html(led.to_json()["claims"])
    with pytest.raises(ValueError, match="at most one"):
        led.at_least("both", "s", "w", kind=R, measured=1, bound=0, inconclusive="a", not_reproduced="b")
    with pytest.raises(ValueError, match="rate"):
        led.at_least("r", "s", "w", kind=V, measured=1, bound=0, rate=(4, 3))


def test_revised_claims_say_so():
    led = ledger()
    led.at_least("c", "s", "w", kind=V, measured=1, bound=0, revised="checkpoint 2^15 -> 2^17 after seed 11 failed")
    assert "Revised: checkpoint 2^15" in claims_html(led.to_json()["claims"])


def test_source_map_statuses_must_agree_with_their_claims(tmp_path):
    led = ledger()
    led.at_least("r", "s", "w", kind=R, measured=0.9, bound=0.8, null=CHANCE)
    led.at_least("v", "s", "w", kind=V, measured=1, bound=0)
    led.at_least("orphan", "s", "w", kind=V, measured=1, bound=0)
    led.at_least("p", "s", "w", kind=P, measured=1, bound=0)  # predictions may stand beside the map
    led.source("a", "Fig 1", "x", "reproduced", ["v"])  # no reproduction carries it
    led.source("b", "Thm 1", "y", "not reproduced", ["r"], note="why")  # but it passes
    led.source("c", "Fig 2", "z", "not attempted", ["r"], note="too big")
    led.source("d", "Tab 1", "w", "verified", ["missing"])
    errors = led.source_map_errors()
    assert any("'a'" in e and "passing reproduction" in e for e in errors)
    assert any("'b'" in e and "'not reproduced'" in e for e in errors)
    assert any("'c'" in e and "not attempted" in e for e in errors)
    assert any("'d'" in e and "unknown" in e for e in errors)
    assert any("'orphan'" in e for e in errors) and not any("'p'" in e for e in errors)
    with pytest.raises(ClaimFailed, match="source map"):
        led.finish(tmp_path)
    with pytest.raises(ValueError, match="analogue"):
        led.source("e", "Fig 3", "v", "reproduced on an analogue", ["r"])
    with pytest.raises(ValueError, match="says why"):
        led.source("f", "Fig 4", "v", "not testable here")
    with pytest.raises(ValueError, match="status must be"):
        led.source("g", "Fig 4", "v", "partly")
    empty = ledger()
    empty.at_least("v", "s", "w", kind=D, measured=1, bound=0)
    assert any("no source map" in e for e in empty.source_map_errors())


def test_duplicate_ids_and_empty_ledgers_are_refused(tmp_path):
    led = ledger()
    led.at_least("c1", "s", "w", kind=V, measured=1, bound=0)
    with pytest.raises(ValueError, match="twice"):
        led.at_least("c1", "s", "w", kind=V, measured=1, bound=0)
    with pytest.raises(ClaimFailed, match="no claims"):
        ledger().finish(tmp_path)


def _mapped_ledger(name="demo", title="Demo"):
    led = ClaimLedger(name, title, profile="book", seed=1)
    led.at_least("r1", "s", "w", kind=R, measured=1, bound=0.9, null=CHANCE)
    led.at_least("r2", "s", "w", kind=R, measured=0, bound=1, null=CHANCE, not_reproduced="why")
    led.at_least("r3", "s", "w", kind=R, measured=1, bound=0.9, null=CHANCE)
    led.at_least("v1", "s", "w", kind=V, measured=1, bound=0)
    led.at_least("p1", "s", "w", kind=P, measured=1, bound=0)
    led.at_least("nt", "s", "w", kind=R, measured=None, bound=0, not_testable="regime")
    led.source("s1", "Fig 1", "a", "reproduced", ["r1"])
    led.source("s2", "Fig 2", "b", "reproduced on an analogue", ["r3"], analogue="synthetic images")
    led.source("s3", "Fig 3", "c", "not reproduced", ["r2"], note="why")
    led.source("s4", "Thm 1", "d", "verified", ["v1"])
    led.source("s5", "Fig 4", "e", "not testable here", ["nt"], note="regime")
    led.source("s6", "Tab 1", "f", "not attempted", note="ImageNet")
    return led


def test_headline_counts_source_results_not_claims():
    led = _mapped_ledger()
    assert led.source_map_errors() == []
    assert source_headline(led.to_json()) == (
        "2 of 6 source results reproduced (1 on analogues); 1 not reproduced; 0 inconclusive; 1 not testable here; "
        "0 errata; 1 not attempted; 1 theorem verification and 1 of 1 predictions of ours pass.")
    assert headline(led.to_json()["claims"]).startswith("Claims: 4 reproduction (1 not reproduced, 1 not testable, "
                                                        "2 pass)")


def test_format_value_four_significant_digits_and_ranges():
    assert format_value(0.123456) == "0.1235" and format_value(1234.5678) == "1235"
    assert format_value(2.5e-5) == "2.500e-5" and format_value(12345) == "12,345"
    assert format_value([0.1, 0.2, 0.3, 0.4, 0.5]) == "0.1 to 0.5 (5 values)"



def test_format_value_reads_the_text_of_a_list_or_dict_of_numbers():
    """Notebooks pass some values as their Python or JSON text; the tables show them as numbers, not reprs."""
    assert format_value("[0.5730000138282776, 0.9419999718666077]") == "0.573, 0.942"
    assert format_value("[1, 2, 3, 4, 5, 6]") == "1 to 6 (6 values)"
    assert format_value("{'standard': 141312, 'gemfilter': 36864}") == "standard: 141,312; gemfilter: 36,864"
    assert format_value("{'3': '3/16', '5': '5/32'}") == "3: 3/16; 5: 5/32"
    rationals = {3: sympy.Rational(3, 16), 5: sympy.Rational(5, 32)}
    assert format_value({"3": "3/16", "5": "5/32"}) == format_value(rationals) == "3: 3/16; 5: 5/32"
    for text in ("[3/sqrt(r)]", "[True, 1]", "(a, b)", "{'a': [1, 2]}", "loss 0, margin 1"):
        assert format_value(text) == text  # not a list or dict of numbers or texts: shown as it is
    assert format_value([1, 2]) == "1, 2"


def test_report_gathers_all_ledgers_per_chapter(tmp_path):
    for name in ("b_chapter", "a_chapter"):
        _mapped_ledger(name, name.title()).write(tmp_path)
    ledgers = load_ledgers(tmp_path)
    assert [d["chapter"] for d in ledgers] == ["a_chapter", "b_chapter"]
    ledgers[0]["json_uri"] = "../_static/ledgers/a_chapter.json"
    intro, summary, open_section, sweep, *chapters = report_nodes(ledgers, links={"a_chapter": "a.html"})
    assert "2 chapters, 12 claims. The book: 4 of 12 source results reproduced (2 on analogues)" in intro.astext()
    assert "<a href='a.html'>A_Chapter</a>" in summary.astext() and "not swept" in summary.astext()
    assert "<a href='../_static/ledgers/a_chapter.json'>ledger (JSON)</a>" in summary.astext()
    assert "ImageNet" in open_section.astext() and "not testable here" in open_section.astext()
    assert "No seed sweep" in sweep.astext()
    assert [c.astext().splitlines()[0] for c in chapters] == ["A_Chapter", "B_Chapter"]


def _record(seed, status, ok=True, passed=True):
    claim = {"id": "x", "kind": R, "statement": "s", "status": status, "measured": seed / 10, "passed": passed}
    return {"chapter": "demo", "profile": "ci", "seed": seed, "ok": ok, "error": None if ok else "boom",
            "ledger": {"claims": [claim]}}


def test_seed_summary_counts_each_claims_seeds_and_crashed_runs():
    summary = summarize([_record(0, STATUS_PASS), _record(1, STATUS_NOT_REPRODUCED, passed=False),
                         _record(2, STATUS_FAIL, passed=False)])
    entry = summary["chapters"]["demo"]["claims"]["x"]
    assert entry["held"] == 2 and entry["failing_seeds"] == [2] and entry["per_seed"]["1"]["measured"] == 0.1
    assert entry["passed_at"] == 1 and entry["pass_rate"] == pytest.approx(1 / 3)
    assert not summary["all_hold"]
    crashed = {**_record(3, STATUS_PASS, ok=False), "ledger": None}
    summary = summarize([_record(0, STATUS_PASS), crashed])
    assert summary["chapters"]["demo"]["runs_failed"] == {"3": "boom"}
    assert summary["chapters"]["demo"]["claims"]["x"]["failing_seeds"] == [3] and not summary["all_hold"]
    assert summarize([_record(0, STATUS_PASS), _record(1, STATUS_PASS)])["all_hold"]
    assert summarize([_record(0, STATUS_INCONCLUSIVE), _record(1, STATUS_INCONCLUSIVE, passed=False)])["all_hold"]


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


def test_report_lists_claims_failing_some_seed_and_inconclusive_rates():
    led = _mapped_ledger()
    sweep = summarize([_record(0, STATUS_PASS), _record(1, STATUS_FAIL, passed=False)])
    text = "\n".join(node.astext() for node in report_nodes([led.to_json()], sweep))
    assert "0/1 claims hold at all 2 seeds" in text
    assert "fails at seeds [1]" in text
    sweep = summarize([_record(0, STATUS_INCONCLUSIVE), _record(1, STATUS_INCONCLUSIVE, passed=False)])
    section = "\n".join(node.astext() for node in report_nodes([led.to_json()], sweep))
    assert "passed at 1 of 2 seeds" in section


def test_report_without_ledgers_says_so():
    (node,) = report_nodes([])
    assert "No chapter ledgers" in node.astext()


def test_report_names_chapters_without_a_ledger(tmp_path):
    from pathlib import Path

    from feature_learning.build.sphinx_report import missing_ledgers

    root = Path(__file__).resolve().parents[2]
    assert "fourier_circuits" in missing_ledgers(root, [])
    assert "fourier_circuits" not in missing_ledgers(root, [{"chapter": "fourier_circuits"}])


def test_full_runs_are_kept_per_chapter_and_shown_in_the_report(tmp_path):
    from feature_learning.book.claims import full_run_summary as full_run_cell
    from feature_learning.build.seeds import keep_full_runs, load_full_runs

    led = _mapped_ledger().to_json()
    led["device"] = "cuda:0"
    ok = {"chapter": "demo", "profile": "full", "seed": 0, "ok": True, "error": None, "ledger": led}
    crashed = {"chapter": "other", "profile": "full", "seed": 0, "ok": False, "error": "CUDA out of memory",
               "device": "cuda", "ledger": None}
    ci = {**ok, "chapter": "ci_only", "profile": "ci"}
    stopped = {"chapter": "slow", "profile": "full", "seed": 0, "ok": False, "stopped": True, "device": "cuda",
               "error": "at the 9-minute limit, 20 of 49 cells done", "ledger": None}
    failing = json.loads(json.dumps(led))
    failing["claims"][0]["status"] = "FAIL"
    failed = {**ok, "chapter": "failing", "ok": False, "error": "claim failed", "ledger": failing}
    paths = keep_full_runs([ok, crashed, ci, stopped, failed], tmp_path, machine="NVIDIA H100 80GB HBM3")
    assert sorted(p.name for p in paths) == ["demo.json", "failing.json", "other.json", "slow.json"]
    runs = load_full_runs(tmp_path)
    assert full_run_cell(runs["demo"]).startswith("cuda:0 (NVIDIA H100 80GB HBM3), ")
    assert "6 of 6 claims hold" in full_run_cell(runs["demo"])
    assert "crashed before its ledger (CUDA out of memory)" in full_run_cell(runs["other"])
    assert "stopped unfinished (at the 9-minute limit, 20 of 49 cells done)" in full_run_cell(runs["slow"])
    assert full_run_cell(runs["failing"]).endswith(f"5 of 6 claims hold; FAIL: {failing['claims'][0]['id']}")
    assert full_run_cell(None) == "none stored yet"
    intro, summary, *_ = report_nodes([led], full_runs=runs)
    assert "6 of 6 claims hold" in summary.astext()


def test_a_chapter_pastes_its_stored_full_run_from_the_ledger(tmp_path):
    """The full sections quote the stored run (results/full) through glue, not numbers typed by hand: the sentence
    names the date, device, run time and memory where stored, the claims by status and the failing ids; each claim's
    measured value is there as the claims tables print it; a stopped run says how far it got; no run says so."""
    from feature_learning.book.claims import full_run_glue, stored_full_run
    from feature_learning.build.seeds import keep_full_runs

    led = _mapped_ledger().to_json()
    led["claims"][0]["status"] = "FAIL"
    led["claims"][0]["measured"] = 0.70791234
    rec = {"chapter": "demo", "profile": "full", "seed": 0, "ok": False, "error": "claim failed", "device": "cuda",
           "ledger": led, "seconds": 203.4, "peak_gpu_gb": 3.1}
    stopped = {"chapter": "slow", "profile": "full", "seed": 0, "ok": False, "stopped": True, "device": "cuda",
               "error": "at the 9-minute limit, 20 of 49 cells done", "ledger": None}
    keep_full_runs([rec, stopped], tmp_path, machine="NVIDIA H100 80GB HBM3")
    glue = full_run_glue(stored_full_run("demo", tmp_path))
    first = led["claims"][0]["id"]
    assert glue["full_run"].startswith("Stored run of ") and "NVIDIA H100 80GB HBM3" in glue["full_run"]
    assert "203 s, 3.1 GB of GPU memory at most" in glue["full_run"]
    assert "Its 6 claims: " in glue["full_run"] and "1 FAIL;" in glue["full_run"]
    assert glue["full_run"].endswith(f"failing: `{first}`.")
    assert glue["full_failed"] == first and glue[f"full_{first}"] == "0.7079" and glue[f"full_{first}_status"] == "FAIL"
    assert "Stopped unfinished: at the 9-minute limit" in full_run_glue(stored_full_run("slow", tmp_path))["full_run"]
    assert stored_full_run("absent", tmp_path) is None
    rebuilt = {**rec, "chapter": "rebuilt", "ledger": {"read_from": "the executed notebook's claims tables",
                                                       "claims": [{"id": "a", "status": "pass", "measured": "0.1"}]}}
    keep_full_runs([rebuilt], tmp_path)
    glue = full_run_glue(stored_full_run("rebuilt", tmp_path))
    assert glue["full_run"].endswith("read from the executed notebook's claims tables.") and glue["full_a"] == "0.1"
    from feature_learning.book.claims import full_run_summary
    assert full_run_summary(stored_full_run("rebuilt", tmp_path)).endswith("(read from the executed notebook's "
                                                                           "claims tables)")
    assert full_run_glue(None)["full_run"] == "No `full` run of this chapter is stored yet."


def test_execution_table_reads_each_chapters_glued_run_time(tmp_path):
    from pathlib import Path

    from feature_learning.build.notebooks import toc_notebooks
    from feature_learning.build.sphinx_report import execution_rows

    root = Path(__file__).resolve().parents[2]
    first = toc_notebooks(root)[0]
    glue = {"output_type": "display_data", "data": {"text/plain": "84.2"},
            "metadata": {"scrapbook": {"name": "fe_chapter_seconds"}}}
    (tmp_path / first).parent.mkdir(parents=True)
    (tmp_path / first).write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": [glue]}]}))
    led = _mapped_ledger(first.stem).to_json()
    rows = execution_rows(root, [tmp_path], {first.stem: led})
    assert rows[0][1:] == ["book, seed 1, cpu", led["written"].replace("T", " ")[:16] + " UTC", "84 s",
                           "every claim holds"]
    assert rows[1][3] == "not executed in this build" and rows[1][1] == "no ledger"


def test_headline_leaves_out_the_predictions_of_a_chapter_that_makes_none():
    led = _mapped_ledger()
    data = led.to_json()
    data["claims"] = [c for c in data["claims"] if c.get("kind") != "prediction"]
    assert source_headline(data).endswith("1 not attempted; 1 theorem verification pass.")


def test_standard_errors_print_at_two_significant_digits_beside_the_value():
    from feature_learning.book.claims import format_se
    assert [format_se(x) for x in (2.444e-4, 0.003143, 0.4703, 12.34, 1234.5, 2e-6)] == \
        ["0.00024", "0.0031", "0.47", "12", "1,234", "2.000e-6"]
    led = ledger()
    led.at_least("c", "s", "w", kind=V, measured=0.9998, bound=0.9, se=2.0e-4)
    assert "0.9998\u00a0±\u00a00.0002<" in claims_html(led.to_json()["claims"])


def test_sympy_values_are_typeset_in_the_tables_and_kept_as_text_in_the_ledger():
    """A SymPy expression passed as the measured value is stored as its str form (the JSON) with its LaTeX, and
    SymPy's printed forms stored as text are typeset too; counts, numbers and sentences stay text."""
    import sympy as sp

    from feature_learning.book.claims import math_of
    lam, trD = sp.symbols("lambda_i \\mathrm{tr}D", positive=True)
    led = ledger()
    led.holds("dg", "g' > 0", "Thm 1", kind=D, measured=lam / (lam + trD), condition=True, relation="SymPy")
    led.holds("ratio", "a ratio", "Thm 2", kind=D, measured="(T + 1)**2/(4*T)", condition=True, relation="SymPy")
    claims = led.to_json()["claims"]
    assert claims[0]["measured"] == str(lam / (lam + trD)) and claims[0]["measured_tex"] == sp.latex(lam / (lam + trD))
    html = claims_html(claims)
    assert "\\(" + sp.latex(lam / (lam + trD)) + "\\)" in html.replace("&#x27;", "'")
    assert "\\(\\frac{\\left(T + 1\\right)^{2}}{4 T}\\)" in html and "mathjax_process" in html
    assert math_of("m/r; m/(r - 1)") is None and math_of("9/9") is None and math_of("remainder 0, gap 1e-15") is None
    assert math_of("6*sqrt(5)") == "6 \\sqrt{5}" and math_of("[3/sqrt(r)]") == "\\frac{3}{\\sqrt{r}}"


def test_inline_math_in_claim_texts_goes_to_mathjax():
    """A claim's texts may hold $...$ math; the tables write it as \\(...\\) (escaped first) and leave other text."""
    assert inline_math(html_escape("mean of $\\kappa$ at $n<16$; cost $3")) == \
        "mean of \\(\\kappa\\) at \\(n&lt;16\\); cost $3"
    claim = {"id": "c", "statement": "the rate $1/\\kappa$", "where": "Thm $1$", "kind": "verification",
             "relation": "$|x| \\le 1$", "source_value": "$e^{-t}$", "measured": 0.5, "null": None, "status": "pass"}
    row = claim_cells(claim) + [claim_statement(claim)]
    assert "\\(1/\\kappa\\)" in row[-1] and "\\(|x| \\le 1\\)" in row[4] and "\\(e^{-t}\\)" in row[1]
    entry = {"what": "$T$ loops", "where": "Thm 8.14", "status": "verified", "claims": ["c"], "analogue": "$d=4$"}
    assert "\\(T\\) loops" in source_cells(entry)[0] and "\\(d=4\\)" in source_cells(entry)[0]


def test_claim_texts_with_unpaired_dollars_or_mangled_tex_are_refused():
    led = ledger()
    with pytest.raises(ValueError, match="odd number of"):
        led.at_least("a", "the rate $1/\\kappa", "Thm 1", kind="verification", measured=1.0, bound=0.5)
    with pytest.raises(ValueError, match="control character"):
        led.at_least("b", "the mean of $\theta$", "Thm 1", kind="verification", measured=1.0, bound=0.5)
    with pytest.raises(ValueError, match="control character"):
        led.source("s", "Thm 1", "$\frac{1}{2}$", "verified", ["x"])
    led.at_least("c", r"the mean of $\theta$", "Thm 1", kind="verification", measured=1.0, bound=0.5)

"""The reproduction report's seed sweep: which summary it reads (staged with the book, a fresh one of this checkout,
or the stored one), that it says which, and the inconclusive rates it shows per chapter."""

import json

from feature_learning.build.seeds import summarize
from feature_learning.build.sphinx_report import _sweep_cell, report_nodes, sweep_provenance, sweep_summary


def record(seed, status, passed=None, ok=True):
    claims = [{"id": "gap", "kind": "reproduction", "statement": "s", "status": "pass", "measured": 1.0,
               "margin": 0.5, "passed": True},
              {"id": "rate", "kind": "reproduction", "statement": "s", "status": status, "measured": 0.4,
               "margin": -0.1, "passed": passed}]
    return {"chapter": "demo", "profile": "ci", "seed": seed, "ok": ok, "error": None,
            "ledger": {"claims": claims}}


def summary(written, **extra):
    out = summarize([record(0, "inconclusive", True), record(1, "inconclusive", False), record(2, "pass", True)])
    return {**out, "written": written, **extra}


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_the_report_reads_a_fresh_sweep_else_the_stored_one_and_says_which(tmp_path):
    root, claims = tmp_path / "repo", tmp_path / "claims"
    assert sweep_summary(claims, root) == (None, "")
    write(root / "results" / "seeds" / "summary.json", summary("2026-11-20T10:00:00+00:00", commit="abc123def4567"))
    sweep, origin = sweep_summary(claims, root)
    assert sweep["written"].startswith("2026-11-20") and "stored" in origin and "results/seeds" in origin
    write(root / "_build" / "seeds" / "summary.json", summary("2026-11-26T10:00:00+00:00"))
    sweep, origin = sweep_summary(claims, root)
    assert sweep["written"].startswith("2026-11-26") and "_build/seeds" in origin
    write(root / "results" / "seeds" / "summary.json", summary("2026-11-27T10:00:00+00:00"))
    assert sweep_summary(claims, root)[0]["written"].startswith("2026-11-27")  # a stale local sweep loses
    write(claims / "sweep" / "summary.json", summary("2026-01-01T00:00:00+00:00"))
    assert sweep_summary(claims, root)[1] == "the sweep this book was built from"


def test_the_page_states_date_seeds_profile_and_commit_and_the_inconclusive_rates():
    sweep = summary("2026-11-20T10:00:00+00:00", commit="abc123def4567")
    sentence = sweep_provenance(sweep, "the stored sweep")
    assert sentence == ("The seed sweep shown is the stored sweep: written 2026-11-20 10:00:00+00:00, 1 chapters at "
                        "the ci profile, seeds 0, 1, 2, code at commit abc123def456.")
    unrecorded = {k: v for k, v in summary("2026-11-20T10:00:00+00:00").items() if k != "commit"}
    assert "commit not recorded" in sweep_provenance(unrecorded, "x")
    cell = _sweep_cell({"chapter": "demo"}, sweep)
    assert cell.startswith("2/2 claims hold at all 3 seeds") and "<code>rate</code> inconclusive: passed at 2/3" in cell
    assert "gap" not in cell and _sweep_cell({"chapter": "other"}, sweep) == "not swept"
    ledger = {"chapter": "demo", "title": "Demo", "profile": "ci", "seed": 0, "device": "cpu",
              "written": "2026-11-26T00:00:00+00:00", "claims": [], "sources": []}
    text = "\n".join(node.astext() for node in report_nodes([ledger], sweep, sweep_origin="the stored sweep"))
    assert text.count("The seed sweep shown is the stored sweep") == 2  # above the table and in its own section
    assert "inconclusive: its test passed at 2 of 3 seeds" in text

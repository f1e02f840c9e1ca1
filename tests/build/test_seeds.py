"""build/seeds.py: the claim-by-claim ledger diff that checks a refactor left every number alone."""

import json

from feature_learning.build.seeds import ledger_differences, main


def ledger(**measured):
    return {"claims": [{"id": cid, "measured": value, "status": "pass", "kind": "reproduction"}
                       for cid, value in measured.items()], "sources": [{"id": "Thm 1", "status": "reproduced"}]}


def test_identical_ledgers_have_no_differences_and_a_seed_record_is_read_through_its_ledger():
    assert ledger_differences(ledger(a=1.0, b=2.0), {"ledger": ledger(a=1.0, b=2.0), "seed": 3}) == []


def test_a_moved_number_a_lost_claim_and_a_changed_source_map_are_each_listed():
    new = ledger(a=1.5, c=0.0)
    new["sources"][0]["status"] = "not reproduced"
    assert ledger_differences(ledger(a=1.0, b=2.0), new) == [
        "a.measured: 1.0 -> 1.5", "b: only in the old ledger", "c: only in the new ledger", "the source map differs"]


def test_the_diff_command_exits_one_on_a_difference(tmp_path, capsys):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(ledger(a=1.0)))
    new.write_text(json.dumps(ledger(a=1.0)))
    assert main(["diff", str(old), str(new)]) == 0
    new.write_text(json.dumps(ledger(a=2.0)))
    assert main(["diff", str(old), str(new)]) == 1
    assert "a.measured: 1.0 -> 2.0" in capsys.readouterr().out

"""The phase timer of ``make test`` and ``make book`` (feature_learning.build.phases)."""

import json
import subprocess

from feature_learning.book.claims import project_root
from feature_learning.build.phases import format_phases, main, read_phases


def test_read_phases_pairs_starts_and_ends_since_the_command_started():
    lines = ["install\tstart\t100", "install\tend\t160",  # an earlier command's phase
             "chapters\tstart\t200", "chapters\tend\t800", "tests\tstart\t800", "junk line", "site\tend\tnan"]
    assert read_phases(lines, since=150) == {"chapters": 600.0, "tests": None}
    assert read_phases(lines) == {"install": 60.0, "chapters": 600.0, "tests": None}
    again = lines + ["chapters\tstart\t900"]  # a phase run again: its last start counts, unfinished
    assert read_phases(again, since=150) == {"tests": None, "chapters": None}


def test_format_and_json(tmp_path, capsys):
    log = tmp_path / "phases.tsv"
    log.write_text("chapters\tstart\t10\nchapters\tend\t70\nsite\tstart\t70\n")
    assert main(["--log", str(log), "--since", "0"]) == 0
    out = capsys.readouterr().out
    assert "chapters" in out and "60 s" in out and "unfinished" in out and "total" in out
    assert json.loads((tmp_path / "phases.json").read_text()) == {"chapters": 60.0, "site": None}
    assert format_phases({}) == "phases: none timed"


def test_makefile_times_every_phase_of_both_commands():
    """`make -n` shows a start and an end line for each phase the issue names, and the report at the end."""
    out = subprocess.run(["make", "-n", "-B", "test", "book"], cwd=project_root(), capture_output=True, text=True,
                         check=True).stdout
    for name in ("install", "browser", "chapters", "unit and notebook tests", "site and nbval", "browser tests",
                 "site"):
        assert f'"{name}" "start"' in out and f'"{name}" "end"' in out, name
    assert "feature_learning.build.phases --since" in out

"""Wall time of each phase of ``make test`` and ``make book``: installing the packages, the browser, executing the
chapters, the unit tests, the site, the browser tests.

The Makefile appends one line per phase boundary to ``_build/phases.tsv`` (``name<TAB>start|end<TAB>unix time``,
written by the shell, so that the install phase is timed before this package exists) and, at the end of a command,
``python -m feature_learning.build.phases --since <the command's start>`` prints each phase that started since then
with its seconds, and writes them as JSON beside the log (``_build/phases.json``) for a run's journal row
(``results/runs/``). A phase that started and never ended (its command failed) is listed as unfinished.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

LOG = Path("_build/phases.tsv")


def read_phases(lines: list[str], since: float = 0.0) -> dict[str, float | None]:
    """Seconds of each phase whose last start is at or after ``since``, in the order they started; ``None`` for one
    that has not ended since its last start. Lines that do not parse are skipped."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for line in lines:
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3 or parts[1] not in ("start", "end"):
            continue
        try:
            t = float(parts[2])
        except ValueError:
            continue
        if parts[1] == "start":
            starts.pop(parts[0], None)  # a restart moves the phase to the end of the order
            starts[parts[0]] = t
            ends.pop(parts[0], None)
        else:
            ends[parts[0]] = t
    return {name: (ends[name] - t if name in ends and ends[name] >= t else None)
            for name, t in starts.items() if t >= since}


def format_phases(phases: dict[str, float | None]) -> str:
    """One line per phase, then the total of those that ended."""
    if not phases:
        return "phases: none timed"
    width = max(len(n) for n in phases)
    rows = [f"  {name:<{width}}  {'unfinished' if s is None else f'{s:7.0f} s'}" for name, s in phases.items()]
    total = sum(s for s in phases.values() if s is not None)
    return "\n".join(["phases (wall time):", *rows, f"  {'total':<{width}}  {total:7.0f} s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--since", type=float, default=0.0, help="unix time the command started")
    parser.add_argument("--log", type=Path, default=LOG)
    args = parser.parse_args(argv)
    lines = args.log.read_text().splitlines() if args.log.exists() else []
    phases = read_phases(lines, args.since)
    print(format_phases(phases))
    args.log.parent.mkdir(parents=True, exist_ok=True)
    args.log.with_suffix(".json").write_text(json.dumps(phases, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

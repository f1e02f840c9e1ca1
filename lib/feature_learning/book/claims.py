"""Reproduction checks: each chapter's ledger of the source's claims against what the chapter measured.

A chapter records every claim through one :class:`ClaimLedger`, then calls :meth:`ClaimLedger.finish`, which

* shows the ledger as a table in the notebook,
* writes it as JSON to ``$BOOK_CLAIMS_DIR/<chapter>.json`` (default ``<project root>/_build/claims``),
* raises :class:`ClaimFailed` if any claim failed, so the notebook (and CI, and the book build) fails.

Every claim has a ``kind`` saying what kind of evidence it is (``KINDS``):

* ``reproduction``: a number measured by this chapter's simulation or training, against the source's claim;
* ``derivation``: an exact or symbolic check (a SymPy identity, a closed form against brute force, float64 rounding);
* ``consistency``: arithmetic on the source's own printed numbers or on the library's own definitions. Shown, never
  counted as a reproduction.

Bounds are fixed in advance: the source's number with a stated margin. A stochastic measurement passes ``se=`` (its
standard error over seeds or samples); a claim whose measured value lies within ``NOISE_SES`` standard errors of
its bound is not yet a claim, and fails as *within noise of its bound*, whichever side it is on.

A claim that is known not to reproduce is recorded with ``known_failure="why"``: it is shown and reported as
*not reproduced* and does not raise; if it starts to pass, :meth:`ClaimLedger.finish` raises so the chapter's text
is updated.
A documented failure is a property of the claim: it must hold at every seed, profile and device.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import html
import json
import math
import os
from pathlib import Path
from typing import Any

STATUS_PASS = "pass"
STATUS_FAIL = "FAIL"
STATUS_NOT_REPRODUCED = "not reproduced (documented)"
STATUS_UNEXPECTED_PASS = "FAIL: documented failure now passes"
STATUS_NOISE = "FAIL: within noise of its bound"

KINDS = ("reproduction", "derivation", "consistency")
NOISE_SES = 2.0  # a verdict must not sit within this many standard errors of its bound


class ClaimFailed(AssertionError):
    """At least one reproduction check of a chapter failed."""


@dataclasses.dataclass
class Claim:
    id: str
    statement: str
    where: str  # where in the source, e.g. "Thm 4.9, dissertation ch. 4"
    source_value: Any  # the source's number (or a short text if the source gives none)
    measured: Any  # our number
    relation: str  # the test, readable: "|ours - source| <= 1e-12", "ours >= 0.9", ...
    passed: bool
    kind: str = "reproduction"
    known_failure: str | None = None
    se: float | None = None  # standard error of ``measured`` (over seeds or samples), when it is stochastic
    margin: float | None = None  # signed distance from ``measured`` to the nearest edge of the bound

    @property
    def within_noise(self) -> bool:
        return self.se is not None and self.margin is not None and abs(self.margin) < NOISE_SES * self.se

    @property
    def status(self) -> str:
        if self.within_noise:
            return STATUS_NOISE
        if self.known_failure is None:
            return STATUS_PASS if self.passed else STATUS_FAIL
        return STATUS_UNEXPECTED_PASS if self.passed else STATUS_NOT_REPRODUCED

    @property
    def ok(self) -> bool:
        return self.status in (STATUS_PASS, STATUS_NOT_REPRODUCED)


def _plain(value: Any) -> Any:
    """JSON-friendly numbers: numpy/torch scalars become Python floats or ints."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def format_value(value: Any) -> str:
    value = _plain(value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}" if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5) else f"{value:.4f}"
    return str(value)


def project_root(start: Path | None = None) -> Path:
    """The folder holding ``_toc.yml`` above ``start`` (default: the working directory), else ``start``."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / "_toc.yml").exists():
            return folder
    return start


def claims_dir() -> Path:
    env = os.environ.get("BOOK_CLAIMS_DIR")
    return Path(env) if env else project_root() / "_build" / "claims"


class ClaimLedger:
    """Collects a chapter's claims; one ledger per chapter."""

    def __init__(self, chapter: str, title: str, *, profile: str, seed: int, device: str = "cpu"):
        self.chapter = chapter
        self.title = title
        self.meta = {"profile": profile, "seed": seed, "device": str(device)}
        self.claims: list[Claim] = []

    # -- recording ---------------------------------------------------------------------------------------
    def _add(self, claim: Claim) -> Claim:
        if any(c.id == claim.id for c in self.claims):
            raise ValueError(f"claim id {claim.id!r} recorded twice in chapter {self.chapter!r}")
        if claim.kind not in KINDS:
            raise ValueError(f"claim {claim.id!r}: kind must be one of {', '.join(KINDS)}, not {claim.kind!r}")
        if claim.se is not None:
            claim.se = float(_plain(claim.se))
            if not (math.isfinite(claim.se) and claim.se >= 0):
                raise ValueError(f"claim {claim.id!r}: se must be a finite number >= 0, not {claim.se!r}")
        claim.measured = _plain(claim.measured)
        claim.source_value = _plain(claim.source_value)
        claim.passed = bool(claim.passed)  # a numpy bound makes the comparison a numpy bool
        self.claims.append(claim)
        return claim

    @staticmethod
    def _noise(se) -> str:
        return f" (se {format_value(float(_plain(se)))}; fails within {NOISE_SES:g} se of the bound)" if se else ""

    def close_to(self, id, statement, where, *, kind, source_value, measured, rtol=0.0, atol=0.0, se=None,
                 known_failure=None):
        """|measured - source_value| <= atol + rtol * |source_value|."""
        measured, source_value = float(_plain(measured)), float(_plain(source_value))
        bound = atol + rtol * abs(source_value)
        margin = bound - abs(measured - source_value)
        passed = math.isfinite(measured) and margin >= 0
        parts = [f"{atol:g}"] if atol else []
        parts += [f"{rtol:g}·|source|"] if rtol else []
        relation = f"|ours − source| ≤ {' + '.join(parts) or '0'}" + self._noise(se)
        return self._add(Claim(id, statement, where, source_value, measured, relation, passed, kind, known_failure,
                               se, margin))

    def at_least(self, id, statement, where, *, kind, measured, bound, source_value=None, se=None,
                 known_failure=None):
        measured = float(_plain(measured))
        passed = math.isfinite(measured) and measured >= bound
        relation = f"ours ≥ {format_value(bound)}" + self._noise(se)
        return self._add(Claim(id, statement, where, source_value, measured, relation, passed, kind, known_failure,
                               se, measured - float(_plain(bound))))

    def at_most(self, id, statement, where, *, kind, measured, bound, source_value=None, se=None,
                known_failure=None):
        measured = float(_plain(measured))
        passed = math.isfinite(measured) and measured <= bound
        relation = f"ours ≤ {format_value(bound)}" + self._noise(se)
        return self._add(Claim(id, statement, where, source_value, measured, relation, passed, kind, known_failure,
                               se, float(_plain(bound)) - measured))

    def holds(self, id, statement, where, *, kind, measured, condition: bool, relation: str, source_value=None,
              known_failure=None):
        """A claim whose test is a condition computed by the chapter (e.g. monotone in k); ``relation`` says which."""
        return self._add(
            Claim(id, statement, where, source_value, measured, relation, bool(condition), kind, known_failure)
        )

    # -- reporting ---------------------------------------------------------------------------------------
    @property
    def failed(self) -> list[Claim]:
        return [c for c in self.claims if not c.ok]

    def to_json(self) -> dict:
        return {
            "chapter": self.chapter,
            "title": self.title,
            **self.meta,
            "written": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "claims": [{**dataclasses.asdict(c), "status": c.status} for c in self.claims],
        }

    def write(self, folder: Path | None = None) -> Path:
        folder = Path(folder) if folder is not None else claims_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.chapter}.json"
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")
        return path

    def _repr_html_(self) -> str:
        return claims_html(self.to_json()["claims"])

    def finish(self, folder: Path | None = None) -> ClaimLedger:
        """Write the ledger, then raise if a claim failed. Returns the ledger so a notebook shows the table."""
        if not self.claims:
            raise ClaimFailed(f"chapter {self.chapter!r} recorded no claims")
        self.write(folder)
        if self.failed:
            lines = [f"  {c.id}: {c.status}; ours {format_value(c.measured)}, {c.relation}" for c in self.failed]
            header = f"{len(self.failed)} reproduction check(s) failed in {self.chapter!r}:\n"
            raise ClaimFailed(header + "\n".join(lines))
        return self


COLUMNS = ("id", "kind", "statement", "where", "source", "ours", "test", "status")


def claim_row(claim: dict) -> list[str]:
    return [
        claim["id"],
        claim.get("kind", "?"),
        claim["statement"],
        claim["where"],
        format_value(claim["source_value"]) if claim["source_value"] is not None else "—",
        format_value(claim["measured"]),
        claim["relation"],
        claim["status"] + (f": {claim['known_failure']}" if claim.get("known_failure") else ""),
    ]


COLUMN_WIDTHS = (13, 8, 29, 10, 8, 8, 12, 12)  # percent; the statement gets the room


def claims_html(claims: list[dict]) -> str:
    cols = "".join(f"<col style='width:{w}%'>" for w in COLUMN_WIDTHS)
    head = "".join(f"<th style='text-align:left'>{h}</th>" for h in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(cell)}</td>" for cell in claim_row(c)) + "</tr>"
        for c in claims
    )
    return f"<table><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def load_ledgers(folder: Path | None = None) -> list[dict]:
    """Every chapter ledger in ``folder`` (default: the claims directory), sorted by chapter id."""
    folder = Path(folder) if folder is not None else claims_dir()
    if not folder.exists():
        return []
    return sorted((json.loads(p.read_text()) for p in folder.glob("*.json")), key=lambda d: d["chapter"])


def tally(claims: list[dict]) -> dict[str, dict[str, int]]:
    """Counts of claims by kind, then by status: ``{"reproduction": {"pass": 12, ...}, ...}``."""
    counts: dict[str, dict[str, int]] = {}
    for c in claims:
        by_status = counts.setdefault(c.get("kind", "?"), {})
        by_status[c["status"]] = by_status.get(c["status"], 0) + 1
    return counts


def headline(claims: list[dict]) -> str:
    """"N of M source claims reproduced, K documented as not reproducing", then the other kinds."""
    counts = tally(claims)
    rep = counts.get("reproduction", {})
    total = sum(rep.values())
    text = (
        f"{rep.get(STATUS_PASS, 0)} of {total} source claims reproduced, "
        f"{rep.get(STATUS_NOT_REPRODUCED, 0)} documented as not reproducing"
    )
    failing = total - rep.get(STATUS_PASS, 0) - rep.get(STATUS_NOT_REPRODUCED, 0)
    if failing:
        text += f", {failing} failing"
    for kind in KINDS[1:]:
        n = sum(counts.get(kind, {}).values())
        ok = counts.get(kind, {}).get(STATUS_PASS, 0)
        text += f"; {ok} of {n} {kind} checks pass"
    return text + "."

"""Reproduction checks: each chapter's ledger of the source's claims against what the chapter measured.

A chapter records every claim through one :class:`ClaimLedger`, maps every result of its source onto those claims
with :meth:`ClaimLedger.source`, then calls :meth:`ClaimLedger.finish`, which

* writes the ledger (claims and source map) as JSON to ``$BOOK_CLAIMS_DIR/<chapter>.json`` (default
  ``<project root>/_build/claims``),
* raises :class:`ClaimFailed` if any claim failed, so the notebook (and CI, and the book build) fails,
* returns the source map, which the notebook shows as the chapter's last table.

**Kinds** (``KINDS``) say what kind of evidence a claim is:

* ``reproduction``: a result of the source measured in our run, in the source's setting or a named analogue;
* ``verification``: a theorem's consequence checked numerically in the theorem's own model (only a bug can fail it);
* ``prediction``: a formula derived in this book or its notes, beyond the source, against simulation;
* ``derivation``: an exact or symbolic check (a SymPy identity, a closed form against brute force);
* ``consistency``: arithmetic on the source's printed numbers or on our own definitions.

**Nulls.** A reproduction records its *null* (:class:`~feature_learning.measure.statistics.Null`): the same
measurement on a trivial model (chance, the untrained network, random features, the prior). The ledger applies the
claim's own test to the null; a claim whose null passes too is a check that cannot fail, and it fails the chapter.
A reproduction without a null fails the chapter as well. Predictions may record one.

**Statuses.** ``pass`` and ``FAIL``, and three that neither fail the build nor count as a pass:

* ``not reproduced`` (``not_reproduced="why"``): tested faithfully and fails at every seed; if it starts to pass the
  chapter fails, so that its text is updated;
* ``inconclusive`` (``inconclusive="why"``): holds at some seeds or training runs and not others; shown with its
  rate (``rate=(passes, runs)`` over replicas in the run, and over the seed sweep in the report);
* ``not testable`` (``not_testable="why"``): our analogue cannot reach the regime; shown, never counted.

Bounds are fixed in advance: the source's number with a stated margin. A stochastic measurement carries ``se=`` (its
standard error over the trained models, seeds or samples it varies with); a verdict within ``NOISE_SES`` standard
errors of its bound is no verdict and fails as *within noise of its bound*, whichever side it is on. A claim whose
bound, checkpoint, relation or size was changed after a seed failed says so with ``revised="what and why"``; its
original form stays in the ledger as a claim of its own with the status it earns.

**Source map.** ``ledger.source(id, where, what, status, claims=[...])`` records one result of the source (a
theorem, figure, table or empirical statement) with one of ``SOURCE_STATUSES`` and the claims that carry it;
:meth:`ClaimLedger.finish` checks that each status agrees with its claims' statuses and that every reproduction and
verification carries some source result. The report's headline counts source results, never claims.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import datetime as _dt
import html
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from feature_learning.measure.statistics import Null

__all__ = ["ClaimLedger", "ClaimFailed", "Null", "Claim", "SourceResult", "Erratum", "KINDS"]

from feature_learning.book.status import (  # noqa: E402  (the statuses' one home, re-exported here)
    ACCEPTED,
    AT_SCALE,
    AT_SCALE_ONLY,
    CONFIRMED,
    FAILING,
    INCONCLUSIVE,
    NO_FULL_RUN,
    NOISE_SES,
    SOURCE_SCALE,
    STATUS_BELOW_SCALE,
    STATUS_FAIL,
    STATUS_INCONCLUSIVE,
    STATUS_NO_NULL,
    STATUS_NOISE,
    STATUS_NOT_REPRODUCED,
    STATUS_NOT_TESTABLE,
    STATUS_NULL_PASSES,
    STATUS_PASS,
    STATUS_UNEXPECTED_PASS,
    STATUS_UNTRAINED,
    UNCHECKED,
    UNSUPPORTED,
    claim_seed_rate,
    clean_fails,
    entry_status,
    erratum_status,
    graded_at_full,
    profile_statuses,
    ran_other_sizes,
    source_headline,
    sweep_knows_noise,
    verdict,
)

KINDS = ("reproduction", "verification", "prediction", "derivation", "consistency")
NULL_REQUIRED = ("reproduction",)
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
    not_reproduced: str | None = None  # why it is documented as not reproducing (fails at every seed)
    se: float | None = None  # standard error of ``measured`` (over trained models, seeds or samples)
    margin: float | None = None  # signed distance from ``measured`` to the nearest edge of the bound
    null: Any = None  # the same measurement on the trivial model
    null_model: str | None = None  # which trivial model
    null_passed: bool | None = None  # the claim's test applied to the null
    inconclusive: str | None = None  # why the verdict varies with the seed or training run
    rate: tuple[int, int] | None = None  # (passes, runs) over independently trained replicas within the run
    not_testable: str | None = None  # why our analogue cannot reach the regime
    revised: str | None = None  # what was changed after a seed failed, and why
    measured_tex: str | None = None  # ``measured`` in LaTeX where it is a SymPy expression (typeset in the tables)
    source_scale_only: str | None = None  # why it is expected to fail below the source's scale (and hold at it)
    at_source_scale: bool = False  # this run is at the source's scale (the ``full`` profile)
    trained: tuple[int, int] | None = None  # (runs that reached their training target, runs measured)
    other_runs: tuple[int, int] | None = None  # (passes, runs) in recorded runs outside the seed sweep
    seed_rate: tuple[int, int] | None = None  # (seeds where its test passed, seeds) in the stored sweep
    near_bound: str | None = None  # why its distance from failing may average under three seed-level sd

    @property
    def within_noise(self) -> bool:
        return self.se is not None and self.margin is not None and abs(self.margin) < NOISE_SES * self.se

    @property
    def noise_distance(self) -> float | None:
        """|margin| / se: how many standard errors the verdict sits from its bound."""
        if self.se is None or self.margin is None or not self.se > 0:
            return None
        return abs(self.margin) / self.se

    @property
    def untrained(self) -> bool:
        """Measured over runs of which some never reached their training target: not a measurement of the claim."""
        return self.trained is not None and self.trained[0] < self.trained[1]

    @property
    def status(self) -> str:
        if self.not_testable is not None:
            return STATUS_NOT_TESTABLE
        if self.untrained:
            return STATUS_UNTRAINED
        if self.within_noise and self.inconclusive is None:
            return STATUS_NOISE
        if self.null_passed:
            return STATUS_NULL_PASSES
        if self.kind in NULL_REQUIRED and self.null_model is None:
            return STATUS_NO_NULL
        if self.inconclusive is not None:
            return STATUS_INCONCLUSIVE
        if self.source_scale_only is not None and not self.at_source_scale:
            return STATUS_PASS if self.passed else STATUS_BELOW_SCALE
        if self.not_reproduced is None:
            return STATUS_PASS if self.passed else STATUS_FAIL
        return STATUS_UNEXPECTED_PASS if self.passed else STATUS_NOT_REPRODUCED

    @property
    def ok(self) -> bool:
        return self.status in ACCEPTED

    def _ipython_display_(self) -> None:
        """A claims cell that ends with a ledger call shows nothing (``chapter.checks()`` shows the table), rather
        than the dataclass's repr."""


@dataclasses.dataclass
class SourceResult:
    """One result of the source: where it is, what it says and the claims that carry it; whether it was run in the
    source's own setting or on a named analogue; or, with the reason, that it was not attempted or cannot be tested
    here. Its status is never typed: :mod:`feature_learning.book.status` computes it from the claims."""

    id: str
    where: str
    what: str
    claims: list[str]
    note: str | None = None  # what a reader should know beside the status
    analogue: str | None = None  # the analogue it was run on (None: the source's own setting)
    not_attempted: str | None = None  # why it was not attempted (a limit, with the number that makes it one)
    not_testable: str | None = None  # why no run here can test it (for a result without claims)

    def _ipython_display_(self) -> None:
        """A source-map cell shows nothing; ``chapter.close()`` shows the whole map."""


@dataclasses.dataclass
class Erratum:
    """A place where the source prints something wrong: what it prints, what is right, and the claims that check it.
    Errata are their own list, never source results; "confirmed" only beside a check."""

    id: str
    where: str
    printed: str
    correct: str
    claims: list[str]

    def _ipython_display_(self) -> None:
        """An errata cell shows nothing; ``chapter.close()`` shows the list."""


def _plain(value: Any) -> Any:
    """JSON-friendly numbers: numpy/torch scalars become Python floats or ints."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _is_sympy(value: Any) -> bool:
    return type(value).__module__.startswith("sympy.")


def _sympy_text(value: Any) -> tuple[Any, str | None]:
    """A SymPy expression (or a list or tuple of them) as its ``str`` form, which the JSON ledger keeps, and its
    LaTeX, which the claims tables typeset; any other value as it is, without LaTeX."""
    items = value if isinstance(value, (list, tuple)) and value and any(_is_sympy(v) for v in value) else None
    if not (_is_sympy(value) or items):
        return value, None
    import sympy

    return str(value if items is None else list(items)), sympy.latex(value if items is None else list(items))


# SymPy's printed forms that a claim's measured value may hold as text ("(T + 1)**2/(4*T)", "d**(2*c_0)/sqrt(...)"):
# the tables typeset them (:func:`math_of`) instead of showing Python's operators.
_SYMPY_MARKS = ("**", "*", "/", "sqrt(", "log(", "exp(")


# A claim's texts (statement, source value, test, where, null, reasons; a source result's text, analogue and note) may
# hold inline math between single dollars, as in Markdown: "the mean of $\kappa(X^\top X)$ at $n=16$". The ledger
# keeps the dollars; the tables hand the math to MathJax.
_INLINE_MATH = re.compile(r"\$([^$\n]+?)\$")


# Control characters that a TeX command in a plain Python string becomes: "\theta" is a tab and "heta", "\frac" a
# form feed, "\beta" a backspace, "\alpha" a bell, "\vec" a vertical tab, "\rho" a carriage return.
_MANGLED_TEX = dict.fromkeys("\t\f\b\a\v\r")


def check_texts(owner: str, texts: dict[str, Any]) -> None:
    """Raise ValueError if one of ``owner``'s texts has unpaired dollars (inline math that would show raw) or a control
    character that a TeX command in a plain (not raw) Python string turns into."""
    for field, text in texts.items():
        if not isinstance(text, str):
            continue
        if text.count("$") % 2:
            raise ValueError(f"{owner}: {field} has an odd number of $ (inline math is $...$): {text!r}")
        if any(c in _MANGLED_TEX for c in text):
            raise ValueError(f"{owner}: {field} holds a control character (a TeX command in a string that is not "
                             f"raw? write r\"...\"): {text!r}")


def inline_math(text: str) -> str:
    """``text`` (already HTML-escaped) with each ``$...$`` written as MathJax's inline ``\\(...\\)``."""
    return _INLINE_MATH.sub(lambda m: f"\\({m.group(1)}\\)", text)


_INLINE_CODE = re.compile(r"`([^`$\n]+)`")


def text_html(value: Any) -> str:
    """A claim's or source result's text as HTML: escaped, its ``$...$`` math handed to MathJax and its Markdown
    ``code`` spans (a claim id, a profile) set as code."""
    return inline_math(_INLINE_CODE.sub(r"<code>\1</code>", html.escape(str(value))))


def math_of(text: str) -> str | None:
    """The LaTeX of ``text`` if it parses as SymPy's printed form of an expression or a list of expressions with a
    symbol and an operator, else None: a plain number, a count like "9/9", a word or a sentence stays text."""
    if (not isinstance(text, str) or not any(mark in text for mark in _SYMPY_MARKS) or any(c in text for c in "=;:")
            or all(c in "0123456789 /.,[]-" for c in text)):
        return None
    try:
        import sympy
        from sympy.parsing.sympy_parser import parse_expr

        parts = [parse_expr(part) for part in _split_top(text.strip().strip("[]"))]
    except Exception:  # anything SymPy cannot parse is shown as the text it is
        return None
    if not parts or not all(isinstance(p, sympy.Basic) for p in parts):
        return None
    return ", ".join(sympy.latex(p) for p in parts)


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p.strip() for p in [*parts, text[start:]] if p.strip()]


def _literal(text: Any) -> Any:
    """The list, tuple or dict that a value holds as its Python or JSON text ("[0.5730000138282776, 0.94]",
    "{'standard': 141312, 'gemfilter': 36864}"), as the notebooks pass them to the ledger; else None."""
    if not (isinstance(text, str) and text[:1] in "[({" and text[-1:] in "])}"):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (list, tuple, dict)) else None


def _is_number(value: Any) -> bool:
    return isinstance(_plain(value), (int, float)) and not isinstance(value, bool)


def format_value(value: Any) -> str:
    """A number at four significant digits (thousands separated for integers); a list or tuple of numbers longer
    than four as its range and count; a dict of numbers, texts or SymPy numbers by name as "name: value; ..."; the
    text of such a list or dict as the list or dict; anything else as text."""
    value = _plain(value)
    literal = value if isinstance(value, dict) else _literal(value)
    if isinstance(literal, dict) and literal and all(isinstance(k, (str, int)) and (
            _is_number(v) or isinstance(v, str) or _is_sympy(v)) for k, v in literal.items()):
        return "; ".join(f"{k}: {format_value(v)}" for k, v in literal.items())
    if isinstance(literal, (list, tuple)) and literal and all(_is_number(v) for v in literal):
        value = list(literal)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) < 1e-3 or abs(value) >= 1e6:
            return f"{value:.3e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, (list, tuple)) and value and all(isinstance(_plain(v), (int, float)) for v in value):
        if len(value) <= 4:
            return ", ".join(format_value(v) for v in value)
        numbers = [float(_plain(v)) for v in value]
        return f"{format_value(min(numbers))} to {format_value(max(numbers))} ({len(numbers)} values)"
    return str(value)


def project_root(start: Path | None = None) -> Path:
    """The folder holding ``_toc.yml`` above ``start`` (default: the working directory), else ``start``."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / "_toc.yml").exists():
            return folder
    return start


def full_runs_dir() -> Path:
    """Where the stored ``full`` runs live (``results/full``); ``BOOK_RESULTS_DIR`` overrides it."""
    env = os.environ.get("BOOK_RESULTS_DIR")
    return Path(env) if env else project_root() / "results" / "full"


def stored_full_run(chapter: str, folder: Path | None = None) -> dict | None:
    """The latest stored ``full`` run of ``chapter`` (``results/full/<chapter>.json``), or None."""
    path = (folder or full_runs_dir()) / f"{chapter}.json"
    return json.loads(path.read_text()) if path.exists() else None


def stored_sweep(path: Path | None = None) -> dict | None:
    """The stored seed sweep (``results/seeds/summary.json``; ``BOOK_SWEEP`` names another file), or None."""
    env = os.environ.get("BOOK_SWEEP")
    path = path or (Path(env) if env else project_root() / "results" / "seeds" / "summary.json")
    return json.loads(path.read_text()) if path.exists() else None


def stored_cuda_smoke(chapter: str, path: Path | None = None) -> dict | None:
    """``chapter``'s entry in the stored CUDA smoke (``results/cuda-smoke.json``: whether it ran through, its claims'
    statuses, the statuses that differ from the CPU's and, for those, the changed claims' values), or None."""
    path = path or project_root() / "results" / "cuda-smoke.json"
    return json.loads(path.read_text()).get("chapters", {}).get(chapter) if path.exists() else None


def full_run_summary(run: dict | None) -> str:
    """One line on a stored ``full`` run: device (and machine), date, seed, then the claims held with the ids of
    those that failed, or why it did not finish (stopped at a time limit, or crashed)."""
    if run is None:
        return "none stored yet"
    when = str(run.get("written", "?"))[:10]
    device = str(run.get("device", "?")) + (f" ({run['machine']})" if run.get("machine") else "")
    head = f"{device}, {when}, seed {run.get('seed', '?')}: "
    ledger = run.get("ledger")
    if ledger is None:
        why = run.get("error") or "no error recorded"
        return head + (f"stopped unfinished ({why})" if run.get("stopped") else f"crashed before its ledger ({why})")
    claims = ledger.get("claims", [])
    failed = [c["id"] for c in claims if c["status"] not in ACCEPTED]
    text = f"{len(claims) - len(failed)} of {len(claims)} claims hold"
    if failed:
        text += f"; FAIL: {', '.join(failed)}"
    elif not run.get("ok"):
        text += f"; FAILED: {run.get('error')}"
    if ledger.get("read_from"):
        text += f" (read from {ledger['read_from']})"
    return head + text


def full_run_glue(run: dict | None, current: dict[str, dict] | None = None,
                  sizes_digest: str | None = None) -> dict[str, str]:
    """What a chapter's "At the source's scale" section pastes from its stored ``full`` run, so that the page quotes
    the stored ledger instead of numbers typed by hand (glue names without the chapter's prefix):

    ``full_run``: Markdown, one sentence (date, seed, device and machine, run time and peak GPU memory where stored,
    then the claims by status and the failing ids, or how far a stopped run got); as text ``full_date``,
    ``full_counts``, ``full_failed`` (the failing ids, "none" if none); and for each claim of its ledger
    ``full_<id>`` (the measured value as the claims tables print it) and ``full_<id>_status``. A ledger with
    ``read_from`` was rebuilt from the run's executed notebook (its claims tables: ids, statuses, printed values) where
    the run was stopped after its last cell and before its ledger file was saved; both texts say so, and its statuses
    are quoted as stored (it keeps no tests to compare with the present ones).

    With ``current`` (the chapter's present claims as JSON, by id), each stored claim whose test has its present form
    is graded by its present declarations, as the source map grades it (:func:`~feature_learning.book.status.regrade`),
    and the claims stored with an earlier form of their test, or no longer in the chapter, are counted apart. With
    ``sizes_digest`` (the chapter's present ``full`` sizes), a run made with other sizes says that it grades no
    result (:func:`~feature_learning.book.status.full_status`)."""
    if run is None:
        return {"full_run": "No `full` run of this chapter is stored yet.", "full_date": "never",
                "full_counts": "none", "full_failed": "none"}
    when = str(run.get("written", "?"))[:10]
    machine = f", {run['machine']}" if run.get("machine") else ""
    cost = []
    if run.get("seconds") is not None:
        cost.append(f"{run['seconds']:.0f} s")
    if run.get("peak_gpu_gb") is not None:
        cost.append(f"{run['peak_gpu_gb']:g} GB of GPU memory at most")
    head = f"Stored run of {when} (seed {run.get('seed', '?')}, device `{run.get('device', '?')}`{machine})"
    head += (": " + ", ".join(cost) + ". ") if cost else ". "
    ledger = run.get("ledger")
    out = {"full_date": when}
    if ledger is None:
        why = run.get("error") or "no error recorded"
        state = "Stopped unfinished" if run.get("stopped") else "Crashed before its ledger"
        out |= {"full_run": head + f"{state}: {why}. No claim has a `full` verdict yet.", "full_counts": "none",
                "full_failed": "none"}
        return out
    claims = ledger.get("claims", [])
    earlier = []
    regraded = current is not None and not ledger.get("read_from")  # a rebuilt record keeps no tests to compare
    if regraded:
        pairs = [(c, graded_at_full(c, current.get(c["id"]))) for c in claims]
        earlier = [c["id"] for c, graded in pairs if graded is None]
        claims = [graded or c for c, graded in pairs]
    graded_claims = [c for c in claims if c["id"] not in earlier]
    by_status = collections.Counter(c["status"] for c in graded_claims)
    order = [*ACCEPTED, *sorted(set(by_status) - set(ACCEPTED))]
    counts = "; ".join([f"{by_status[s]} {s}" for s in order if s in by_status]  # statuses may hold commas
                       + ([f"{len(earlier)} stored with an earlier form of their test"] if earlier else []))
    failed = [c["id"] for c in graded_claims if c["status"] not in ACCEPTED]
    marked = ", ".join(f"`{cid}`" for cid in failed) if failed else "none"
    read = f" Its ledger was not saved; the statuses and values are read from {ledger['read_from']}." \
        if ledger.get("read_from") else ""
    how = ", graded by their present declarations" if regraded else ""
    stale = (" It ran other `full` sizes than the chapter's present ones, so it grades no result of the source map "
             "until `full` is run again." if ran_other_sizes(run, sizes_digest) else "")
    out |= {"full_run": head + f"Its {len(claims)} claims by status{how}: {counts}. Failing: {marked}.{read}{stale}",
            "full_counts": counts, "full_failed": ", ".join(failed) if failed else "none"}
    for c in claims:
        out[f"full_{c['id']}"] = format_value(c.get("measured"))
        out[f"full_{c['id']}_status"] = c["status"]
    return out


def trained_runs(*parts: Any) -> tuple[int, int]:
    """The ``trained=`` of a claim that reads several groups of runs: (runs that reached their training target, runs).
    Each part is a ``(reached, runs)`` pair, or the runs' reached flags (a bool, or a boolean array or tensor, one per
    run); the parts are summed."""
    reached = runs = 0
    for part in parts:
        if isinstance(part, tuple):
            r, n = part
        elif isinstance(part, bool):
            r, n = int(part), 1
        else:
            flags = [bool(v) for v in (part.reshape(-1).tolist() if hasattr(part, "reshape") else part)]
            r, n = sum(flags), len(flags)
        reached, runs = reached + int(r), runs + int(n)
    return reached, runs


def claims_dir() -> Path:
    env = os.environ.get("BOOK_CLAIMS_DIR")
    return Path(env) if env else project_root() / "_build" / "claims"


def _unpack(measured, se, null):
    """``measured`` may be a number or a result object with ``value`` (and optionally ``se`` and ``null``)."""
    if hasattr(measured, "value") and not isinstance(measured, (int, float)):
        se = se if se is not None else getattr(measured, "se", None)
        null = null if null is not None else getattr(measured, "null", None)
        measured = measured.value
    return measured, se, null


def _number(value) -> float:
    value = _plain(value)
    return float(value) if isinstance(value, (int, float)) else float("nan")


# What a claim may declare beside its test (each a keyword of every recording method): the expected outcome with its
# reason, the rates that go with it, a revision, and the training guard.
DECLARATIONS = ("not_reproduced", "inconclusive", "not_testable", "source_scale_only", "rate", "revised", "trained",
                "other_runs", "near_bound")


def _pair(claim_id: str, name: str, value) -> tuple[int, int] | None:
    """A (part, whole) count such as a rate: integers with 0 <= part <= whole and whole >= 1."""
    if value is None:
        return None
    part, whole = (int(v) for v in value)
    if not 0 <= part <= whole or whole < 1:
        raise ValueError(f"claim {claim_id!r}: {name} must be (part, whole) with 0 <= part <= whole and whole >= 1")
    return part, whole


def _declarations(claim_id: str, declared: dict) -> dict:
    """The declaration keywords of a recording method, checked against ``DECLARATIONS``."""
    unknown = sorted(set(declared) - set(DECLARATIONS))
    if unknown:
        raise TypeError(f"claim {claim_id!r}: unknown keyword(s) {unknown}; a claim may declare "
                        f"{', '.join(DECLARATIONS)}")
    return declared


# Claim fields that a JSON round trip turns from tuples into lists.
_TUPLE_FIELDS = ("rate", "trained", "other_runs", "seed_rate")


class ClaimLedger:
    """Collects a chapter's claims, its source map and its errata; one ledger per chapter."""

    def __init__(self, chapter: str, title: str, *, profile: str, seed: int, device: str = "cpu"):
        self.chapter = chapter
        self.title = title
        self.meta = {"profile": profile, "seed": seed, "device": str(device)}
        self.claims: list[Claim] = []
        self.sources: list[SourceResult] = []
        self.errata: list[Erratum] = []
        # The stored records that grade this chapter's results at the other profiles (:meth:`attach_stored`).
        self.stored_full: dict | None = None
        self.stored_sweep: dict | None = None
        self.sizes_digest: str | None = None

    @classmethod
    def from_json(cls, data: dict) -> ClaimLedger:
        """A ledger rebuilt from its JSON (:meth:`to_json`): its claims, source map, errata and the digest of the
        ``full`` sizes it was graded against; attach the stored records with :meth:`attach_stored` to grade it."""
        ledger = cls(data["chapter"], data.get("title", data["chapter"]), profile=data["profile"], seed=data["seed"],
                     device=data.get("device", "cpu"))
        ledger.meta.update({k: v for k, v in data.items() if k == "provenance"})
        fields = {f.name for f in dataclasses.fields(Claim)}
        for c in data.get("claims", []):
            kw = {k: tuple(v) if k in _TUPLE_FIELDS and v is not None else v for k, v in c.items() if k in fields}
            ledger.claims.append(Claim(**kw))
        for cls_, key, target in ((SourceResult, "sources", ledger.sources), (Erratum, "errata", ledger.errata)):
            names = {f.name for f in dataclasses.fields(cls_)}
            target.extend(cls_(**{k: v for k, v in e.items() if k in names}) for e in data.get(key, []))
        ledger.sizes_digest = data.get("full_sizes_digest")
        return ledger

    @property
    def at_source_scale(self) -> bool:
        return self.meta["profile"] == SOURCE_SCALE

    # -- recording ---------------------------------------------------------------------------------------
    def _add(self, claim: Claim, null: Null | None, test) -> Claim:
        if any(c.id == claim.id for c in self.claims):
            raise ValueError(f"claim {claim.id!r} recorded twice in chapter {self.chapter!r}")
        check_texts(f"claim {claim.id!r}", {
            "statement": claim.statement, "where": claim.where, "relation": claim.relation,
            "source_value": claim.source_value, "not_reproduced": claim.not_reproduced,
            "inconclusive": claim.inconclusive, "not_testable": claim.not_testable, "revised": claim.revised,
            "source_scale_only": claim.source_scale_only, "near_bound": claim.near_bound,
            "null": null.model if isinstance(null, Null) else None})
        if claim.kind not in KINDS:
            raise ValueError(f"claim {claim.id!r}: kind must be one of {', '.join(KINDS)}, not {claim.kind!r}")
        if claim.se is not None:
            claim.se = float(_plain(claim.se))
            if not (math.isfinite(claim.se) and claim.se >= 0):
                raise ValueError(f"claim {claim.id!r}: se must be a finite number >= 0, not {claim.se!r}")
        claim.rate = _pair(claim.id, "rate", claim.rate)
        claim.trained = _pair(claim.id, "trained", claim.trained)
        claim.other_runs = _pair(claim.id, "other_runs", claim.other_runs)
        expected = (claim.not_reproduced, claim.inconclusive, claim.not_testable, claim.source_scale_only)
        if sum(x is not None for x in expected) > 1:
            raise ValueError(f"claim {claim.id!r}: at most one of not_reproduced, inconclusive, not_testable, "
                             "source_scale_only")
        if claim.other_runs is not None and claim.inconclusive is None:
            raise ValueError(f"claim {claim.id!r}: other_runs is the evidence of an inconclusive claim")
        claim.at_source_scale = self.at_source_scale
        if null is not None:
            if not isinstance(null, Null):
                raise TypeError(f"claim {claim.id!r}: null must be a Null(value, model), not {type(null).__name__}")
            claim.null, claim.null_model = _plain(null.value), null.model
            claim.null_passed = bool(null.passes) if test is None else bool(test(null.value))
            if test is None and null.passes is None:
                raise ValueError(f"claim {claim.id!r}: a condition's null must say whether it passes (passes=...)")
        claim.measured, claim.measured_tex = _sympy_text(claim.measured)
        claim.measured = _plain(claim.measured)
        claim.source_value = _plain(claim.source_value)
        claim.passed = bool(claim.passed)  # a numpy bound makes the comparison a numpy bool
        self.claims.append(claim)
        return claim

    def close_to(self, id, statement, where, *, kind, source_value, measured, rtol=0.0, atol=0.0, se=None,
                 null=None, **declared):
        """|measured - source_value| <= atol + rtol * |source_value|. ``declared``: any of ``DECLARATIONS``."""
        measured, se, null = _unpack(measured, se, null)
        measured, source_value = _number(measured), _number(source_value)
        bound = atol + rtol * abs(source_value)

        def test(value) -> bool:
            value = _number(value)
            return math.isfinite(value) and abs(value - source_value) <= bound

        parts = [format_value(float(atol))] if atol else []
        parts += [f"{rtol:g}·|source|"] if rtol else []
        relation = f"|ours − source| ≤ {' + '.join(parts) or '0'}"
        return self._add(Claim(id, statement, where, source_value, measured, relation, test(measured), kind, se=se,
                               margin=bound - abs(measured - source_value), **_declarations(id, declared)), null, test)

    def at_least(self, id, statement, where, *, kind, measured, bound, source_value=None, se=None, null=None,
                 **declared):
        """measured >= bound. ``declared``: any of ``DECLARATIONS``."""
        measured, se, null = _unpack(measured, se, null)
        measured, bound_f = _number(measured), _number(bound)

        def test(value) -> bool:
            value = _number(value)
            return math.isfinite(value) and value >= bound_f

        return self._add(Claim(id, statement, where, source_value, measured, f"ours ≥ {format_value(bound)}",
                               test(measured), kind, se=se, margin=measured - bound_f,
                               **_declarations(id, declared)), null, test)

    def at_most(self, id, statement, where, *, kind, measured, bound, source_value=None, se=None, null=None,
                **declared):
        """measured <= bound. ``declared``: any of ``DECLARATIONS``."""
        measured, se, null = _unpack(measured, se, null)
        measured, bound_f = _number(measured), _number(bound)

        def test(value) -> bool:
            value = _number(value)
            return math.isfinite(value) and value <= bound_f

        return self._add(Claim(id, statement, where, source_value, measured, f"ours ≤ {format_value(bound)}",
                               test(measured), kind, se=se, margin=bound_f - measured,
                               **_declarations(id, declared)), null, test)

    def holds(self, id, statement, where, *, kind, measured, condition: bool, relation: str, source_value=None,
              null=None, **declared):
        """A claim whose test is a condition computed by the chapter (e.g. monotone in k); ``relation`` says which.
        Its null is ``Null(value, model, passes=<the condition on the null>)``. ``declared``: any of
        ``DECLARATIONS``."""
        return self._add(Claim(id, statement, where, source_value, measured, relation, bool(condition), kind,
                               **_declarations(id, declared)), null, None)

    def source(self, id, where, what, claims=(), *, note=None, analogue=None, not_attempted=None,
               not_testable=None) -> SourceResult:
        """One result of the source in the chapter's source map: where it is, what it says, the claims that carry it,
        and ``analogue`` (what it was run on) where that is not the source's own setting. Its status is computed from
        the claims (:func:`feature_learning.book.status.entry_status`), never given; a result without claims says
        why: ``not_attempted="..."`` or ``not_testable="..."``."""
        if any(s.id == id for s in self.sources):
            raise ValueError(f"source result {id!r} recorded twice in chapter {self.chapter!r}")
        if claims and not_attempted:
            raise ValueError(f"source result {id!r} is not attempted but names claims")
        if not claims and not (not_attempted or not_testable):
            raise ValueError(f"source result {id!r} has no claims: say why (not_attempted=... or not_testable=...)")
        check_texts(f"source result {id!r}", {"where": where, "what": what, "note": note, "analogue": analogue,
                                              "not_attempted": not_attempted, "not_testable": not_testable})
        entry = SourceResult(id, where, what, list(claims), note, analogue, not_attempted, not_testable)
        self.sources.append(entry)
        return entry

    def erratum(self, id, where, printed, correct, claims=()) -> Erratum:
        """One erratum of the source: where, what the source prints, what is right, and the claims that check it
        (none: shown as "not checked here")."""
        if any(e.id == id for e in self.errata):
            raise ValueError(f"erratum {id!r} recorded twice in chapter {self.chapter!r}")
        check_texts(f"erratum {id!r}", {"where": where, "printed": printed, "correct": correct})
        entry = Erratum(id, where, printed, correct, list(claims))
        self.errata.append(entry)
        return entry

    def record_map(self, entries) -> None:
        """Record a source map given as dicts (a chapter's ``SOURCE_MAP``): an entry with ``printed`` is an erratum
        (:meth:`erratum`), any other a source result (:meth:`source`)."""
        for entry in entries:
            (self.erratum if "printed" in entry else self.source)(**entry)

    def attach_stored(self, full: dict | None = None, sweep: dict | None = None,
                      sizes_digest: str | None = None) -> None:
        """The stored records that grade this chapter's results at the other profiles: its ``full`` record and the
        seed sweep (the whole summary; this chapter's part is read from it), and the digest of its present ``full``
        sizes (a stored run with another digest grades nothing)."""
        self.stored_full, self.stored_sweep, self.sizes_digest = full, sweep, sizes_digest

    @property
    def sweep_chapter(self) -> dict | None:
        return (self.stored_sweep or {}).get("chapters", {}).get(self.chapter)

    # -- checking the source map ----------------------------------------------------------------------
    def source_map_errors(self) -> list[str]:
        """Disagreements between the source map, the errata, the claims and the stored seed sweep; :meth:`finish`
        raises if there are any. Every entry is checked, those carrying a failing claim included."""
        current = {c["id"]: c for c in self.to_json(graded=False)["claims"]}
        errors = []
        if not self.sources:
            errors.append("no source map: record every result of the source with ledger.source(...)")
        for s in self.sources:
            unknown = [cid for cid in s.claims if cid not in current]
            if unknown:
                errors.append(f"source {s.id!r} names unknown claims {unknown}")
                continue
            status = entry_status(dataclasses.asdict(s), current)
            if status == "FAIL":
                failing = [cid for cid in s.claims if current[cid]["status"] not in ACCEPTED]
                errors.append(f"source {s.id!r} carries failing claims {failing}: it is not reproduced here")
            elif status == UNSUPPORTED:
                errors.append(f"source {s.id!r} is carried only by predictions of ours or consistency checks: map a "
                              "reproduction or verification of it, or say why it is not attempted")
            if s.not_testable and status not in ("not testable here", "FAIL"):
                errors.append(f"source {s.id!r} is declared not testable here but carries tested claims")
        for e in self.errata:
            unknown = [cid for cid in e.claims if cid not in current]
            if unknown:
                errors.append(f"erratum {e.id!r} names unknown claims {unknown}")
        mapped = {cid for s in self.sources for cid in s.claims} | {cid for e in self.errata for cid in e.claims}
        for c in self.claims:
            if c.kind in ("reproduction", "verification") and c.id not in mapped:
                errors.append(f"claim {c.id!r} ({c.kind}) carries no result of the source map")
            elif c.kind != "derivation" and _is_number(c.source_value) and c.id not in mapped:
                errors.append(f"claim {c.id!r} compares with the number {format_value(c.source_value)} in its source "
                              "column but is mapped to no source result or erratum: map it beside the result it "
                              "bears on")
        errors += self.sweep_contradictions()
        return errors

    def sweep_contradictions(self) -> list[str]:
        """Declarations that the stored seed sweep contradicts: an inconclusive claim whose test passed clear of noise
        at every seed, or failed clear of noise at every seed (a seed within noise of the bound is undecided), unless
        recorded runs outside the sweep (``other_runs``) show the other outcome; a claim expected
        to fail below the source's scale that passed at every seed of a sweep below it. Claims the sweep stored with
        another test are not judged by it."""
        chapter = self.sweep_chapter
        if not chapter:
            return []
        below = chapter.get("profile", "ci") != SOURCE_SCALE
        errors = []
        for c in self.claims:
            stored = chapter["claims"].get(c.id)
            relations = {v.get("relation") for v in (stored or {}).get("per_seed", {}).values()} - {None}
            if stored is None or relations and relations != {c.relation}:
                continue
            rate = claim_seed_rate(c.id, chapter)
            if rate is None or rate[1] < 2:
                continue
            passes, seeds = rate
            if passes == seeds and c.se is not None and not sweep_knows_noise(c.id, chapter):
                continue  # a sweep without the claim's se cannot tell a clean pass from one within noise
            if passes == 0 and clean_fails(c.id, chapter) < seeds:
                passes = None  # some seed sits within noise of the bound: undecided there, not a failure
            if c.inconclusive is not None and passes in (0, seeds):
                other = c.other_runs
                if other is None or (passes == 0 and other[0] == 0) or (passes == seeds and other[0] == other[1]):
                    verdict_text = "passes at every seed: it holds" if passes else "fails at every seed: not reproduced"
                    errors.append(f"claim {c.id!r} is declared inconclusive but the stored sweep says it "
                                  f"{verdict_text} ({passes}/{seeds} seeds)")
            if c.source_scale_only is not None and below and passes is not None and passes == seeds:
                errors.append(f"claim {c.id!r} is expected to fail below the source's scale but passes at every seed "
                              f"of the stored sweep ({passes}/{seeds})")
        return errors

    # -- reporting ---------------------------------------------------------------------------------------
    @property
    def failed(self) -> list[Claim]:
        return [c for c in self.claims if not c.ok]

    def _graded_sources(self, claims: list[dict]) -> list[dict]:
        """The source map with each result's status in this run, at each profile that ran, and its verdict."""
        ledger = {"profile": self.meta["profile"], "claims": claims}
        out = []
        for s in self.sources:
            entry = dataclasses.asdict(s)
            statuses = profile_statuses(entry, ledger, self.stored_full, self.sweep_chapter, self.sizes_digest)
            entry["status"] = statuses[self.meta["profile"]]
            entry["statuses"] = statuses
            entry["verdict"] = verdict(statuses)
            out.append(entry)
        return out

    def to_json(self, graded: bool = True) -> dict:
        """The ledger as JSON: its claims (each with its seed-level rate where the stored sweep has it), its source
        map graded per profile (``graded``), and its errata with their status."""
        claims = [claim_json(c) for c in self.claims]
        chapter = self.sweep_chapter
        for c in claims:
            rate = claim_seed_rate(c["id"], chapter)
            if rate is not None:
                c["seed_rate"] = rate
        by_id = {c["id"]: c for c in claims}
        data = {
            "chapter": self.chapter,
            "title": self.title,
            **self.meta,
            "written": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "claims": claims,
            "sources": self._graded_sources(claims) if graded else [dataclasses.asdict(s) for s in self.sources],
            "errata": [{**dataclasses.asdict(e), "status": erratum_status(dataclasses.asdict(e), by_id)}
                       for e in self.errata],
        }
        if self.sizes_digest is not None:
            data["full_sizes_digest"] = self.sizes_digest
        if self.stored_sweep is not None:
            data["graded_by"] = {"sweep_written": self.stored_sweep.get("written"),
                                 "sweep_commit": self.stored_sweep.get("commit"),
                                 "full_written": (self.stored_full or {}).get("written")}
        return data

    def write(self, folder: Path | None = None) -> Path:
        folder = Path(folder) if folder is not None else claims_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.chapter}.json"
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")
        return path

    def _repr_html_(self) -> str:
        return claims_html(self.to_json(graded=False)["claims"])

    def finish(self, folder: Path | None = None) -> SourceMap:
        """Write the ledger, then raise if a claim failed or the source map disagrees with the claims. Returns the
        source map, which the notebook shows as the chapter's closing table."""
        if not self.claims:
            raise ClaimFailed(f"chapter {self.chapter!r} recorded no claims")
        self.write(folder)
        problems = [f"  {c.id}: {c.status}; ours {format_value(c.measured)}, {c.relation}"
                    + (f"; null ({c.null_model}) {format_value(c.null)}" if c.null_passed else "")
                    for c in self.failed]
        problems += [f"  source map: {e}" for e in self.source_map_errors()]
        if problems:
            header = f"{len(problems)} reproduction check(s) failed in {self.chapter!r}:\n"
            raise ClaimFailed(header + "\n".join(problems))
        return SourceMap(self.to_json())


def claim_json(claim: Claim) -> dict:
    return {**dataclasses.asdict(claim), "status": claim.status, "noise_distance": claim.noise_distance}


# -- rendering ------------------------------------------------------------------------------------------------
# A claim is two rows. The first holds what a reader scans down a column: the id, the source's value, ours, the
# null's value, the test and the status badge. The second runs across the whole table: the statement, then in small
# print the kind, where it is in the source, what the null is, and why the status is what it is (the distance from
# the bound, the rate, the reason). In narrow columns the kind and place under the id, the null's description and
# the status's reason wrapped to three to eight lines per claim (a reason beside its badge up to twelve), and the
# claims tables were a quarter to a third of a chapter's height; seven columns were wider than the page's column.
COLUMNS = ("claim", "source", "ours", "null", "test", "status")

STATUS_CLASSES = {
    STATUS_PASS: "pass",
    STATUS_NOT_REPRODUCED: "not-reproduced",
    STATUS_BELOW_SCALE: "not-reproduced",
    STATUS_INCONCLUSIVE: "inconclusive",
    STATUS_NOT_TESTABLE: "not-testable",
    "reproduced": "pass",
    "reproduced on an analogue": "pass",
    "verified": "pass",
    "reproduced at the source's scale": "pass",
    "reproduced at the source's scale, not below it": "pass",
    "reproduced below the source's scale only": "not-reproduced",
    "reproduced below the source's scale; not run at the source's scale yet": "inconclusive",
    "not reproduced below the source's scale; not run at the source's scale yet": "not-reproduced",
    "verified below the source's scale only": "not-reproduced",
    "not reproduced": "not-reproduced",
    "not reproduced at this scale": "not-reproduced",
    "not testable here": "not-testable",
    "not attempted": "not-testable",
    CONFIRMED: "pass",
    UNCHECKED: "not-testable",
}


def badge(status: str) -> str:
    return badge_as(status, status)


def badge_as(status: str, text: str) -> str:
    """A badge coloured as ``status`` that reads ``text``."""
    cls = STATUS_CLASSES.get(status, "fail")
    return f"<span class='claim-badge claim-{cls}'>{html.escape(text)}</span>"


# The verdict of a result reproduced on an analogue at the ``full`` profile: the analogue's largest size, which is not
# the source's scale (the source's data, model or compute are what the analogue stands in for).
ON_ANALOGUE_AT_FULL = "reproduced on an analogue at its full size"


def format_se(se: Any) -> str:
    """A standard error at two significant digits, without an exponent between 1e-4 and 1e4 ("0.00024", "0.47", "12",
    "1,234"); else as :func:`format_value` prints a number."""
    se = _plain(se)
    if isinstance(se, float) and 1e-4 <= abs(se) < 100:
        return f"{se:.2g}"
    if isinstance(se, float) and 100 <= abs(se) < 1e4:
        return f"{se:,.0f}"
    return format_value(se)


def _ours(claim: dict) -> str:
    """Our value and its standard error, joined by non-breaking spaces so that the pair stays on one line."""
    tex = claim.get("measured_tex") or math_of(claim.get("measured"))
    if tex:
        return f"\\({tex}\\)"
    text = format_value(claim["measured"])
    if claim.get("se") is not None:
        text += f"\u00a0±\u00a0{format_se(claim['se'])}"
    return text


def status_note(claim: dict) -> str:
    """The status's explanation: the distance from the bound in standard errors, how an inconclusive claim fared in
    this run, its seed-level rate (from the stored sweep) and other recorded runs, the replicas, the training guard,
    the reason."""
    notes = []
    if claim.get("noise_distance") is not None and claim["status"] != STATUS_NOT_TESTABLE:
        notes.append(f"{claim['noise_distance']:.1f} se from its bound")
    if claim["status"] == STATUS_INCONCLUSIVE:
        notes.append("passed in this run" if claim.get("passed") else "failed in this run")
    if claim.get("seed_rate") and claim["status"] != STATUS_NOT_TESTABLE:
        passes, seeds = claim["seed_rate"]
        notes.append(f"its test passed at {passes} of {seeds} seeds of the stored sweep")
    if claim.get("other_runs"):
        passes, runs = claim["other_runs"]
        notes.append(f"passed in {passes} of {runs} other recorded runs")
    if claim.get("rate"):
        passes, runs = claim["rate"]
        notes.append(f"holds for {passes} of {runs} replicas in this run")
    if claim.get("trained") and claim["trained"][0] < claim["trained"][1]:
        reached, runs = claim["trained"]
        notes.append(f"only {reached} of {runs} runs reached their training target")
    for key in ("not_reproduced", "inconclusive", "not_testable", "source_scale_only"):
        if claim.get(key):
            notes.append(claim[key])
    if claim.get("null_passed"):
        notes.append(f"the null ({claim['null_model']}) gives {format_value(claim['null'])}")
    return "; ".join(notes)


def claim_statement(claim: dict) -> str:
    """The row under the claim's numbers, as HTML: what the claim says (and how it was revised, if it was), then in
    small print its kind, where it sits in the source, its null model and the status's explanation."""
    statement = text_html(claim["statement"])
    if claim.get("revised"):
        statement += f" <em>Revised: {text_html(claim['revised'])}</em>"
    details = [f"<span class='claim-kind'>{html.escape(claim.get('kind', '?'))}</span>", text_html(claim["where"])]
    if claim.get("null_model"):
        details.append(f"null: {text_html(claim['null_model'])}")
    note = status_note(claim)
    if note:
        details.append(text_html(note))
    if claim.get("near_bound"):
        details.append(f"close to its bound at some seeds: {text_html(claim['near_bound'])}")
    return f"{statement} <small class='claim-details'>{' · '.join(details)}</small>"


def claim_cells(claim: dict) -> list[str]:
    """One claim's numbers as HTML cells of ``COLUMNS`` (the rest of it: :func:`claim_statement`)."""
    null = text_html(format_value(claim["null"])) if claim.get("null_model") else "—"
    source = format_value(claim["source_value"]) if claim.get("source_value") is not None else "—"
    return [code_id(claim["id"]), text_html(source), html.escape(_ours(claim)), null,
            text_html(claim["relation"]), badge(claim["status"])]


def code_id(claim_id: str) -> str:
    """A claim id as HTML code that may wrap after each underscore (``<wbr>``), so that long ids do not widen a
    claims table past the page's column."""
    return "<code>" + html.escape(claim_id).replace("_", "_<wbr>") + "</code>"


# The box of a chapter's claims tables and source map (the theme's class full-width); the reproduction report names
# its own (sphinx_report.REPORT_BOX).
CHAPTER_BOX = "full-width claims-wide"


def wide(table: str, box: str | None = CHAPTER_BOX) -> str:
    """``table`` in a box of the classes ``box`` (``None``: bare). A chapter's box is the theme's ``full-width``: on
    a screen at least 992 px wide it reaches over the page's right margin (136% of the column; the theme folds the
    page's contents list while such a box is in view), so that a claim's statement wraps over fewer lines and its
    numbers keep to one; on a narrow screen it is the column's width. Claims tables and source maps took a quarter
    to a third of a chapter's height in the column. The reproduction report, a page without a contents list (where
    the theme's script that folds the list fails on a full-width box), names a box of its own."""
    return f"<div class='{box}'>{table}</div>" if box else table


def html_table(columns, rows, cls: str = "claims-table", box: str | None = CHAPTER_BOX) -> str:
    """An HTML table of ``rows`` of HTML cells under the (plain-text) ``columns``, styled by ``_static/book.css``,
    in the box :func:`wide` puts it in."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return wide(f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>", box)


def claims_html(claims: list[dict], box: str | None = CHAPTER_BOX) -> str:
    """The claims as a table of two rows per claim: its id and numbers (:func:`claim_cells`), then across the table
    its statement with the kind, place, null and status's reason in small print (:func:`claim_statement`), in the
    box :func:`wide` puts it in."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in COLUMNS)
    body = "".join("<tr class='claim-numbers'>" + "".join(f"<td>{cell}</td>" for cell in claim_cells(c)) + "</tr>"
                   f"<tr class='claim-statement'><td colspan='{len(COLUMNS)}'>{claim_statement(c)}</td></tr>"
                   for c in claims)
    table = f"<table class='claims-table mathjax_process'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return wide(table, box)


# The claims that carry a result sit under it, in small print, rather than in a fourth column: a narrow column of ids
# wrapped one id per line and made a source map row up to ten lines high.
SOURCE_COLUMNS = ("result · carried by", "where", "ci · book · full", "verdict")
ERRATA_COLUMNS = ("where", "the source prints", "what is right · checked by", "status")


def _profile_cell(entry: dict, lifted: frozenset[str] = frozenset()) -> str:
    """A result's status at each profile that ran, one per line (the sweep's rate beside ``ci``; why the stored
    ``full`` record does not grade it, where it does not, unless that note is one of ``lifted``: shown once above the
    table)."""
    statuses = entry.get("statuses") or {}
    lines = []
    for profile in ("ci", "book", "full"):
        status = statuses.get(profile)
        if status is None and profile != "full":
            continue
        note = statuses.get("full_note") if profile == "full" and status is None else None
        if note == NO_FULL_RUN:
            note = None
        text = html.escape(status) if status else ("not graded by its stored run" if note else "not run")
        seeds = statuses.get("seeds")
        if profile == (seeds or {}).get("profile"):
            held, n = seeds["rate"]
            text += (f" <small>(its test passes at {held} of {n} seeds)</small>" if seeds["status"] == "inconclusive"
                     else f" <small>(all {n} seeds)</small>")
        if note:
            shown = "not graded: see above the table" if note in lifted else text_html(note)
            text += f"<br><small>{shown}</small>"
        lines.append(f"<code>{profile}</code> {text}")
    return "<br>".join(lines) or "—"


def source_cells(entry: dict, claims: dict[str, dict] | None = None, lifted: frozenset[str] = frozenset()) -> list[str]:
    """One source result as HTML cells of ``SOURCE_COLUMNS``: what it says (its analogue and note, then the claims
    that carry it, or why there are none), where it is in the source, its status at each profile (a note on the
    ``full`` record that is one of ``lifted`` is shown once above the table), its verdict (a result reproduced on an
    analogue at ``full`` reads so: the analogue's full size is not the source's scale)."""
    what = text_html(entry["what"])
    if entry.get("analogue"):
        what += f"<br><small>analogue: {text_html(entry['analogue'])}</small>"
    for key, label in (("not_attempted", "not attempted: "), ("not_testable", "not testable here: "), ("note", "")):
        if entry.get(key):
            what += f"<br><small>{label}{text_html(entry[key])}</small>"
    carried = ", ".join(code_id(c) for c in entry["claims"]) or "—"
    what += f"<br><small>carried by: {carried}</small>"
    status = entry.get("verdict") or entry.get("status") or "?"
    cell = badge(status) if not (entry.get("analogue") and status in (AT_SCALE, AT_SCALE_ONLY)) else (
        badge_as(status, ON_ANALOGUE_AT_FULL if status == AT_SCALE else ON_ANALOGUE_AT_FULL + ", not below it")
        + "<br><small>the analogue's full size, not the source's scale (see the result's text)</small>")
    undecided = [cid for cid in entry["claims"] if (claims or {}).get(cid, {}).get("status") == STATUS_INCONCLUSIVE]
    if undecided and status not in (INCONCLUSIVE, FAILING):
        cell += (f"<br><small>{len(undecided)} of its {len(entry['claims'])} claims inconclusive: "
                 + ", ".join(code_id(c) for c in undecided) + "</small>")
    return [what, text_html(entry["where"]), _profile_cell(entry, lifted), cell]


def shared_full_notes(ledger: dict, at_least: int = 3) -> frozenset[str]:
    """Why the stored ``full`` record grades none of several results, where the same note stands for at least
    ``at_least`` of them (a run that stopped or crashed before its ledger): shown once above the source map."""
    notes = collections.Counter((s.get("statuses") or {}).get("full_note") for s in ledger.get("sources", []))
    return frozenset(note for note, n in notes.items() if note and n >= at_least)


def errata_cells(erratum: dict) -> list[str]:
    """One erratum as HTML cells of ``ERRATA_COLUMNS``."""
    checked = ", ".join(code_id(c) for c in erratum["claims"]) or "no check here"
    return [f"{text_html(erratum['where'])}<br><small>{code_id(erratum['id'])}</small>", text_html(erratum["printed"]),
            f"{text_html(erratum['correct'])}<br><small>checked by: {checked}</small>", badge(erratum["status"])]


def errata_html(ledger: dict, box: str | None = CHAPTER_BOX) -> str:
    """The chapter's errata as their own table ("confirmed" only beside a check); empty if it lists none."""
    rows = [errata_cells(e) for e in ledger.get("errata", [])]
    if not rows:
        return ""
    return (f"<p><strong>Errata of the source ({len(rows)}; not source results)</strong></p>"
            + html_table(ERRATA_COLUMNS, rows, "claims-table errata mathjax_process", box))


# Where a chapter page finds the definitions of the statuses and verdicts (every chapter sits at
# book/chapters/<part>/<chapter>.html, the report at book/reproduction_report.html).
DEFINITIONS = "../../reproduction_report.html"


def source_map_html(ledger: dict, box: str | None = CHAPTER_BOX, definitions: str | None = DEFINITIONS) -> str:
    """The chapter's headline (with a link to what the verdicts mean), its source map and its errata."""
    lifted = shared_full_notes(ledger)
    claims = {c["id"]: c for c in ledger.get("claims", [])}
    rows = [source_cells(s, claims, lifted=lifted) for s in ledger.get("sources", [])]
    link = f" <a href='{definitions}'>What the verdicts mean</a>." if definitions else ""
    above = "".join(f"<p><small>At the source's scale: {text_html(note)}.</small></p>" for note in sorted(lifted))
    return (f"<p><strong>{html.escape(source_headline(ledger), quote=False)}</strong>{link}</p>" + above
            + html_table(SOURCE_COLUMNS, rows, "claims-table source-map mathjax_process", box)
            + errata_html(ledger, box))


class SourceMap:
    """What :meth:`ClaimLedger.finish` returns: the chapter's source map, shown as its closing table."""

    def __init__(self, ledger: dict):
        self.ledger = ledger

    def _repr_html_(self) -> str:
        return source_map_html(self.ledger)

    def __repr__(self) -> str:
        return source_headline(self.ledger)


# -- counting -------------------------------------------------------------------------------------------------
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
    """Claims by kind and status, for a ledger's detail line (the report's headline counts source results)."""
    counts = tally(claims)
    parts = []
    for kind in KINDS:
        by_status = counts.get(kind, {})
        if by_status:
            detail = ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
            parts.append(f"{sum(by_status.values())} {kind} ({detail})")
    return "Claims: " + "; ".join(parts) + "."

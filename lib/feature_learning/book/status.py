"""Statuses computed, never typed: a claim's from what it measured, a source result's from its claims, per profile.

A chapter's source map declares, for each result of its source, only what the result is: where it is, what it says,
the claims that carry it and whether it was run in the source's own setting or on a named analogue (or, with a
reason, that it was not attempted or cannot be tested here). Its status is computed here from its claims' statuses in
every ledger that exists for it:

* this run's ledger (the ``ci`` profile in continuous integration, ``book`` in the HTML book);
* the stored seed sweep (``results/seeds/summary.json``: every chapter at ``ci`` for several seeds), where the
  result's status at each seed is computed and the seeds are counted;
* the stored ``full`` record (``results/full/<chapter>.json``: the source's scale), where the result's status is
  computed from the stored claims whenever each carrying claim was stored with the test it has now.

From those a *verdict* at the most faithful profile that ran: a result counts as reproduced at the source's scale only
if it passed at ``full``; one that passes below the source's scale and fails at it is "reproduced below the source's
scale only", and the reverse "reproduced at the source's scale, not below it". Errata are kept apart: they are not
source results.

Everything here reads the JSON form of a ledger (``ClaimLedger.to_json``), so the same rules grade this run, a stored
record and a sweep.
"""

from __future__ import annotations

import collections
import re
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

# -- a claim in one run ------------------------------------------------------------------------------------------
STATUS_PASS = "pass"
STATUS_FAIL = "FAIL"
STATUS_NOT_REPRODUCED = "not reproduced"
STATUS_BELOW_SCALE = "not reproduced below the source's scale"
STATUS_INCONCLUSIVE = "inconclusive"
STATUS_NOT_TESTABLE = "not testable"
STATUS_UNEXPECTED_PASS = "FAIL: documented failure now passes"
STATUS_NOISE = "FAIL: within noise of its bound"
STATUS_NULL_PASSES = "FAIL: its null passes too (this check cannot fail)"
STATUS_NO_NULL = "FAIL: a reproduction without a null"
STATUS_UNTRAINED = "FAIL: measured on models that never reached their training target"
ACCEPTED = (STATUS_PASS, STATUS_NOT_REPRODUCED, STATUS_BELOW_SCALE, STATUS_INCONCLUSIVE, STATUS_NOT_TESTABLE)

# -- a source result in one ledger -------------------------------------------------------------------------------
REPRODUCED = "reproduced"
ANALOGUE = "reproduced on an analogue"
VERIFIED = "verified"
NOT_REPRODUCED = "not reproduced"
NOT_AT_THIS_SCALE = "not reproduced at this scale"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
NOT_ATTEMPTED = "not attempted"
FAILING = "FAIL"
UNSUPPORTED = "carried by no reproduction or verification"  # an error of the map, reported by the ledger
RESULT_STATUSES = (REPRODUCED, ANALOGUE, VERIFIED, NOT_REPRODUCED, NOT_AT_THIS_SCALE, INCONCLUSIVE, NOT_TESTABLE,
                   NOT_ATTEMPTED, FAILING)
HOLDS = (REPRODUCED, ANALOGUE, VERIFIED)

# -- a source result over the profiles: its verdict ----------------------------------------------------------------
AT_SCALE = "reproduced at the source's scale"
AT_SCALE_ONLY = "reproduced at the source's scale, not below it"
BELOW_ONLY = "reproduced below the source's scale only"
NOT_RUN_AT_SCALE = "reproduced below the source's scale; not run at the source's scale yet"
FAILS_BELOW_NOT_RUN = "not reproduced below the source's scale; not run at the source's scale yet"
VERIFIED_BELOW_ONLY = "verified below the source's scale only"
VERDICTS = (AT_SCALE, AT_SCALE_ONLY, BELOW_ONLY, NOT_RUN_AT_SCALE, FAILS_BELOW_NOT_RUN, VERIFIED, VERIFIED_BELOW_ONLY,
            NOT_REPRODUCED,
            INCONCLUSIVE, NOT_TESTABLE, NOT_ATTEMPTED, FAILING)

PROFILES = ("ci", "book", "full")
NOISE_SES = 2.0  # a verdict must not sit within this many standard errors of its bound
SOURCE_SCALE = "full"

# -- an erratum ---------------------------------------------------------------------------------------------------
CONFIRMED = "confirmed"
UNCHECKED = "not checked here"


def entry_status(entry: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The status of one source result (``entry``: a source-map entry) in one ledger whose claims are ``claims``
    (by id, each with its ``status`` and ``kind``); None if a carrying claim is not in that ledger.

    * declared ``not_attempted`` (with its reason): not attempted; no claims and declared ``not_testable``: not
      testable here;
    * a carrying claim that fails: FAIL; every carrying claim not testable: not testable here;
    * a carrying claim that does not reproduce: not reproduced; one that does not reproduce below the source's scale
      (in a run below it): not reproduced at this scale;
    * else a passing reproduction: reproduced (on the named analogue, if the entry names one); a passing
      verification or derivation: verified; an inconclusive carrying claim (the rest passing): inconclusive;
    * carried only by predictions of ours or consistency checks: ``UNSUPPORTED``, an error of the map."""
    if entry.get("not_attempted"):
        return NOT_ATTEMPTED
    ids = list(entry.get("claims") or ())
    if not ids:
        return NOT_TESTABLE if entry.get("not_testable") else NOT_ATTEMPTED
    if any(cid not in claims for cid in ids):
        return None
    carried = [claims[cid] for cid in ids]
    if any(c["status"] not in ACCEPTED for c in carried):
        return FAILING
    tested = [c for c in carried if c["status"] != STATUS_NOT_TESTABLE]
    if not tested:
        return NOT_TESTABLE
    statuses = {c["status"] for c in tested}
    if STATUS_NOT_REPRODUCED in statuses:
        return NOT_REPRODUCED
    if STATUS_BELOW_SCALE in statuses:
        return NOT_AT_THIS_SCALE
    if STATUS_INCONCLUSIVE in statuses:  # a part of the result holds at some seeds only: so does the result
        return INCONCLUSIVE
    passing = {c.get("kind") for c in tested if c["status"] == STATUS_PASS}
    if "reproduction" in passing:
        return ANALOGUE if entry.get("analogue") else REPRODUCED
    if passing & {"verification", "derivation"}:
        return VERIFIED
    return UNSUPPORTED


def erratum_status(erratum: Mapping[str, Any], claims: Mapping[str, Mapping[str, Any]]) -> str:
    """"confirmed" when a claim checks it and every such claim holds; "not checked here" without a claim; FAIL if a
    checking claim fails."""
    ids = list(erratum.get("claims") or ())
    if not ids:
        return UNCHECKED
    carried = [claims.get(cid) for cid in ids]
    if any(c is None or c["status"] not in ACCEPTED for c in carried):
        return FAILING
    return CONFIRMED


# -- the seed sweep -------------------------------------------------------------------------------------------------
def sweep_claims(sweep_chapter: Mapping[str, Any],
                 current: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, dict]]:
    """A swept chapter's claims per seed: ``{seed: {claim id: {"status", "kind", "relation"}}}``; with ``current``
    (this run's claims by id) each seed's status is regraded under the present declarations (:func:`regrade`)."""
    seeds: dict[str, dict[str, dict]] = {str(s): {} for s in sweep_chapter.get("seeds", [])}
    below = sweep_chapter.get("profile", "ci") != SOURCE_SCALE
    for cid, entry in sweep_chapter.get("claims", {}).items():
        for seed, value in entry.get("per_seed", {}).items():
            status = value["status"]
            if current is not None and cid in current:
                status = regrade(value, current[cid], not below)
            kind = current[cid].get("kind") if current is not None and cid in current else entry.get("kind")
            seeds.setdefault(seed, {})[cid] = {"status": status, "kind": kind,
                                               "relation": value.get("relation", entry.get("relation"))}
    return seeds


def sweep_status(entry: Mapping[str, Any], sweep_chapter: Mapping[str, Any] | None,
                 current: Mapping[str, Mapping[str, Any]] | None = None) -> dict | None:
    """The result's status at each seed of the sweep, gathered: ``{"status", "rate": [seeds where it holds, seeds],
    "profile"}``; the status is the common one when every seed agrees, else inconclusive. None when the chapter was
    not swept or a carrying claim is missing at some seed (the sweep predates it)."""
    if not sweep_chapter:
        return None
    per_seed = [entry_status(entry, claims) for claims in sweep_claims(sweep_chapter, current).values()]
    if not per_seed or any(s is None for s in per_seed):
        return None
    common = per_seed[0] if len(set(per_seed)) == 1 else INCONCLUSIVE
    held = sum(s in HOLDS for s in per_seed)
    if common == INCONCLUSIVE:  # a claim declared inconclusive is graded so at every seed: count its tests instead
        held = entry_seed_passes(entry, sweep_chapter)
    return {"status": common, "rate": [held, len(per_seed)], "profile": sweep_chapter.get("profile", "ci")}


def entry_seed_passes(entry: Mapping[str, Any], sweep_chapter: Mapping[str, Any]) -> int:
    """Seeds of the sweep at which every claim carrying the result passed its test clear of noise (a claim graded
    "not testable" at a seed aside): the seed-level rate of an inconclusive result."""
    stored = sweep_chapter.get("claims", {})
    seeds = [str(s) for s in sweep_chapter.get("seeds", [])]

    def passes(seed: str) -> bool:
        values = [stored[cid]["per_seed"].get(seed) for cid in entry.get("claims") or () if cid in stored]
        tested = [v for v in values if v is not None and v.get("status") != STATUS_NOT_TESTABLE]
        return bool(tested) and all(clean_pass(v) for v in tested)

    return sum(passes(seed) for seed in seeds)


def within_noise(value: Mapping[str, Any]) -> bool:
    """A stored claim's value sits within two of its standard errors of its bound (where its se was stored)."""
    se, margin = value.get("se"), value.get("margin")
    return isinstance(se, (int, float)) and isinstance(margin, (int, float)) and abs(margin) < NOISE_SES * se


def clean_pass(value: Mapping[str, Any]) -> bool:
    """A seed's claim passed its test and not within noise of its bound (where the sweep stored its se)."""
    return bool(value.get("passed")) and not within_noise(value)


def claim_seed_rate(claim_id: str, sweep_chapter: Mapping[str, Any] | None) -> list[int] | None:
    """[seeds at which the claim's test passed clear of noise, seeds swept], or None if the sweep does not hold the
    claim."""
    entry = (sweep_chapter or {}).get("claims", {}).get(claim_id)
    if entry is None:
        return None
    per_seed = list(entry.get("per_seed", {}).values())
    return [sum(clean_pass(v) for v in per_seed), len(per_seed)] if per_seed else None


def clean_fails(claim_id: str, sweep_chapter: Mapping[str, Any] | None) -> int:
    """Seeds at which the claim's test failed clear of noise (its se known and the bound more than two se away)."""
    entry = (sweep_chapter or {}).get("claims", {}).get(claim_id) or {}
    return sum(not v.get("passed") and not within_noise(v) for v in entry.get("per_seed", {}).values())


def sweep_knows_noise(claim_id: str, sweep_chapter: Mapping[str, Any] | None) -> bool:
    """Whether the sweep stored the claim's standard error at every seed (a sweep without it cannot tell a clean pass
    from one within noise of its bound)."""
    entry = (sweep_chapter or {}).get("claims", {}).get(claim_id) or {}
    per_seed = list(entry.get("per_seed", {}).values())
    return bool(per_seed) and all("se" in v for v in per_seed)


# -- the stored full record ----------------------------------------------------------------------------------------
# TeX letters as the Unicode letters a printed relation shows (longest name first)
_GREEK = tuple((f"\\{name}", letter) for name, letter in sorted(
    zip(("alpha", "beta", "gamma", "delta", "varepsilon", "epsilon", "eta", "theta", "kappa", "lambda", "mu", "nu",
         "pi", "rho", "sigma", "tau", "phi", "omega"), "αβγδεεηθκλμνπρστφω", strict=True), key=lambda p: -len(p[0])))
_TEX = (("\\ne", "≠"), ("!=", "≠"), ("\\geq", "≥"), ("\\ge", "≥"), (">=", "≥"), ("\\leq", "≤"), ("\\le", "≤"),
        ("<=", "≤"), ("\\to", "→"), ("->", "→"), ("\\infty", "∞"), ("\\lvert", "|"), ("\\rvert", "|"),
        ("\\mathrm", ""), ("\\operatorname", ""), ("\\,", ""), ("==", "="), ("-", "−"))
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d*)?(?:e[−-]?\d+)?")


def test_form(claim: Mapping[str, Any]) -> tuple:
    """What identifies a claim's test across runs: its relation with the math markup and the numbers taken out (a
    tolerance of a few standard errors or a window from the run's own spread is the same test at every size) and its
    revision note (a pre-registered change of bound, checkpoint or size says so there). Its kind is how the book
    classifies the evidence, not the test: a stored run is graded with the kind the claim has now."""
    def norm(text: Any) -> str:
        text = str(text or "").replace("$", "")
        for tex, plain in _GREEK + _TEX:
            text = text.replace(tex, plain)
        text = re.sub(r"(?<![A-Za-z_])oo(?![A-Za-z_])", "∞", text)  # SymPy's infinity, not the letters of an id
        text = "".join(ch for ch in text if ch not in "{}\\ ")
        return _NUMBER.sub("#", text)

    return norm(claim.get("relation")), norm(claim.get("revised"))


def regrade(stored: Mapping[str, Any], current: Mapping[str, Any], at_source_scale: bool) -> str:
    """A stored claim's status under the claim's present declarations, from what the stored run measured (its test's
    outcome, its distance from the bound and standard error): a record made before a declaration changed is graded by
    the rule that holds now. A failure of the null or of the training guard stands as stored. Whether the claim could
    test anything is the stored run's own finding where it recorded one: a claim whose testability is computed from
    its measurements (a bound informative only above some sample size) is not testable in a small run and testable in
    the stored one."""
    if stored.get("not_testable") if "not_testable" in stored else current.get("not_testable"):
        return STATUS_NOT_TESTABLE
    if stored.get("status") in (STATUS_NULL_PASSES, STATUS_NO_NULL, STATUS_UNTRAINED, STATUS_NOT_TESTABLE):
        return stored["status"]
    passed = bool(stored.get("passed"))
    noisy = within_noise(stored)
    if "passed" not in stored:  # a record rebuilt from an executed notebook keeps only the status
        return stored.get("status", STATUS_FAIL)
    if current.get("inconclusive"):
        return STATUS_INCONCLUSIVE
    if noisy:
        return STATUS_NOISE
    if current.get("source_scale_only") and not at_source_scale:
        return STATUS_PASS if passed else STATUS_BELOW_SCALE
    if current.get("not_reproduced"):
        return STATUS_UNEXPECTED_PASS if passed else STATUS_NOT_REPRODUCED
    return STATUS_PASS if passed else STATUS_FAIL


NO_FULL_RUN = "no run at the source's scale is stored"


def graded_at_full(stored: Mapping[str, Any] | None, current: Mapping[str, Any] | None) -> dict | None:
    """A claim of the stored ``full`` record graded as the chapter's present claim would be (its present declarations
    and kind, :func:`regrade`), or None where the record cannot grade it: stored with another form of its test
    (:func:`test_form`), or missing on either side."""
    if stored is None or current is None or test_form(stored) != test_form(current):
        return None
    return {**stored, "status": regrade(stored, current, True), "kind": current.get("kind")}


def ran_other_sizes(record: Mapping[str, Any], sizes_digest: str | None) -> bool:
    """Whether a stored run was made with other ``full`` sizes than ``sizes_digest`` (the chapter's present ones), by
    the digest in its provenance (the record's, else its ledger's); False where either digest is unknown."""
    provenance = record.get("provenance") or (record.get("ledger") or {}).get("provenance") or {}
    stored = provenance.get("sizes_digest")
    return bool(sizes_digest and stored and stored != sizes_digest)


def full_status(entry: Mapping[str, Any], current: Mapping[str, Mapping[str, Any]], record: Mapping[str, Any] | None,
                sizes_digest: str | None = None) -> tuple[str | None, str]:
    """The result's status in the stored ``full`` record, and a note: (status, "") when each carrying claim was stored
    with the test it has now; else (None, why the record cannot grade it: none stored, stopped or crashed before its
    ledger, run with other sizes, or predating a carrying claim's present form)."""
    if entry.get("not_attempted") or not entry.get("claims"):
        return entry_status(entry, {}), ""
    if record is None:
        return None, NO_FULL_RUN
    ledger = record.get("ledger")
    when = str(record.get("written", "?"))[:10]
    if ledger is None:
        what = "stopped unfinished" if record.get("stopped") else "crashed before its ledger"
        return None, f"the stored run of {when} {what}: {record.get('error') or 'no error recorded'}"
    if ran_other_sizes(record, sizes_digest):
        return None, f"the stored run of {when} used other `full` sizes than the chapter's present ones"
    stored = {c["id"]: c for c in ledger.get("claims", [])}
    graded = {cid: graded_at_full(stored.get(cid), current[cid]) for cid in entry["claims"]}
    changed = [cid for cid, claim in graded.items() if claim is None]
    if changed:
        return None, f"the stored run of {when} predates the present form of {', '.join(changed)}"
    return entry_status(entry, graded), ""


# -- per profile and the verdict --------------------------------------------------------------------------------------
def profile_statuses(entry: Mapping[str, Any], ledger: Mapping[str, Any], full: Mapping[str, Any] | None = None,
                     sweep_chapter: Mapping[str, Any] | None = None, sizes_digest: str | None = None) -> dict:
    """The result's status at each profile that ran: this run's profile (from ``ledger``), ``ci`` from the sweep where
    this run is not at ``ci``, and ``full`` from the stored record (or this run, at ``full``); ``seeds`` the sweep's
    gathered status and rate, ``full_note`` why the stored record does not grade it."""
    current = {c["id"]: c for c in ledger.get("claims", [])}
    profile = ledger.get("profile")
    out: dict[str, Any] = {p: None for p in PROFILES}
    out[profile] = entry_status(entry, current)
    seeds = sweep_status(entry, sweep_chapter, current)
    out["seeds"] = seeds
    if seeds is not None and out.get(seeds["profile"]) is None:
        out[seeds["profile"]] = seeds["status"]
    out["full_note"] = ""
    if profile != SOURCE_SCALE:
        out[SOURCE_SCALE], out["full_note"] = full_status(entry, current, full, sizes_digest)
    return out


def verdict(statuses: Mapping[str, Any]) -> str:
    """The verdict at the most faithful profile that ran (``VERDICTS``). A result is reproduced at the source's
    scale only if it holds at ``full``; a failure at any profile that ran keeps it from counting as reproduced there."""
    full = statuses.get(SOURCE_SCALE)
    below = [statuses[p] for p in PROFILES if p != SOURCE_SCALE and statuses.get(p) is not None]
    seeds = statuses.get("seeds")
    if seeds is not None:
        below.append(seeds["status"])
    if FAILING in below or full == FAILING and not below:
        return FAILING
    reproduced_below = bool(below) and all(s in (REPRODUCED, ANALOGUE) for s in below)
    verified_below = bool(below) and all(s == VERIFIED for s in below)
    if full in (REPRODUCED, ANALOGUE):
        return AT_SCALE if reproduced_below or not below else AT_SCALE_ONLY
    if full == VERIFIED:
        return VERIFIED if verified_below or not below else AT_SCALE_ONLY
    if full is None and reproduced_below:
        return NOT_RUN_AT_SCALE
    if full is None and verified_below:
        return VERIFIED
    if full is None and NOT_AT_THIS_SCALE in below and not {FAILING, NOT_REPRODUCED} & set(below):
        return FAILS_BELOW_NOT_RUN
    if full in (FAILING, NOT_REPRODUCED, NOT_AT_THIS_SCALE, INCONCLUSIVE):
        if reproduced_below:
            return BELOW_ONLY
        if verified_below:
            return VERIFIED_BELOW_ONLY
    order = [full, *below]
    for status in (FAILING, NOT_REPRODUCED, INCONCLUSIVE, NOT_AT_THIS_SCALE, NOT_TESTABLE, NOT_ATTEMPTED):
        if status in order:
            return NOT_REPRODUCED if status == NOT_AT_THIS_SCALE else status
    return INCONCLUSIVE  # results that hold at one profile and are inconclusive at another


# -- counting ---------------------------------------------------------------------------------------------------------
def verdict_counts(ledgers: Iterable[Mapping[str, Any]]) -> collections.Counter:
    """Source results by verdict (errata are not source results), with ``"analogue"``: how many of those reproduced
    at the source's scale were reproduced on an analogue."""
    counts: collections.Counter = collections.Counter()
    for ledger in ledgers:
        for entry in ledger.get("sources", []):
            v = entry.get("verdict") or entry.get("status")
            counts[v] += 1
            if v in (AT_SCALE, AT_SCALE_ONLY) and entry.get("analogue"):
                counts["analogue"] += 1
    return counts


def attempted_count(counts: Mapping[str, int]) -> int:
    """Results attempted: every verdict but "not attempted" and "not testable here" (reproduced at any scale, on an
    analogue, verified, not reproduced after a faithful attempt, inconclusive, failing)."""
    return sum(counts.get(v, 0) for v in VERDICTS if v not in (NOT_ATTEMPTED, NOT_TESTABLE))


def percent_floor(part: int, whole: int) -> int:
    """``part`` of ``whole`` in whole percent, rounded down (a share never reads higher than it is; 0 of 0 is 0)."""
    return 100 * part // whole if whole else 0


def attempted_phrase(counts: Mapping[str, int]) -> str:
    """"attempted: A of M (P%)" over verdict counts (:func:`attempted_count`, :func:`percent_floor`)."""
    total = sum(counts.get(v, 0) for v in VERDICTS)
    attempted = attempted_count(counts)
    return f"attempted: {attempted} of {total} ({percent_floor(attempted, total)}%)"


def source_headline(*ledgers: Mapping[str, Any]) -> str:
    """"N of M results reproduced at the source's scale (K more on analogues at their ``full`` size), J only below it,
    I not run at the source's scale yet; V theorem verifications; ...; attempted: A of M (P%); E errata" over the given
    ledgers' computed verdicts (:func:`attempted_count`, the share rounded down). A result reproduced on an analogue
    passed at the analogue's ``full`` size, which is not the source's scale: it is counted apart."""
    counts = verdict_counts(ledgers)
    total = sum(counts[v] for v in VERDICTS)
    errata = sum(len(ledger.get("errata", [])) for ledger in ledgers)
    confirmed = sum(e.get("status") == CONFIRMED for ledger in ledgers for e in ledger.get("errata", []))
    at_full = counts[AT_SCALE] + counts[AT_SCALE_ONLY]
    head = (f"{at_full - counts['analogue']} of {total} results reproduced at the source's scale "
            f"({counts['analogue']} more on analogues at their full size"
            + (f"; {counts[AT_SCALE_ONLY]} of these {at_full} fail{'s' if counts[AT_SCALE_ONLY] == 1 else ''} below it"
               if counts[AT_SCALE_ONLY] else "") + "), "
            f"{counts[BELOW_ONLY]} only below it, "
            f"{counts[NOT_RUN_AT_SCALE] + counts[FAILS_BELOW_NOT_RUN]} not run at the source's scale yet"
            + (f" ({counts[FAILS_BELOW_NOT_RUN]} of them failing below it)" if counts[FAILS_BELOW_NOT_RUN] else "")
            + ", "
            f"{counts[VERIFIED]} theorem verification{'' if counts[VERIFIED] == 1 else 's'}")
    rest = [(counts[VERIFIED_BELOW_ONLY], "verified below the source's scale only"),
            (counts[NOT_REPRODUCED], "not reproduced"), (counts[INCONCLUSIVE], "inconclusive"),
            (counts[NOT_TESTABLE], "not testable here"), (counts[NOT_ATTEMPTED], "not attempted"),
            (counts[FAILING], "FAILING")]
    parts = [head, *(f"{n} {what}" for n, what in rest if n), attempted_phrase(counts),
             f"{errata} errata ({confirmed} confirmed by a check)"]
    return "; ".join(parts) + "."


# -- the sweep: how far each claim is from failing ------------------------------------------------------------------
FAILING_DISTANCE_SDS = 3.0


def failing_distances(sweep: Mapping[str, Any], threshold: float = FAILING_DISTANCE_SDS) -> list[dict]:
    """Claims that pass at every swept seed (at least three) whose distance from failing, |margin| - 2 se at each seed,
    averages fewer than ``threshold`` of its own standard deviations over the seeds: a new seed could fail them.
    Claims without a numeric margin (exact checks, conditions) and with a constant distance are not listed. Each
    row: chapter, claim, the mean distance over its sd (``z``), the distances, and the reason the claim declares
    (``near_bound``) where it has one."""
    rows = []
    for name, chapter in sweep.get("chapters", {}).items():
        for cid, entry in chapter.get("claims", {}).items():
            per_seed = list(entry.get("per_seed", {}).values())
            if len(per_seed) < 3 or any(v.get("status") != STATUS_PASS for v in per_seed):
                continue
            margins = [v.get("margin") for v in per_seed]
            if not all(isinstance(m, (int, float)) and not isinstance(m, bool) for m in margins):
                continue
            distances = [abs(m) - NOISE_SES * float(v.get("se") or 0.0) for m, v in zip(margins, per_seed, strict=True)]
            sd = statistics.stdev(distances)
            z = statistics.mean(distances) / sd if sd > 0 else float("inf")
            if z < threshold:
                rows.append({"chapter": name, "claim": cid, "z": z, "distances": distances,
                             "has_se": all(v.get("se") is not None for v in per_seed),
                             "reason": entry.get("near_bound")})
    return sorted(rows, key=lambda r: r["z"])

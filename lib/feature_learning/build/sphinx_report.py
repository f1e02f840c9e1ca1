"""Sphinx extension: the ``reproduction-report`` directive gathers every chapter ledger into one table.

Chapters write their ledgers while the book is read (when their notebooks execute), so the table is filled
in late, at ``doctree-resolved`` (the write phase), after every chapter has run; the report page is marked
outdated on every build so it is always rewritten from the current ledgers.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import posixpath
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util import logging

from feature_learning.book.claims import (
    ACCEPTED,
    ERRATA_COLUMNS,
    KINDS,
    SOURCE_COLUMNS,
    STATUS_PASS,
    claims_dir,
    claims_html,
    code_id,
    errata_cells,
    full_run_summary,
    headline,
    html_table,
    load_ledgers,
    project_root,
    source_cells,
    source_headline,
    source_map_html,
    tally,
    text_html,
)
from feature_learning.book.status import (
    AT_SCALE,
    VERDICTS,
    VERIFIED,
    attempted_phrase,
    failing_distances,
    verdict_counts,
)
from feature_learning.build.notebooks import toc_notebooks
from feature_learning.build.seeds import default_summary_path, load_full_runs

logger = logging.getLogger(__name__)

# Source results that a reader should see listed in one place: every verdict but a reproduction at the source's scale
# and a verification.
OPEN_VERDICTS = tuple(v for v in VERDICTS if v not in (AT_SCALE, VERIFIED))


class report_placeholder(nodes.General, nodes.Element):
    """Replaced by the report table in the write phase."""


class execution_placeholder(nodes.General, nodes.Element):
    """Replaced by the execution-statistics table in the write phase."""


class ReproductionReport(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.reproduction_report_docs = getattr(env, "reproduction_report_docs", set()) | {env.docname}
        return [report_placeholder()]


class ExecutionTable(Directive):
    """``execution-table``: when, where and for how long each chapter ran for this build, whoever executed it
    (the book's own execution, or notebooks executed elsewhere and staged with ``make site``)."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.reproduction_report_docs = getattr(env, "reproduction_report_docs", set()) | {env.docname}
        return [execution_placeholder()]


def glued_value(notebook: dict, suffix: str):
    """The text/plain value glued under a name ending in ``suffix`` in an executed notebook, else None."""
    for cell in notebook.get("cells", []):
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name", "")
            if name.endswith(suffix) and "text/plain" in out.get("data", {}):
                text = out["data"]["text/plain"]
                return "".join(text) if isinstance(text, list) else text
    return None


def execution_rows(root: Path, executed_dirs: list[Path], ledgers: dict[str, dict]) -> list[list[str]]:
    """One row per chapter of the table of contents: profile, seed, device, when its ledger was written, and its run
    time (glued by the chapter as ``<prefix>_chapter_seconds``)."""
    rows = []
    for number, nb in enumerate(toc_notebooks(root), start=1):
        notebook = None
        for folder in executed_dirs:
            path = folder / nb
            if path.exists():
                candidate = json.loads(path.read_text())
                if any(c.get("outputs") for c in candidate.get("cells", [])):
                    notebook = candidate
                    break
        seconds = glued_value(notebook, "_chapter_seconds") if notebook else None
        ledger = ledgers.get(nb.stem)
        run = (f"{ledger['profile']}, seed {ledger['seed']}, {ledger['device']}" if ledger else "no ledger")
        when = ledger["written"].replace("T", " ")[:16] + " UTC" if ledger else "—"
        took = f"{float(seconds):.0f} s" if seconds not in (None, "") else "not executed in this build"
        status = ("every claim holds" if ledger and all(c["status"] in ACCEPTED for c in ledger["claims"])
                  else "claims FAILING" if ledger else "—")
        rows.append([f"{number}. {html.escape(nb.stem.replace('_', ' '))}", html.escape(run), when, took, status])
    return rows


def _raw(text: str) -> nodes.raw:
    return nodes.raw("", text, format="html")


# The report's page has no contents list (its sections are built after Sphinx collects them), so the right margin
# beside its column is empty: its tables take it (class report-wide, _static/book.css; not the theme's full-width box,
# whose script fails on a page without the list). myst-nb marks each page it parses tex2jax_ignore (MyST marks its
# own math), so MathJax skips these tables unless their box opts in (mathjax_process): claim texts hold inline math.
REPORT_BOX = "report-wide mathjax_process"


def _table(columns, rows, cls: str = "claims-table report-table") -> nodes.raw:
    """A report table: words wrap whole (``report-table``), unlike the claims tables' long number lists."""
    return _raw(html_table(columns, rows, cls, box=REPORT_BOX))


def _link(ledger: dict, links: dict[str, str]) -> str:
    title = html.escape(f"{ledger.get('number', '')} {ledger['title']}".strip())
    uri = links.get(ledger["chapter"])
    return f"<a href='{html.escape(uri)}'>{title}</a>" if uri else title


def _sweep_cell(ledger: dict, sweep: dict | None) -> str:
    """A chapter's line of the seed sweep: claims that hold at every seed, and the rate at which each claim that was
    inconclusive at some seed passed its test (HTML)."""
    chapter = (sweep or {}).get("chapters", {}).get(ledger["chapter"])
    if chapter is None:
        return "not swept"
    n = len(chapter["seeds"])
    held = sum(1 for e in chapter["claims"].values() if e["held"] == n)
    lines = [html.escape(f"{held}/{len(chapter['claims'])} claims hold at all {n} seeds")]
    if chapter.get("runs_failed"):
        lines.append(html.escape(f"runs failed at seeds {', '.join(sorted(chapter['runs_failed']))}"))
    for cid, entry in chapter["claims"].items():
        if any(v["status"] == "inconclusive" for v in entry["per_seed"].values()):
            lines.append(code_id(cid) + " inconclusive: passed at "
                         f"{entry.get('passed_at', '?')}/{n} seeds")
    return "<br>".join(lines)


def _json_link(ledger: dict) -> str:
    uri = ledger.get("json_uri")
    return f"<br><a href='{html.escape(uri)}'>ledger (JSON)</a>" if uri else ""


def _line(text: str) -> str:
    """One count of the report's summary ("1 reproduced on an analogue") kept on one line (class report-line)."""
    return f"<span class='report-line'>{html.escape(text)}</span>"


def _full_run_cell(text: str) -> str:
    """The summary's full-run cell (escaped ``text``): each date (2026-11-27) kept on one line, as the browser breaks
    lines at hyphens, and claim ids (ood_unpenalized_scale_size) free to break after an underscore."""
    text = re.sub(r"\d{4}-\d{2}-\d{2}", lambda m: _line(m.group(0)), text)
    return text.replace("_", "_<wbr>")


def _summary_rows(ledgers: list[dict], sweep: dict | None, links: dict[str, str],
                  full_runs: dict[str, dict] | None = None) -> list[list[str]]:
    """One row per chapter: its run, its source results by status, its claims by kind, its seed sweep, and its
    latest stored ``full`` run."""
    rows = []
    for ledger in ledgers:
        counts = verdict_counts([ledger])
        # Verdicts are long ("reproduced below the source's scale; not run at the source's scale yet"): they wrap at
        # spaces, each on lines of its own, rather than widen the table past its box.
        results = "<br>".join(html.escape(f"{counts[v]} {v}") for v in VERDICTS if counts[v]) or "no source map"
        if any(counts[v] for v in VERDICTS):
            results += "<br>" + html.escape(attempted_phrase(counts))
        if ledger.get("errata"):
            results += "<br>" + html.escape(f"({len(ledger['errata'])} errata apart)")
        by_kind = tally(ledger["claims"])
        kinds = "<br>".join(
            _line(f"{kind}: {by_kind[kind].get(STATUS_PASS, 0)}/{sum(by_kind[kind].values())} pass")
            for kind in KINDS if kind in by_kind
        )
        failing = [c for c in ledger["claims"] if c["status"] not in ACCEPTED]
        if failing:
            kinds += f"<br><strong>{len(failing)} FAILING</strong>"
        run = html.escape(f"{ledger['profile']}, seed {ledger['seed']}, {ledger['device']}")
        rows.append([_link(ledger, links) + _json_link(ledger), run, results, kinds,
                     _sweep_cell(ledger, sweep),
                     _full_run_cell(html.escape(full_run_summary((full_runs or {}).get(ledger["chapter"]))))])
    return rows


def _open_rows(ledgers: list[dict], links: dict[str, str]) -> list[list[str]]:
    """Every source result of every chapter that is not reproduced at ``full`` (at the source's scale or on an analogue
    at its full size) nor verified, with its status at each profile and the reason."""
    rows = []
    for ledger in ledgers:
        for entry in ledger.get("sources", []):
            if (entry.get("verdict") or entry.get("status")) in OPEN_VERDICTS:
                rows.append([_link(ledger, links), *source_cells(entry)])
    return rows


def _errata_rows(ledgers: list[dict], links: dict[str, str]) -> list[list[str]]:
    """Every erratum of every chapter, apart from the source results."""
    return [[_link(ledger, links), *errata_cells(e)] for ledger in ledgers for e in ledger.get("errata", [])]


def _distance_nodes(sweep: dict | None) -> list[nodes.Node]:
    """The claims that pass at every swept seed but whose distance from failing (|margin| - 2 se) averages fewer than
    three of its standard deviations over the seeds: a new seed could fail them."""
    if sweep is None:
        return []
    rows = [[html.escape(r["chapter"]), code_id(r["claim"]), f"{r['z']:.2f}",
             html.escape(", ".join(f"{d:.3g}" for d in r["distances"]))
             + ("" if r["has_se"] else " <small>(the sweep stored no se: margins alone)</small>"),
             text_html(r["reason"] or "none given")]
            for r in failing_distances(sweep)]
    text = ("Claims that pass at every seed of the sweep but whose distance from failing, |margin| − 2 se, averages "
            "fewer than three of its own standard deviations over the seeds: " + (f"{len(rows)}." if rows else "none."))
    out: list[nodes.Node] = [nodes.paragraph(text=text)]
    if rows:
        out.append(_table(("chapter", "claim", "mean / sd", "distance from failing per seed", "why it may stay "
                           "close"), rows))
    return out


def sweep_provenance(sweep: dict, origin: str) -> str:
    """One sentence saying which seed sweep the report shows: where it was read from, when it was written, at what
    profile and seeds, and at which commit when the summary records one."""
    chapters = sweep.get("chapters", {})
    profiles = sorted({str(c.get("profile")) for c in chapters.values()})
    seeds = sorted({int(s) for c in chapters.values() for s in c.get("seeds", [])})
    commit = sweep.get("commit")
    return (f"The seed sweep shown is {origin}: written {str(sweep.get('written', '?')).replace('T', ' ')}, "
            f"{len(chapters)} chapters at the {' and '.join(profiles) or '?'} profile, seeds "
            f"{', '.join(map(str, seeds)) or 'none'}"
            + (f", code at commit {str(commit)[:12]}" if commit else ", commit not recorded") + ".")


def _sweep_nodes(sweep: dict | None, origin: str = "") -> list[nodes.Node]:
    if sweep is None:
        return [nodes.paragraph(text="No seed sweep is stored (results/seeds/summary.json) or was run for this build "
                                     "(make seeds writes _build/seeds/summary.json).")]
    out = [nodes.paragraph(text=sweep_provenance(sweep, origin or "a seed sweep")), nodes.paragraph(text=(
        "Each chapter executed at its sweep profile for every seed listed. "
        "A claim holds at a seed when it passes there, or when its documented status (not reproduced, "
        "inconclusive, not testable) is confirmed there. "
        + ("Every claim holds at every seed." if sweep["all_hold"] else "Some claims do not hold at every seed:")
    ))]
    rows = []
    for name, chapter in sweep["chapters"].items():
        n = len(chapter["seeds"])
        for seed, error in chapter["runs_failed"].items():
            rows.append([html.escape(name), "(whole run)", "", html.escape(f"run failed at seed {seed}: {error}")])
        for cid, entry in chapter["claims"].items():
            statuses = {v["status"] for v in entry["per_seed"].values()}
            if entry["failing_seeds"]:
                rows.append([html.escape(name), code_id(cid), entry.get("kind") or "?",
                             html.escape(f"held at {entry['held']}/{n}; fails at seeds {entry['failing_seeds']}")])
            elif "inconclusive" in statuses:
                rows.append([html.escape(name), code_id(cid), entry.get("kind") or "?",
                             html.escape(f"inconclusive: its test passed at {entry.get('passed_at', '?')} of {n} "
                                         "seeds")])
    if rows:
        out.append(_table(("chapter", "claim", "kind", "over the seeds"), rows))
    return out


def report_nodes(ledgers: list[dict], sweep: dict | None = None, links: dict[str, str] | None = None,
                 full_runs: dict[str, dict] | None = None, sweep_origin: str = "") -> list[nodes.Node]:
    """The book's headline (source results), a per-chapter summary, everything that did not plainly reproduce,
    the seed sweep, then each chapter's source map and claims."""
    links = links or {}
    if not ledgers:
        return [nodes.paragraph(text="No chapter ledgers were found: no chapter has run in this build.")]
    claims = [c for ledger in ledgers for c in ledger["claims"]]
    out: list[nodes.Node] = [nodes.paragraph(
        text=f"{len(ledgers)} chapters, {len(claims)} claims. The book: {source_headline(*ledgers)}")]
    if sweep is not None:
        out.append(nodes.paragraph(text=sweep_provenance(sweep, sweep_origin or "a seed sweep")))
    out.append(_table(("chapter", "this build's run", "source results", "claims by kind", "seed sweep",
                       "latest full run (results/full)"), _summary_rows(ledgers, sweep, links, full_runs)))
    open_section = nodes.section(ids=["not-reproduced"])
    open_section += nodes.title(text="What did not plainly reproduce")
    open_rows = _open_rows(ledgers, links)
    open_section += nodes.paragraph(text=(
        "Every source result that is not reproduced at the source's scale (or on an analogue at its full size) nor "
        "verified: reproduced only below the "
        "source's scale or not yet run at it, not reproduced, inconclusive, not testable with our analogue, or not "
        "attempted, with its status at each profile and the reason." if open_rows
        else "Every source result reproduced at the source's scale (or on an analogue at its full size) or verified."))
    if open_rows:
        open_section += _table(("chapter", *SOURCE_COLUMNS), open_rows)
    out.append(open_section)
    errata_rows = _errata_rows(ledgers, links)
    if errata_rows:
        errata_section = nodes.section(ids=["errata"])
        errata_section += nodes.title(text="Errata of the sources")
        errata_section += nodes.paragraph(text=(
            "Places where a source prints something wrong, with what is right and the claim that checks it; "
            "they are not source results and are not counted among them. \"confirmed\" stands only beside a check."))
        errata_section += _table(("chapter", *ERRATA_COLUMNS), errata_rows, cls="claims-table errata")
        out.append(errata_section)
    sweep_section = nodes.section(ids=["seed-sweep"])
    sweep_section += nodes.title(text="Robustness over seeds")
    sweep_section.extend(_sweep_nodes(sweep, sweep_origin))
    sweep_section.extend(_distance_nodes(sweep))
    out.append(sweep_section)
    for ledger in ledgers:
        section = nodes.section(ids=[f"claims-{ledger['chapter'].replace('_', '-')}"])
        section += nodes.title(text=f"{ledger.get('number', '')} {ledger['title']}".strip())
        section += nodes.paragraph(text=f"Run: profile {ledger['profile']}, seed {ledger['seed']}, device "
                                   f"{ledger['device']}, written {ledger['written']}. {headline(ledger['claims'])}")
        section += _raw(source_map_html(ledger, box=REPORT_BOX, definitions=None))
        section += _raw(claims_html(ledger["claims"], box=REPORT_BOX))
        out.append(section)
    return out


def missing_ledgers(root: Path, ledgers: list[dict]) -> list[str]:
    """Chapters of the table of contents without a ledger (each chapter's ledger id is its notebook's name)."""
    have = {ledger["chapter"] for ledger in ledgers}
    return [nb.stem for nb in toc_notebooks(root) if nb.stem not in have]


def _fill_execution(app, doctree, docname):
    for node in doctree.findall(execution_placeholder):
        ledgers = {ledger["chapter"]: ledger for ledger in load_ledgers()}
        executed = [Path(app.srcdir), Path(app.outdir).parent / "jupyter_execute"]
        rows = execution_rows(Path(app.srcdir), executed, ledgers)
        node.replace_self(_table(("chapter", "run", "ledger written", "run time", "claims"), rows))


def failed_runs(folder: Path | None = None) -> list[dict]:
    """The runs staged without a ledger because they failed (``site.stage`` writes ``<claims>/failed/*.json``)."""
    folder = (Path(folder) if folder is not None else claims_dir()) / "failed"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.exists() else []


STORED_SWEEP = Path("results") / "seeds" / "summary.json"  # committed with the code, shown when no sweep ran here


def _written(summary: dict) -> _dt.datetime:
    try:
        when = _dt.datetime.fromisoformat(str(summary.get("written")))
    except ValueError:
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)


def sweep_summary(folder: Path | None = None, root: Path | None = None) -> tuple[dict | None, str]:
    """The seed sweep the report shows, and where it came from: the sweep staged with the ledgers (a book built FROM
    a sweep); else the latest sweep run in this checkout (``_build/seeds/summary.json``, written by ``make seeds``)
    unless the stored one is newer; else the stored one (``results/seeds/summary.json``, committed with the code);
    else (None, "")."""
    root = root or project_root()
    staged = (Path(folder) if folder is not None else claims_dir()) / "sweep" / "summary.json"
    if staged.exists():
        return json.loads(staged.read_text()), "the sweep this book was built from"
    fresh_path, stored_path = default_summary_path(root), root / STORED_SWEEP
    fresh = json.loads(fresh_path.read_text()) if fresh_path.exists() else None
    stored = json.loads(stored_path.read_text()) if stored_path.exists() else None
    if fresh is not None and (stored is None or _written(fresh) >= _written(stored)):
        return fresh, "the latest sweep run in this checkout (_build/seeds/summary.json)"
    if stored is not None:
        return stored, ("the stored sweep committed with the code (results/seeds/summary.json), not re-run for "
                        "this build")
    return None, ""


def staged_summary(folder: Path | None = None) -> dict | None:
    """The summary of :func:`sweep_summary`, without where it came from."""
    return sweep_summary(folder)[0]


def failed_nodes(failed: list[dict]) -> list[nodes.Node]:
    if not failed:
        return []
    section = nodes.section(ids=["failed-runs"])
    section += nodes.title(text="Runs that failed")
    section += nodes.paragraph(text=f"{len(failed)} chapter run(s) stopped before writing their claims ledger; "
                                    "their pages show the notebook as it stopped, and their claims are not counted "
                                    "above.")
    items = nodes.bullet_list()
    for run in failed:
        item = nodes.list_item()
        item += nodes.paragraph(text=f"{run['chapter']} (profile {run.get('profile')}, seed {run.get('seed')}, "
                                     f"device {run.get('device')}): {run.get('error')}")
        items += item
    section += items
    return [section]


def _fill(app, doctree, docname):
    for node in doctree.findall(report_placeholder):
        ledgers = load_ledgers()
        failed = failed_runs()
        crashed = {run["chapter"] for run in failed}
        for chapter in missing_ledgers(Path(app.srcdir), ledgers):
            if chapter in crashed:
                continue
            # A chapter whose notebook came from the execution cache of an earlier build whose ledgers were
            # deleted: the report would silently leave it out, so the (strict) build fails instead.
            logger.warning(
                f"reproduction report: no claims ledger for chapter {chapter!r}; rebuild with `make clean book`",
                location=node,
            )
        order = {nb.stem: (i, nb.with_suffix("").as_posix()) for i, nb in enumerate(toc_notebooks(Path(app.srcdir)))}
        ledgers.sort(key=lambda d: order.get(d["chapter"], (len(order), ""))[0])
        links = {}
        for ledger in ledgers:
            if ledger["chapter"] in order:
                number, doc = order[ledger["chapter"]]
                ledger["number"] = f"{number + 1}."
                links[ledger["chapter"]] = app.builder.get_relative_uri(docname, doc)
            ledger["json_uri"] = posixpath.relpath(f"_static/ledgers/{ledger['chapter']}.json",
                                                   posixpath.dirname(docname) or ".")
        sweep, origin = sweep_summary()
        node.replace_self(failed_nodes(failed) + report_nodes(ledgers, sweep, links, load_full_runs(), origin))


def _copy_ledgers(app, exc):
    """Every ledger of the build, downloadable beside the report as ``_static/ledgers/<chapter>.json``."""
    if exc is not None or app.builder.format != "html":
        return
    folder = Path(app.outdir) / "_static" / "ledgers"
    folder.mkdir(parents=True, exist_ok=True)
    for ledger in load_ledgers():
        (folder / f"{ledger['chapter']}.json").write_text(json.dumps(ledger, indent=1, ensure_ascii=False) + "\n")


def _always_outdated(app, env, added, changed, removed):
    return sorted(getattr(env, "reproduction_report_docs", set()))


def setup(app):
    # Every page loads MathJax, not only those with math in their source: the report's tables (built here, after
    # Sphinx decided which pages have math) show claims whose texts hold inline math.
    app.set_html_assets_policy("always")
    app.add_node(report_placeholder)
    app.add_directive("reproduction-report", ReproductionReport)
    app.add_node(execution_placeholder)
    app.add_directive("execution-table", ExecutionTable)
    app.connect("doctree-resolved", _fill_execution)
    app.connect("doctree-resolved", _fill)
    app.connect("env-get-outdated", _always_outdated)
    app.connect("build-finished", _copy_ledgers)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}

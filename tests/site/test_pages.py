"""Every chapter page of the built book, opened in Chromium as a reader would: equations typeset offline, figures
present, glued values filled in, the claims table shown, no console errors and no request leaving the machine."""

import json
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

from feature_learning.book.claims import KINDS
from feature_learning.build.notebooks import toc_files, toc_notebooks

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = toc_notebooks(ROOT)

# Text a reader sees (code, outputs and typeset math removed) must hold no TeX left untypeset.
VISIBLE_PROSE_JS = """() => {
  const main = document.querySelector('main') || document.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container, .cell_output, .output, .cell_input')
       .forEach(e => e.remove());
  return clone.innerText;
}"""
# The navigation (sidebar table of contents, page header) shows chapter titles as text: no TeX in them either.
NAVIGATION_JS = """() => [...document.querySelectorAll('.bd-sidebar-primary, .bd-header-article, nav')]
  .map(e => { const c = e.cloneNode(true); c.querySelectorAll('mjx-container, script').forEach(x => x.remove());
              return c.innerText; }).join('\\n')"""
# What a reader sees of a page: the prose and every visible cell output (not code, not typeset math).
VISIBLE_TEXT_JS = """() => {
  const main = document.querySelector('main') || document.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll('.cell_input, script, style, mjx-container, details:not([open]) > :not(summary)')
       .forEach(e => e.remove());
  return clone.innerText;
}"""
# Markup and objects that must never reach a reader as text.
RAW_MARKUP = (
    (re.compile(r"^[ \t]*\|[^\n]*\|[ \t]*$", re.M), "a Markdown pipe table"),
    (re.compile(r"```|^:::", re.M), "a MyST fence"),
    (re.compile(r"\{(?:cite|glue|doc|ref|numref|prf|eq|math)[a-z:-]*\}"), "a MyST role"),
    (re.compile(r"\$\$"), "$$"),
    (re.compile(r"\b[A-Z]\w*\((?:\w+=)|object at 0x"), "a Python repr"),
    (re.compile(r"\bEmptySet\b"), "SymPy's EmptySet"),
    (re.compile(r"\\\(|\\\)|\$[^$\s\d][^$\n]{0,200}?[^$\s\\]\$"), "inline math left untypeset"),
    (re.compile(r"(?<![\w.])-?nan(?![\w.])", re.I), "nan"),
    (re.compile(r"\{(?:'[^'\n]{1,60}'|\d+): "), "a Python dict"),
    (re.compile(r"\d\.\d{13,}"), "a float at full precision"),
)
# The code a reader sees unfolded (cells tagged hide-input are folded into a closed <details>).
UNFOLDED_CODE_JS = """() => [...document.querySelectorAll('main .cell_input')]
  .filter(e => e.offsetParent !== null && !e.closest('details:not([open])')).map(e => e.innerText).join('\\n')"""


# Each figure's width on the page against its natural width in CSS pixels (the width the notebook gave its image:
# a 2x "retina" PNG carries half its pixel width as its style width; else the image's own pixel width). Images
# inside a closed fold are not shown and not measured.
FIGURE_WIDTHS_JS = """() => [...document.querySelectorAll('main img')]
  .filter(i => i.offsetParent !== null && !i.closest('details:not([open])'))
  .map(i => ({src: i.getAttribute('src'), alt: (i.getAttribute('alt') || '').slice(0, 60),
              natural: parseFloat(i.style.width) || parseFloat(i.getAttribute('width')) || i.naturalWidth,
              shown: i.getBoundingClientRect().width}))"""
SHOWN_AT_LEAST = 0.9  # a figure shown below 90% of its natural width has its text shrunk below what was checked


def record_height(folder: Path, name: str, height: int) -> None:
    """Write a page's height in CSS pixels into ``folder/heights.json`` (one entry per page, kept across tests)."""
    path = folder / "heights.json"
    heights = json.loads(path.read_text()) if path.exists() else {}
    heights[name] = height
    path.write_text(json.dumps(dict(sorted(heights.items())), indent=1) + "\n")


def raw_markup(text: str) -> list[str]:
    """Each kind of raw markup in ``text``, with the first place it occurs."""
    found = []
    for pattern, what in RAW_MARKUP:
        match = pattern.search(text)
        if match:
            found.append(f"{what}: {text[max(0, match.start() - 40):match.end() + 40]!r}")
    return found


RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\$[^$\s][^$\n]{0,200}?[^$\s\\]\$")


def open_page(page, url):
    """Load ``url``; return the console errors and every request that tried to leave the loopback host."""
    errors, external = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def route(r):
        if urlparse(r.request.url).hostname not in ("127.0.0.1", "localhost"):
            external.append(r.request.url)
            return r.abort()
        return r.continue_()

    page.route("**/*", route)
    page.goto(url, wait_until="load")
    if page.locator("script[src*='mathjax']").count() == 0:  # Sphinx loads MathJax only on pages with math
        return errors, external
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30000)
    page.evaluate("() => MathJax.startup.promise")
    return errors, external


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_page_reads_as_a_reader_sees_it(page, site_url, chapter, screenshots_dir):
    errors, external = open_page(page, f"{site_url}/{chapter.with_suffix('.html').as_posix()}")
    page.screenshot(path=str(screenshots_dir / f"{chapter.stem}.png"), full_page=True)
    record_height(screenshots_dir, chapter.stem, page.evaluate("() => document.documentElement.scrollHeight"))
    assert not external, f"requests leaving the machine: {external[:5]}"
    assert not errors, f"console errors: {errors[:5]}"
    assert page.locator("mjx-container").count() > 0, "no equation was typeset"
    assert page.locator("mjx-merror").count() == 0, "MathJax reported errors"
    raw = RAW_TEX.findall(page.evaluate(VISIBLE_PROSE_JS))
    assert not raw, f"untypeset TeX in the prose: {raw[:5]}"
    prose = page.evaluate(VISIBLE_PROSE_JS)
    roles = re.findall(r"\{(?:cite|glue|doc|ref|numref|prf|eq|math)[a-z:-]*\}?", prose)
    assert not roles, f"MyST roles printed verbatim: {roles[:5]}"
    raw = RAW_TEX.findall(page.evaluate(NAVIGATION_JS))
    assert not raw, f"TeX in the navigation (a chapter title with math?): {raw[:5]}"
    images = page.locator("main img")
    assert images.count() > 0, "the chapter shows no figure"
    sizes = page.evaluate("() => [...document.querySelectorAll('main img')].map(i => [i.src, i.naturalWidth])")
    assert all(width > 0 for _, width in sizes), f"empty or missing images: {[s for s, w in sizes if not w]}"
    pasted = page.evaluate("() => [...document.querySelectorAll('main .pasted-text, main .pasted-inline')]"
                           ".map(e => e.textContent.trim())")  # textContent: also inside folded dropdowns
    assert all(t and t.lower() not in ("nan", "-nan") for t in pasted), "a glued value is empty or nan"
    headers = page.evaluate("() => [...document.querySelectorAll('main table')].map(t => t.innerText.split('\\n')[0])")
    assert any("claim" in h and "status" in h for h in headers), "no claims table with statuses"
    assert page.locator("main table.claims-table span.claim-kind").count() > 0, "no claim's kind in the claims tables"
    assert any("result" in h and "carried by" in h for h in headers), "no source map at the chapter's end"
    assert not raw_markup(page.evaluate(VISIBLE_TEXT_JS)), raw_markup(page.evaluate(VISIBLE_TEXT_JS))
    code = page.evaluate(UNFOLDED_CODE_JS)
    assert "ledger." not in code and ".source(" not in code, "ledger calls shown unfolded: tag their cells hide-input"
    assert "chapter.glue" not in code, "glue plumbing shown as code: move it into a cell tagged remove-input"


# Header cells of every claims table and the kinds of the ledgers' claims, each with the number of lines its text
# takes on the page (a word cut across lines, "kin|d" or "consist|ency", makes two).
CLAIMS_TABLE_LINES_JS = """() => {
  const lines = e => { const r = document.createRange(); r.selectNodeContents(e);
                       return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; };
  const shown = e => e.offsetParent !== null && !e.closest('details:not([open])');
  const cells = [...document.querySelectorAll('main table.claims-table th')].filter(shown)
    .concat([...document.querySelectorAll('main table.claims-table span.claim-kind')].filter(shown));
  return cells.map(e => [e.innerText.trim(), lines(e)]);
}"""


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_claims_table_columns_fit_their_words(page, site_url, chapter):
    """Column heads and kinds are single words: each sits on one line (the cell output's fixed table layout once cut
    them mid-word)."""
    page.goto(f"{site_url}/{chapter.with_suffix('.html').as_posix()}", wait_until="load")
    cells = page.evaluate(CLAIMS_TABLE_LINES_JS)
    assert cells, "no claims table on the page"
    broken = sorted({text for text, n in cells if n > 1 and " " not in text})
    assert not broken, f"words broken across lines in claims tables: {broken}"


# Claims tables whose box reaches past where it may: the right edge of the page's article column, or for a table in
# a wide box (class full-width, feature_learning.book.claims.wide) the right edge of the window.
SPILLED_TABLES_JS = """() => { const right = document.querySelector('article.bd-article').getBoundingClientRect().right;
  const window_right = document.documentElement.clientWidth;
  return [...document.querySelectorAll('main table.claims-table')].filter(t => t.offsetParent !== null)
    .map(t => t.getBoundingClientRect().right - (t.closest('.full-width, .report-wide') ? window_right : right))
    .filter(over => over > 1).map(Math.round); }"""
# How far each shown claims table reaches past the article column (positive: over the margin).
OVER_MARGIN_JS = """() => { const right = document.querySelector('article.bd-article').getBoundingClientRect().right;
  return [...document.querySelectorAll('main table.claims-table')].filter(t => t.offsetParent !== null)
    .map(t => Math.round(t.getBoundingClientRect().right - right)); }"""


# Status cells (those holding a status badge: the claims' and the source maps') that their table's scroll box, or a
# box around the table that hides what overflows it, cuts off at the right, with by how much.
CUT_STATUS_JS = """() => [...document.querySelectorAll('main table.claims-table')].filter(t => t.offsetParent !== null)
  .flatMap(t => { let right = t.getBoundingClientRect().right;
    for (let e = t.parentElement; e; e = e.parentElement)
      if (getComputedStyle(e).overflowX !== 'visible') right = Math.min(right, e.getBoundingClientRect().right);
    return [...t.querySelectorAll('tbody td:has(> span.claim-badge)')]
      .map(td => td.getBoundingClientRect().right - right).filter(over => over > 1).map(Math.round); })"""


@pytest.mark.parametrize("path", [c.with_suffix("").as_posix() for c in CHAPTERS] + ["reproduction_report"],
                         ids=lambda p: p.split("/")[-1])
def test_claims_tables_stay_inside_the_column_with_every_status_in_view(page, site_url, path):
    """A claims table too wide for the column scrolls inside it; none spills over the margin (the report's did). And
    a reader sees each verdict without scrolling a table sideways: no status cell reaches past its table's visible
    box (with a kind column, 25 of 135 chapter tables cut their status column off by up to 90 px, and the report's
    per-chapter tables by up to 228 px)."""
    path = next(f for f in toc_files(ROOT) if f.endswith(path))
    page.goto(f"{site_url}/{path}.html", wait_until="load")
    spilled = page.evaluate(SPILLED_TABLES_JS)
    assert not spilled, f"{len(spilled)} claims tables reach past the column by {spilled} px"
    cut = page.evaluate(CUT_STATUS_JS)
    assert not cut, f"{len(cut)} status cells cut off at the right, by up to {max(cut)} px"


def test_report_tables_take_the_empty_margin_and_wrap_whole_words(page, site_url):
    """The report's page has no contents list: at 1280 px its tables reach over the empty right margin, and its
    summary table breaks no word across lines (at the column's width it printed "reprod|uced", "verifica|tion")."""
    report = next(f for f in toc_files(ROOT) if f.endswith("reproduction_report"))
    page.goto(f"{site_url}/{report}.html", wait_until="load")
    over = page.evaluate(OVER_MARGIN_JS)
    assert over and min(over) > 100, f"report tables not wider than the column: {over[:5]}"
    broken = page.evaluate("""() => { const r = document.createRange();
      return [...document.querySelector('main table.report-table').querySelectorAll('td')].flatMap(td =>
        td.innerText.split(/\\s+/).filter(w => w.length > 3).filter(w => {
          const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT); let n;
          while ((n = walker.nextNode())) { const i = n.textContent.indexOf(w); if (i < 0) continue;
            r.setStart(n, i); r.setEnd(n, i + w.length);
            return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size > 1; }
          return false; })); }""")
    assert not broken, f"words broken across lines in the report's summary: {broken[:10]}"
    cut = page.evaluate("() => [...document.querySelectorAll('main table.report-table')]"
                        ".map(t => t.getBoundingClientRect().right - t.parentElement.getBoundingClientRect().right)"
                        ".filter(over => over > 1).map(Math.round)")
    assert not cut, f"report tables wider than their box by {cut} px (their last column cut off)"


@pytest.mark.parametrize("chapter", CHAPTERS[:1] + CHAPTERS[-1:], ids=lambda p: p.stem)
def test_claims_tables_reach_over_the_margin_and_fold_the_contents_list(page, site_url, chapter):
    """At 1280 px the claims tables and the source map are wider than the prose column (their statements wrap over
    fewer lines), and while one is in view the theme folds the page's contents list that sits in that margin, so
    nothing covers the table. In a window narrower than 992 px they keep to the column."""
    url = f"{site_url}/{chapter.with_suffix('.html').as_posix()}"
    page.goto(url, wait_until="load")
    over = page.evaluate(OVER_MARGIN_JS)
    assert over and min(over) > 100, f"claims tables not wider than the column: {over}"
    page.locator("main table.source-map").scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    assert "hide" in page.get_attribute(".bd-sidebar-secondary", "class").split(), "the contents list covers the table"
    page.set_viewport_size({"width": 900, "height": 900})
    page.goto(url, wait_until="load")
    assert max(page.evaluate(OVER_MARGIN_JS)) <= 1, "a claims table spills over a narrow window's column"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_figures_are_shown_at_their_natural_width(page, site_url, chapter):
    """A figure's fonts were checked at its natural width scaled to the column (plotting.legibility); the page must
    not shrink it further: each shown figure is at least 90% of its natural CSS width."""
    page.goto(f"{site_url}/{chapter.with_suffix('.html').as_posix()}", wait_until="load")
    figures = page.evaluate(FIGURE_WIDTHS_JS)
    assert figures, "the chapter shows no figure"
    shrunk = [f"{f['alt'] or f['src']!r}: {f['shown']:.0f} of {f['natural']:.0f} px "
              f"({f['shown'] / f['natural']:.0%})" for f in figures if f["shown"] < SHOWN_AT_LEAST * f["natural"]]
    assert not shrunk, f"{len(shrunk)} of {len(figures)} figures shown under {SHOWN_AT_LEAST:.0%} of their width:\n" \
        + "\n".join(shrunk)


def test_page_heights_are_recorded(tmp_path):
    record_height(tmp_path, "b", 20)
    record_height(tmp_path, "a", 10)
    record_height(tmp_path, "b", 30)
    assert json.loads((tmp_path / "heights.json").read_text()) == {"a": 10, "b": 30}


@pytest.mark.parametrize("name", ["intro", "reproduction_report", "execution_statistics", "run_times",
                                  "library_reference"])
def test_back_matter_shows_no_raw_markup(page, site_url, name):
    path = next(f for f in toc_files(ROOT) if f.endswith(name))
    errors, external = open_page(page, f"{site_url}/{path}.html")
    assert not errors and not external
    assert not raw_markup(page.evaluate(VISIBLE_TEXT_JS)), raw_markup(page.evaluate(VISIBLE_TEXT_JS))


def test_raw_markup_is_recognised():
    assert [f.split(":")[0] for f in raw_markup("| a | b |\n| --- | --- |")] == ["a Markdown pipe table"]
    assert raw_markup("see {glue:md}`x`") and raw_markup("Claim(id='x', se=1)") and raw_markup("<x object at 0x7f>")
    assert raw_markup("the set EmptySet") and raw_markup("value nan here") and raw_markup("$$x$$")
    assert not raw_markup("a finance nanometre; f(x) = 1 and Sizes in |x| < 1")
    assert raw_markup("mean of $\\kappa$ here") and raw_markup("rate \\(1/\\kappa\\)")
    assert not raw_markup("costs $3 and $4 in all")
    assert raw_markup("{'standard': 141312, 'gemfilter': 36864}") and raw_markup("[0.5730000138282776, 0.94]")
    assert raw_markup("{10: 32, 20: 16}") and not raw_markup("B=2: {0, 1}; the set {1, 2}")
    assert not raw_markup("standard: 141,312; gemfilter: 36,864") and not raw_markup("cos 1 = 0.540302305868")


def test_report_has_every_claim_and_counts_per_kind(page, site_url, site_ledgers):
    report = next(f for f in toc_files(ROOT) if f.endswith("reproduction_report"))
    errors, external = open_page(page, f"{site_url}/{report}.html")
    assert not errors and not external
    text = page.locator("main").inner_text()
    assert "results reproduced at the source's scale" in text and "What did not plainly reproduce" in text
    links = page.evaluate("() => [...document.querySelectorAll('main table a')].map(a => a.getAttribute('href'))")
    for ledger in site_ledgers:
        assert ledger["title"] in text
        assert any(link and link.endswith(f"{ledger['chapter']}.html") for link in links), \
            f"the report does not link to chapter {ledger['chapter']}"
        assert any(link and link.endswith(f"ledgers/{ledger['chapter']}.json") for link in links), \
            f"the report does not offer the ledger of {ledger['chapter']} as JSON"
        for claim in ledger["claims"]:
            assert claim["id"] in text, f"report lacks claim {claim['id']} of {ledger['chapter']}"
        for entry in ledger["sources"]:  # a word of its text that is not math (typeset math reads differently)
            word = next((w for w in re.sub(r"\$[^$]*\$", " ", entry["what"]).split() if len(w) > 2), None)
            assert word is None or word in text, f"report lacks source result {entry['id']}"
    for kind in KINDS:
        assert kind in text


def test_a_chapter_prints_to_a_pdf_with_typeset_math(page, site_dir, tmp_path):
    """What `make pdf` does for the single-page book, on one chapter page of this site (in the test session's
    Chromium: a second Playwright cannot start inside pytest-playwright's event loop)."""
    from feature_learning.build.pdf import print_page

    out = print_page(page, site_dir / CHAPTERS[0].with_suffix(".html"), tmp_path / "chapter.pdf")
    data = out.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 50_000
    assert data.count(b"/Type /Page") - data.count(b"/Type /Pages") >= 3, "a chapter fills several pages"

"""Print the single-page HTML book to PDF with Chromium (offline), after MathJax has typeset every equation.

``python -m feature_learning.build.pdf _build/singlehtml _build/pdf/book.pdf`` (``make pdf`` builds the single page
first; Jupyter Book's ``index.html`` there only redirects to the root document, which holds the whole book).
Playwright drives its own Chromium when installed, else the system's ``chromium``.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--disable-quic"]


def executable(playwright) -> str | None:
    """Playwright's own Chromium if installed, else the system's; None lets Playwright decide."""
    own = Path(playwright.chromium.executable_path)
    return None if own.exists() else (shutil.which("chromium") or shutil.which("chromium-browser"))


def book_page(folder: Path) -> Path:
    """The page of a singlehtml build that holds the book: what ``index.html`` redirects to, or itself.

    Sphinx writes that page at the root document's path (``book/intro.html``) but links its assets as if it were at
    the top of the folder (``_static/...``), so it is copied there (``book.html``) before it is opened.
    """
    index = Path(folder) / "index.html"
    match = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', index.read_text(), flags=re.I)
    if not match:
        return index
    page = Path(folder) / "book.html"
    shutil.copyfile(Path(folder) / match.group(1), page)
    return page


def print_page(page, page_path: Path, out: Path, timeout_ms: int = 300_000) -> Path:
    """Open ``page_path`` in a Playwright (Chromium) ``page``, wait for MathJax, and print it to ``out`` (A4)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    page.goto(Path(page_path).resolve().as_uri(), wait_until="load", timeout=timeout_ms)
    if page.locator("script[src*='mathjax']").count():
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=timeout_ms)
        page.evaluate("() => MathJax.startup.promise")
    page.emulate_media(media="print")
    page.pdf(path=str(out), format="A4", print_background=True,
             margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"})
    return out


def print_pdf(page_path: Path, out: Path, timeout_ms: int = 300_000) -> Path:
    """:func:`print_page` in a Chromium of its own (Playwright's, else the system's)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable(p), args=LAUNCH_ARGS)
        print_page(browser.new_page(), page_path, out, timeout_ms)
        browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the output folder of the singlehtml build")
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    print(f"wrote {print_pdf(book_page(args.folder), args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

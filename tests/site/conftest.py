"""Browser tests of the built HTML book (pytest-playwright on Chromium), run by `make test` after the site is built
from the notebooks that the same run executed. ``BOOK_SITE`` names the built site (``.../_build/html``) and
``BOOK_SITE_CLAIMS`` the ledgers it was built with; both are required: these tests fail rather than skip."""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from feature_learning.book.claims import load_ledgers

ROOT = Path(__file__).resolve().parents[2]


def _required_dir(var: str) -> Path:
    value = os.environ.get(var)
    if not value or not Path(value).is_dir():
        pytest.fail(f"{var} must name a built folder (got {value!r}); run the browser tests through `make test`")
    return Path(value)


@pytest.fixture(scope="session")
def site_dir() -> Path:
    return _required_dir("BOOK_SITE")


@pytest.fixture(scope="session")
def site_ledgers() -> list[dict]:
    ledgers = load_ledgers(_required_dir("BOOK_SITE_CLAIMS"))
    assert ledgers, "no ledgers next to the built site"
    return ledgers


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_url(site_dir):
    """The site served over http on a free loopback port, for the whole session."""
    handler = functools.partial(QuietHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def screenshots_dir() -> Path:
    folder = ROOT / "_build" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Playwright's own Chromium when it is installed, else the system's (Debian `chromium`), offline and quiet."""
    args = {**browser_type_launch_args, "args": [
        "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic",
    ]}
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        own = Path(p.chromium.executable_path)
    if not own.exists():
        system = shutil.which("chromium") or shutil.which("chromium-browser")
        if system is None:
            pytest.fail("no Chromium: neither Playwright's nor the system's (`make test` installs Debian's chromium)")
        args["executable_path"] = system
    return args

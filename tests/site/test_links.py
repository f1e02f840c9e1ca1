"""Internal links of the built book resolve: every relative href points to a file of the site, and its #anchor to
an element id of that file."""

from pathlib import Path
from urllib.parse import unquote, urlparse

from bs4 import BeautifulSoup


def test_internal_links_and_anchors_resolve(site_dir):
    pages = sorted(p for p in Path(site_dir).rglob("*.html") if "_static" not in p.parts)
    ids: dict[Path, set[str]] = {}
    links = []
    for page in pages:
        soup = BeautifulSoup(page.read_text(errors="replace"), "html.parser")
        ids[page.resolve()] = {e["id"] for e in soup.find_all(id=True)}
        for a in soup.find_all("a", href=True):
            url = urlparse(a["href"])
            if url.scheme or url.netloc or a["href"].startswith(("mailto:", "javascript:")):
                continue
            links.append((page, url))
    broken = []
    for page, url in links:
        target = (page.parent / unquote(url.path)).resolve() if url.path else page.resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            broken.append(f"{page.name} -> {url.geturl()}")
        elif url.fragment and target.suffix == ".html":
            if target not in ids:
                ids[target] = {e["id"] for e in BeautifulSoup(target.read_text(errors="replace"), "html.parser")
                               .find_all(id=True)}
            if unquote(url.fragment) not in ids[target]:
                broken.append(f"{page.name} -> {url.geturl()} (no such anchor)")
    print(f"{len(pages)} pages, {len(links)} internal links checked")
    assert len(pages) > 5 and links
    assert not broken, f"{len(broken)} broken internal links: {broken[:10]}"


def test_names_in_chapter_code_link_to_the_library_reference(site_dir):
    """sphinx-codeautolink links each library name a chapter's code uses (``experiment.figure_81``,
    ``open_chapter``) to its entry in the library reference: every chapter page has such links."""
    from feature_learning.build.notebooks import toc_notebooks

    root = Path(__file__).resolve().parents[2]
    missing = []
    for chapter in toc_notebooks(root):
        soup = BeautifulSoup((Path(site_dir) / chapter.with_suffix(".html")).read_text(), "html.parser")
        links = [a["href"] for a in soup.select("a.sphinx-codeautolink-a[href]")]
        if not any("reference/" in href and "#feature_learning." in href for href in links):
            missing.append(chapter.stem)
    assert not missing, f"chapters whose code links no name to the library reference: {missing}"

"""The bibliography parses, and every {cite} key used in the book is in it."""

import re
from pathlib import Path

import pybtex.database

ROOT = Path(__file__).resolve().parents[2]


def test_every_cited_key_is_in_the_bibliography():
    entries = pybtex.database.parse_file(ROOT / "book" / "references.bib").entries
    cited = set()
    for page in [*ROOT.glob("book/**/*.md"), *ROOT.glob("book/**/*.ipynb")]:
        for group in re.findall(r"\{cite(?::[a-z]+)?\}`([^`]+)`", page.read_text()):
            cited.update(key.strip() for key in group.split(","))
    assert cited, "no citations found"
    assert not cited - set(entries), f"cited but not in references.bib: {sorted(cited - set(entries))}"

"""pytest plugin for ``pytest --nbval``: leave a chapter's measured wall times out of the output comparison.

``make nbval`` re-executes an executed chapter and compares every output with the stored one, which tests that the
same seed and profile give the same numbers. Two kinds of output differ between two such executions by design:

* the wall times a chapter glues (``chapter.timed(name)`` glues ``<prefix>_<name>_seconds``; ``chapter.close()``
  glues ``<prefix>_chapter_seconds`` and ``<prefix>_chapter_minutes``): bare numbers, which no regular expression can
  tell from a measured value, so they are recognised by their glue name (:data:`RUN_DEPENDENT_GLUE`) and dropped
  from both sides before nbval compares;
* memory addresses and timestamps in printed text: those the sanitize file ``tests/nbval_sanitize.cfg`` replaces.

Load it beside nbval: ``pytest -p feature_learning.build.nbval_outputs --nbval --nbval-sanitize-with
tests/nbval_sanitize.cfg <executed notebook>``.
"""

from __future__ import annotations

import re

#: The glue names whose values are wall times of this execution (see feature_learning.book.chapter).
RUN_DEPENDENT_GLUE = re.compile(r"_(seconds|minutes)$")


def glue_name(output) -> str | None:
    """The glue (scrapbook) name of a notebook output, else None."""
    metadata = output.get("metadata") or {}
    scrapbook = metadata.get("scrapbook") or {}
    return scrapbook.get("name")


def comparable(outputs: list) -> list:
    """``outputs`` without the glued wall times."""
    return [out for out in outputs if not RUN_DEPENDENT_GLUE.search(glue_name(out) or "")]


def pytest_configure(config):
    from nbval.plugin import IPyNbCell

    if getattr(IPyNbCell.compare_outputs, "_drops_timings", False):
        return
    original = IPyNbCell.compare_outputs

    def compare_outputs(self, test, ref, skip_compare=None):
        return original(self, comparable(test), comparable(ref), skip_compare)

    compare_outputs._drops_timings = True
    IPyNbCell.compare_outputs = compare_outputs

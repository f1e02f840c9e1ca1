"""A chapter notebook's frame: its run, sizes and claims ledger from one call, timing, glue and the closing check.

A notebook opens with::

    chapter = open_chapter("looped_transformers", "Looped transformers run multi-step gradient descent",
                           prefix="lt", sizes=experiment.SIZES, profile=profile, seed=seed, device=device)

which validates the ``parameters`` cell, seeds the global generators, picks the profile's sizes and starts the
ledger, and shows which sizes this profile changes against ``book``. Then, through the notebook::

    with chapter.timed("figure_81"):          # glues lt_figure_81_seconds
        result = experiment.figure_81(chapter.size, chapter.run)
    chapter.glue_values({"max_gap": result.max_gap})   # {glue:text}`lt_max_gap`
    chapter.glue_figure("fig_81", plotting.error_curves(result))
    chapter.ledger.at_most(...)                # the claims next to the experiment they check
    chapter.checks()                           # shows the claims recorded since the last call

and it ends with ``chapter.close()``, which glues the chapter's run time and writes the ledger, failing the notebook
if a claim failed. Every glue name made through the chapter starts with its ``prefix`` and an underscore.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from feature_learning.book.claims import (
    ClaimLedger,
    SourceMap,
    claims_html,
    errata_html,
    format_value,
    full_run_glue,
    source_headline,
    stored_cuda_smoke,
    stored_full_run,
    stored_sweep,
)
from feature_learning.book.display import glue_math, markdown_table
from feature_learning.book.profiles import PROFILES, Run, by_profile, differences, start_run
from feature_learning.book.provenance import run_provenance, sizes_digest
from feature_learning.plotting import legibility


class HTML:
    """Rich output for a notebook cell (and the built page), without an IPython dependency at import time."""

    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return self.text


@dataclasses.dataclass
class Chapter:
    name: str
    prefix: str
    run: Run
    size: Any
    ledger: ClaimLedger
    sizes_table: Mapping[str, Any] | None = None
    started: float = dataclasses.field(default_factory=time.perf_counter)
    _shown: int = 0

    # -- the run ------------------------------------------------------------------------------------------------
    @property
    def profile(self) -> str:
        return self.run.profile

    @property
    def device(self):
        return self.run.device

    def generator(self, name: str, *keys: Any):
        """The chapter's named random stream (:meth:`~feature_learning.book.profiles.Run.generator`)."""
        return self.run.generator(name, *keys)

    # -- glue ---------------------------------------------------------------------------------------------------
    def key(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def glue(self, name: str, value: Any) -> None:
        """Glue ``value`` as ``<prefix>_<name>`` (not displayed in the cell); a NumPy or torch scalar is glued as the
        Python number it holds, so that ``{glue:text}`name:.2f``` can format it."""
        from myst_nb import glue

        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
            value = value.item()
        glue(self.key(name), value, display=False)

    def glue_values(self, values: Mapping[str, Any]) -> None:
        """Glue every value of a mapping, each as ``<prefix>_<key>``."""
        for name, value in values.items():
            self.glue(name, value)

    def glue_figure(self, name: str, fig) -> None:
        """Glue a Matplotlib figure as ``<prefix>_<name>`` (for ``{glue:figure}``) and close it.

        The glued output carries the figure's legibility at the size the book shows it
        (:func:`feature_learning.plotting.legibility.record`: its width, the scale the page shows it at and any text
        under 9 pt there) in its metadata, which the notebook tests read back from every executed chapter
        (:func:`feature_learning.plotting.legibility.notebook_problems`)."""
        import matplotlib.pyplot as plt

        checked = legibility.record(fig)
        _glue_with_metadata(self.key(name), fig, {legibility.METADATA_KEY: checked})
        plt.close(fig)

    def glue_math(self, name: str, rhs, lhs: str | None = None):
        """:func:`feature_learning.book.display.glue_math` under ``<prefix>_<name>``."""
        return glue_math(self.key(name), rhs, lhs)

    def glue_table(self, name: str, columns: list[str], rows: list[list[Any]]) -> None:
        """Glue a Markdown table as ``<prefix>_<name>`` (paste with ``{glue:md}`<prefix>_<name>:myst```)."""
        from IPython.display import Markdown

        self.glue(name, Markdown(markdown_table(columns, rows)))

    @contextlib.contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Time the block and glue its wall time in seconds as ``<prefix>_<name>_seconds``."""
        start = time.perf_counter()
        yield
        self.glue(f"{name}_seconds", time.perf_counter() - start)

    # -- claims -------------------------------------------------------------------------------------------------
    def checks(self) -> HTML:
        """The claims recorded since the previous call, as a table: end a claims cell with it."""
        new = self.ledger.to_json()["claims"][self._shown :]
        self._shown = len(self.ledger.claims)
        return HTML(claims_html(new))

    def stored_cuda_smoke(self) -> dict | None:
        """This chapter's entry in the stored CUDA smoke (``results/cuda-smoke.json``)."""
        return stored_cuda_smoke(self.name)

    def stored_full_run(self) -> dict | None:
        """This chapter's stored ``full`` run (``results/full/<chapter>.json``), or None."""
        return stored_full_run(self.name)

    def close(self) -> SourceMap:
        """Glue the chapter's run time (``<prefix>_chapter_seconds``, ``<prefix>_chapter_minutes``), its source
        map's headline (``<prefix>_source_headline``, for the "At a glance" box at the top: results by their verdict
        at the most faithful profile, graded with the stored ``full`` record and seed sweep), its errata as a table
        (``<prefix>_errata_table``, for the errata box: paste with ``{glue:}``) and what its stored
        ``full`` run says (``feature_learning.book.claims.full_run_glue``), and finish the ledger:
        it is written, the notebook fails if a claim failed or the source map disagrees with the claims (or with the
        stored sweep), and the source map is shown."""
        self.glue("chapter_seconds", time.perf_counter() - self.started)
        self.glue("chapter_minutes", f"{(time.perf_counter() - self.started) / 60:.1f}")
        self.glue("profile", self.profile)
        full_sizes = (self.sizes_table or {}).get("full")
        self.ledger.attach_stored(full=self.stored_full_run(), sweep=stored_sweep(),
                                  sizes_digest=sizes_digest(full_sizes) if full_sizes is not None else None)
        graded = self.ledger.to_json()
        self.glue("source_headline", source_headline(graded))
        # In the errata box (an admonition) the table keeps to the box's width: the wide box would spill out of it.
        self.glue("errata_table", HTML(errata_html(graded, box=None) or "<p>No erratum of the source is recorded.</p>"))
        from IPython.display import Markdown

        current = {c["id"]: c for c in graded["claims"]}
        for name, value in full_run_glue(self.stored_full_run(), current, self.ledger.sizes_digest).items():
            self.glue(name, Markdown(value) if name == "full_run" else value)
        self.ledger.meta["provenance"] = run_provenance(self.size, self.started, self.device)
        return self.ledger.finish()

    # -- what this run is -----------------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        head = (
            f"<p>profile <code>{self.profile}</code>, seed <code>{self.run.seed}</code>, device "
            f"<code>{html.escape(str(self.device))}</code></p>"
        )
        if not self.sizes_table:
            return head
        rows = differences(self.sizes_table)
        if not rows:
            return head + "<p>Every profile runs the same sizes.</p>"
        bold = ' style="font-weight:bold"'
        cells = "".join(
            "<tr><td><code>" + html.escape(path) + "</code></td>"
            + "".join(
                f"<td{bold if p == self.profile else ''}>{html.escape(format_value(values.get(p)))}</td>"
                for p in PROFILES
            )
            + "</tr>"
            for path, values in rows
        )
        header = "".join(f"<th>{p}</th>" for p in PROFILES)
        return (
            head + f"<details class='chapter-sizes'><summary>{len(rows)} sizes differ between profiles (this "
            "run's in bold; everything else is as in <code>book</code>)</summary>"
            f"<table><thead><tr><th>size</th>{header}</tr></thead><tbody>{cells}</tbody></table></details>"
        )


def _glue_with_metadata(key: str, value: Any, extra: Mapping[str, Any]) -> None:
    """myst-nb's ``glue(key, value, display=False)``, with ``extra`` entries in the output's metadata."""
    from IPython.core.formatters import format_display_data
    from IPython.display import display
    from myst_nb.ext.glue import GLUE_PREFIX

    bundle, metadata = format_display_data(value)
    metadata = {**metadata, **extra, "scrapbook": {"name": key, "mime_prefix": GLUE_PREFIX}}
    display({GLUE_PREFIX + mime: data for mime, data in bundle.items()}, raw=True, metadata=metadata)


def _sharp_figures() -> None:
    """Figures shown in a notebook (and glued into the book) as PNGs at twice their resolution, so that they stay
    sharp when the page shows them at or above their natural size (outside IPython this does nothing)."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


def open_chapter(name: str, title: str, *, prefix: str, profile: str, seed: int, device: str = "auto",
                 sizes: Mapping[str, Any] | Callable[..., Any], **size_arguments: Any) -> Chapter:
    """Start a chapter: validate the parameters, seed the global generators, pick the sizes and open the ledger.

    ``name`` is the notebook's file name (the ledger's id), ``prefix`` the start of every glue name. ``sizes`` is a
    ``{profile: sizes}`` table, or a function ``sizes(profile, **size_arguments)`` for chapters whose sizes also
    depend on notebook parameters (it must validate them)."""
    run = start_run(profile, seed, device)
    if callable(sizes):
        table = {p: sizes(p, **size_arguments) for p in PROFILES}
        size = table[profile]
    else:
        if size_arguments:
            raise TypeError(f"open_chapter: a sizes table takes no arguments, got {sorted(size_arguments)}")
        size, table = by_profile(profile, sizes), sizes
    ledger = ClaimLedger(name, title, profile=profile, seed=run.seed, device=run.device)
    _sharp_figures()
    return Chapter(name=name, prefix=prefix, run=run, size=size, ledger=ledger, sizes_table=table)

"""The chapter runtime, what a chapter notebook and an experiment module import: ``chapter`` (``open_chapter``),
``claims`` (the ledger), ``profiles`` (sizes per profile, random streams) and ``display``. The build tooling is
:mod:`feature_learning.build`."""

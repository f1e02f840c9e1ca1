"""feature_learning: the shared library of the executable textbook on feature learning in neural networks.

Organised by the concepts chapters share:

* ``book``      -- profiles (run sizes), the reproduction-claims ledger, display helpers, the Sphinx report.
* ``data``      -- data models (one module per family).
* ``models``    -- small, explicit ``nn.Module``-free tensor programs, batched over independent replicas (seeds).
* ``training``  -- optimisation loops.
* ``measure``   -- measurements on trained models (margins, Fourier spectra, learning-curve statistics).
* ``theory``    -- closed forms and symbolic (SymPy) checks of the sources' results.
* ``plotting``  -- figure helpers shared by chapters.
"""

__version__ = "0.1.0"

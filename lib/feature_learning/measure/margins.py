"""Multi-class margins (dissertation ch. 4, Definitions 4.2-4.6): kept importable from here; the implementations are
in :mod:`feature_learning.measure.metrics` (``accuracy`` is ``argmax_accuracy``)."""

from feature_learning.measure.metrics import argmax_accuracy as accuracy
from feature_learning.measure.metrics import class_weighted_margins, margins

__all__ = ["accuracy", "class_weighted_margins", "margins"]

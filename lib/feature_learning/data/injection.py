"""Injected-input protocol of Appendix E.5 (Algorithm 1) of Shi, Wei and Liang (ICLR 2022) on bundled data: kept
importable from here; the implementations are in :mod:`feature_learning.data.digits`."""

from feature_learning.data.digits import gaussian_like
from feature_learning.data.digits import load_digits as load_digits_tensor
from feature_learning.data.digits import random_split as split

__all__ = ["gaussian_like", "load_digits_tensor", "split"]

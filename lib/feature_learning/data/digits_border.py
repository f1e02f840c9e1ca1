"""A bundled-data stand-in for the distribution shifts of Zhang et al. (ICML 2024), Sec. 2 and appendix F.4: kept
importable from here; the implementations are in :mod:`feature_learning.data.digits`."""

from feature_learning.data.digits import SIDE, DigitsSplit, border_mask, with_border
from feature_learning.data.digits import digit_splits as load_digit_splits

__all__ = ["SIDE", "DigitsSplit", "border_mask", "load_digit_splits", "with_border"]

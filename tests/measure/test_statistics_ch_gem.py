"""measure/statistics.py: the additions of the GemFilter chapter."""

import math

import numpy as np
import pytest

from feature_learning.measure.statistics import Null, mean_se, paired_difference


def test_paired_difference_is_the_mean_and_se_of_the_differences():
    a, b = np.array([1.0, 1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 0.0])
    est = paired_difference(a, b, null=Null(0.0, "no effect"))
    assert est.value == pytest.approx(0.5) and est.se == pytest.approx(mean_se(a - b)[1])
    assert est.null.model == "no effect"
    same = paired_difference(a, a)
    assert same.value == 0.0 and same.se == 0.0  # identical outcomes: no difference, no noise
    assert math.isnan(paired_difference([1.0], [0.0]).se)  # one pair: no standard error

import math

import numpy as np

from feature_learning.measure.statistics import Estimate, Null, paired_difference, strictly_monotone_rate


def test_paired_difference_is_mean_and_se_of_the_differences_and_carries_the_null():
    a, b = [1.0, 2.0, 4.0], [0.5, 1.0, 2.5]
    est = paired_difference(a, b, Null(0.0, "no effect"))
    d = np.array([0.5, 1.0, 1.5])
    assert isinstance(est, Estimate)
    assert math.isclose(est.value, 1.0) and math.isclose(est.se, d.std(ddof=1) / math.sqrt(3))
    assert est.null == Null(0.0, "no effect")
    # pairing matters: a common shift per pair cancels
    assert paired_difference([10.0, 20.0], [9.0, 19.0]).se == 0.0


def test_strictly_monotone_rate_counts_runs_and_ties_fail():
    values = [[3.0, 2.0, 1.0], [3.0, 3.0, 1.0], [1.0, 2.0, 0.5], [5.0, 4.0, 3.9]]
    assert strictly_monotone_rate(values) == (2, 4)
    assert strictly_monotone_rate(values, decreasing=False) == (0, 4)
    assert strictly_monotone_rate([[0.0, 1.0, 2.0]], decreasing=False) == (1, 1)

"""ratio_of_means and pass_rate (measure.statistics, label granularity and contrastive chapters)."""

import math

import numpy as np

from feature_learning.measure.statistics import Null, mean_se, pass_rate, ratio_of_means


def test_ratio_of_means_is_the_ratio_with_a_delta_method_se():
    a, b = np.array([4.0, 5.0, 6.0]), np.array([1.0, 1.5, 2.0, 1.5])
    est = ratio_of_means(a, b, Null(1.0, "b over b"))
    (ma, sa), (mb, sb) = mean_se(a), mean_se(b)
    assert math.isclose(est.value, 5.0 / 1.5)
    assert math.isclose(est.se, (5.0 / 1.5) * math.hypot(sa / ma, sb / mb))
    assert est.null.value == 1.0


def test_ratio_of_means_se_matches_a_simulation():
    rng = np.random.default_rng(0)
    ratios, ses = [], []
    for _ in range(2000):
        a, b = rng.normal(4.0, 1.0, 20), rng.normal(1.0, 0.1, 20)
        est = ratio_of_means(a, b)
        ratios.append(est.value)
        ses.append(est.se)
    assert abs(np.std(ratios) / np.mean(ses) - 1) < 0.1


def test_pass_rate_counts_the_runs_that_pass():
    assert pass_rate([0.1, -0.2, 0.5, 0.0], lambda v: v > 0) == (2, 4)
    assert pass_rate(np.zeros((2, 3)), lambda v: abs(v) <= 0.3) == (6, 6)

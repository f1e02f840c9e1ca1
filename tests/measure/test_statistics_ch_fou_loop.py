import math

import numpy as np
import pytest

from feature_learning.measure.statistics import Estimate, bootstrap_se, significant


def test_bootstrap_se_of_a_mean_matches_the_textbook_se():
    rng = np.random.default_rng(1)
    x = rng.normal(size=400)
    se = bootstrap_se([x], np.mean, draws=2000, seed=3)
    assert se == pytest.approx(x.std(ddof=1) / math.sqrt(len(x)), rel=0.1)


def test_bootstrap_se_resamples_samples_independently_and_is_reproducible():
    a, b = np.arange(10.0), np.arange(20.0)
    se = bootstrap_se([a, b], lambda x, y: x.mean() - y.mean(), draws=3000, seed=0)
    expected = math.hypot(a.std() / math.sqrt(10), b.std() / math.sqrt(20))
    assert se == pytest.approx(expected, rel=0.1)
    assert se == bootstrap_se([a, b], lambda x, y: x.mean() - y.mean(), draws=3000, seed=0)


def test_bootstrap_se_is_nan_when_a_draw_is_not_finite():
    assert math.isnan(bootstrap_se([np.array([1.0, np.inf])], np.median, draws=50))
    assert bootstrap_se([np.ones(5)], np.median, draws=50) == 0.0


def test_significant_needs_a_finite_se_and_two_of_them():
    assert significant(Estimate(1.0, 0.4))
    assert not significant(Estimate(1.0, 0.6))
    assert not significant(Estimate(-1.0, 0.1))
    assert not significant(Estimate(1.0, None)) and not significant(Estimate(1.0, float("nan")))

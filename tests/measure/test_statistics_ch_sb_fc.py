import math

import pytest

from feature_learning.measure.statistics import pass_rate


def test_pass_rate_counts_replicas_meeting_the_bound():
    assert pass_rate([0.1, 0.3, 0.5], at_least=0.3) == (2, 3)
    assert pass_rate([0.1, 0.3, 0.5], at_most=0.3) == (2, 3)
    assert pass_rate([0.1, 0.3, 0.5], at_least=0.2, at_most=0.4) == (1, 3)
    assert pass_rate([[1.0, 2.0], [3.0, 4.0]], at_least=2.5) == (2, 4)


def test_pass_rate_never_passes_nan():
    assert pass_rate([math.nan, 1.0], at_most=2.0) == (1, 2)
    assert pass_rate([math.nan], at_least=-math.inf) == (0, 1)


@pytest.mark.parametrize("values", [[], [0.0]])
def test_pass_rate_without_bounds_counts_finite_values(values):
    assert pass_rate(values) == (len(values), len(values))

import numpy as np
import pytest

from feature_learning.measure.statistics import binomial_se, mean_se, paired_one_sided_t, seed_mean_sd


def test_mean_se_matches_the_textbook_formula_and_refuses_one_sample():
    values = [1.0, 2.0, 4.0, 7.0]
    mean, se = mean_se(values)
    assert mean == pytest.approx(3.5)
    assert se == pytest.approx(np.std(values, ddof=1) / 2)
    means, ses = mean_se(np.array([[1.0, 0.0], [3.0, 0.0]]))
    assert means.tolist() == [2.0, 0.0] and ses.tolist() == pytest.approx([1.0, 0.0])
    assert np.isnan(mean_se([1.0])[1])


def test_binomial_se_against_monte_carlo():
    rng = np.random.default_rng(0)
    acc = rng.binomial(400, 0.8, size=20000) / 400
    assert binomial_se(0.8, 400) == pytest.approx(acc.std(), rel=0.03)


def test_paired_one_sided_t_direction_and_known_value():
    a, b = np.array([2.0, 3.0, 4.0, 5.0]), np.array([1.0, 1.5, 3.5, 3.0])
    t, p = paired_one_sided_t(a, b)
    d = a - b
    assert t == pytest.approx(d.mean() / (d.std(ddof=1) / 2))
    assert 0 < p < 0.05
    assert paired_one_sided_t(b, a)[1] == pytest.approx(1 - p)


def test_seed_mean_sd_is_the_sample_sd_and_refuses_one_seed():
    mean, sd = seed_mean_sd([1.0, 2.0, 4.0, 7.0])
    assert mean == pytest.approx(3.5) and sd == pytest.approx(np.sqrt(((np.array([1, 2, 4, 7]) - 3.5) ** 2).sum() / 3))
    means, sds = seed_mean_sd(np.array([[1.0, 5.0], [3.0, 5.0], [5.0, 5.0]]))
    assert means.tolist() == [3.0, 5.0] and sds.tolist() == pytest.approx([2.0, 0.0])
    assert np.isnan(seed_mean_sd([1.0])[1])


def test_smallest_step_picks_the_weakest_link_and_its_standard_error():
    from feature_learning.measure.statistics import smallest_step

    step, se = smallest_step([5.0, 3.0, 2.5, 1.0], [0.1, 0.3, 0.4, 0.1], increasing=False)
    assert step == 0.5 and abs(se - 0.5) < 1e-12
    step, se = smallest_step([1.0, 2.0, 1.5], [0.0, 0.3, 0.4], increasing=True)
    assert step == -0.5 and abs(se - 0.5) < 1e-12

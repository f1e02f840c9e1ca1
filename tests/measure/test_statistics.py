import math

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


def test_mean_se_reads_a_torch_tensor_as_float64():
    import torch

    values = torch.tensor([0.25, 0.5, 0.875], dtype=torch.float32, requires_grad=True)
    assert mean_se(values) == mean_se(values.detach().double().numpy())
    assert mean_se(values) == mean_se([0.25, 0.5, 0.875])


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


def test_paired_ratio_against_monte_carlo():
    from feature_learning.measure.statistics import paired_ratio

    rng = np.random.default_rng(0)
    n = 400
    b = rng.random(n) < 0.9  # a method that answers 90% of prompts
    a = b & (rng.random(n) < 0.3)  # one that answers about 30% of those
    ratio, se = paired_ratio(a, b)
    assert ratio == a.mean() / b.mean()
    resampled = []
    for _ in range(2000):  # bootstrap over prompts
        i = rng.integers(0, n, n)
        resampled.append(a[i].mean() / b[i].mean())
    assert abs(se - np.std(resampled)) < 0.1 * se
    assert all(np.isnan(paired_ratio([1.0, 0.0], [0.0, 0.0])))


def test_finite_mean_se_skips_undefined_entries():
    from feature_learning.measure.statistics import finite_mean_se, mean_se

    assert finite_mean_se([1.0, float("nan"), 3.0, float("inf")]) == mean_se([1.0, 3.0])
    assert all(math.isnan(v) for v in finite_mean_se([float("nan")]))



def test_smallest_step_picks_the_weakest_link_and_its_standard_error():
    from feature_learning.measure.statistics import smallest_step

    step, se = smallest_step([5.0, 3.0, 2.5, 1.0], [0.1, 0.3, 0.4, 0.1], increasing=False)
    assert step == 0.5 and abs(se - 0.5) < 1e-12
    step, se = smallest_step([1.0, 2.0, 1.5], [0.0, 0.3, 0.4], increasing=True)
    assert step == -0.5 and abs(se - 0.5) < 1e-12


def test_ls_slope_is_polyfit_column_by_column_with_and_without_a_mask():
    import torch

    from feature_learning.measure.statistics import ls_slope, slope_se

    rng = np.random.default_rng(0)
    x = np.linspace(0.0, 3.0, 9)
    y = rng.normal(size=(9, 4)) + np.outer(x, [1.0, -2.0, 0.5, 3.0])
    expected = [np.polyfit(x, y[:, j], 1)[0] for j in range(4)]
    assert np.allclose(ls_slope(x, y), expected)
    assert torch.allclose(ls_slope(torch.tensor(x), torch.tensor(y)), torch.tensor(expected, dtype=torch.float64))
    mask = np.ones_like(y, dtype=bool)
    mask[6:, 1] = False
    masked = ls_slope(x, y, mask=mask)
    assert masked[1] == np.polyfit(x[:6], y[:6, 1], 1)[0] or np.isclose(masked[1], np.polyfit(x[:6], y[:6, 1], 1)[0])
    assert np.allclose(masked[[0, 2, 3]], [expected[0], expected[2], expected[3]])
    assert slope_se(x, y[:, 0])[0] == pytest.approx(expected[0])


def test_slope_se_with_known_errors_is_the_weighted_propagation():
    from feature_learning.measure.statistics import slope_se

    x, y, se = np.array([1.0, 2.0, 4.0]), np.array([0.0, 1.0, 3.5]), np.array([0.1, 0.2, 0.3])
    fit, cov = np.polyfit(x, y, 1, cov="unscaled", w=np.ones(3))
    slope, s = slope_se(x, y, se=se)
    xc = x - x.mean()
    assert slope == pytest.approx(fit[0])
    assert s == pytest.approx(np.sqrt(((xc / (xc @ xc)) ** 2 * se**2).sum()))

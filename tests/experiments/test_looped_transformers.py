"""The looped-transformer chapter's runs: the measurements they make agree with independent computations."""

import numpy as np
import pytest
import torch

from feature_learning.book.profiles import start_run
from feature_learning.data.in_context import gaussian_design
from feature_learning.experiments import looped_transformers as ex
from feature_learning.measure.statistics import ls_slope
from feature_learning.theory import looped as theory


def test_masked_slopes_match_numpy_polyfit_on_the_reliable_part():
    g = torch.Generator().manual_seed(0)
    t = torch.arange(60, dtype=torch.float64)[:, None]
    curves = -t * torch.tensor([[0.5, 1.5, 2.0]], dtype=torch.float64) + 0.1 * torch.randn(60, 3, generator=g,
                                                                                            dtype=torch.float64)
    curves = curves.clamp_min(-70.0)  # a float floor, as in the iterated error
    slopes = ls_slope(t[:, 0], curves, mask=curves > ex.FLOAT_RELIABLE)  # as figure_81 fits them
    for j in range(3):
        keep = (curves[:, j] > ex.FLOAT_RELIABLE).numpy()
        expected = np.polyfit(t[keep, 0].numpy(), curves[keep, j].numpy(), 1)[0]
        assert abs(float(slopes[j]) - expected) < 1e-10


def test_query_row_errors_equal_the_full_masked_attention_iterates():
    X, _, theta = gaussian_design(5, 16, 4, torch.Generator().manual_seed(1))
    L = torch.linalg.eigvalsh(X.transpose(1, 2) @ X)[:, -1]
    full = ex.iterate_errors(X, theta, [1 / L] * 30)
    rows = ex.query_row_errors(X, theta, 30)
    assert torch.allclose(full, rows, atol=1e-9)


def test_iterated_error_follows_the_eigenbasis_formula():
    X, _, theta = gaussian_design(4, 32, 4, torch.Generator().manual_seed(2))
    errors = ex.query_row_errors(X, theta, 20)
    exact = theory.log_squared_distance_exact(X, theta, range(21))
    assert torch.allclose(errors, exact, atol=1e-8)


def test_context_needed_and_monotonicity_helpers():
    rows = [ex.ContextRow(T, n, torch.full((3,), err), torch.ones(3), torch.ones(3), torch.ones(3))
            for T, n, err in [(10, 8, 1e-2), (10, 16, 1e-4), (20, 8, 1e-4), (20, 16, 1e-5)]]
    assert ex.context_needed(rows, 1e-3) == {10: 16, 20: 8}
    assert ex.context_needed(rows, 1e-6) == {10: float("inf"), 20: float("inf")}
    assert ex.strictly_decreasing([3, 2, 1]) and not ex.strictly_decreasing([3, 3, 1])


def test_profiles_differ_from_book_only_where_they_say():
    from feature_learning.book.profiles import differences

    changed = {path for path, _ in differences(ex.SIZES)}
    assert "fig81.kappa_trials" in changed and "d" not in changed and "fig81.ns" not in changed


@pytest.mark.parametrize("seed", [0, 1])
def test_trained_looped_transformer_restarts_are_independent_replicas(seed):
    from feature_learning.book.profiles import override

    size = override(ex.CI, train={"steps": 30, "restarts": 3, "eval_prompts": 64, "loops": (2,)})
    (trained,) = ex.trained_loops(size, start_run("ci", seed, "cpu"))
    assert trained.losses.shape == (3,) and torch.isfinite(trained.losses).all()
    assert trained.best == float(trained.losses.min()) and trained.best_per_prompt.shape == (64,)
    assert trained.initial_losses.shape == (3,) and (trained.initial_losses > trained.losses.min()).all()
    assert 1 <= trained.near_best() <= 3


def test_loop_gain_and_its_null_from_the_restarts():
    few = ex.TrainedLoop(2, torch.tensor([1e-2, 2e-2, 1e-2]), torch.tensor([1.0, 1.1, 0.9]), torch.zeros(2), 0.0,
                         None, None, None)
    many = ex.TrainedLoop(4, torch.tensor([1e-3, 5e-3, 2e-3]), torch.tensor([1.0, 0.95, 1.2]), torch.zeros(2), 0.0,
                          None, None, None)
    gain = ex.loop_gain(few, many)
    logs = np.log([1e-2, 2e-2, 1e-2]), np.log([1e-3, 5e-3, 2e-3])
    assert gain.value == pytest.approx(np.exp(logs[1].mean() - logs[0].mean()))
    se_log = np.hypot(logs[0].std(ddof=1), logs[1].std(ddof=1)) / np.sqrt(3)
    assert gain.se == pytest.approx(gain.value * se_log)
    assert gain.null.value == pytest.approx(np.exp(np.log([1.0, 0.95, 1.2]).mean() - np.log([1.0, 1.1, 0.9]).mean()))


def test_dimension_sweep_interpolates_the_needed_n_and_recovers_a_linear_law():
    ds, ratios = (4, 8, 16), (2, 4, 8)
    ns = {d: torch.tensor([r * d for r in ratios]) for d in ds}
    # median error 10^(-3 r / 4) at n = r d (10^-1.5, 10^-3, 10^-6): the target 1e-3 is met at n = 4 d, an exact
    # power law n = 4 d with exponent 1; 10^-4.5 at n = 8 d would interpolate to n = 2^1.5 d for the target 10^-2.25
    errors = {d: torch.tensor([[10.0 ** -(r / 4 * 3)] * 5 for r in ratios]) for d in ds}
    sweep = ex.DimensionSweep(ds, ns, errors, 20, 1e-3, draws=20)
    needed = sweep.needed()
    assert [needed[d] for d in ds] == pytest.approx([16, 32, 64], rel=1e-6)
    halfway = ex.DimensionSweep(ds, ns, errors, 20, 10**-2.25, draws=2).needed()
    assert halfway[4] == pytest.approx(8 * 2**0.5, rel=1e-6)
    exponent = sweep.exponent()
    assert exponent.value == pytest.approx(1.0) and exponent.se == pytest.approx(0.0, abs=1e-12)
    decel = sweep.deceleration()  # an exact power law: the same local exponent at every d
    assert decel.value == pytest.approx(0.0, abs=1e-9)
    assert sweep.share_of_limit().value == pytest.approx(4 / sweep.mp_limit())


def test_dimension_sweep_deceleration_tells_a_converging_ratio_from_a_power_law():
    ds, ratios = (4, 8, 16), (2, 4, 8)
    ns = {d: torch.tensor([r * d for r in ratios]) for d in ds}
    # the target is met at n/d = 2, 3, 3.5: a ratio converging to 4 (local exponents 1.585, 1.222)
    cross = {4: 2.0, 8: 3.0, 16: 3.5}
    errors = {d: torch.tensor([[1e-3 * (cross[d] / r) ** 4] * 3 for r in ratios]) for d in ds}
    sweep = ex.DimensionSweep(ds, ns, errors, 20, 1e-3, draws=5)
    assert [sweep.needed()[d] / d for d in ds] == pytest.approx([2.0, 3.0, 3.5], rel=1e-6)
    assert sweep.deceleration().value == pytest.approx(np.log2(1.5) - np.log2(3.5 / 3), rel=1e-6)


def test_marchenko_pastur_limits():
    from feature_learning.theory import looped as theory

    assert [round(theory.mp_kappa(n, 4), 2) for n in (16, 32, 64, 128)] == [9.0, 4.38, 2.78, 2.04]  # notes F23
    ratio = theory.mp_needed_ratio(20, 1e-3)
    assert theory.mp_median_error(ratio, 20) == pytest.approx(1e-3, rel=1e-6)
    assert theory.mp_median_error(2 * ratio, 20) < 1e-3 < theory.mp_median_error(ratio / 2, 20)


def test_exponent_share_is_at_least_two_and_crosses_one_at_the_bound():
    # the first prompt sits exactly on the source's bound (kappa = 4), the second on the tight one
    row = ex.ContextRow(10, 8, torch.tensor([0.5 * np.exp(-10 / 8), 0.5 * (1 - 1 / 4) ** 10]),
                        torch.tensor([4.0, 4.0]), torch.tensor([0.5, -0.5]), torch.ones(2))
    share = row.exponent_share
    assert share[0] == pytest.approx(1.0) and share[1] == pytest.approx(-8 * np.log(0.75))


def test_examples_against_dimension_runs_the_looped_transformer_at_every_d():
    from feature_learning.book.profiles import override

    size = override(ex.CI, dimension={"ds": (4, 8), "ratios": (2, 8), "prompts": 16, "bootstrap": 5})
    sweep = ex.examples_against_dimension(size, start_run("ci", 0, "cpu"))
    assert sweep.errors[8].shape == (2, 16) and sweep.ns[8].tolist() == [16, 64]
    assert (sweep.errors[8][1].median() < sweep.errors[8][0].median())


def test_fig81_mean_stops_at_the_float64_floor_instead_of_averaging_rounding_noise():
    from feature_learning.experiments.looped_transformers import FLOAT64_FLOOR, above_float_floor

    ts = torch.arange(6, dtype=torch.float64)
    # two prompts: one falls steadily, one hits exact zero (ln clamped at ln 1e-300) at t = 3
    log_errors = torch.tensor([[0.0, 0.0], [-20.0, -40.0], [-40.0, -68.0], [-60.0, -690.8], [-80.0, -72.0],
                               [-100.0, -690.8]], dtype=torch.float64)
    t, mean = above_float_floor(ts, log_errors)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]  # the mean reaches the floor at t = 4 and stops there
    assert mean[:3].tolist() == [0.0, -30.0, -54.0]  # unchanged while every prompt is above the floor
    assert float(mean[3]) == (-60.0 + FLOAT64_FLOOR) / 2 and float(mean[-1]) == FLOAT64_FLOOR
    assert (mean >= FLOAT64_FLOOR).all()
    t, mean = above_float_floor(ts, log_errors[:, :1] / 10)  # never floored: every loop drawn
    assert len(t) == 6


def test_gradient_descent_apart_from_the_transformer_matches_the_exact_distance_and_lemma_8_15_holds():
    from feature_learning.book.profiles import override

    X, y, theta = gaussian_design(64, 16, 4, torch.Generator().manual_seed(0), torch.float64)
    L = torch.linalg.eigvalsh(X.transpose(1, 2) @ X)[:, -1, None]
    distances = ex.gd_distances(X, y, theta, L, (3, 7))
    exact = theory.log_squared_distance_exact(X, theta, (3, 7))  # relative to ||theta*|| = 1
    assert torch.allclose(distances[7].log() * 2, exact[1], atol=1e-9)
    size = override(ex.CI, context={"n_grid": (8, 32), "prompts": 64})
    excess, used = ex.lemma_815(ex.error_against_context(size, start_run("ci", 0, "cpu")))
    assert excess <= 1e-12 and 0 < used <= 1

"""The looped-transformer chapter's runs: the measurements they make agree with independent computations."""

import numpy as np
import pytest
import torch

from feature_learning.book.profiles import start_run
from feature_learning.data.in_context import gaussian_design
from feature_learning.experiments import looped_transformers as ex
from feature_learning.theory import looped as theory


def test_fitted_slopes_match_numpy_polyfit_on_the_reliable_part():
    g = torch.Generator().manual_seed(0)
    t = torch.arange(60, dtype=torch.float64)[:, None]
    curves = -t * torch.tensor([[0.5, 1.5, 2.0]], dtype=torch.float64) + 0.1 * torch.randn(60, 3, generator=g,
                                                                                            dtype=torch.float64)
    curves = curves.clamp_min(-70.0)  # a float floor, as in the iterated error
    slopes = ex.fitted_slopes(curves)
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
    rows = [ex.ContextRow(T, n, torch.full((3,), err), torch.ones(3), torch.ones(3))
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

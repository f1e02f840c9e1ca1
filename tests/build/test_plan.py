"""The plan command (`make plan`): cut step counts, time two probes, extrapolate, print the table."""

import importlib

import pytest

from feature_learning.build import plan


@pytest.mark.parametrize("chapter", sorted(plan.STEP_FIELDS))
def test_every_chapter_has_a_plan_whose_cut_keeps_every_other_size(chapter):
    ex = importlib.import_module(f"feature_learning.experiments.{chapter}")
    full = ex.SIZES["full"]
    q = plan.base_fraction(chapter, 2)
    cut = plan.cut_sizes(chapter, q)
    values = [plan._get(full, f) for f in plan.STEP_FIELDS[chapter]]
    smallest = min(values + ([plan.MARGIN_STEPS] if chapter == "fourier_circuits" else []))
    assert smallest * q == pytest.approx(2)
    for field, value in zip(plan.STEP_FIELDS[chapter], values, strict=True):
        assert 1 <= plan._get(cut, field) <= value
    assert plan.cut_sizes(chapter, 1.0) == full or chapter == "simplicity_bias"  # its fix-up changes checkpoints
    assert callable(plan._sequence(chapter))
    assert type(cut) is type(full) and cut.__class__.__module__.startswith(ex.__name__)


def test_two_probes_of_a_chapter_on_the_cpu_give_a_prediction_and_a_table(monkeypatch, capsys):
    """At a tiny step count, with the chapter's `full` sizes replaced by its `ci` sizes to keep the test short."""
    ex = importlib.import_module("feature_learning.experiments.nuclear_norm")
    monkeypatch.setitem(ex.SIZES, "full", ex.SIZES["ci"])
    q = plan.base_fraction("nuclear_norm", 1)
    first, second = plan.probe("nuclear_norm", q, "cpu"), plan.probe("nuclear_norm", 2 * q, "cpu")
    assert set(first["stages"]) == {"population", "finite_sample", "toy_2d", "domain_analogue synthetic",
                                    "domain_analogue digits"}
    assert first["cpu_peak_bytes"] > 0 and first["device_peak_bytes"] is None
    row = {"chapter": "nuclear_norm", **plan.predict(first, second), "cpu_peak_bytes": second["cpu_peak_bytes"],
           "device_peak_bytes": None}
    assert row["predicted_seconds"] >= second["seconds"] - 1e-9
    assert row["fixed_seconds"] <= row["predicted_seconds"]
    text = plan.table([row, {"chapter": "contrastive", "error": "over the limit of 1 s for the two probes"}])
    assert "| nuclear_norm |" in text and "not predicted: over the limit" in text and "GiB" in text


def test_the_linear_extrapolation():
    first = {"q": 0.1, "seconds": 3.0, "stages": {"a": 3.0}, "incomplete": {}}
    second = {"q": 0.2, "seconds": 5.0, "stages": {"a": 5.0}, "incomplete": {"a": "ValueError: x"}}
    out = plan.predict(first, second)  # t = 1 + 20 q
    assert out["fixed_seconds"] == pytest.approx(1.0) and out["predicted_seconds"] == pytest.approx(21.0)
    assert out["incomplete"] == ["a"]


def test_the_command_runs_a_chapter_in_a_child_process_within_its_limit():
    row = plan.plan_chapter("contrastive", 1, "cpu", limit=0.5, max_memory_gb=None)
    assert row == {"chapter": "contrastive", "error": "over the limit of 0 s for the two probes"} or "error" in row

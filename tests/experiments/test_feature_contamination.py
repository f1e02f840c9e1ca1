"""experiments/feature_contamination/: the sizes, and each recipe at a tiny size (shapes, draws, the update rule)."""

import dataclasses

import numpy as np
import torch

from feature_learning.book.profiles import PROFILES, differences, override, start_run
from feature_learning.experiments import feature_contamination as experiment
from feature_learning.theory import feature_contamination as theory
from feature_learning.training.losses import hinge

TINY = override(
    experiment.BOOK,
    classification={"d_core": 3, "d_bg": 3, "d": 24, "width": 8, "batch": 16, "steps": 12, "seeds": 2, "log_every": 4,
                    "n_test": 200},
    regression={"d_half": 3, "d": 24, "width": 8, "batch": 16, "steps": 5},
    extension={"d_core": 3, "d_bg": 3, "width": 8, "batch": 16, "steps": 5},
    digits={"width": 8, "steps": 3, "n_train": 300, "teacher_dim": 4, "batch": 16},
    checks={"gradient_samples": 500, "init_neurons": 400, "estimate_samples": 300},
)


def run():
    return start_run("ci", 0, "cpu")


def test_profiles_are_overrides_of_book_at_the_sources_dimensions():
    assert set(experiment.SIZES) == set(PROFILES) and experiment.SIZES["book"] is experiment.BOOK
    changed = {path for path, _ in differences(experiment.SIZES)}
    assert "classification.d_core" not in changed and "extension.d_core" not in changed  # F.1's dimensions throughout
    c = experiment.BOOK.classification
    assert (c.d_core, c.d_bg, c.d, c.width, c.batch) == (32, 32, 256, 256, 1000)  # appendix F.1
    assert c.source_steps(c.steps) == c.lr * c.steps / 1e-3


def test_online_sgd_step_is_eq4_and_the_initial_network_is_returned():
    c = dataclasses.replace(TINY.classification, steps=1)
    g = torch.Generator().manual_seed(1)
    first = experiment.run_classification(c, "relu", g)
    W0 = first.init.W.detach().clone()
    # from the same initial network and test sets, the first draw of a fresh generator is the batch
    batch_gen = torch.Generator().manual_seed(7)
    x, y, _ = first.data.sample(c.batch, replicas=c.seeds, generator=torch.Generator().manual_seed(7))
    again = experiment.run_classification(c, "relu", batch_gen, init=first.init, tests=first.tests)
    probe = first.init.detached()
    (grad,) = torch.autograd.grad(hinge(probe(x), y).mean(-1).sum(), probe.W)
    assert torch.equal(again.init.W, W0)  # training did not touch the returned initial network
    assert torch.allclose(again.net.W, (1 - c.lr * experiment.WEIGHT_DECAY) * W0 - c.lr * grad, atol=1e-6)
    assert again.tests is first.tests


def test_relu_vs_linear_and_the_theory_checks_at_a_tiny_size():
    r = run()
    exp = experiment.relu_vs_linear(TINY, r)
    c = TINY.classification
    assert exp.relu.history["id_hinge"].shape == (c.steps // c.log_every + 1, c.seeds)
    assert set(exp.relu.snapshots) == set(exp.snapshot_steps)
    assert torch.equal(exp.relu.snapshots[0], exp.relu.init.W.detach())
    assert set(exp.values()) >= {"relu_id_hinge", "linear_ood_hinge_init", "bc_ratio", "init_gap"}
    assert exp.p_pos_medians.shape == (c.seeds,) and 0 <= exp.p_pos_median_init <= 1  # per seed; the null at step 0
    assert experiment.Stat.of([1.0, 3.0]).value == 2.0  # the claims ledger reads value and se
    th = experiment.theory_checks(TINY, r, exp)
    assert 0 <= th.clt_error < 0.5 and th.ood_measured.shape == (c.seeds,)
    assert np.all(th.ood_lower <= th.ood_upper + 1e-6)  # equal when every ID margin is below 1
    assert np.allclose(experiment.ood_margin_allowance(th), th.ratio * (np.abs(th.margin - 1) + th.id_risk))
    mech = experiment.gradient_mechanism(TINY, r, exp)
    assert mech.eq14_error < 1e-10 and len(mech.rows) == len(set(exp.snapshot_steps))
    ctl = experiment.controls(TINY, r, exp)
    assert torch.equal(ctl.half.init.W, exp.relu.init.W) and ctl.half.tests is exp.relu.tests
    assert ctl.zero_mean.data.bg_id_range == (-0.5, 0.5)


def test_the_derivation_check_visits_every_region():
    for activation in ("relu", "identity"):
        check = experiment.hinge_gradient_check(theory.hinge_gradient(activation))
        assert check.eq12_mismatches == 0 and len(check.regions) == check.reachable
        assert check.loss_inactive_points > 0 and all(r[-2] == -1 for r in check.printed_mismatches)


def test_regression_extension_and_digits_run_at_a_tiny_size():
    r = run()
    dist = experiment.regression(TINY, r)
    assert dist.relu.history["id_mse"].shape[1] == TINY.regression.seeds
    ext = experiment.extension(TINY, r)
    assert set(ext.final) == set(experiment.EXTENSION_ACTIVATIONS)
    assert ext.worst_stat("id_loss").mean == ext.worst("id_loss")
    assert set(ext.initial) == set(ext.final)
    assert all(np.allclose(v["bg_direction"], 1.0) for v in ext.initial.values())  # the projection's null is 1
    dig = experiment.digits(TINY, r)
    assert dig["relu"].teacher == dig["identity"].teacher  # one split, one teacher for both students
    assert dig["relu"].student["ood"].shape == (TINY.digits.seeds,) and dig["relu"].n_test == 1797 - 300

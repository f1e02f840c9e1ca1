"""experiments/feature_contamination/: the sizes, and each recipe at a tiny size (shapes, draws, the update rule)."""

import dataclasses

import numpy as np
import torch

from feature_learning.book.claims import trained_runs
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
    # Lemma A.6 on fresh initial neurons: the shares fall with the threshold and sit near the Gaussian tail
    assert th.init_tail.shape == (len(experiment.MILLS_DELTAS), 2) and np.all(np.diff(th.init_tail, axis=0) < 0)
    assert np.allclose(th.init_tail[1], 0.1587, atol=0.06)  # Pr[N(0, 1) >= 1], 400 neurons: se 0.018
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


def test_the_training_target_counts_runs_that_halved_their_loss_and_never_a_nan():
    assert experiment.reached([1.0, 1.0, 1.0, 1.0], [0.5, 0.49, 0.51, float("nan")]) == (2, 4)
    assert trained_runs((2, 4), (3, 3)) == (5, 7)
    history = {"id_hinge": torch.tensor([[1.0, 0.9], [0.2, 0.8]])}  # (T, R)
    assert experiment.history_reached(history, "id_hinge") == (1, 2)


def test_the_authors_recipe_is_full_batch_sgd_with_momentum_on_weights_and_hidden_biases():
    recipe = experiment.AuthorsRecipe(d_core=3, d_bg=3, d=24, width=8, n=10, iterations=2, seeds=2, n_test=50)
    assert (recipe.steps, recipe.step_size) == (2, 1e-3)
    assert np.isclose(dataclasses.replace(recipe, time_scale=2).effective_time, recipe.effective_time)
    net = experiment.init_authors(recipe, "relu", torch.Generator().manual_seed(0))
    assert net.W.shape == (2, 8, 6) and net.trained == ("W", "b")
    assert torch.equal(net.a[0], torch.tensor([1.0] * 4 + [-1.0] * 4) / 8) and bool((net.c != 0).all())
    zero = experiment.init_authors(recipe, "relu", torch.Generator().manual_seed(0), zero_output_bias=True)
    assert torch.equal(zero.W, net.W) and torch.equal(zero.b, net.b) and bool((zero.c == 0).all())  # same draws
    x, y = experiment.training_set(recipe, torch.Generator().manual_seed(1))
    assert x.shape == (2, 10, 6) and torch.equal(y, torch.tensor([1.0] * 5 + [-1.0] * 5))
    assert bool((x[..., :3] * y[:, None] >= 0).all()) and bool((x[..., 3:] >= 0).all())  # core y U[0,1], bg U[0,1]
    # two iterations by hand: v <- 0.9 v + g + wd w; w <- w - lr v (torch.optim.SGD), the loss the mean hinge
    g = torch.Generator().manual_seed(3)
    tests = ((x[0], y), (x[0], y))
    out = experiment.run_authors(recipe, "relu", g, tests)
    g = torch.Generator().manual_seed(3)
    net = experiment.init_authors(recipe, "relu", g)
    x, y = experiment.training_set(recipe, g)
    params, moment = [net.W, net.b], [torch.zeros_like(net.W), torch.zeros_like(net.b)]
    for _ in range(2):
        grads = torch.autograd.grad(hinge(net(x), y).mean(-1).sum(), params)
        with torch.no_grad():
            for p, v, gr in zip(params, moment, grads, strict=True):
                v.mul_(recipe.momentum).add_(gr + recipe.weight_decay * p)
                p.sub_(recipe.lr * v)
    with torch.no_grad():
        assert np.allclose(out.train_loss[1], hinge(net(x), y).mean(-1).numpy(), atol=1e-6)
    assert out.reached()[1] == 2 and out.id_hinge.shape == (2, 2)


def test_the_recipe_table_has_the_papers_the_scripts_and_our_columns():
    rows = experiment.recipe_table(experiment.CI)
    assert all(len(r) == 6 for r in rows)
    by = {r[0]: r for r in rows}
    assert by["iterations"][1] == "not stated" and by["iterations"][2] == "20000"
    assert by["momentum"][2] == "0.9" and by["momentum"][3] == "0"
    assert by["eta t / (1 - momentum)"][2] == by["eta t / (1 - momentum)"][4]  # the rescaled run keeps the time
    assert experiment.FULL.authors.steps == experiment.AuthorsRecipe().iterations  # full: the script's own recipe

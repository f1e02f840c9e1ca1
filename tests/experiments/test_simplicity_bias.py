"""experiments/simplicity_bias.py: the step-size schedule, exact gradient descent through the shared loop (against a
hand-written loop and the linearised flow of eq. (2)), the sizes, and small runs of the experiments."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy import stats

from feature_learning.book.profiles import PROFILES, start_run
from feature_learning.data.xor import xor_cluster_data
from feature_learning.experiments import simplicity_bias as experiment
from feature_learning.models.two_layer import TwoLayerNet, init_aligned, init_torch_default, pad_width
from feature_learning.theory.simplicity_bias import g_function

D = torch.float64


def hand_written_gd(W, a, X, y, steps, rate):
    """Full-batch GD on the mean logistic loss, gradients written out from eq. (1) of the source."""
    W, a = W.clone(), a.clone()
    for step in range(steps):
        pre = X @ W.transpose(-1, -2)  # (R, n, m)
        act = torch.relu(pre)
        margin = (act * a.unsqueeze(1)).sum(-1) * y
        weight = torch.exp(-torch.logaddexp(torch.zeros((), dtype=D), margin)) * y / y.shape[-1]  # -l'(y f) y / n
        grad_a = -(weight.unsqueeze(-1) * act).sum(1)
        grad_W = -a.unsqueeze(-1) * (((pre > 0).to(D) * weight.unsqueeze(-1)).transpose(-1, -2) @ X)
        lr = rate(step)
        W, a = W - lr * grad_W, a - lr * grad_a
    return W, a


def linearized_flow(W, a, X, y, steps, lr):
    """Euler steps of the linearised ("disentangled") dynamics, eq. (2): du/dt = G(v), dv/dt = u grad G(v), i.e.
    gradient flow with -l'(f y) frozen at -l'(0) = 1/2; the neurons are independent."""
    W, a = W.clone(), a.clone()
    w = 0.5 * y / y.shape[-1]
    for _ in range(steps):
        pre = X @ W.transpose(-1, -2)
        da = (torch.relu(pre) * w[:, None]).sum(-2)
        dW = a.unsqueeze(-1) * (((pre > 0).to(D) * w[:, None]).transpose(-1, -2) @ X)
        W, a = W + lr * dW, a + lr * da
    return W, a


def test_four_neuron_schedule():
    s = experiment.four_neuron_schedule
    assert s(0) == 4.0 and s(11) == 4.0 and s(12) == 2**-7 and s(2**13 - 1) == 2**-7
    assert math.isclose(s(2**14), 2**-7 * 33)
    assert math.isclose(s(2**15 - 1) / s(2**15 - 1 - 2**9), 2, rel_tol=1e-8)  # (1 + 2^k) / (1 + 2^(k-1))
    assert 2**29 < s(2**15 - 1) < 2**31


def test_logistic_gd_is_plain_gradient_descent_and_logs_where_asked(gen):
    net = init_torch_default(2, 2, 6, scale=0.5, bias=False, trained=("W", "a"), generator=gen(5), dtype=D)
    X = torch.randn(16, 2, generator=gen(6), dtype=D)
    y = torch.sign(X[:, 0] * X[:, 1])

    def rate(epoch):
        return 0.8 if epoch < 5 else 0.5 * (1 + epoch / 20)

    W_ref, a_ref = hand_written_gd(net.W.detach(), net.a.detach(), X, y, 30, rate)
    hist = experiment.logistic_gd(net, X, y, steps=30, lr=rate, log_at=(0, 7))
    assert hist["step"].tolist() == [0, 7, 30]
    assert torch.allclose(net.W, W_ref, rtol=1e-13, atol=1e-15) and torch.allclose(net.a, a_ref, rtol=1e-13, atol=1e-15)
    assert torch.equal(hist["W"][-1], net.W.detach()) and hist["loss"].shape == (3, 2)
    assert (hist["loss"][1:] < hist["loss"][:1]).all()


def test_zero_padded_neurons_stay_zero_and_change_nothing(gen):
    net = init_torch_default(1, 2, 3, scale=0.5, bias=False, trained=("W", "a"), generator=gen(7), dtype=D)
    wide = pad_width(net, 8)
    X = torch.randn(20, 2, generator=gen(8), dtype=D)
    y = torch.sign(X[:, 0])
    experiment.logistic_gd(net, X, y, steps=25, lr=0.5)
    experiment.logistic_gd(wide, X, y, steps=25, lr=0.5)
    assert torch.equal(wide.W[:, 3:], torch.zeros(1, 5, 2, dtype=D))
    assert torch.equal(wide.a[:, 3:], torch.zeros(1, 5, dtype=D))
    assert torch.allclose(wide.W[:, :3], net.W, atol=1e-15) and torch.allclose(wide.a[:, :3], net.a, atol=1e-15)


def test_aligned_neuron_grows_by_one_plus_eta_lambda_and_follows_the_linearised_flow(gen):
    X, y = xor_cluster_data(4, 2, generator=gen())
    lam = float(g_function(torch.tensor([[1.0, 0.0]], dtype=D), X, y)[0])
    a0 = torch.tensor([[1e-9, -1e-9, 1e-9, -1e-9]], dtype=D)
    net = init_aligned(1, 2, 4, a0=a0, directions=torch.tensor(experiment.FOUR_NEURON_DIRECTIONS, dtype=D))
    W_lin, a_lin = linearized_flow(net.W.detach(), net.a.detach(), X, y, 10, 0.5)
    experiment.logistic_gd(net, X, y, steps=10, lr=0.5)
    assert torch.allclose(net.W[0, 0].norm() / 1e-9, torch.tensor((1 + 0.5 * lam) ** 10, dtype=D), rtol=1e-6)
    # while f is ~1e-18, -l'(y f) = 1/2 to machine precision: GD is the Euler scheme of the linearised flow
    assert torch.allclose(net.a, a_lin, rtol=1e-12) and torch.allclose(net.W, W_lin, rtol=1e-12, atol=1e-24)


def test_sizes_are_book_with_overrides_and_checkpoints_hold_the_fixed_epochs():
    assert experiment.SIZES["book"] == experiment.SimplicityBiasSizes()
    for profile in PROFILES:
        size = experiment.SIZES[profile]
        ck, epochs = size.domino.checkpoints, size.domino.epochs
        assert ck[0] == 0 and ck[-1] == epochs and epochs // experiment.MID_FRACTION in ck
        assert size.skew.epochs * size.skew.lr == 512  # the source's flow time
        assert min(size.skew.widths) >= 64  # the notes' width range (64 to 512) for the width-independence checks
    bad = dataclasses.replace(experiment.CI.domino, checkpoints=(0, 100, 4096))
    with pytest.raises(ValueError, match="checkpoints"):
        experiment.domino_probe_run(bad, start_run("ci", 0, "cpu"))


def test_paired_difference_is_scipys_paired_t_test():
    a = torch.tensor([0.93, 0.95, 0.91, 0.94, 0.92, 0.96], dtype=D)
    b = torch.tensor([0.92, 0.93, 0.91, 0.92, 0.90, 0.95], dtype=D)
    diff = experiment.paired_difference(a, b)
    ref = stats.ttest_rel(a.numpy(), b.numpy(), alternative="greater")
    assert diff.t == pytest.approx(ref.statistic) and diff.p == pytest.approx(ref.pvalue)
    assert diff.mean == pytest.approx(float((a - b).mean())) and diff.se == pytest.approx(
        float((a - b).std()) / math.sqrt(6))


def test_small_runs_of_the_experiments():
    run = start_run("ci", 0, "cpu")
    size = dataclasses.replace(experiment.CI.domino, width=8, seeds=3, epochs=64, n_train=64, n_fit=100, n_eval=100,
                               checkpoints=(0, 16, 32, 64))
    domino = experiment.domino_probe_run(size, run)
    assert domino.mid == 16 and domino.accuracy["C=1000"].shape == (4, 6) and domino.rms_ratio.shape == (4, 3)
    acc = domino.accuracy["C=1000"]
    assert domino.drop.mean == pytest.approx(float((acc[1, :3] - acc[-1, :3]).mean()))
    assert np.isfinite(domino.drop_vs_standard.se)
    ln_end = domino.rms_ratio[-1].log().double().numpy()  # geometric mean and the se of the log, by hand
    assert domino.rms_ratio_end == pytest.approx(math.exp(ln_end.mean()))
    assert domino.log_ratio_end_se == pytest.approx(ln_end.std(ddof=1) / math.sqrt(3))
    assert domino.coin_accuracy.shape == (4, 6) and ((domino.coin_accuracy > 0.5) & (domino.coin_accuracy <= 1)).all()
    assert domino.mu_simple == experiment.DOMINO["mu_simple"]
    notes = experiment.domino_notes_run(dataclasses.replace(size, notes_seeds=2), run)
    assert notes.mu_simple == experiment.DOMINO_NOTES_MU and notes.checkpoints == [0, 16, 64] and notes.seeds == 2
    fig = experiment.probe_figure(domino)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["probe C=1000", "probe no penalty"]
    assert [ax.get_yscale() for ax in fig.axes] == ["linear", "linear", "log", "log"]
    assert domino.network_accuracy.shape == (4, 6) and domino.network_coin.shape == (4, 6)

    mismatch = experiment.domino_mismatch_run(size, run, domino)
    assert mismatch.accuracy["C=1000"].shape == (4, 3) and mismatch.train_accuracy.shape == (3,)
    assert ((mismatch.flipped > 0) & (mismatch.flipped < 0.2)).all()  # about 5% of 64 points per training set
    assert math.isfinite(mismatch.follows_coin_blind.mean) and mismatch.follows_coin_blind.values.shape == (3,)
    assert torch.equal(mismatch.accuracy["C=1000"][0], domino.accuracy["C=1000"][0, :3])  # same init, same OOD sets
    assert torch.equal(mismatch.drop_vs_perfect.values, domino.drop.values.double() - mismatch.drop.values)
    zero = experiment.domino_mismatch_run(size, run, domino, mismatch=0.0)  # no flip: the perfect run's networks
    assert torch.allclose(zero.accuracy["C=1000"], domino.accuracy["C=1000"][:, :3])
    with pytest.raises(ValueError, match="pairs"):
        experiment.domino_mismatch_run(dataclasses.replace(size, seeds=2), run, domino)
    fig = experiment.mismatch_figure(domino, mismatch)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["probe C=1000", "probe no penalty"]

    skew = experiment.skewed_xor_run(dataclasses.replace(experiment.CI.skew, base=16, widths=(4, 8), epochs=512,
                                                         lr=1.0, resamples=3), run)
    assert len(skew.runs) == 4 and skew.frob.shape == (len(skew.epochs), 4)
    assert skew.final.W.shape == (4, 8, 2) and torch.equal(skew.final.W[0, 4:], torch.zeros(4, 2, dtype=D))
    assert skew.frob[-1, 0] > skew.frob[0, 0] and 0 <= skew.clean_gap <= math.pi

    four = experiment.four_neuron_run(dataclasses.replace(experiment.CI.four, epochs=200, lemma_epochs=400,
                                                          lemma_width=6, lemma_seeds=2), run)
    stopped = experiment.four_neuron_run(dataclasses.replace(experiment.CI.four, epochs=200, lemma_epochs=200,
                                                             lemma_width=6, lemma_seeds=2), run)
    assert torch.equal(stopped.scales, four.scales) and not torch.equal(stopped.amplitudes, four.amplitudes)
    with pytest.raises(ValueError, match="lemma_epochs"):
        experiment.four_neuron_run(dataclasses.replace(experiment.CI.four, epochs=200, lemma_epochs=100), run)
    assert four.scales.shape == (len(four.epochs), 3, 4) and four.amplitudes.shape == (2, 4)
    assert four.growth12 == pytest.approx(four.growth_pred, rel=1e-3)  # 12 steps at eta = 4 from 1e-4
    assert isinstance(four.init, TwoLayerNet) and four.init.W.shape == (5, 6, 2)


def test_nulls_are_the_same_measurements_on_the_initial_networks():
    run = start_run("ci", 0, "cpu")
    four = experiment.four_neuron_run(dataclasses.replace(experiment.CI.four, epochs=200, lemma_epochs=400,
                                                          lemma_width=6, lemma_seeds=2), run)
    assert four.scale_spread_init == pytest.approx(999.0)  # the Fig. 1/6/7 inits span 1e-4 to 1e-7
    assert len(four.amplitude_spreads) == 2 and max(four.amplitude_spreads) == pytest.approx(four.amplitude_spread)
    assert max(four.amplitude_spreads_end) == pytest.approx(four.amplitude_spread_end)
    assert four.gamma_init_four < four.gamma_mm and 0 <= four.lemma_mass_init <= 1
    skew = experiment.skewed_xor_run(dataclasses.replace(experiment.CI.skew, base=16, widths=(4, 8), epochs=64,
                                                         lr=1.0, resamples=2), run)
    assert skew.cluster_gap == pytest.approx(math.pi / 6)  # the skewed clusters sit pi/6 from the source's extrema
    r = skew.runs[0]
    assert r.frob_init == pytest.approx(float(skew.frob[0, 0])) and 0 <= r.mass_init <= 1 and 0 <= r.sign_init <= 1
    assert len(skew.centre_gaps) == 2 and max(skew.centre_gaps) == pytest.approx(skew.centre_gap)
    assert max(skew.clean_gaps) == pytest.approx(skew.clean_gap) and skew.width_gap_lazy > 0
    assert abs(four.min_yf_four_init) < 1e-6 and math.isfinite(four.min_yf_four)  # Prop. 5.7: y f tiny at epoch 0


def test_the_width_aware_arm_scales_the_init_and_keeps_the_draws():
    run = start_run("ci", 0, "cpu")
    size = dataclasses.replace(experiment.CI.skew, base=16, widths=(64, 256), epochs=64, lr=1.0, resamples=1)
    skew = experiment.skewed_xor_run(size, run)
    aware = experiment.skewed_xor_width_aware(size, run, skew)
    assert aware.scales == pytest.approx((experiment.SKEW_INIT_SCALE, experiment.SKEW_INIT_SCALE / 2))
    # at the reference width the arm starts from the main run's initial network
    assert aware.mass_init[0] == pytest.approx(skew.runs[0].mass_init)
    assert len(aware.mass_early) == len(aware.centre_shift) == 4


def test_early_diagnosis_reads_the_stored_output():
    text = ("seconds 1.0 early_epoch 184 flow 11.5\n"
            "alpha=1.571 w=512 mass_init=0.1 mass_early=0.796 mass_end=1.000 shift=0.020\n"
            "alpha=1.571 w=4096 mass_init=0.1 mass_early=0.679 mass_end=1.000 shift=0.008\n"
            "0 t=   0.0 loss=0.6931 per-run loss=[0.6931, 0.6931] mass0.1=[0.1, 0.1]\n"
            "32 t=   2.0 loss=0.6900 per-run loss=[0.6931, 0.6851] mass0.1=[0.6, 0.4]\n"
            "64 t=   4.0 loss=0.6800 per-run loss=[0.6800, 0.6800] mass0.1=[0.995, 0.95]\n")
    d = experiment.early_diagnosis(text)
    level = 0.99 * math.log(2)  # 0.68622: the w = 4096 run crosses it between t = 0 and 2
    t = 2.0 * (0.6931 - level) / (0.6931 - 0.6851)
    assert d["diag_flow"] == "11.5" and d["diag_mass_early"] == "0.68-0.80"
    assert d["diag_t50"] == "2-4" and d["diag_t90"] == "4" and d["diag_t99"] == "4-inf"
    assert d["diag_own_t"] == f"{t:.1f}" and d["diag_own_mass"] == f"{0.1 + 0.3 * t / 2:.2f}"


def test_the_max_margin_certificate_holds_on_symmetric_data_and_fails_without_the_symmetry():
    run = start_run("ci", 0, "cpu")
    X, y = xor_cluster_data(experiment.XOR_BASE, 2, delta=experiment.XOR_DELTA, sigma=experiment.XOR_SIGMA,
                            generator=run.generator("xor_data"))
    cert = experiment.max_margin_certificate(X, y, directions=200, generator=torch.Generator().manual_seed(0))
    assert cert.holds and cert.eigenspace == 4 and cert.orbit == 16 and cert.sampled_rise < 0 and cert.pattern_kept
    assert cert.gamma_mm == pytest.approx(float((y * (X[:, 0].abs() - X[:, 1].abs())).min() / 8))
    split = experiment.max_margin_certificate(X, y, (2, 3, 2, 2), directions=50,
                                              generator=torch.Generator().manual_seed(0))
    assert split.holds and split.eigenspace == 9 and split.neuron_range[0] == pytest.approx(0, abs=1e-9)
    assert split.resplit_gap <= 1e-12  # moving amplitude within a cluster leaves the margin unchanged
    # stretch the e_1 clusters' first coordinate: the orbit no longer closes under the swap P, and the bound breaks
    stretched = X.clone()
    stretched[y > 0, 0] *= 1.001
    with pytest.raises(ValueError, match="orbit"):
        experiment.max_margin_certificate(stretched, y, directions=10, generator=torch.Generator().manual_seed(0))

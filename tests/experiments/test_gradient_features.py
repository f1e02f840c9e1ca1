"""experiments/gradient_features.py at tiny sizes: every run executes, the profile table is complete, the first
step's identities hold and the arms differ only in the directions of their units."""

import dataclasses

import torch

from feature_learning.book.profiles import PROFILES, differences, override, start_run
from feature_learning.experiments import gradient_features as gf
from feature_learning.models.two_layer import init_symmetric_gaussian

TINY = override(
    gf.BOOK,
    emergence={"m": 20, "n_step": 2000, "seeds": 2},
    parity={"m": 12, "n_step": 4000, "n_fit": 500, "steps": 200, "n_test": 300, "seeds": 2,
            "ticket_per_threshold": (1,), "ticket_steps": 100},
    xor={"dims": (10,), "m": 10, "n_step": 2000, "n_fit": 300, "steps": 100, "n_test": 300, "seeds": 2},
    uniform={"d": 9, "m": 12, "n_step": 4000, "n_fit": 300, "steps": 100, "n_test": 300, "seeds": 2},
    multi_index={"d": 8, "widths": (8,), "n_step": 2000, "n_fit": 500, "n_test": 500, "seeds": 2},
)


def test_profiles_are_overrides_of_book():
    assert set(gf.SIZES) == set(PROFILES)
    paths = {path for path, _ in differences(gf.SIZES)}
    assert "xor.dims" in paths and "emergence.seeds" in paths


def test_emergence_identities():
    run = start_run("ci", 0, "cpu")
    em = gf.emergence(TINY.emergence, run)
    assert float(em.output_at_init.max()) < 1e-12 and float(em.blocks_13.max()) == 0.0
    assert float(em.blocks_12.max()) < 1e-10
    assert em.cone_pos.shape == (2, len(gf.GAMMAS)) and (em.cone_pos[:, -1] >= em.cone_pos[:, 0]).all()
    assert float(em.cos_step.median()) > float(em.cos_init.median())


def test_parity_ticket_xor_uniform_multi_index_run():
    run = start_run("ci", 0, "cpu")
    par = gf.parity_comparison(TINY.parity, run)
    assert par.accuracy.shape == (2, 3, 2) and ((par.accuracy >= 0) & (par.accuracy <= 1)).all()
    ticket = gf.lottery_ticket(TINY.parity, run, par)
    assert ticket.uniform_accuracy.shape == (3, 1, 2) and ticket.sizes == (13,)
    xor = gf.xor_mixture(TINY.xor, run)
    assert xor.accuracy.shape == (2, 1, 2) and float(xor.blocks_12.max()) < 1e-10
    uni = gf.uniform_sparse_parity(TINY.uniform, run)
    assert uni.accuracy.shape == (2, 2) and (uni.mass_on_A[0] > uni.mass_on_A[1]).all()
    mi = gf.multi_index(TINY.multi_index, run)
    assert mi.test_mse.shape == (2, 1, 2) and (mi.alignment[0] > mi.alignment[1]).all()


def test_random_features_keep_the_norms_and_biases():
    run = start_run("ci", 0, "cpu")
    net = init_symmetric_gaussian(2, 5, 8, sigma_w=1.0, sigma_a=1.0, bias=-1.0, blocks=4, activation="relu",
                                  trained=("W", "a"), generator=run.generator("t"))
    reference = torch.randn(2, 8, 5, dtype=torch.float64)
    rf = gf.random_features_like(net, reference)
    assert torch.allclose(rf.W.norm(dim=-1), reference.norm(dim=-1))
    cos = torch.nn.functional.cosine_similarity(rf.W, net.W.detach(), dim=-1)
    assert torch.allclose(cos, torch.ones_like(cos)) and torch.equal(rf.b, net.b)
    both = gf.stack_replicas(net, dataclasses.replace(rf))
    assert both.replicas == 4


def test_multi_index_ridge_fits_in_blocks_of_replicas_agree_with_one_block(monkeypatch):
    """`full`'s ridge fits run a block of replicas at a time (memory); ci and book sizes fit one block."""
    size = TINY.multi_index
    one = gf.multi_index(size, start_run("ci", 0, "cpu"))
    budget = gf.RIDGE_CHUNK_ELEMENTS
    monkeypatch.setattr(gf, "RIDGE_CHUNK_ELEMENTS", 1)  # one replica per block
    blocks = gf.multi_index(size, start_run("ci", 0, "cpu"))
    torch.testing.assert_close(blocks.test_mse, one.test_mse, rtol=1e-12, atol=1e-14)
    assert torch.equal(blocks.alignment, one.alignment)
    for prof in ("ci", "book"):
        s = gf.SIZES[prof].multi_index
        assert 2 * s.seeds * (s.n_fit + s.n_test) * (max(s.widths) + 1) <= budget


def test_rf_optimum_is_a_converged_probe_on_the_arm_features():
    run = start_run("ci", 0, "cpu")
    par = gf.parity_comparison(TINY.parity, run)
    assert par.rf_optimum.shape == (TINY.parity.seeds,)
    assert ((par.rf_optimum >= 0) & (par.rf_optimum <= 1)).all()
    xr = gf.xor_mixture(TINY.xor, run)
    assert xr.rf_optimum.shape == (len(TINY.xor.dims), TINY.xor.seeds)


def test_rf_best_takes_the_better_of_the_two_fits_per_seed():
    best = gf.rf_best(torch.tensor([0.5, 0.7], dtype=torch.float64), torch.tensor([0.6, 0.65], dtype=torch.float64))
    assert best.tolist() == [0.6, 0.7]


def test_the_uniform_step_stream_draws_what_the_whole_sample_draws():
    from feature_learning.data.parity import uniform_parity
    from feature_learning.experiments.gradient_features.runs import _per_seed, _per_seed_stream
    task = uniform_parity(9, 2)
    x, y, _ = _per_seed(task.sample, 3, 500, torch.Generator().manual_seed(4))
    xs, ys = _per_seed_stream(task.sample, 3, torch.Generator().manual_seed(4))(500)
    assert torch.equal(x, xs) and torch.equal(y, ys)


def test_feature_probability_linear_and_mixture_run():
    run = start_run("ci", 0, "cpu")
    fp = gf.feature_probability(gf.FeatureProbabilitySizes(taus=(2.2,), sure_units=20, units=200, n_step=500,
                                                           seeds=2), run)
    assert fp.sure_nice.shape == (1, 2) and fp.direct_nice.shape == (1, 2)
    assert 0 < fp.sure_tail[0] < 1e-4 and abs(fp.gammas[0] - 30 ** -0.2) < 1e-12
    lin = gf.linear_data(gf.LinearSizes(m=20, n_step=2000, seeds=2), run)
    assert lin.nice.shape == (2,) and float(lin.nice_init.max()) < 0.5
    x, y = gf.linear_sample(500, 5, 0.5, torch.Generator().manual_seed(0))
    assert float((y * x[:, 0]).min()) >= 0.5
    mx = gf.gaussian_mixture(gf.MixtureSizes(d=10, m=10, n_step=2000, n_fit=300, steps=100, n_test=300, seeds=2), run)
    assert mx.accuracy.shape == (2, 2) and ((mx.bayes > 0.5) & (mx.bayes <= 1)).all()


def test_alternative_cone_enumeration_matches_majority_coefficients():
    from feature_learning.theory.gradient_features import alternative_cone_distance
    for d, k in ((9, 2), (11, 4)):
        enum, width = alternative_cone_distance(d, k)
        formula, _ = alternative_cone_distance(d, k, enumerate_=False)
        assert abs(enum - formula) < 1e-12 and enum < width


def test_merged_bump_network_has_k_plus_3_units_and_the_merged_norm():
    t, a = gf.merged_bump(5)
    assert len(t) == 8 and float(t.abs().min()) > 0  # the thresholds at the even lattice points cancel
    assert abs(float(a.pow(2).sum()) - (4 * 25 + 6 * 5)) < 1e-9  # ||a||^2 = r (4k^2 + 6k)


def test_lemma314_network_and_learning_order_run():
    run = start_run("ci", 0, "cpu")
    size = gf.GoodNetworkSizes(m=49, n_step=2000, n_test=300, seeds=2)
    lb = gf.lemma314_network(size, run)
    assert lb.per == 7 and lb.accuracy.shape == (2, 3, 2) and lb.hinge.shape == (2, 3, 2)
    assert int(lb.a_norms[0, 0]) == 8 * 7 and (lb.mismatch >= 0).all()
    par = gf.parity_comparison(TINY.parity, run)
    lo = gf.learning_order(TINY.parity, run, par)
    assert lo.accuracy.shape == (len(gf.checkpoints(TINY.parity.steps)), 3, 2)
    assert lo.first.shape == (3, 2) and ((lo.first >= 0) | lo.first.isinf()).all()


def test_lemma314_support_picks_distinct_units_on_the_side_of_each_threshold():
    run = start_run("ci", 0, "cpu")
    par = gf.parity_comparison(TINY.parity, run)
    t, _ = gf.merged_bump(TINY.parity.k)
    idx, mismatch = gf.lemma314_support(par.step_one, par.G, par.directions[0], t, par.recipe.b_tilde, 2)
    assert idx.shape == (2, 2 * len(t)) and all(len(set(row.tolist())) == idx.shape[1] for row in idx)
    kinks = gf.runs.kinks(par.step_one, par.directions[0])
    chosen = torch.gather(kinks, 1, idx)
    finite = torch.isfinite(mismatch)
    assert (torch.sign(chosen[finite]) == torch.sign(t.repeat(2)[None].expand_as(idx)[finite])).all()


def test_checkpoints_cover_every_early_step_and_the_last():
    at = gf.checkpoints(100)
    assert at[:12] == list(range(12)) and at[-1] == 100 and at == sorted(set(at))


def test_fixed_feature_floor_reads_the_sample_noise_without_correlation():
    run = start_run("ci", 0, "cpu")
    size = gf.FixedFeatureSizes(features=(4, 16), n=2**12, chunk=2**10, seeds=3)
    ff = gf.fixed_feature_floor(size, run)
    assert ff.ratio.shape == (2, 3) and ff.n == 2**12 and abs(ff.noise - 32 / (2 * 2**12) ** 0.5) < 1e-12
    # random features are uncorrelated with a 5-parity of 80 bits: the plug-in ratio is the noise, far below 1
    assert float(ff.ratio.max()) < 2 * ff.noise


def test_ball_logistic_optimum_matches_projected_gradient_descent_and_stays_in_the_ball():
    gen = torch.Generator().manual_seed(3)
    F = torch.rand(2, 6, 400, generator=gen, dtype=torch.float64)  # transposed features (R, m, n)
    y = torch.where(torch.rand(2, 400, generator=gen) < 0.5, -1.0, 1.0).double()
    y[:, :200] = torch.sign(F[:, 0, :200] - 0.5)  # some signal, so the ball binds
    for B in (0.3, 50.0):
        a, loss, per, change = gf.runs.ball_logistic_optimum(F, y, B)
        assert (a.norm(dim=-1) <= B * (1 + 1e-9)).all() and torch.allclose(per.mean(-1), loss)
        w = torch.zeros(2, 6, dtype=torch.float64)  # projected GD, slow but sure
        step = 4 * F.shape[-1] / torch.linalg.eigvalsh(F @ F.transpose(-1, -2))[:, -1:]
        for _ in range(20000):
            s = torch.sigmoid(-y * (w.unsqueeze(-2) @ F).squeeze(-2))
            w = w + step * ((y * s).unsqueeze(-2) @ F.transpose(-1, -2)).squeeze(-2) / F.shape[-1]
            w = w * (B / w.norm(dim=-1, keepdim=True)).clamp(max=1)
        pgd = torch.nn.functional.softplus(-y * (w.unsqueeze(-2) @ F).squeeze(-2)).mean(-1)
        assert (loss <= pgd + 1e-9).all() and (pgd - loss < 1e-6).all()


def test_logistic_erasing_step_at_twice_the_rate_is_the_hinge_step():
    run = start_run("ci", 0, "cpu")
    x = torch.randn(2, 300, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = torch.sign(x[..., 0])
    net = init_symmetric_gaussian(2, 7, 16, sigma_w=1.0, sigma_a=1.0, bias=-0.5, blocks=4, activation="relu",
                                  trained=("W", "a"), generator=run.generator("t"))
    hinge_step, _ = gf.runs.erasing_step(net, x, y, 0.3, gf.runs.hinge)
    logistic_step, _ = gf.runs.erasing_step(net, x, y, 0.3 / gf.runs.LOGISTIC_SLOPE_AT_0, gf.runs.logistic)
    assert torch.allclose(hinge_step.W, logistic_step.W, atol=1e-12)
    assert torch.allclose(hinge_step.a, logistic_step.a, atol=1e-12)


def test_theorem34_runs_descends_and_grades_its_own_testability():
    run = start_run("ci", 0, "cpu")
    size = gf.Theorem34Sizes(m=6, n=3000, steps=30, n_test=2000, seeds=2, chunk=1000)
    t = gf.theorem34(size, run)
    assert t.descended.all() and t.converged.all() and (t.sample_loss[:, 1] < t.sample_loss[:, 0]).all()
    assert torch.allclose(t.bound, t.opt + t.optimisation_term + t.sample_term)
    assert torch.allclose(t.bound_at(size.n, size.steps), t.bound)
    # at 3000 points the bound is far above ln 2: the run says why it cannot test the theorem
    assert float(t.bound.min()) > t.null and "cannot tell" in t.vacuous_reason()
    low = dataclasses.replace(t, bound=torch.full_like(t.bound, 0.5))
    assert low.vacuous_reason() is None and "can fail" in low.outcome()


def test_theorem34_runs_on_a_second_device_with_the_cpus_numbers():
    from feature_learning.book.profiles import Run
    from feature_learning.build.device_audit import ACCELERATOR, pretend_accelerator

    size = gf.Theorem34Sizes(m=4, n=1500, steps=10, n_test=800, seeds=2, chunk=500)
    on_cpu = gf.theorem34(size, Run("ci", 0, torch.device("cpu")))
    with pretend_accelerator() as marks:
        on_device = gf.theorem34(size, Run("ci", 0, ACCELERATOR))
        assert len(marks.refs) > 0
    for field in dataclasses.fields(on_cpu):
        a, b = getattr(on_cpu, field.name), getattr(on_device, field.name)
        if isinstance(a, torch.Tensor):
            assert b.device.type == "cpu"
            # the same numbers; under the audit eigvalsh takes another LAPACK path: L differs in its last bit
            torch.testing.assert_close(b, a, rtol=1e-13, atol=0, equal_nan=True, msg=field.name)
        else:
            assert a == b

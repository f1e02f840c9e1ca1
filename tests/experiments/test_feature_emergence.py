"""experiments/feature_emergence.py: the exact steps and gradients of the chapter's recipe against autograd and the
formulas of Lemma 12, the exactness of pattern coordinates, the batched program (replicas independent and
reproducible), the probe, the sizes, and the injected-input protocol at toy sizes."""

import dataclasses
import math

import pytest
import torch

from feature_learning.book.profiles import PROFILES, differences, override, start_run
from feature_learning.data.bases import orthonormal_dictionary, random_orthogonal
from feature_learning.data.sparse_coding import SparseCodingTask, parity_set
from feature_learning.experiments import feature_emergence as fe
from feature_learning.models.two_layer import (
    init_symmetric_gaussian,
    ntk_forward,
    smoothed_trunc_relu,
    smoothed_trunc_relu_grad,
    zeros_like,
)
from feature_learning.training import first_steps as fs
from feature_learning.training.losses import hinge, weighted_hinge

D = torch.float64


def _net(gen, R=3, d=7, width=10, seed=0, noise=0.0):
    net = init_symmetric_gaussian(R, d, width, sigma_w=0.5, sigma_b=0.3, sigma_a=0.7, generator=gen(seed),
                                  noise_std=noise)
    return dataclasses.replace(net.detached(), a=net.a.detach() + 0.05)  # a non-zero output


def test_hinge_gradients_are_autograds_with_noise_class_weights_and_chunks(gen):
    net = _net(gen, noise=0.2)
    x = torch.randn(3, 50, 7, generator=gen(1), dtype=D)
    y = torch.where(torch.rand(3, 50, generator=gen(2)) < 0.3, 1.0, -1.0).to(D)
    weighted = torch.tensor([False, True, True])
    p = net.detached()
    out = p(x)
    loss = torch.where(weighted[:, None], weighted_hinge(out, y), hinge(out, y)).mean(-1).sum()
    reference = torch.autograd.grad(loss, [p.W, p.b, p.a])
    ours = fs.hinge_gradients(net, x, y, fs.class_weights(y, weighted), chunk=7)
    for r, o in zip(reference, ours, strict=True):
        assert torch.allclose(r, o, rtol=1e-12, atol=1e-15)


def test_full_batch_step_erases_the_initialisation_and_follows_lemma_12(gen):
    g = gen(4)
    p = init_symmetric_gaussian(2, 8, 12, sigma_w=0.5, sigma_b=0.1, sigma_a=1.0, generator=g).detached()
    x = torch.randn(50, 8, generator=g, dtype=D).expand(2, -1, -1)
    y = torch.sign(torch.randn(50, generator=g, dtype=D)).expand(2, -1)
    assert p(x).abs().max() < 1e-15
    step = fs.StepConfig(eta=1e-3, lam_a=0.0, lam_w=1 / (2 * 1e-3), noise_std=0.1)
    p1 = fs.full_batch_step(p, x, y, step)
    # Lemma 12 at g = 0 (every sample has y g <= 1): dL/dw_i = -a_i E[y sigma'_s(z_i) x]; lambda_w erases w^(0)
    z = x @ p.W.transpose(1, 2) + p.b[:, None, :]
    gW = -p.a[:, :, None] * torch.einsum("rn,rni,rnd->rid", y, smoothed_trunc_relu_grad(z, 0.1), x) / 50
    assert torch.allclose(p1.W, -1e-3 * gW, atol=1e-15)
    ga = -torch.einsum("rn,rni->ri", y, smoothed_trunc_relu(z, 0.1)) / 50
    assert torch.allclose(p1.a, p.a - 1e-3 * ga, atol=1e-14)
    assert torch.allclose(p1.W[:, :6], -p1.W[:, 6:], atol=1e-15)  # mirrored units: opposite w-gradients
    assert p1.noise_std == 0.0  # the network keeps its own (noiseless) activation


def test_stage_gradients_are_autograds(gen):
    net, init = _net(gen, seed=5), _net(gen, seed=6)
    rf = dataclasses.replace(init, a=init.a + 0.1)
    ntk = dataclasses.replace(zeros_like(init), W=1e-2 * torch.randn(init.W.shape, generator=gen(7), dtype=D),
                              b=1e-2 * torch.randn(init.b.shape, generator=gen(8), dtype=D),
                              a=1e-1 * torch.randn(init.a.shape, generator=gen(9), dtype=D))
    x = torch.randn(3, 40, 7, generator=gen(10), dtype=D)
    y = torch.where(torch.rand(3, 40, generator=gen(11)) < 0.5, 1.0, -1.0).to(D)
    alpha = fs.class_weights(y, torch.tensor([False, True, False]))
    ours = fe.stage_gradients(net, rf, init, ntk, x, y, alpha)

    def loss(out):
        return (alpha * hinge(out, y)).mean(-1).sum()

    n, r, d = net.detached(), dataclasses.replace(rf, trained=("a",)).detached(), ntk.detached()
    reference = list(torch.autograd.grad(loss(n(x)), [n.W, n.b, n.a]))
    reference += torch.autograd.grad(loss(r(x)), [r.a])
    reference += torch.autograd.grad(loss(ntk_forward(init, d, x)), [d.W, d.b, d.a])
    for expected, got in zip(reference, ours, strict=True):
        assert torch.allclose(expected, got, rtol=1e-12, atol=1e-14)


def test_pattern_coordinates_are_exact_for_the_steps_and_the_stage(gen):
    """The same run in R^d (x = M z, weights with a component outside span(M)) and in pattern coordinates z."""
    d, Dp, k, m = 16, 6, 3, 4
    task = SparseCodingTask(Dp, Dp, k, parity_set(k), p_o=0.5)
    g = gen(12)
    A = task.relevant_set(g)
    Q = random_orthogonal(d, g)
    M, M_perp = Q[:, :Dp], Q[:, Dp:]
    z, y = fe.sample_patterns(task, 200, A, g)
    z, y = z[None], y[None]
    net_z, perp = fe.symmetric_init(k, Dp, d, m, task.sigma_tilde(), 0.25, g)
    net_x = dataclasses.replace(net_z, W=net_z.W @ M.T + perp @ M_perp.T)
    x = z @ M.T
    assert torch.allclose(net_x(x), net_z(z), atol=1e-14)
    steps = fe.first_steps(k, m, task.sigma_tilde(), 0.25)
    (_, two_x), (_, two_z) = fs.two_steps(net_x, x, y, steps), fs.two_steps(net_z, z, y, steps)
    assert (two_x.W @ M_perp).abs().max() < 1e-12 * two_x.W.abs().max()  # step 1 erased the perpendicular part
    assert torch.allclose(two_x.W @ M, two_z.W, rtol=1e-10, atol=1e-14)
    assert torch.allclose(two_x.b, two_z.b, atol=1e-13) and torch.allclose(two_x.a, two_z.a, atol=1e-13)
    v = torch.zeros(Dp, dtype=D)
    v[A] = 1.0
    assert torch.allclose(fe.max_cosine(net_x.W, M @ v), fe.max_cosine(net_z.W, v, perp.pow(2).sum(-1)), atol=1e-12)
    alpha = torch.ones_like(y)
    grads_x = fe.stage_gradients(two_x, net_x, net_x, zeros_like(net_x), x, y, alpha)
    grads_z = fe.stage_gradients(two_z, net_z, net_z, zeros_like(net_z), z, y, alpha)
    for gx, gz in zip(grads_x, grads_z, strict=True):
        assert torch.allclose(gx @ M if gx.dim() == 3 else gx, gz, rtol=1e-10, atol=1e-13)


def _tiny(**parity):
    return override(fe.CI, parity={"d": 12, "D": 8, "k": 3, "m": 6, "n": 300, "n_test": 200, "steps": 12,
                                   "batch": 50, "log_every": 5, "seeds": 2, **parity},
                    variants={"seeds": 1, "dims": (8, 24)})


def test_the_batched_program_is_reproducible_and_its_groups_are_independent():
    size = _tiny()
    run = start_run("ci", 3, "cpu")
    groups = fe.parity_groups(size)
    a, diag = fe.parity_program(groups, size.parity, run)
    b, _ = fe.parity_program(groups, size.parity, run)
    alone, _ = fe.parity_program(groups[1:2], size.parity, run)
    for key in ("net", "rf", "ntk"):
        assert torch.equal(a["main"].test_acc[key], b["main"].test_acc[key])
        assert a["main"].test_acc[key].shape == (2, 2) and a["main"].history[key].shape[1:] == (2, 2)
    # a group's seeds draw from their own named streams: the same with or without the other groups (up to the
    # mini-batch draws, which the groups share)
    assert torch.equal(a["dim_small"].max_cos["two"], alone["dim_small"].max_cos["two"])
    # within a seed the two settings share the initialisation; seeds differ
    init = a["main"].max_cos["init"]
    assert torch.equal(init[:, 0], init[:, 1]) and init[0, 0] != init[1, 0]
    assert torch.allclose(a["ratio_high"].majority, torch.full((1, 2), 0.9, dtype=D))
    assert set(a["main"].probes) == {"init", "one", "two"} and set(a["ratio_low"].probes) == {"two", "two_plain"}
    assert diag.W["init"].shape == (12, 12) and diag.W["two"][:, 8:].abs().max() == 0
    summary = fe.group_summary(a["main"])
    assert summary["net"][0] == pytest.approx(float(a["main"].test_acc["net"][:, 0].mean()))
    assert math.isnan(fe.group_summary(a["dim_small"])["net"][1])  # one seed: no standard error
    # with the test-set size, one seed's accuracies carry their binomial standard error
    p = float(a["dim_small"].test_acc["net"][0, 0])
    assert fe.group_summary(a["dim_small"], 400)["net"][1] == pytest.approx((p * (1 - p) / 400) ** 0.5)
    est = fe.group_estimates(summary)
    trivial = max(0.5, summary["majority"][0])  # the untrained network's ½, or the majority class if higher
    assert est["net_leads_ntk"].null.value == pytest.approx(trivial - max(summary["ntk"][0], summary["majority"][0]))
    assert est["cos_two"].null.value == summary["cos_init"][0]
    assert est["probe_two"].null.value == summary["probe_init"][0]
    high = fe.group_estimates(fe.group_summary(a["ratio_high"]))
    assert high["net_leads_rf"].null.value <= 0  # the majority class never leads itself
    assert high["net"].se is None  # one seed: nan in the summary, no standard error in the ledger


def test_lead_bound_leaves_room_above_the_majority_rate():
    assert fe.lead_bound(None) == 0.10 and fe.lead_bound(0.8) == 0.10 and fe.lead_bound(0.9) == pytest.approx(0.05)


def test_prototype_claim_is_declared_once_and_counts_its_seeds():
    def claim(accs):
        acc = torch.tensor([[a, 0.5] for a in accs], dtype=D)
        result = fe.GroupResult(group=fe.Group("main", len(accs), 10), test_acc={"net": acc},
                                test_hinge={}, max_cos={}, majority=torch.full_like(acc, 0.5), probes={}, history={})
        return fe.prototype_claim(result, 1000, 1.0)

    # the declaration is fixed, whatever the run measured; the rate counts the seeds that reach 0.99
    assert claim([1.0, 0.995])["source_scale_only"] == claim([0.9, 0.95])["source_scale_only"]
    assert claim([1.0, 0.9])["rate"] == (1, 2) and "not_reproduced" not in claim([0.9, 0.95])


def test_source_cosine_declarations_are_the_caller_s_not_the_result_s():
    close = fe.source_cosine(fe.SOURCE_N, 0.999, 0.8)
    far = fe.source_cosine(fe.SOURCE_N, 0.997)
    assert close["not_reproduced"] is None and far["not_reproduced"] is None  # never read off the prediction
    assert abs(close["measured"] - 0.999) <= close["atol"] and abs(far["measured"] - 0.997) > far["atol"]
    assert fe.source_cosine(fe.SOURCE_N, 0.997, not_reproduced="why")["not_reproduced"] == "why"
    with_, without = (fe.interval_source_cosine(fe.BOOK.interval, j, s) for j, s in ((0, 0.994), (1, 0.965)))
    assert abs(with_["measured"] - 0.994) > with_["atol"] and abs(without["measured"] - 0.965) > without["atol"]
    mean, sd = fe.random_direction_cosine(100, 5)
    assert mean == pytest.approx(0.0798, abs=1e-4) and (0.253 - mean) / sd == pytest.approx(6.4, abs=0.05)


def test_source_map_names_each_result_once():
    ids = [entry["id"] for entry in fe.SOURCE_MAP]
    assert len(ids) == len(set(ids))
    carried = [cid for entry in fe.SOURCE_MAP if "printed" not in entry for cid in entry["claims"]]
    assert len(carried) == len(set(carried))  # no claim carries two results


def test_theorem_schedule_and_the_extra_replicas_at_toy_sizes():
    size = _tiny(init_replicas=3, probe_replicas=2, probe_test=100)
    run = start_run("ci", 3, "cpu")
    theorem = fe.theorem_schedule_experiment(size, run)
    assert set(theorem.test_acc) == {"net"} and theorem.test_acc["net"].shape == (size.parity.seeds, 2)
    init = fe.init_cosine_replicas(size.parity, run)
    assert init.shape == (3,) and ((0 < init) & (init < 1)).all()
    probes = fe.probe_one_replicas(size.parity, run)
    assert probes.shape == (2,) and ((0 <= probes) & (probes <= 1)).all()


def test_probe_is_blind_to_the_scale_of_its_features(gen):
    f = torch.randn(1, 400, 3, generator=gen(13), dtype=D)
    y = torch.sign(f[..., 0] + 0.5 * f[..., 1])
    ft = torch.randn(1, 200, 3, generator=gen(14), dtype=D)
    yt = torch.sign(ft[..., 0] + 0.5 * ft[..., 1])
    big = fe.probe(f, y, ft, yt)
    tiny = fe.probe(0.04 + 1e-10 * f, y, 0.04 + 1e-10 * ft, yt)  # features varying at 1e-10 of their value
    assert big.item() > 0.95 and tiny.item() == big.item()
    raw_big = fe.unscaled_probe(f, y, ft, yt, n_fit=400, iterations=300)
    raw_tiny = fe.unscaled_probe(0.04 + 1e-10 * f, y, 0.04 + 1e-10 * ft, yt, n_fit=400, iterations=300)
    prior = max(float((yt > 0).double().mean()), float((yt < 0).double().mean()))
    assert raw_big.item() > 0.9 and raw_tiny.item() <= prior + 1e-12  # at their own scale: one class


def test_sizes_are_overrides_of_book():
    assert set(fe.SIZES) == set(PROFILES) and fe.SIZES["book"] == fe.BOOK
    changed = dict(differences(fe.SIZES))
    assert changed["parity.n"] == {"ci": 10_000, "book": 20_000, "full": 50_000}
    assert fe.source_ratio_sample(10_000, fe.BOOK.parity) == 10_000
    assert fe.source_ratio_sample(25_000, fe.CI.parity) == round(25_000 * 45 / 95)
    columns, rows = fe.source_table({"x": fe.TABLE3[2000]})
    assert columns[1] == "Network" and rows == [["x", "100.0", "75.4", "77.0", "50.01", "100.0", "52.5", "0.998"]]


def test_injection_protocol_at_toy_sizes():
    size = fe.InjectionSizes(teacher_width=4, student_width=5, teacher_steps=5, student_steps=8, n_student=200,
                             teachers=3, seeds=2)
    out = fe.injection_experiment(size, start_run("ci", 0, "cpu"))
    assert out.real_acc.shape == out.injected_acc.shape == (len(out.step), 3, 2)  # per teacher
    assert torch.allclose(out.injected_label_share.sum(-1), torch.ones(3, dtype=D))
    E, L = size.extra_teachers, len(out.extra_step)
    assert out.alpha_real.shape == out.alpha_injected.shape == (L, min(E, 3), len(size.alphas))
    assert out.structured_acc.shape == out.structured_real.shape == (L, min(E, 3))
    assert out.narrow_real.shape == out.narrow_injected.shape == (L, 3, 2)
    more = fe.injection_more(out)
    assert set(more) >= {"alpha25_gap", "alpha75_lower", "structured_above", "structured_below", "width_gap"}



def test_classical_minimum_is_the_start_of_the_first_rise():
    assert fe.classical_minimum(torch.tensor([3.0, 2.0, 2.5, 1.0])) == 1
    assert fe.classical_minimum(torch.tensor([3.0, 2.0, 1.0])) == 2  # never rises: the last width
    assert fe.classical_minimum(torch.tensor([1.0, 2.0])) == 0


def test_selection_sweep_at_toy_sizes():
    size = fe.SelectionSizes(n_train=200, n_gauss_test=100, widths=(1, 2, 4), replicas=4, student_replicas=2,
                             student_widths=(1, 3), teacher_steps=5, student_steps=5)
    out = fe.selection_experiment(size, start_run("ci", 0, "cpu"))
    assert out.loss.shape == (4, 3) and out.selection == 2 and torch.isfinite(out.loss).all()
    assert out.student_loss.shape == (2, 2, 2) and out.runs == 4 * 3 + 2 * 2 + 2 * 2 * 2
    assert out.teacher_widths[0] == size.widths[out.chosen] and out.teacher_widths[1] >= 5 * out.teacher_widths[0]
    values = fe.selection_values(out)
    assert values["m_sel"] == out.teacher_widths[0] and values["near"] >= 0 and values["rise"][1] >= 0
    none = dataclasses.replace(out, peak=None, valley=None)
    assert fe.selection_values(none)["rise"] == (0.0, 0.0) and fe.selection_values(none)["m_peak"] == 0


def test_digits_clusters_at_toy_sizes():
    size = fe.DigitsClusterSizes(width=6, replicas=2, epochs=4, early_epochs=1, log_epochs=(1, 2))
    out = fe.digits_cluster_experiment(size, start_run("ci", 0, "cpu"))
    assert out.chunk_cos["real"].shape == (2, 2, 6) and out.within["shuffled"].shape == (len(out.step), 2)
    values = fe.digits_cluster_values(out, target=0.5)
    assert values["reached"][1] == 2 and -1 <= values["real_centres"][0] <= 1


def test_cluster_statistics_of_two_antipodal_clusters():
    direction = torch.nn.functional.normalize(torch.randn(5), dim=0)
    W = torch.stack([direction, 2 * direction, -direction, -3 * direction]).unsqueeze(0)
    within, centres = fe.cluster_statistics(W)
    assert within.item() == pytest.approx(1.0) and centres.item() == pytest.approx(-1.0)
    grads = direction.expand(30, 5).clone()
    assert torch.allclose(fe.chunk_cosines(grads, 10), torch.ones(6))


def test_theorem2_check_at_toy_sizes():
    size = fe.Theorem2Sizes(k=5, m=10, n=400, n_test=300, steps=20, lr=1.0, replicas=2)
    out = fe.theorem2_experiment(size, start_run("ci", 0, "cpu"))
    assert out.hinge.shape == out.norm.shape == out.accuracy.shape == (2,) and out.features == 20
    claim = fe.theorem2_claim(out, size)
    floors = [fe.theorem2_floor(20, float(b), 5) for b in out.norm]
    assert claim["measured"].value == pytest.approx(float((out.hinge - torch.tensor(floors)).mean()))
    assert claim["measured"].null.value == pytest.approx(-0.5 * (1 - 2**0.5 / 32))  # the parity feature: hinge 0
    assert fe.theorem2_floor(600, 236, 13) == pytest.approx(0.5 * (1 - 1200**0.5 * 236 / 8192))


def test_lemma_coordinates_follow_lemmas_15_and_20():
    size = _tiny()
    results, _ = fe.parity_program(fe.parity_groups(size)[:1], size.parity, start_run("ci", 1, "cpu"))
    lem = results["main"].lemmas
    assert set(lem) == {"one_median", "one_spread", "two_mean", "two_spread"}
    assert all(v.shape == (size.parity.seeds, 2) for v in lem.values())
    assert (lem["two_spread"][:, 0] < 1e-3).all()  # step 2: beta depends on the bias alone
    assert (lem["two_mean"][:, 1].abs() < lem["two_mean"][:, 0]).all()  # no signal without structure
    est = fe.lemma_estimates(results["main"], size.parity)
    assert est["two"].se == pytest.approx(fe.lemma_sampling_sd(size.parity, size.parity.seeds))
    # Var S = k/8 + k^2/8 under D_A^mix at p_o = 1/2: k = 5 gives 3.75, relative sd sqrt(0.15 - 1/16)/(1/4)
    assert fe.lemma_sampling_sd(fe.ParitySizes(n=1), 1) == pytest.approx((3.75 / 25 - 1 / 16) ** 0.5 * 4)


def test_interval_and_hidden_experiments_at_toy_sizes():
    run = start_run("ci", 0, "cpu")
    iv = fe.interval_experiment(fe.IntervalSizes(D=20, k=6, low=4, m=5, n=400, n_test=200, n_probe=300), run)
    assert iv.gamma[1] > 0 and iv.cos_two.shape == (2,) and set(iv.probes) == {"init", "two"}
    assert set(iv.test_acc) == {"ntk", "rf"} and iv.test_acc["ntk"].shape == iv.majority.shape == (2,)
    hid = fe.hidden_representation_experiment(fe.HiddenSizes(d=30, D=12, k=6, per_label=4, n=300, m=5), run)
    assert hid.W["init"].shape == (10, 30) and 0 < hid.cos_pred < 1


def test_dictionary_basis_is_orthonormal(gen):
    M = orthonormal_dictionary(9, 4, gen(15))
    assert torch.allclose(M.T @ M, torch.eye(4, dtype=D), atol=1e-12)


def test_the_prototype_stage_trains_the_network_alone_on_main_s_streams():
    size = _tiny()
    run = start_run("ci", 3, "cpu")
    proto = fe.prototype_stage_experiment(size, run)
    assert set(proto.test_acc) == {"net"} and proto.test_acc["net"].shape == (size.parity.prototype_seeds, 2)
    main, _ = fe.parity_program([fe.Group("main", size.parity.seeds, size.parity.d)], size.parity, run)
    # the same A, initialisation and samples as the main group: identical step-2 weights
    shared = min(size.parity.seeds, size.parity.prototype_seeds)
    assert torch.equal(proto.max_cos["two"][:shared], main["main"].max_cos["two"][:shared])
    summary = fe.group_summary(proto, 100)
    assert "net_beats_ntk" not in summary and "structure_drop" in summary
    claim = fe.prototype_claim(proto, 100, 1.0)
    assert claim["measured"].null.value == 0.5


def test_figures_fit_the_column_and_read_at_9_points():
    import matplotlib.pyplot as plt

    from feature_learning.plotting.legibility import COLUMN_INCHES, problems

    steps, seeds, g = 6, 2, torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=torch.float64)

    history = {"step": torch.arange(steps) * 10} | {key: rand(steps, seeds, 2) for key in ("net", "ntk", "rf")}
    group = fe.GroupResult(group=fe.Group("g", seeds, 8, 0.8), test_acc={}, test_hinge={}, max_cos={},
                           majority=torch.full((seeds, 2), 0.8), probes={}, history=history)
    W = {key: rand(12, 8) - 0.5 for key in ("init", "one", "two")}
    mixture = fe.MixtureResult(8, 2, 1.0, 3, rand(seeds), rand(seeds, 4), rand(seeds, 4), rand(seeds, 4, 8) - 0.5,
                               torch.tensor([[1.0, -1.0, 1.0, -1.0]] * seeds), rand(seeds, 12, 8) - 0.5,
                               rand(seeds, 12, 8) - 0.5)
    injection = fe.InjectionResult(torch.arange(steps), rand(steps, seeds, 2), rand(steps, seeds, 2), rand(seeds, 10))
    selection = fe.SelectionResult((1, 2, 4), rand(4, 3), 2, 1, 2, None, (1, 2, 4, 8), (2, 11), rand(2, 3, 4), (1, 2),
                                   10, 10)
    figures = [fe.accuracy_figure([("a", group, (0, 1))]),
               fe.accuracy_figure([(str(i), group, (0,)) for i in range(4)]),
               fe.mds_figure(W, torch.ones(8, dtype=torch.float64), ("+v", "-v")),
               fe.mixture_figure([mixture] * 3), fe.injection_figure(injection),
               fe.selection_figure(selection)]
    for fig in figures:
        assert fig.get_size_inches()[0] <= COLUMN_INCHES + 1e-9 and problems(fig) == []
        plt.close(fig)

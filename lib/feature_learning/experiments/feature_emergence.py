"""Sizes and recipes of the chapter "Feature learning emerges from the input structure, and beats fixed features"
(Shi, Wei and Liang, ICLR 2022 = dissertation ch. 2; experiments in Appendix E = A.7).

The source's main run (E.1.1) has d = 500, D = 100, k = 5, p_o = 1/2, parity labels, m = 300 (2m = 600 units),
50,000 training samples, T = 600, batch 1000 after two full-batch steps. ``full`` is that run; ``book`` keeps
d, D, k, m and shrinks n and T; ``ci`` also halves d and D (the background-to-signal ratio (D - k)/k drops from 19
to 9, which the chapter says). Where the source is silent (step sizes after step 2, the baselines' optimisers,
the probes) the choice is named here and stated in the chapter.
"""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.book.profiles import by_profile
from feature_learning.data.gaussian_mixture import hypercube_centres, hypercube_mixture
from feature_learning.data.sparse_coding import (
    HiddenRepresentationTask,
    SparseCodingTask,
    interval_set,
    orthogonal_norm_sq,
    orthonormal_dictionary,
    parity_set,
    pattern_coordinates,
    relevant_direction,
)
from feature_learning.measure.geometry import best_cosine_per_target
from feature_learning.models.truncated_relu import (
    TwoLayerParams,
    forward,
    hidden,
    hinge,
    ntk_forward,
    paper_init_scales,
    symmetric_init,
    weighted_hinge,
)
from feature_learning.models.two_layer import init_torch_default
from feature_learning.training.loop import OptimConfig, minibatches, train
from feature_learning.training.truncated_relu import (
    StageConfig,
    cosine_to,
    feature_snr,
    full_batch_step,
    linear_probe,
    paper_first_steps,
    train_ntk,
    train_stage,
)


@dataclasses.dataclass(frozen=True)
class FeatureEmergenceSizes:
    # S1-S3: the parity mixture, with and without input structure (E.1.1, Figures 1 and 2, Table 1)
    d: int
    D: int
    k: int
    p_o: float
    m: int  # half-width: the network has 2m units
    n: int
    n_test: int
    steps: int  # T: total steps including the two full-batch ones
    batch: int
    probe_steps: int
    log_every: int
    # S4: interval labelling (E.1.2), two steps and probes only
    interval_d: int
    interval_D: int
    interval_k: int
    interval_low: int
    interval_m: int
    interval_n: int
    # S5: teacher-student with injected Gaussian inputs on the digits (E.5 substitute)
    teacher_width: int
    student_width: int
    student_steps: int
    teacher_steps: int
    # S1 over seeds (Figure 1 with error bars) and the variants of E.2: varying d (E.2.1), class imbalance (E.2.2)
    seeds: int  # seeds of the main comparison (the source averages 5)
    variant_seeds: int
    variant_D: int
    variant_dims: tuple[int, int]  # the source: d = 100 and 2000 at D = 100
    variant_ratios: tuple[float, float]  # negative-class share, the source: 0.8 and 0.9
    variant_n: int
    variant_n_test: int
    variant_steps: int
    # S6: Gaussian hypercube mixture (E.3.2, Table 6): (d, k, sigma_r, epochs) per experiment
    mix_experiments: tuple[tuple[int, int, float, int], ...]
    mix_width: int
    mix_seeds: int
    mix_n: int
    mix_n_test: int
    mix_batch: int
    mix_lr: float
    # E.2.3: varying the sample size (Table 5): the source's n = 25,000 (m = 300) and 10,000 (m = 50), i.e. 1/2 and
    # 1/5 of its 50,000; here the same fractions of ``variant_n``
    sample_ns: tuple[int, int]
    sample_small_m: int  # the source shrinks the network to m = 50 for its smaller sample
    # E.3.1: labels from a hidden representation (Figure 15): the source's d = 500, D = 250, k = 50, 50 codes/label
    hidden_d: int
    hidden_D: int
    hidden_k: int
    hidden_per_label: int
    hidden_n: int


SIZES = {
    "ci": FeatureEmergenceSizes(
        d=200, D=50, k=5, p_o=0.5, m=300, n=3000, n_test=2000, steps=200, batch=500, probe_steps=200, log_every=20,
        interval_d=200, interval_D=100, interval_k=30, interval_low=20, interval_m=100, interval_n=3000,
        teacher_width=16, student_width=50, student_steps=300, teacher_steps=400,
        seeds=2, variant_seeds=1, variant_D=50, variant_dims=(50, 1000), variant_ratios=(0.8, 0.9), variant_n=3000,
        variant_n_test=2000, variant_steps=300,
        mix_experiments=((100, 4, 1.0, 40), (25, 4, 0.7, 25), (100, 5, 1.0, 40)), mix_width=800, mix_seeds=2,
        mix_n=3000, mix_n_test=2000, mix_batch=100, mix_lr=1e-3,
        sample_ns=(1500, 600), sample_small_m=50,
        hidden_d=500, hidden_D=250, hidden_k=50, hidden_per_label=50, hidden_n=3000,
    ),
    "book": FeatureEmergenceSizes(
        d=500, D=100, k=5, p_o=0.5, m=300, n=5000, n_test=4000, steps=300, batch=500, probe_steps=300,
        log_every=20,
        interval_d=500, interval_D=100, interval_k=30, interval_low=20, interval_m=100, interval_n=5000,
        teacher_width=16, student_width=50, student_steps=400, teacher_steps=500,
        seeds=5, variant_seeds=2, variant_D=100, variant_dims=(100, 2000), variant_ratios=(0.8, 0.9), variant_n=5000,
        variant_n_test=4000, variant_steps=300,
        mix_experiments=((100, 4, 1.0, 80), (25, 4, 0.7, 50), (100, 5, 1.0, 80)), mix_width=800, mix_seeds=2,
        mix_n=4000, mix_n_test=4000, mix_batch=100, mix_lr=1e-3,
        sample_ns=(2500, 1000), sample_small_m=50,
        hidden_d=500, hidden_D=250, hidden_k=50, hidden_per_label=50, hidden_n=5000,
    ),
    "full": FeatureEmergenceSizes(
        d=500, D=100, k=5, p_o=0.5, m=300, n=50_000, n_test=10_000, steps=600, batch=1000, probe_steps=1000,
        log_every=20,
        interval_d=500, interval_D=100, interval_k=30, interval_low=20, interval_m=100, interval_n=50_000,
        teacher_width=16, student_width=50, student_steps=800, teacher_steps=800,
        seeds=5, variant_seeds=5, variant_D=100, variant_dims=(100, 2000), variant_ratios=(0.8, 0.9),
        variant_n=50_000, variant_n_test=10_000, variant_steps=600,
        mix_experiments=((100, 4, 1.0, 80), (25, 4, 0.7, 50), (100, 5, 1.0, 80)), mix_width=800, mix_seeds=5,
        mix_n=20_000, mix_n_test=10_000, mix_batch=100, mix_lr=1e-3,
        sample_ns=(25_000, 10_000), sample_small_m=50,
        hidden_d=500, hidden_D=250, hidden_k=50, hidden_per_label=50, hidden_n=50_000,
    ),
}

# Our choices where the source gives none (Appendix E.1 says only "the training follows Section 3").
SECOND_LAYER_STEP = 100.0  # eta_a for t > 2; W and b use the theorem's eta = k^2/(T m^(1/3))
BASELINE_STEP = 0.01  # SGD step of the NTK model and of the random-feature model's second layer
GAMMA_FOR_INIT = None  # None: use the structured family's gamma = (1 - p_o)/2 for sigma_a in both settings


def sizes(profile: str) -> FeatureEmergenceSizes:
    return by_profile(profile, SIZES)


def stage_step(size: FeatureEmergenceSizes) -> float:
    """eta = k^2/(T m^(1/3)) for t > 2 (Theorem 26)."""
    return size.k**2 / (size.steps * size.m ** (1 / 3))


def _stack(params: TwoLayerParams, replicas: int) -> TwoLayerParams:
    return TwoLayerParams(*(t.expand(replicas, *t.shape[1:]).clone() for t in params.tensors()))


def parity_comparison(size: FeatureEmergenceSizes, generator: torch.Generator, device="cpu", *,
                      classifiers: bool = True) -> dict:
    """E.1.1 end to end, with (replica 0) and without (replica 1) input structure, the same M, A and init:
    two full-batch steps, the network's classifier stage, the random-feature and NTK baselines, probes on the
    features after 0, 1 and 2 steps, and the diagnostics of the proof sketch (cosines, signal-to-background).
    ``classifiers=False`` stops after the probes (no classifier stage, no baselines; :func:`seeded_comparison`
    runs those over several seeds)."""
    task = SparseCodingTask(size.d, size.D, size.k, parity_set(size.k), p_o=size.p_o)
    M = orthonormal_dictionary(size.d, size.D, generator)
    A = task.relevant_set(generator)
    xs, ys, xts, yts = [], [], [], []
    for member in (task, task.without_structure()):
        x, y, _ = member.sample(size.n, M, A, generator)
        xt, yt, _ = member.sample(size.n_test, M, A, generator)
        xs.append(x), ys.append(y), xts.append(xt), yts.append(yt)
    x, y, xt, yt = (torch.stack(v).to(device) for v in (xs, ys, xts, yts))
    sigma_tilde, gamma = task.sigma_tilde(), (1 - size.p_o) / 2
    init = _stack(symmetric_init(1, size.m, size.d, generator=generator, device=device,
                                 **paper_init_scales(size.k, sigma_tilde, gamma)), 2)
    step1, step2 = paper_first_steps(size.k, size.m, sigma_tilde, gamma)
    p1 = full_batch_step(init, x, y, step1)
    p2 = full_batch_step(p1, x, y, step2)
    v = relevant_direction(M, A).to(device)
    probes = {}
    for name, params in (("one", p1), ("two", p2)):
        for std in (False, True):
            probes[(name, std)] = linear_probe(hidden(params, x), y, hidden(params, xt), yt,
                                               standardize=std, steps=size.probe_steps,
                                               curvature_step=(name == "one" and std))
    features = {
        "task": task, "M": M, "A": A, "v": v, "sigma_tilde": sigma_tilde, "gamma": gamma, "steps": (step1, step2),
        "params": {"init": init, "one": p1, "two": p2},
        "cos": {name: cosine_to(p.W.double(), v).cpu() for name, p in (("init", init), ("one", p1), ("two", p2))},
        "snr_one": feature_snr(p1.W.cpu(), M, A), "snr_two": feature_snr(p2.W.cpu(), M, A),
        "probes": {key: {kk: vv.cpu() for kk, vv in val.items()} for key, val in probes.items()},
    }
    if not classifiers:
        return features
    # the classifier stage and the fixed-feature baselines run in float32 (their features are O(1e-2) or larger)
    init32, p2_32 = (TwoLayerParams(*(t.float() for t in p.tensors())) for p in (init, p2))
    x, y, xt, yt = x.float(), y.float(), xt.float(), yt.float()
    eta = stage_step(size)
    stage = StageConfig(size.steps - 2, size.batch, eta, eta, SECOND_LAYER_STEP, log_every=size.log_every)
    net, net_hist = train_stage(p2_32, x, y, stage, generator, x_test=xt, y_test=yt)
    rf_cfg = StageConfig(size.steps, size.batch, 0.0, 0.0, BASELINE_STEP, log_every=size.log_every)
    rf, rf_hist = train_stage(init32, x, y, rf_cfg, generator, x_test=xt, y_test=yt)
    ntk_cfg = StageConfig(size.steps, size.batch, BASELINE_STEP, BASELINE_STEP, BASELINE_STEP,
                          log_every=size.log_every)
    ntk, ntk_hist = train_ntk(init32, x, y, ntk_cfg, generator, x_test=xt, y_test=yt)
    with torch.no_grad():
        outputs = {"net": forward(net, xt), "rf": forward(rf, xt), "ntk": ntk_forward(init32, ntk, xt)}
    return {
        "task": task, "M": M, "A": A, "v": v, "sigma_tilde": sigma_tilde, "gamma": gamma,
        "steps": (step1, step2), "stage_eta": eta,
        "params": {"init": init, "one": p1, "two": p2, "net": net},
        "cos": {name: cosine_to(p.W.double(), v).cpu() for name, p in (("init", init), ("one", p1), ("two", p2),
                                                              ("net", net))},  # noqa: E501
        "snr_one": feature_snr(p1.W.cpu(), M, A), "snr_two": feature_snr(p2.W.cpu(), M, A),
        "history": {"net": net_hist, "rf": rf_hist, "ntk": ntk_hist},
        "test_acc": {k_: (yt * out > 0).double().mean(-1).cpu() for k_, out in outputs.items()},
        "test_hinge": {k_: hinge(yt, out).cpu() for k_, out in outputs.items()},
        "probes": {key: {kk: vv.cpu() for kk, vv in val.items()} for key, val in probes.items()},
    }


def interval_features(size: FeatureEmergenceSizes, generator: torch.Generator, device="cpu") -> dict:
    """E.1.2: interval labels y = +1 iff sum_A phi~ in [low, k]; Pr[phi~_j = 1] = 2/3 on A and 1/2 elsewhere; the
    two full-batch steps with the theorem's schedule, then probes on the init and two-step features."""
    k = size.interval_k
    task = SparseCodingTask(size.interval_d, size.interval_D, k, interval_set(size.interval_low, k),
                            law="bernoulli", p_o=0.5, p_in=2 / 3)
    M = orthonormal_dictionary(size.interval_d, size.interval_D, generator)
    A = task.relevant_set(generator)
    data = []
    for member in (task, task.without_structure()):
        x, y, _ = member.sample(size.interval_n, M, A, generator)
        xt, yt, _ = member.sample(size.interval_n, M, A, generator)
        data.append((x, y, xt, yt))
    x, y, xt, yt = (torch.stack([dd[i] for dd in data]).to(device) for i in range(4))
    # gamma of the structured law, estimated from its sample (used only for the initialisation scale and eta^(1))
    phi_corr = float((y[0][:, None] * (x[0] @ M.to(device)[:, A])).mean()) * task.sigma_tilde()
    gamma = abs(phi_corr) if phi_corr != 0 else 0.05
    init = _stack(symmetric_init(1, size.interval_m, size.interval_d, generator=generator, device=device,
                                 **paper_init_scales(k, task.sigma_tilde(), gamma)), 2)
    step1, step2 = paper_first_steps(k, size.interval_m, task.sigma_tilde(), gamma)
    p2 = full_batch_step(full_batch_step(init, x, y, step1), x, y, step2)
    v = relevant_direction(M, A).to(device)
    probes = {name: linear_probe(hidden(p, x), y, hidden(p, xt), yt, standardize=True, steps=size.probe_steps)
              for name, p in (("init", init), ("two", p2))}
    return {"gamma": gamma, "pos_rate": ((yt > 0).double().mean(-1)).cpu(),
            "cos_two": cosine_to(p2.W, v).abs().max(-1).values.cpu(),
            "probes": {key: {kk: vv.cpu() for kk, vv in val.items()} for key, val in probes.items()}}


# -- several seeds at once, and the variants of Appendix E.2 (= A.7) ---------------------------------------------
def _replicate(t: torch.Tensor, times: int) -> torch.Tensor:
    return t.repeat_interleave(times, dim=0)


def seeded_comparison(size: FeatureEmergenceSizes, generator: torch.Generator, device="cpu", *, seeds: int,
                      d: int | None = None, D: int | None = None, n: int | None = None, n_test: int | None = None,
                      steps: int | None = None, negative_ratio: float | None = None, probes: bool = True,
                      classifiers: bool = True, weighted_first_steps: bool | None = None) -> dict:
    """E.1.1 (or a variant of E.2) for ``seeds`` independent seeds at once, with and without input structure: one
    batched program with R = 2 * seeds replicas, replica ``2 s`` with structure and ``2 s + 1`` without (same M, A
    and initialisation within a seed; a fresh M, A, initialisation and sample for every seed).

    ``d``, ``D``, ``n``, ``n_test``, ``steps`` override the profile's sizes (E.2.1 varies d); ``negative_ratio``
    resamples training and test sets to that share of class -1 (E.2.2), and then steps 1-2 use the class-weighted
    hinge of the general setting (A.8) unless ``weighted_first_steps=False``; the classifier stage keeps the plain
    hinge. ``classifiers=False`` stops after the two steps and the probes. Everything runs in pattern
    coordinates (:func:`feature_learning.data.sparse_coding.pattern_coordinates`), which is exact here: inputs lie
    in span(M), the first step's decay erases the initial weights, and the random-feature and NTK models never move the
    weights' component outside span(M). That component enters only the cosines (through its norm), so d changes
    nothing but the random-feature cosine. The steps and schedule are those of :func:`parity_comparison`."""
    d, D = d or size.d, D or size.D
    n, n_test, steps = n or size.n, n_test or size.n_test, steps or size.steps
    task = SparseCodingTask(d, D, size.k, parity_set(size.k), p_o=size.p_o)
    sigma_tilde, gamma = task.sigma_tilde(), (1 - size.p_o) / 2
    scales = paper_init_scales(size.k, sigma_tilde, gamma)
    zs, ys, zts, yts, vs, inits, perps = [], [], [], [], [], [], []
    for _ in range(seeds):
        M = orthonormal_dictionary(d, D, generator)
        A = task.relevant_set(generator)
        init = symmetric_init(1, size.m, d, generator=generator, **scales)
        inits.append(TwoLayerParams(pattern_coordinates(init.W, M), init.b, init.a))
        perps.append(orthogonal_norm_sq(init.W, M))
        v = torch.zeros(D, dtype=torch.float64)
        v[A] = 1.0  # sum_A M_j in pattern coordinates
        for member in (task, task.without_structure()):
            for count, out_z, out_y in ((n, zs, ys), (n_test, zts, yts)):
                if negative_ratio is None:
                    x, y, _ = member.sample(count, M, A, generator)
                else:
                    x, y, _ = member.sample_class_ratio(count, M, A, negative_ratio, generator)
                out_z.append(pattern_coordinates(x, M)), out_y.append(y)
            vs.append(v)
    z, y, zt, yt, v = (torch.stack(t).to(device) for t in (zs, ys, zts, yts, vs))
    init = TwoLayerParams(*(_replicate(torch.cat(parts), 2).to(device)
                            for parts in zip(*(p.tensors() for p in inits), strict=True)))
    perp = _replicate(torch.cat(perps), 2).to(device)
    step1, step2 = paper_first_steps(size.k, size.m, sigma_tilde, gamma)
    # imbalanced classes: the class-weighted hinge in steps 1-2, as the general setting prescribes (A.8, eq. (A.293))
    if weighted_first_steps is None:
        weighted_first_steps = negative_ratio is not None
    first_loss = weighted_hinge if weighted_first_steps else hinge
    p1 = full_batch_step(init, z, y, step1, loss=first_loss)
    p2 = full_batch_step(p1, z, y, step2, loss=first_loss)
    out = {"seeds": seeds, "d": d, "D": D, "n": n, "steps": steps, "negative_ratio": negative_ratio,
           "majority": torch.maximum((yt > 0).double().mean(-1), (yt < 0).double().mean(-1)).cpu(),
           "max_cos": {"init": cosine_to(init.W, v, perp).max(-1).values.cpu(),
                       "one": cosine_to(p1.W, v).max(-1).values.cpu(),
                       "two": cosine_to(p2.W, v).max(-1).values.cpu()}}
    if probes:
        out["probes"] = {
            name: linear_probe(hidden(p, z), y, hidden(p, zt), yt, standardize=std, steps=size.probe_steps)
            ["test_acc"].cpu()
            for name, p, std in (("one", p1, False), ("two", p2, True))}
    if not classifiers:
        return out
    init32, p2_32 = (TwoLayerParams(*(t.float() for t in p.tensors())) for p in (init, p2))
    z, y, zt, yt = z.float(), y.float(), zt.float(), yt.float()
    eta = size.k**2 / (steps * size.m ** (1 / 3))
    net, net_hist = train_stage(p2_32, z, y, StageConfig(steps - 2, size.batch, eta, eta, SECOND_LAYER_STEP,
                                                         log_every=size.log_every), generator, x_test=zt, y_test=yt)
    rf, rf_hist = train_stage(init32, z, y, StageConfig(steps, size.batch, 0.0, 0.0, BASELINE_STEP,
                                                        log_every=size.log_every), generator, x_test=zt, y_test=yt)
    ntk, ntk_hist = train_ntk(init32, z, y, StageConfig(steps, size.batch, BASELINE_STEP, BASELINE_STEP,
                                                        BASELINE_STEP, log_every=size.log_every),
                              generator, x_test=zt, y_test=yt)
    with torch.no_grad():
        outputs = {"net": forward(net, zt), "rf": forward(rf, zt), "ntk": ntk_forward(init32, ntk, zt)}
    net_hist["step"] = net_hist["step"] + 2  # the network's curve starts after its two full-batch steps
    out["history"] = {"net": net_hist, "rf": rf_hist, "ntk": ntk_hist}
    out["test_acc"] = {key: (yt * o > 0).double().mean(-1).cpu() for key, o in outputs.items()}
    out["test_hinge"] = {key: hinge(yt, o).double().cpu() for key, o in outputs.items()}
    out["max_cos"]["net"] = cosine_to(net.W.double(), v).max(-1).values.cpu()
    return out


def by_structure(values: torch.Tensor) -> torch.Tensor:
    """Replica values (2 S, ...) of :func:`seeded_comparison` as (S, 2, ...): [:, 0] with structure, [:, 1] without."""
    return values.reshape(-1, 2, *values.shape[1:])


def seed_mean(values: torch.Tensor) -> torch.Tensor:
    """Mean over seeds of replica values (2 S,): shape (2,), with structure then without."""
    return by_structure(values).double().mean(0)


def gaussian_mixture_features(d: int, k: int, sigma_r: float, size: FeatureEmergenceSizes, epochs: int,
                              generator: torch.Generator, device="cpu") -> dict:
    """E.3.2: a two-layer ReLU network of width ``size.mix_width`` (PyTorch's default initialisation, both layers
    trained) on the hypercube Gaussian mixture of eq. (290), one replica per seed (``size.mix_seeds``), trained "as in
    typical practice" (the source's words; our choice: AdamW, logistic loss, mini-batches). Returns, per seed, the
    best cosine between a neuron and each cluster centre at initialisation and after training, the test accuracy,
    and the first-layer weights before and after (for the figure)."""
    S, n = size.mix_seeds, size.mix_n
    Ms = [orthonormal_dictionary(d, k, generator, dtype=torch.float32) for _ in range(S)]
    train_set = [hypercube_mixture(n, M, sigma_r, generator) for M in Ms]
    test_set = [hypercube_mixture(size.mix_n_test, M, sigma_r, generator) for M in Ms]
    x, y = (torch.stack([t[i] for t in train_set]).to(device) for i in (0, 1))
    xt, yt = (torch.stack([t[i] for t in test_set]).to(device) for i in (0, 1))
    centres, centre_labels = (torch.stack(t) for t in zip(*(hypercube_centres(M) for M in Ms), strict=True))
    net = init_torch_default(S, d, size.mix_width, generator=generator, device=device)
    W0 = net.W.detach().clone()
    batch = minibatches(torch.arange(n), size.mix_batch, generator)

    def loss(step):
        idx = batch(step).to(device)
        return torch.nn.functional.softplus(-y[:, idx] * net(x[:, idx])).mean(-1).sum()

    steps = epochs * (n // size.mix_batch)
    train(net.parameters(), loss, OptimConfig(steps, size.mix_lr, warmup=0))
    with torch.no_grad():
        acc = (net(xt) * yt > 0).double().mean(-1).cpu()
    W = net.W.detach()
    return {"acc": acc, "epochs": epochs, "steps": steps, "centres": centres, "centre_labels": centre_labels,
            "W_init": W0.cpu(), "W": W.cpu(),
            "best_init": best_cosine_per_target(W0.cpu(), centres), "best": best_cosine_per_target(W.cpu(), centres)}


def hidden_representation_features(size: FeatureEmergenceSizes, generator: torch.Generator, device="cpu") -> dict:
    """E.3.1: labels from a hidden representation (:class:`HiddenRepresentationTask` of ``data.sparse_coding``)
    with the source's d, D, k and codes per label, ``size.hidden_n`` training and as many test samples, 2m units.
    The two full-batch steps use the theorem's schedule with gamma = ||E[y phi~_A]|| / sqrt(k) (our choice: the
    source's gamma is one number because every relevant pattern correlates equally with the label in D_A^mix; here
    the correlations differ per pattern, and this is their root mean square). Returns the cosines of every unit with
    the label-correlation direction M E[y z] after 0, 1, 2 steps, the finite-sample ingredients of its prediction
    (||g||^2 and the trace of Cov(y z) orthogonal to g), probes on the initial (random) and two-step features, and
    the weights for the figure (pairwise cosines among the units measure the clusters of Figure 15)."""
    task = HiddenRepresentationTask(size.hidden_d, size.hidden_D, size.hidden_k, size.hidden_per_label, p_o=0.5)
    codes, labels = task.codes(generator)
    M = orthonormal_dictionary(task.d, task.D, generator)
    A = torch.randperm(task.D, generator=generator)[: task.k].sort().values
    x, y, _ = task.sample(size.hidden_n, M, A, codes, labels, generator)
    xt, yt, _ = task.sample(size.hidden_n, M, A, codes, labels, generator)
    x, y, xt, yt = (t[None].to(device) for t in (x, y, xt, yt))
    sigma_tilde = task.sigma_tilde(codes)
    g = task.label_correlation(A, codes, labels)
    gamma = float(g.norm()) * sigma_tilde / task.k**0.5
    init = symmetric_init(1, size.m, task.d, generator=generator, device=device,
                          **paper_init_scales(task.k, sigma_tilde, gamma))
    step1, step2 = paper_first_steps(task.k, size.m, sigma_tilde, gamma)
    p1 = full_batch_step(init, x, y, step1)
    p2 = full_batch_step(p1, x, y, step2)
    u = (M @ g).to(device)
    sigma_z = task.pattern_covariance(A, codes) / sigma_tilde**2
    g_sq = float(g @ g)
    proj = torch.eye(task.D, dtype=torch.float64) - torch.outer(g, g) / g_sq
    c_perp = proj @ sigma_z @ proj  # Cov(yz) = Sigma_z - g g^T, restricted to the complement of g
    # the two-step units are nearly collinear (one direction): the step is scaled by the features' curvature
    probes = {name: linear_probe(hidden(p, x), y, hidden(p, xt), yt, standardize=True, steps=size.probe_steps,
                                 curvature_step=True)["test_acc"][0].item()
              for name, p in (("init", init), ("two", p2))}
    return {"task": task, "gamma": gamma, "g_sq": g_sq, "trace_perp": float(torch.trace(c_perp)),
            "trace_perp_sq": float(torch.trace(c_perp @ c_perp)), "n": size.hidden_n,
            "pos_rate": (yt > 0).double().mean().item(),
            "cos": {name: cosine_to(p.W, u)[0].cpu() for name, p in (("init", init), ("one", p1), ("two", p2))},
            "W": {name: p.W[0].cpu() for name, p in (("init", init), ("one", p1), ("two", p2))}, "u": u.cpu(),
            "probes": probes}

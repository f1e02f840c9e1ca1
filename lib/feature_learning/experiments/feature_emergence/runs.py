"""The chapter's runs: Experiment 1 and the variants of Appendix E.2 as one batched tensor program
(:func:`parity_program`), batched over replicas (the seeds, the settings with and without input structure, the
variants), then the experiments of E.1.2, E.2.3, E.3.1, E.3.2 and E.5, in the notebook's order."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.data.bases import orthonormal_dictionary
from feature_learning.data.digits import gaussian_like, load_digits, random_split
from feature_learning.data.gaussian_mixture import hypercube_centres, hypercube_mixture
from feature_learning.data.sparse_coding import (
    HiddenRepresentationTask,
    SparseCodingTask,
    interval_set,
    parity_set,
)
from feature_learning.experiments.feature_emergence.sizes import (
    INTERVAL_NTK_STEP,
    INTERVAL_RF_STEP,
    PROBE_FIT,
    PROTOTYPE_STEP,
    UNSCALED_PROBE_FIT,
    DigitsClusterSizes,
    FeatureEmergenceSizes,
    HiddenSizes,
    InjectionSizes,
    IntervalSizes,
    MixtureSizes,
    ParitySizes,
    SelectionSizes,
    Theorem2Sizes,
)
from feature_learning.experiments.feature_emergence.stage import (
    StageResult,
    _stack_nets,
    _unit_direction,
    classifier_stage,
    max_cosine,
    paired_samples,
    probe,
    sample_patterns,
    stage_step,
    symmetric_init,
    unscaled_probe,
)
from feature_learning.measure.geometry import best_cosine_per_target, cosine_to
from feature_learning.measure.metrics import argmax_accuracy, sign_accuracy
from feature_learning.models.two_layer import (
    TwoLayerNet,
    init_lecun,
    init_torch_default,
)
from feature_learning.theory.feature_emergence import (
    interval_constants,
    second_step_cosine_general,
    second_step_cosine_sd,
)
from feature_learning.training.first_steps import StepConfig, class_weights, second_layer_gd, two_steps
from feature_learning.training.loop import OptimConfig, minibatches, train
from feature_learning.training.losses import (
    balance_and_confidence,
    cross_entropy,
    logistic,
)

# -- the step schedule of Theorem 26 (the steps themselves: feature_learning.training.first_steps) -------------

def first_steps(k: int, m: int, sigma_tilde: float, gamma: float) -> tuple[StepConfig, StepConfig]:
    """Steps 1 and 2 of Theorem 26 (= Thm A.20): eta^(1) = gamma^2 sigma~^2/(k m^3), lambda_a = 0,
    lambda_w = 1/(2 eta^(1)); then eta = 1, lambda_a = lambda_w = 1/2. The noise level is the lemmas'
    sigma_xi = 1/k^(3/2) (Lemmas 18, 20, 23; Theorem 26 writes 1/k^2, an inconsistency the chapter notes)."""
    eta_1 = gamma**2 * sigma_tilde**2 / (k * m**3)
    s = 1 / k**1.5
    return StepConfig(eta_1, 0.0, 1 / (2 * eta_1), s), StepConfig(1.0, 0.5, 0.5, s)


# -- Experiment 1 and the variants of E.2: one batched program ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Group:
    """One setting of the batched parity program: ``seeds`` seeds, each with and without input structure, at input
    dimension ``d``, with a share ``negative_ratio`` of class -1 (None: the law's balanced classes). Imbalanced
    groups train with the class-weighted hinge (A.293; the general setting prescribes it for steps 1-2, and we
    keep it in the classifier stage too); ``plain_steps`` also runs steps 1-2 with the plain hinge (an ablation,
    probes only); ``probes`` fits the probes on the step-1 and step-2 features."""

    name: str
    seeds: int
    d: int
    negative_ratio: float | None = None
    probes: bool = True
    plain_steps: bool = False


@dataclasses.dataclass
class GroupResult:
    """Per seed (rows) and setting (columns: with structure, without): accuracies and hinge losses on the test set,
    best cosines with sum_A M_j, the majority rate; the probes (structure only) per seed; the test-accuracy curves
    (L, S, 2) at ``history["step"]``."""

    group: Group
    test_acc: dict[str, torch.Tensor]  # "net", "ntk", "rf": (S, 2)
    test_hinge: dict[str, torch.Tensor]
    max_cos: dict[str, torch.Tensor]  # "init", "one", "two", "net": (S, 2)
    majority: torch.Tensor  # (S, 2)
    probes: dict[str, torch.Tensor]  # "one", "two" (and "two_plain"): (S,)
    history: dict[str, torch.Tensor]
    lemmas: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)  # :func:`lemma_coordinates`, (S, 2)


@dataclasses.dataclass
class Diagnostics:
    """The first seed of the first group, with structure (and without, where named): the weights after 0, 1 and 2
    steps in the coordinates of R^d = span(M) + its complement (for Figure 2), the direction sum_A M_j there, the
    step-1 weights' signal-to-background ratio on A (Lemma 15) with and without structure, and the spread of
    |cos(w_i, sum_A M_j)| over the units after two steps."""

    W: dict[str, torch.Tensor]  # (2m, d)
    v: torch.Tensor  # (d,)
    snr_one: torch.Tensor  # (2,)
    cos_spread_two: float


def _snr(W: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """Mean |w_j| over j in A over the root-mean-square w_j off A (pattern coordinates; Lemma 15's T_j)."""
    mask = torch.zeros(W.shape[-1], dtype=torch.bool)
    mask[A] = True
    T = W.abs()
    return T[..., mask].mean((-1, -2)) / T[..., ~mask].pow(2).mean((-1, -2)).sqrt()


def parity_program(groups: list[Group], size: ParitySizes, run, *, stream: str = "parity", **stage) -> tuple[
        dict[str, GroupResult], Diagnostics]:
    """E.1.1 (and the variants of E.2) for every group and seed as one batched program: replica 2 r with input
    structure and 2 r + 1 without, sharing A and the initialisation; each seed of each group its own named stream
    (``run.generator(stream, group.name, seed)``) for A, the initialisation and the samples. Two full-batch steps
    (the schedule of Theorem 26), probes on the features after steps 1 and 2, then the classifier stage with the
    fixed-feature baselines (:func:`~.stage.classifier_stage`)."""
    task = SparseCodingTask(size.D, size.D, size.k, parity_set(size.k), p_o=size.p_o)
    sigma_tilde, gamma = task.sigma_tilde(), (1 - size.p_o) / 2
    inits, perps, vs, data, weighted, owners, As = [], [], [], [], [], [], []
    for group in groups:
        for s in range(group.seeds):
            g = run.generator(stream, group.name, s)
            A = task.relevant_set(g)
            net, perp = symmetric_init(size.k, size.D, group.d, size.m, sigma_tilde, gamma, g)
            inits.append(net), perps.append(perp), vs.append(_unit_direction(size.D, A)), As.append(A)
            data.append(paired_samples(task, A, size.n, size.n_test, g, group.negative_ratio))
            weighted += [group.negative_ratio is not None] * 2
            owners.append(group.name)
    device = run.device
    # float32: the steps' gradients are O(1) sums (float64 changes w^(2) by 1e-6 relative); only the step-one
    # features, whose variation is 1e-10 of their value, are evaluated in float64 (:func:`_probe_rows`)
    init = _stack_nets(inits, 2).to(dtype=torch.float32, device=device)
    v = torch.stack(vs).repeat_interleave(2, 0).to(device)
    perp_sq = torch.cat([p.pow(2).sum(-1) for p in perps]).repeat_interleave(2, 0).to(device)
    batch = {key: torch.cat([d[key] for d in data]).to(dtype=torch.float32, device=device) for key in data[0]}
    batch["alpha"] = class_weights(batch["y"], torch.tensor(weighted, device=device))
    steps = first_steps(size.k, size.m, sigma_tilde, gamma)
    one, two = two_steps(init, batch["x"], batch["y"], steps, batch["alpha"])
    cos = {"init": max_cosine(init.W, v, perp_sq), "one": max_cosine(one.W, v), "two": max_cosine(two.W, v),
           "init_min": min_abs_cosine(init.W, v, perp_sq), "two_min": min_abs_cosine(two.W, v)}
    # probes on the structured replicas: step one for balanced groups, step two for every group that asks
    probes = {}
    by_name = {g.name: g for g in groups}
    rows = {"one": [2 * r for r, name in enumerate(owners) if by_name[name].probes and by_name[name].negative_ratio
                    is None],
            "two": [2 * r for r, name in enumerate(owners) if by_name[name].probes]}
    rows["init"] = rows["one"]  # the random features at initialisation: the probe is their own optimum
    for key, net in (("init", init), ("one", one), ("two", two)):
        if rows[key]:
            probes[key] = _probe_rows(net, batch, torch.tensor(rows[key], device=device))
    rows["two_plain"] = plain_rows = [2 * r for r, name in enumerate(owners) if by_name[name].plain_steps]
    if plain_rows:
        idx = torch.tensor(plain_rows, device=device)
        sub = {key: value[idx] for key, value in batch.items()}
        sub_init = dataclasses.replace(init, W=init.W[idx], b=init.b[idx], a=init.a[idx])
        _, plain_two = two_steps(sub_init, sub["x"], sub["y"], steps)  # alpha = 1: the plain hinge
        probes["two_plain"] = _probe_rows(plain_two, sub, torch.arange(len(plain_rows), device=device))
    stage = classifier_stage(two, init, batch, k=size.k, steps=size.steps, batch=size.batch,
                             log_every=size.log_every, generator=run.generator(stream, "stage"), **stage)
    cos["net"] = max_cosine(stage.net.W, v)
    yt = batch["y_test"]
    majority = torch.maximum((yt > 0).double().mean(-1), (yt < 0).double().mean(-1)).cpu()
    results = _split_groups(groups, stage, cos, majority, probes, rows)
    first = groups[0]  # Lemmas 15 and 20 on the first group's replicas (balanced classes: the plain hinge)
    if first.negative_ratio is None:
        idx = torch.arange(2 * first.seeds, device=device)
        masks = torch.zeros(len(idx), size.D, dtype=torch.bool, device=device)
        for r in range(first.seeds):
            masks[2 * r: 2 * r + 2, As[r].to(device)] = True
        results[first.name].lemmas = {key: value.reshape(-1, 2) for key, value in lemma_coordinates(
            init, one, two, batch["x"], idx, masks, steps, gamma, sigma_tilde).items()}
    # the diagnostics of the first seed (Figure 2): weights in R^d = span(M) + complement, M = I on the first D axes
    pad = perps[0][0].shape[-1]
    cos_two_abs = cosine_to(two.W[:1].double(), v[0]).abs()

    def full(W, with_perp=False):
        rest = perps[0][0] if with_perp else torch.zeros(W.shape[0], pad, dtype=torch.float64)
        return torch.cat([W.detach().double().cpu(), rest], -1)

    diag = Diagnostics(
        W={"init": full(init.W[0], True), "one": full(one.W[0]), "two": full(two.W[0])},
        v=torch.cat([vs[0], torch.zeros(pad, dtype=torch.float64)]),
        snr_one=_snr(one.W[:2].detach().cpu(), As[0]),
        cos_spread_two=float(cos_two_abs.max() - cos_two_abs.min()))
    return results, diag


def min_abs_cosine(W: torch.Tensor, v: torch.Tensor, perp_sq: torch.Tensor | None = None) -> torch.Tensor:
    """min_i |cos(w_i, v)| per replica (R,), float64: every unit near +-v (the two antipodal clusters at the stars of
    the source's MDS pictures) when it is close to 1."""
    return cosine_to(W.double(), v.double(), perp_sq).abs().min(-1).values.cpu()


def _activation_probability(u: torch.Tensor, s: float) -> torch.Tensor:
    """Pr_xi[u + xi in (0, 1)] for xi ~ N(0, s^2): the expected indicator of the truncated ReLU's slope."""
    normal = torch.distributions.Normal(torch.zeros((), dtype=u.dtype, device=u.device), 1.0)
    return normal.cdf((1 - u) / s) - normal.cdf(-u / s)


def lemma_coordinates(init: TwoLayerNet, one: TwoLayerNet, two: TwoLayerNet, x: torch.Tensor, idx: torch.Tensor,
                      masks: torch.Tensor, steps: tuple[StepConfig, StepConfig], gamma: float, sigma_tilde: float,
                      n_beta: int = 2000) -> dict[str, torch.Tensor]:
    """Lemmas 15 and 20 on the replicas ``idx`` of the two steps (masks (R', D): A in pattern coordinates). The
    gradients are -a sum_j M_j T_j, so step 1 (lambda_w = 1/(2 eta^(1))) leaves T_j = q_j^(1)/(eta^(1) a^(0)) and
    step 2 (eta = 1, lambda_w = 1/2) T_j = q_j^(2)/a^(1). The lemmas say T_j = beta gamma/sigma~ on A, with
    beta = Pr_{phi_-A, xi}[<q_-A^(0), z_-A> + b^(0) + xi in (0, 1)] at step 1 (A.72; estimated on ``n_beta``
    training samples) and beta = Pr_xi[xi in (-b^(0), 1 - b^(0))] at step 2 (A.164). Per unit, r = mean_A T_j
    sigma~/(gamma beta); per replica: ``one_median`` and ``one_spread`` (max r/min r - 1 over the units) at step 1,
    ``two_mean`` and ``two_spread`` at step 2, float64 on the CPU (without structure gamma/sigma~ is the structured
    law's, so r measures how much of it is there)."""
    def pick(net):
        return net.W[idx].double(), net.b[idx].double(), net.a[idx].double()

    (W0, b0, a0), (W1, _, a1), (W2, _, _) = pick(init), pick(one), pick(two)
    scale = sigma_tilde / gamma
    on_A = masks.to(W0.dtype)[:, None, :]
    k = float(masks[0].sum())
    T1 = (W1 * on_A).sum(-1) / k / (steps[0].eta * a0)
    xs = x[idx, :n_beta].double()
    u = torch.einsum("rid,rnd->rni", W0 * (1 - on_A), xs) + b0[:, None, :]
    r1 = T1 * scale / _activation_probability(u, steps[0].noise_std).mean(1)
    r2 = (W2 * on_A).sum(-1) / k / a1 * scale / _activation_probability(b0, steps[1].noise_std)
    out = {"one_median": r1.median(-1).values, "one_spread": r1.max(-1).values / r1.min(-1).values - 1,
           "two_mean": r2.mean(-1), "two_spread": r2.max(-1).values / r2.min(-1).values - 1}
    return {key: value.detach().cpu() for key, value in out.items()}


def _split_groups(groups: list[Group], stage: StageResult, cos: dict, majority: torch.Tensor, probes: dict,
                  rows: dict) -> dict[str, GroupResult]:
    """The replicas of the batched program, group by group: (S, 2) per group (seed, setting)."""
    results, start = {}, 0
    for group in groups:
        stop = start + 2 * group.seeds

        def pick(t, lo=start, hi=stop):
            return t[lo:hi].reshape(-1, 2, *t.shape[1:])

        group_probes = {}
        for key, value in probes.items():
            kept = [i for i, r in enumerate(rows[key]) if start <= r < stop]
            if kept:
                group_probes[key] = value[kept]
        history = {"step": stage.history["step"]}
        for name in stage.test_acc:
            curve = stage.history[name][:, start:stop]
            history[name] = curve.reshape(curve.shape[0], -1, 2)
        results[group.name] = GroupResult(
            group=group, test_acc={key: pick(val) for key, val in stage.test_acc.items()},
            test_hinge={key: pick(val) for key, val in stage.test_hinge.items()},
            max_cos={key: pick(val) for key, val in cos.items()}, majority=pick(majority),
            probes=group_probes, history=history)
        start = stop
    return results


def _probe_rows(net: TwoLayerNet, batch: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
    """:func:`probe` on the features of the replicas ``idx``, evaluated in float64 (the step-one features vary at
    the 1e-10 scale of their value)."""
    sub = dataclasses.replace(net, W=net.W[idx], b=net.b[idx], a=net.a[idx]).to(torch.float64)
    x, xt = batch["x"][idx, :PROBE_FIT].double(), batch["x_test"][idx].double()
    return probe(sub.features(x), batch["y"][idx, :PROBE_FIT], sub.features(xt), batch["y_test"][idx])


# -- more replicas for two measurements of Experiment 1 that sit near their bounds -----------------------------
def init_cosine_replicas(size: ParitySizes, run) -> torch.Tensor:
    """max_i cos(w_i^(0), sum_A M_j) (R,) for ``size.init_replicas`` initialisations drawn as Experiment 1's are
    (stream "init cosine"; the units' component orthogonal to span(M) included): the random features' cosine over
    many more initialisations than the runs have (no training: cheap)."""
    task = SparseCodingTask(size.D, size.D, size.k, parity_set(size.k), p_o=size.p_o)
    out = []
    for r in range(size.init_replicas):
        g = run.generator("init cosine", r)
        A = task.relevant_set(g)
        net, perp = symmetric_init(size.k, size.D, size.d, size.m, task.sigma_tilde(), (1 - size.p_o) / 2, g)
        out.append(max_cosine(net.W.detach(), _unit_direction(size.D, A), perp.pow(2).sum(-1)))
    return torch.cat(out)


def probe_one_replicas(size: ParitySizes, run, unscaled: bool = False):
    """The converged probe on the step-one features (:func:`~.stage.probe`) for ``size.probe_replicas`` replicas of
    Experiment 1 with input structure (stream "probe replicas": their own A, initialisation and samples), tested on
    ``size.probe_test`` fresh samples each: test accuracy (R,). Step 1 only, batched over the replicas. With
    ``unscaled``, also the probe at the features' own scale (:func:`~.stage.unscaled_probe`) on the same features:
    a pair."""
    task = SparseCodingTask(size.D, size.D, size.k, parity_set(size.k), p_o=size.p_o)
    sigma_tilde, gamma = task.sigma_tilde(), (1 - size.p_o) / 2
    nets, parts = [], {"x": [], "y": [], "x_test": [], "y_test": []}
    for r in range(size.probe_replicas):
        g = run.generator("probe replicas", r)
        A = task.relevant_set(g)
        nets.append(symmetric_init(size.k, size.D, size.D, size.m, sigma_tilde, gamma, g)[0])
        for count, xs, ys in ((size.n, "x", "y"), (size.probe_test, "x_test", "y_test")):
            z, y = sample_patterns(task, count, A, g)
            parts[xs].append(z), parts[ys].append(y)
    device = run.device
    batch = {key: torch.stack(value).to(dtype=torch.float32, device=device) for key, value in parts.items()}
    init = _stack_nets(nets).to(dtype=torch.float32, device=device)
    one, _ = two_steps(init, batch["x"], batch["y"], first_steps(size.k, size.m, sigma_tilde, gamma))
    idx = torch.arange(size.probe_replicas, device=device)
    converged = _probe_rows(one, batch, idx)
    if not unscaled:
        return converged
    net = one.to(torch.float64)
    raw = unscaled_probe(net.features(batch["x"][:, :UNSCALED_PROBE_FIT].double()), batch["y"],
                         net.features(batch["x_test"].double()), batch["y_test"])
    return converged, raw


# -- Experiment 1, its prototype stage and the variants of E.2.1-E.2.2: the chapter's parity runs ---------------
def parity_groups(size: FeatureEmergenceSizes) -> list[Group]:
    """E.1.1 ("main") and the variants of E.2.1 (input dimension d = D and 20 D) and E.2.2 (class shares)."""
    P, V = size.parity, size.variants
    return [Group("main", P.seeds, P.d), Group("dim_small", V.seeds, V.dims[0], probes=False),
            Group("dim_large", V.seeds, V.dims[1], probes=False),
            Group("ratio_low", V.seeds, P.d, V.ratios[0], plain_steps=True),
            Group("ratio_high", V.seeds, P.d, V.ratios[1], plain_steps=True)]


def parity_experiment(size: FeatureEmergenceSizes, run) -> tuple[dict[str, GroupResult], Diagnostics]:
    """Experiment 1 and the variants of Appendix E.2.1-E.2.2, one batched program (:func:`parity_program`)."""
    return parity_program(parity_groups(size), size.parity, run)


def prototype_stage_experiment(size: FeatureEmergenceSizes, run) -> GroupResult:
    """Experiment 1's main group (the same streams: the same A, initialisation and samples) with the classifier
    stage of the chapter notes' prototype, eta_a = ``PROTOTYPE_STEP`` constant, the recipe before the tuning; the
    network only (no fixed-feature baselines)."""
    P = size.parity
    results, _ = parity_program([Group("main", P.prototype_seeds, P.d, probes=False)], P, run, eta_a=PROTOTYPE_STEP,
                                decay=False, baselines=False)
    return results["main"]


def theorem_schedule_experiment(size: FeatureEmergenceSizes, run) -> GroupResult:
    """Experiment 1's main group (the same streams) with Theorem 26's own schedule after step 2: eta = k^2/(T m^(1/3))
    for every parameter, constant, sigma_xi = 0; the network only."""
    P = size.parity
    results, _ = parity_program([Group("main", P.seeds, P.d, probes=False)], P, run,
                                eta_a=stage_step(P.k, P.m, P.steps), first_layer_factor=1.0, decay=False,
                                baselines=False)
    return results["main"]


# -- Theorem 2 where its floor is not vacuous -----------------------------------------------------------------------
@dataclasses.dataclass
class Theorem2Result:
    """Per replica (R,): the trained random-feature model's test hinge loss with its standard error over the test
    samples, the norm of its output weights, its test accuracy and training hinge; the number of features N."""

    hinge: torch.Tensor
    hinge_se: torch.Tensor
    norm: torch.Tensor
    accuracy: torch.Tensor
    train_hinge: torch.Tensor
    features: int


def theorem2_experiment(size: Theorem2Sizes, run) -> Theorem2Result:
    """Theorem 2 in its own setting: D_A^mix with parity labels, odd k, D = 16 k, p_o = 1/2, and a data-independent
    feature map into [0, 1]^N, the network's random features (2m truncated ReLUs at Theorem 26's initialisation,
    drawn before the data), with the output weights trained by full-batch gradient descent on the hinge loss
    (:func:`~feature_learning.training.first_steps.second_layer_gd`, the iterate of least training hinge), one
    replica per draw of A, features and samples (stream "theorem 2"), batched."""
    k, D, m = size.k, 16 * size.k, size.m
    task = SparseCodingTask(D, D, k, parity_set(k), p_o=0.5)
    sigma_tilde, gamma = task.sigma_tilde(), 0.25
    feats, parts = [], {"x": [], "y": [], "x_test": [], "y_test": []}
    for r in range(size.replicas):
        g = run.generator("theorem 2", r)
        A = task.relevant_set(g)
        feats.append(symmetric_init(k, D, D, m, sigma_tilde, gamma, g)[0])
        for count, xs, ys in ((size.n, "x", "y"), (size.n_test, "x_test", "y_test")):
            z, y = sample_patterns(task, count, A, g)
            parts[xs].append(z), parts[ys].append(y)
    net = _stack_nets(feats).to(device=run.device)
    data = {key: torch.stack(value).to(run.device) for key, value in parts.items()}
    with torch.no_grad():
        F, Ft = (net.features(data[key]).float() for key in ("x", "x_test"))
    y, yt = data["y"].float(), data["y_test"].float()
    a, history = second_layer_gd(F, y, torch.zeros(size.replicas, 2 * m, device=run.device), steps=size.steps,
                                 lr=size.lr)
    out = (a.unsqueeze(-2) @ Ft.transpose(-1, -2)).squeeze(-2)
    hinge = torch.clamp(1 - yt * out, min=0).double()
    return Theorem2Result(hinge=hinge.mean(-1).cpu(), hinge_se=(hinge.std(-1) / size.n_test**0.5).cpu(),
                          norm=a.double().norm(dim=-1).cpu(), accuracy=((out > 0) == (yt > 0)).double().mean(-1).cpu(),
                          train_hinge=history["best_loss"].double().cpu(), features=2 * m)


# -- Experiment 3: interval labels (E.1.2) --------------------------------------------------------------------------
@dataclasses.dataclass
class IntervalResult:
    """With structure (index 0) and without (1): the exact positive rate and gamma of the law, the test positive
    rate, the best cosine with sum_A M_j after two steps with its derived prediction and standard deviation,
    probes on the random features at initialisation and on the two-step features, and the test accuracy of the
    NTK and random-feature models."""

    pos_rate: torch.Tensor  # (2,) exact
    gamma: torch.Tensor  # (2,) exact
    test_pos_rate: torch.Tensor  # (2,)
    cos_two: torch.Tensor  # (2,)
    cos_init: torch.Tensor  # (2,): the same units at initialisation (the null of the step-2 cosines)
    cos_pred: torch.Tensor  # (2,)
    cos_sd: torch.Tensor  # (2,)
    probes: dict[str, torch.Tensor]  # "init", "two": (2,)
    test_acc: dict[str, torch.Tensor]  # "ntk", "rf": (2,) after the classifier stage's steps
    majority: torch.Tensor  # (2,) the majority rate of the test set


def interval_task(size: IntervalSizes) -> SparseCodingTask:
    """E.1.2's law with structure (``without_structure()``: all patterns at 1/2), in pattern coordinates."""
    return SparseCodingTask(size.D, size.D, size.k, interval_set(size.low, size.k), law="bernoulli", p_o=0.5,
                            p_in=size.p_in)


def interval_cosine(size: IntervalSizes, n: int) -> tuple[list[float], list[float]]:
    """The derived step-2 cosine under interval labels at sample size n and its standard deviation over samples
    (one seed), with structure and without: the finite-sample formula with the interval law's exact gamma and
    covariance (the k - 1 directions of A orthogonal to g add p_in (1 - p_in) each, the background 1/4 each)."""
    task, k = interval_task(size), size.k
    preds, sds = [], []
    for p_in, member in ((size.p_in, task), (0.5, task.without_structure())):
        var_sq = member.sigma_tilde() ** 2
        gam, v_in, v_out = float(interval_constants(k, size.low, p_in).gamma), p_in * (1 - p_in), 0.25
        g_sq = k * gam**2 / var_sq
        t_perp = ((k - 1) * v_in + (size.D - k) * v_out) / var_sq
        t_perp_sq = ((k - 1) * v_in**2 + (size.D - k) * v_out**2) / var_sq**2
        preds.append(float(second_step_cosine_general(g_sq, t_perp, n)))
        sds.append(float(second_step_cosine_sd(g_sq, t_perp, t_perp_sq, n)))
    return preds, sds


def interval_experiment(size: IntervalSizes, run) -> IntervalResult:
    """E.1.2: y = +1 iff sum_A phi~ in [low, k]; Pr[phi~_j = 1] = p_in on A and 1/2 elsewhere (with structure) or
    1/2 everywhere (without). Two full-batch steps with the theorem's schedule (gamma of the structured law, exact,
    for the initialisation scale and eta^(1), in both settings), in pattern coordinates, then probes, and the
    fixed-feature models (NTK and random features) trained by :func:`~.stage.classifier_stage` for ``steps`` steps
    with steps tuned as in Experiment 1 (``INTERVAL_NTK_STEP``, ``INTERVAL_RF_STEP``; the network is trained beside
    them but not reported: its stage is tuned for k = 5)."""
    k = size.k
    task = interval_task(size)
    exact = [interval_constants(k, size.low, p) for p in (size.p_in, 0.5)]
    gamma = float(exact[0].gamma)
    g = run.generator("interval")
    A = task.relevant_set(g)
    net, _ = symmetric_init(k, size.D, size.D, size.m, task.sigma_tilde(), gamma, g)
    data = {key: value.to(run.device) for key, value in paired_samples(task, A, size.n, size.n_test, g).items()}
    init = _stack_nets([net], 2).to(device=run.device)
    _, two = two_steps(init, data["x"], data["y"], first_steps(k, size.m, task.sigma_tilde(), gamma))
    v = _unit_direction(size.D, A).to(run.device)
    preds, sds = interval_cosine(size, size.n)
    probes = {name: probe(net_.features(data["x"]), data["y"], net_.features(data["x_test"]), data["y_test"],
                          n_fit=size.n_probe) for name, net_ in (("init", init), ("two", two))}
    cos_two, cos_init = max_cosine(two.W, v), max_cosine(init.W, v)  # before the stage trains the network
    stage = classifier_stage(two, init, data, k=k, steps=size.steps, batch=size.batch, log_every=size.steps,
                             generator=run.generator("interval", "stage"), ntk_step=INTERVAL_NTK_STEP,
                             rf_step=INTERVAL_RF_STEP)
    yt = data["y_test"]
    return IntervalResult(
        pos_rate=torch.tensor([float(e.pos_rate) for e in exact], dtype=torch.float64),
        gamma=torch.tensor([float(e.gamma) for e in exact], dtype=torch.float64),
        test_pos_rate=(yt > 0).double().mean(-1).cpu(), cos_two=cos_two, cos_init=cos_init,
        cos_pred=torch.tensor(preds, dtype=torch.float64), cos_sd=torch.tensor(sds, dtype=torch.float64),
        probes=probes, test_acc={name: stage.test_acc[name] for name in ("ntk", "rf")},
        majority=torch.maximum((yt > 0).double().mean(-1), (yt < 0).double().mean(-1)).cpu())


# -- Appendix E.2.3: the sample size ------------------------------------------------------------------------------
def source_ratio_sample(source_n: int, size: ParitySizes) -> int:
    """The sample with the source's background-to-sample ratio: (D - k)/n = (100 - 5)/source_n."""
    return round(source_n * (size.D - size.k) / (100 - 5))


def sample_size_experiment(size: FeatureEmergenceSizes, run) -> dict[int, GroupResult]:
    """Appendix E.2.3 (Table 5), keyed by the source's n: for each of its samples, our sample at the same (D - k)/n
    (:func:`source_ratio_sample`) and the source's width, one batched program each (the widths differ)."""
    out = {}
    for source_n, m in zip(size.samples.source_ns, size.samples.widths, strict=True):
        sizes = dataclasses.replace(size.parity, n=source_ratio_sample(source_n, size.parity), m=m)
        results, _ = parity_program([Group(f"n{source_n}", size.samples.seeds, size.parity.d)], sizes, run,
                                    stream="sample size")
        out[source_n] = results[f"n{source_n}"]
    return out


# -- Experiment 5: labels from a hidden representation (E.3.1) ------------------------------------------------------
@dataclasses.dataclass
class HiddenResult:
    """Units' cosines with M E[y z] after 0, 1, 2 steps (2m,), their weights in R^d for Figure 15, the direction,
    the derived prediction of the step-2 cosine with its standard deviation, probes on the initial and two-step
    features, the positive rate and the gamma used by the schedule."""

    cos: dict[str, torch.Tensor]
    W: dict[str, torch.Tensor]
    u: torch.Tensor
    cos_pred: float
    cos_sd: float
    probes: dict[str, float]
    pos_rate: float
    gamma: float


def hidden_representation_experiment(size: HiddenSizes, run) -> HiddenResult:
    """E.3.1 with the source's d, D, k and codes per label, ``size.n`` training and as many test samples, 2m units,
    in pattern coordinates (the units' component orthogonal to span(M) kept for the initial cosines). The two
    full-batch steps use the theorem's schedule with gamma = ||E[y phi~_A]|| / sqrt(k) (our choice: the source's
    gamma is one number because every relevant pattern correlates equally with the label in D_A^mix; here the
    correlations differ per pattern, and this is their root mean square). The derived cosine uses the drawn codes'
    exact covariance of y z (:func:`feature_learning.theory.feature_emergence.second_step_cosine_general`)."""
    task = HiddenRepresentationTask(size.d, size.D, size.k, size.per_label, p_o=0.5)
    g = run.generator("hidden")
    codes, labels = task.codes(g)
    A = torch.randperm(task.D, generator=g)[: task.k].sort().values
    eye = torch.eye(task.D, dtype=torch.float64)
    x, y, _ = task.sample(size.n, eye, A, codes, labels, g)
    xt, yt, _ = task.sample(size.n, eye, A, codes, labels, g)
    x, y, xt, yt = (t[None].to(run.device) for t in (x, y, xt, yt))
    sigma_tilde = task.sigma_tilde(codes)
    corr = task.label_correlation(A, codes, labels)  # E[y z] in pattern coordinates
    gamma = float(corr.norm()) * sigma_tilde / task.k**0.5
    init, perp = symmetric_init(task.k, task.D, task.d, size.m, sigma_tilde, gamma, g)
    init = init.to(device=run.device)
    one, two = two_steps(init, x, y, first_steps(task.k, size.m, sigma_tilde, gamma))
    sigma_z = task.pattern_covariance(A, codes) / sigma_tilde**2
    g_sq = float(corr @ corr)
    proj = torch.eye(task.D, dtype=torch.float64) - torch.outer(corr, corr) / g_sq
    c_perp = proj @ sigma_z @ proj  # Cov(y z) = Sigma_z - g g^T, restricted to the complement of g
    t_perp, t_perp_sq = float(torch.trace(c_perp)), float(torch.trace(c_perp @ c_perp))
    pad = torch.zeros(2 * size.m, task.d - task.D, dtype=torch.float64)
    W = {"init": torch.cat([init.W[0].detach().cpu(), perp[0]], -1),
         "one": torch.cat([one.W[0].detach().cpu(), pad], -1), "two": torch.cat([two.W[0].detach().cpu(), pad], -1)}
    u_full = torch.cat([corr, torch.zeros(task.d - task.D, dtype=torch.float64)])
    probes = {name: float(probe(net.features(x), y, net.features(xt), yt, n_fit=min(size.n, 2000))[0])
              for name, net in (("init", init), ("two", two))}
    return HiddenResult(
        cos={key: cosine_to(W[key][None], u_full)[0] for key in W}, W=W, u=u_full,
        cos_pred=float(second_step_cosine_general(g_sq, t_perp, size.n)),
        cos_sd=float(second_step_cosine_sd(g_sq, t_perp, t_perp_sq, size.n)), probes=probes,
        pos_rate=float((yt > 0).double().mean()), gamma=gamma)


# -- Experiment 5: the Gaussian hypercube mixture (E.3.2) -----------------------------------------------------------
@dataclasses.dataclass
class MixtureResult:
    """One setting of Table 6, per seed: test accuracy (S,), the best cosine of a neuron with each cluster centre at
    initialisation and after training (S, 2^k), the centres and their labels, the first-layer weights (Figure 16)."""

    d: int
    k: int
    sigma_r: float
    epochs: int
    acc: torch.Tensor
    best_init: torch.Tensor
    best: torch.Tensor
    centres: torch.Tensor
    centre_labels: torch.Tensor
    W_init: torch.Tensor
    W: torch.Tensor


def gaussian_mixture_experiment(size: MixtureSizes, run) -> list[MixtureResult]:
    """E.3.2 for each setting of ``size.experiments``: a two-layer ReLU network of width ``size.width`` (PyTorch's
    default initialisation, both layers trained) on the hypercube Gaussian mixture of eq. (290), one replica per
    seed, trained "as in typical practice" (the source's words; our choice: AdamW, logistic loss, mini-batches)."""
    out = []
    for e, (d, k, sigma_r, epochs) in enumerate(size.experiments):
        g = run.generator("mixture", e)
        S, n = size.seeds, size.n
        Ms = [orthonormal_dictionary(d, k, g, dtype=torch.float32) for _ in range(S)]
        train_set = [hypercube_mixture(n, M, sigma_r, g) for M in Ms]
        test_set = [hypercube_mixture(size.n_test, M, sigma_r, g) for M in Ms]
        x, y = (torch.stack([t[i] for t in train_set]).to(run.device) for i in (0, 1))
        xt, yt = (torch.stack([t[i] for t in test_set]).to(run.device) for i in (0, 1))
        centres, centre_labels = (torch.stack(t) for t in zip(*(hypercube_centres(M) for M in Ms), strict=True))
        net = init_torch_default(S, d, size.width, generator=g, device=run.device)
        W0 = net.W.detach().clone()
        batch = minibatches(torch.arange(n), size.batch, g)

        def loss(step, net=net, batch=batch, x=x, y=y):
            idx = batch(step).to(run.device)
            return logistic(net(x[:, idx]), y[:, idx]).mean(-1).sum()

        train(net.parameters(), loss, OptimConfig(epochs * (n // size.batch), size.lr, betas=(0.9, 0.98), warmup=0),
              description=f"mixture {e + 1}")
        with torch.no_grad():
            acc = sign_accuracy(net(xt), yt).cpu()
        W = net.W.detach().cpu()
        out.append(MixtureResult(d, k, sigma_r, epochs, acc, best_cosine_per_target(W0.cpu(), centres),
                                 best_cosine_per_target(W, centres), centres, centre_labels, W0.cpu(), W))
    return out


# -- Experiment 6: injected inputs on the digits (E.5, Algorithm 1) -------------------------------------------------
@dataclasses.dataclass
class InjectionResult:
    """The students' test accuracy against their teacher's labels over training: ``real_acc`` and ``injected_acc``
    (L, T, 2) at ``step`` (L,), per teacher (the mean over its students' initialisations) and student (the mixture
    with a share 1/2 of Gaussian inputs, digits only); the share of each class among each teacher's labels of the
    injected test inputs (T, 10). The other students (Figs. 23-24), one initialisation each for the first E
    teachers, at ``extra_step`` (L'): (L', E, K) over ``alphas`` or (L', E): ``alpha_real``/``alpha_injected`` (a
    share alpha of Gaussian inputs), ``structured_real``/``structured_acc`` (a share 1/2 of pixel-permuted digits)
    with ``structured_gauss`` (the same student on Gaussian inputs) and the share of each class among the teachers'
    labels of the permuted digits (E, 10); and (Fig. 25) ``narrow_real``/``narrow_injected`` (L', T, 2): the first two
    students at width ``narrow_width``. Those students are tested at the first and the last step only (L' = 2)."""

    step: torch.Tensor
    real_acc: torch.Tensor
    injected_acc: torch.Tensor
    injected_label_share: torch.Tensor
    alphas: tuple[float, ...] = ()
    extra_step: torch.Tensor | None = None
    alpha_real: torch.Tensor | None = None
    alpha_injected: torch.Tensor | None = None
    structured_real: torch.Tensor | None = None
    structured_acc: torch.Tensor | None = None
    structured_gauss: torch.Tensor | None = None
    structured_label_share: torch.Tensor | None = None
    narrow_width: int = 0
    narrow_real: torch.Tensor | None = None
    narrow_injected: torch.Tensor | None = None


def _train_students(width, xs, ys, tests, size, g, run, description, logs, dtype=torch.float64):
    """Students FC(``width``) on the stacked training sets xs (S, n, d), ys (S, n), one batched program in ``dtype``;
    their test accuracy over training (``logs`` records besides the first) on each (inputs (N, d), labels (S, N))
    of ``tests``: step (L,), a list of (L, S)."""
    student = init_lecun(len(xs), xs.shape[-1], width, d_out=10, generator=g, dtype=dtype, device=run.device)
    xs, tests = xs.to(dtype), [(x.to(dtype), y) for x, y in tests]

    def student_loss(step):
        return cross_entropy(student(xs), ys).mean(-1).sum()

    def log(step):
        return {str(i): argmax_accuracy(student(x), y) for i, (x, y) in enumerate(tests)}

    history = train(student.parameters(), student_loss,
                    OptimConfig(size.student_steps, size.lr, betas=(0.9, 0.98), warmup=1),
                    log_every=max(1, size.student_steps // logs), log_fn=log, description=description)
    return history["step"], [history[str(i)] for i in range(len(tests))]


def injection_experiment(size: InjectionSizes, run) -> InjectionResult:
    """Algorithm 1 / Appendix E.5 of Shi, Wei and Liang on bundled data:

    1. ``teachers`` teachers FC(m_t) (one hidden layer, quadratic activation,
       :func:`feature_learning.models.two_layer.init_lecun`; their own initialisations, a batch axis) are trained on
       digits with the regulariser R1 + R2 (eqs. (291)-(293)) on each injected source (Gaussian inputs with the
       digits' mean and covariance; the digits with one fixed permutation of their pixels, the stand-in for Tiny
       ImageNet: structured, but not the digits' structure), so that their labels there are balanced and confident;
    2. each teacher relabels digits and the injected inputs;
    3. for each teacher, students FC(m_s) train on the same number of samples: a mixture with a share alpha of
       Gaussian inputs for each alpha of ``alphas`` (Figs. 4, 22, 24), a mixture with a share 1/2 of permuted
       digits (Fig. 23), digits only. The alpha = 1/2 and digits-only students train from ``seeds``
       initialisations each (one batched program), the others from one for the first ``extra_teachers`` teachers
       (a second program, float32), and the first two again at width ``narrow_width``, one initialisation each
       (Fig. 25, a third program, float32). Their test accuracy against their teacher is tracked on fresh digits,
       fresh Gaussians and permuted fresh digits. The teachers' regulariser sees ``n_permuted_reg`` permuted
       digits.

    Deviation: the source chooses the teacher's size by the U-shaped part of a double-descent curve; here it is
    given (Algorithm 1's choice is run on its own: :func:`selection_experiment`). The steps are AdamW (our choice;
    the source does not say)."""
    g = run.generator("injection")
    digits, target = load_digits()
    train_idx, test_idx = random_split(len(digits), size.n_student, g)
    x_train, y_train, x_test = digits[train_idx], target[train_idx], digits[test_idx]
    u_train, u_test = gaussian_like(x_train, size.n_student, g), gaussian_like(x_train, size.n_injected_test, g)
    pixels = torch.randperm(x_train.shape[1], generator=g)
    p_train, p_test = x_train[:, pixels], x_test[:, pixels]
    d, classes, T = x_train.shape[1], int(target.max()) + 1, size.teachers
    teacher = init_lecun(T, d, size.teacher_width, d_out=classes, generator=g)

    def teacher_loss(step):
        reg = sum(sum(balance_and_confidence(teacher(inputs))) for inputs in (u_train, p_train[:size.n_permuted_reg]))
        return (cross_entropy(teacher(x_train), y_train.expand(T, -1)).mean(-1) + size.reg * reg).sum()

    train(teacher.parameters(), teacher_loss, OptimConfig(size.teacher_steps, size.lr, betas=(0.9, 0.98), warmup=1),
          description="teachers")
    with torch.no_grad():
        def label(inputs):
            return teacher(inputs).argmax(-1)  # (T, N): each teacher's labels

        y_x, y_xt, y_u, y_ut, y_p, y_pt = (label(t) for t in (x_train, x_test, u_train, u_test, p_train, p_test))
    n = size.n_student
    pick_real = torch.randperm(len(x_train), generator=g)
    pick_inj = torch.randperm(len(u_train), generator=g)

    def mixture(alpha, inputs, labels):  # (n, d) and (T, n): the real part, then the injected part
        k = int(round(alpha * n))
        real, injected = pick_real[: n - k], (pick_inj[:k] if inputs is u_train else pick_real[n - k:])
        return torch.cat([x_train[real], inputs[injected]]), torch.cat([y_x[:, real], labels[:, injected]], 1)

    sets = [mixture(0.5, u_train, y_u), (x_train[pick_real], y_x[:, pick_real])]
    sets += [mixture(alpha, u_train, y_u) for alpha in size.alphas] + [mixture(0.5, p_train, y_p)]

    def stacked(kinds, teachers, seeds, n_gauss):  # replicas teacher-major, then initialisations, then kinds
        xs = torch.stack([sets[k][0] for _ in range(teachers * seeds) for k in kinds]).to(run.device)
        ys = torch.stack([sets[k][1][t] for t in range(teachers) for _ in range(seeds) for k in kinds])
        reps = seeds * len(kinds)
        tests = [(inputs.to(run.device), labels[:teachers].repeat_interleave(reps, 0).to(run.device))
                 for inputs, labels in ((x_test, y_xt), (u_test[:n_gauss], y_ut[:, :n_gauss]), (p_test, y_pt))]
        return xs, ys.to(run.device), tests

    def per_teacher(curve, teachers, seeds, kinds):  # (L, replicas) -> (L, teachers, kinds): students averaged
        return curve.reshape(curve.shape[0], teachers, seeds, kinds).mean(2).cpu()

    T, S, E, A = size.teachers, size.seeds, min(size.extra_teachers, size.teachers), len(size.alphas)
    base = stacked([0, 1], T, S, size.n_injected_test)
    step, (real, gauss, _) = _train_students(size.student_width, *base, size, g, run, "students", 40)
    real, gauss = per_teacher(real, T, S, 2), per_teacher(gauss, T, S, 2)
    # the other students: float32, tested only at the start and the end (their claims read the last step)
    extra = stacked(range(2, 3 + A), E, 1, size.n_extra_test)
    step_x, (x_real, x_gauss, x_perm) = _train_students(size.student_width, *extra, size, g, run, "more students", 1,
                                                        torch.float32)
    x_real, x_gauss, x_perm = (per_teacher(c, E, 1, A + 1) for c in (x_real, x_gauss, x_perm))
    narrow = stacked([0, 1], T, 1, size.n_extra_test)
    _, (n_real, n_gauss, _) = _train_students(size.narrow_width, *narrow, size, g, run, "narrow students", 1,
                                              torch.float32)

    def share(labels):
        return torch.stack([torch.bincount(row, minlength=classes).double() / len(row) for row in labels.cpu()])

    return InjectionResult(step=step, real_acc=real, injected_acc=gauss, injected_label_share=share(y_ut),
                           alphas=tuple(size.alphas), extra_step=step_x, alpha_real=x_real[..., :A],
                           alpha_injected=x_gauss[..., :A], structured_real=x_real[..., -1],
                           structured_acc=x_perm[..., -1], structured_gauss=x_gauss[..., -1],
                           structured_label_share=share(y_pt[:E]), narrow_width=size.narrow_width,
                           narrow_real=per_teacher(n_real, T, 1, 2), narrow_injected=per_teacher(n_gauss, T, 1, 2))



# -- Algorithm 1's choice of the teacher's width and Fig. 26 (E.5.1, E.5.4) -----------------------------------------
@dataclasses.dataclass
class SelectionResult:
    """The width sweeps of Algorithm 1 and Fig. 26 on the digits. ``loss`` (R, K): each replica's teacher FC(m) test
    cross-entropy on its held-out digits at each width of ``widths``; the first ``selection`` replicas choose (the
    curve's classical minimum ``chosen``, the highest point after it ``peak`` and the lowest after that ``valley``:
    indices into ``widths``, None where there is none), the others measure. ``teacher_widths`` (F,): the teachers
    that label the Gaussian inputs (the chosen width times each factor); ``student_loss`` (F, S, K'): the students'
    test cross-entropy on fresh Gaussian inputs against their teacher's labels at each width of ``student_widths``;
    ``student_minimum`` (F,): the classical minimum of each teacher's students' mean curve (an index). ``reached`` of
    ``runs`` networks ended with a finite training loss below their initial one."""

    widths: tuple[int, ...]
    loss: torch.Tensor
    selection: int
    chosen: int
    peak: int | None
    valley: int | None
    student_widths: tuple[int, ...]
    teacher_widths: tuple[int, ...]
    student_loss: torch.Tensor
    student_minimum: tuple[int, ...]
    reached: int
    runs: int


def classical_minimum(curve: torch.Tensor) -> int:
    """Algorithm 1's "local minimum in the classical regime" of a loss curve over increasing widths: the first
    width whose loss is below the next width's (the start of the first rise); the last width if the curve never
    rises."""
    for i in range(len(curve) - 1):
        if curve[i] < curve[i + 1]:
            return i
    return len(curve) - 1


def _width_sweep(widths, replicas, x, y, steps, lr, g, device, reg_inputs=None, reg=0.0, description=""):
    """FC(m) for every m of ``widths``, ``replicas`` each, trained together on their replica's inputs x (R, n, d) and
    labels y (R, n) (cross-entropy; plus ``reg`` times R1 + R2 on ``reg_inputs``), with the chapter's teacher steps
    (AdamW, one program: the steps of one network do not depend on the others). Returns the networks and, per width
    and replica (K, R), whether the training loss ended finite and below its initial value."""
    nets = [init_lecun(replicas, x.shape[-1], w, d_out=10, generator=g, dtype=torch.float32, device=device)
            for w in widths]

    def fit_losses():
        return torch.stack([cross_entropy(net(x), y).mean(-1) for net in nets])

    def loss(step):
        total = fit_losses().sum()
        if reg_inputs is not None:
            total = total + reg * sum(sum(balance_and_confidence(net(reg_inputs))).sum() for net in nets)
        return total

    with torch.no_grad():
        start = fit_losses()
    train([p for net in nets for p in net.parameters()], loss, OptimConfig(steps, lr, betas=(0.9, 0.98), warmup=1),
          description=description)
    with torch.no_grad():
        end = fit_losses()
    return nets, (torch.isfinite(end) & (end < start)).cpu()


def selection_experiment(size: SelectionSizes, run) -> SelectionResult:
    """Algorithm 1 and Fig. 26 of Shi, Wei and Liang (E.5.1, E.5.4) on the bundled digits, every width as one
    batched program:

    1. each of ``replicas`` replicas draws its own split of the digits (``n_train`` to train on, the rest to test)
       and its own unlabelled Gaussian inputs U (``n_train`` of them, with the split's mean and covariance);
    2. teachers FC(m) train on the split's digits at every width m of ``widths`` (Algorithm 1's sweep, no
       regulariser), and their test loss on the held-out digits is recorded; the first half of the replicas chooses
       the classical minimum and the points after it, the second half measures them (so the choice does not pick
       the measurement's noise);
    3. for each factor f of ``teacher_factors``, teachers FC(round(f m)) at the chosen m train on the first
       ``student_replicas`` splits with the regulariser R1 + R2 on U (Algorithm 1's last line) and label U and
       fresh Gaussian inputs; students FC(m') of every width m' of ``student_widths`` train on U with those labels
       and are tested on the fresh inputs (Fig. 26(b)-(d)).

    The steps are the chapter's teacher and student steps (AdamW)."""
    g = run.generator("selection")
    digits, target = load_digits()
    R, S, n, device = size.replicas, size.student_replicas, size.n_train, run.device
    splits = [random_split(len(digits), n, g) for _ in range(R)]
    x = torch.stack([digits[tr] for tr, _ in splits]).float().to(device)
    y = torch.stack([target[tr] for tr, _ in splits]).to(device)
    x_test = torch.stack([digits[te] for _, te in splits]).float().to(device)
    y_test = torch.stack([target[te] for _, te in splits]).to(device)
    u = torch.stack([gaussian_like(digits[tr], n, g) for tr, _ in splits[:S]]).float().to(device)
    u_test = torch.stack([gaussian_like(digits[tr], size.n_gauss_test, g) for tr, _ in splits[:S]]).float().to(device)
    teachers, reached = _width_sweep(size.widths, R, x, y, size.teacher_steps, size.lr, g, device,
                                     description="teacher widths")
    with torch.no_grad():
        loss = torch.stack([cross_entropy(net(x_test), y_test).mean(-1) for net in teachers], -1).cpu()  # (R, K)
    h = R // 2
    chosen = classical_minimum(loss[:h].mean(0))
    peak = None if chosen == len(size.widths) - 1 else chosen + 1 + int(loss[:h, chosen + 1:].mean(0).argmax())
    valley = None if peak is None or peak == len(size.widths) - 1 else (
        peak + 1 + int(loss[:h, peak + 1:].mean(0).argmin()))
    widths_t = tuple(max(1, round(f * size.widths[chosen])) for f in size.teacher_factors)
    labellers, reached_l = _width_sweep(widths_t, S, x[:S], y[:S], size.teacher_steps, size.lr, g, device,
                                        reg_inputs=u, reg=size.reg, description="chosen teachers")
    with torch.no_grad():
        labels = torch.cat([net(u).argmax(-1) for net in labellers])  # (F S, n): teacher-major
        labels_test = torch.cat([net(u_test).argmax(-1) for net in labellers])
    F = len(widths_t)
    students, reached_s = _width_sweep(size.student_widths, F * S, u.repeat(F, 1, 1), labels, size.student_steps,
                                       size.lr, g, device, description="students")
    with torch.no_grad():
        student_loss = torch.stack([cross_entropy(net(u_test.repeat(F, 1, 1)), labels_test).mean(-1)
                                    for net in students], -1).reshape(F, S, -1).cpu()
    minima = tuple(classical_minimum(curve) for curve in student_loss.mean(1))
    flags = torch.cat([reached.flatten(), reached_l.flatten(), reached_s.flatten()])
    return SelectionResult(widths=tuple(size.widths), loss=loss, selection=h, chosen=chosen, peak=peak,
                           valley=valley, student_widths=tuple(size.student_widths), teacher_widths=widths_t,
                           student_loss=student_loss, student_minimum=minima, reached=int(flags.sum()),
                           runs=len(flags))


# -- Experiment 7: the neurons of a network trained on digits 0/1 (E.4, Figs. 3, 17-21, Table 7) --------------------
@dataclasses.dataclass
class DigitsClusterResult:
    """Replicas trained on the true labels (``real``) and on a fixed shuffle of them (``shuffled``, the null of the
    gradient cosines), each (R, ...): test accuracy (R,); at each logged ``step`` (L,) the spherical 2-means of the
    unit first-layer weights, the mean cosine of a unit with its cluster's centre ``within`` (L, R) and the cosine of
    the two centres ``centres`` (L, R); the movement of W from step 0 to ``early_step`` and from there to the end
    (R,); the six cosines of Table 7 (R, 2, 6) for the unit nearest each final centre: cos(v_c, v-bar), c = 1, 2, 3,
    then cos(v1, v2), cos(v1, v3), cos(v2, v3), v_c the mean gradient of its c-th block of ``chunk`` steps."""

    step: torch.Tensor
    early_step: int
    chunk: int
    acc: dict[str, torch.Tensor]
    within: dict[str, torch.Tensor]
    centres: dict[str, torch.Tensor]
    move_early: dict[str, torch.Tensor]
    move_late: dict[str, torch.Tensor]
    chunk_cos: dict[str, torch.Tensor]
    W: dict[str, torch.Tensor]  # (L, R, m, d): the logged weights (the MDS pictures)
    train_acc: dict[str, torch.Tensor]  # (L, R): training accuracy at the logged steps


def spherical_two_means(W: torch.Tensor, iterations: int = 30) -> tuple[torch.Tensor, torch.Tensor]:
    """2-means of the unit rows of W (R, m, d), batched over R, by cosine: starts at the first unit and the unit most
    opposed to it. Returns the labels (R, m) and the unit centres (R, 2, d); an empty cluster keeps its centre."""
    U = W / W.norm(dim=-1, keepdim=True)
    first = U[:, 0]
    far = (U @ first.unsqueeze(-1)).squeeze(-1).argmin(-1)
    C = torch.stack([first, U[torch.arange(len(U)), far]], 1)
    for _ in range(iterations):
        labels = (U @ C.transpose(1, 2)).argmax(-1)
        onehot = torch.nn.functional.one_hot(labels, 2).to(U.dtype)  # (R, m, 2)
        sums = onehot.transpose(1, 2) @ U
        norms = sums.norm(dim=-1, keepdim=True)
        C = torch.where(norms > 0, sums / norms.clamp_min(1e-30), C)
    return (U @ C.transpose(1, 2)).argmax(-1), C


def cluster_statistics(W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean cosine of each unit with its cluster's centre, cosine of the two centres), each (R,): the two numbers
    the source reports for its clusters (Figs. 20-21: "Green/Red" and "Two Centers")."""
    labels, C = spherical_two_means(W)
    U = W / W.norm(dim=-1, keepdim=True)
    own = C.gather(1, labels.unsqueeze(-1).expand(-1, -1, C.shape[-1]))
    return (U * own).sum(-1).mean(-1), (C[:, 0] * C[:, 1]).sum(-1)


def chunk_cosines(grads: torch.Tensor, chunk: int) -> torch.Tensor:
    """Table 7's six cosines from a unit's gradients (..., 3 chunk, d): the means v1, v2, v3 of three consecutive
    blocks of ``chunk`` steps, their cosines with v-bar = (v1 + v2 + v3)/3, then with each other. Shape (..., 6)."""
    v = grads.unflatten(-2, (3, chunk)).mean(-2)
    v = torch.cat([v, v.mean(-2, keepdim=True)], -2)
    v = v / v.norm(dim=-1, keepdim=True)
    pairs = ((0, 3), (1, 3), (2, 3), (0, 1), (0, 2), (1, 2))
    return torch.stack([(v[..., i, :] * v[..., j, :]).sum(-1) for i, j in pairs], -1)


def digits_cluster_experiment(size: DigitsClusterSizes, run) -> DigitsClusterResult:
    """E.4 on the bundled digits 0/1 (the source: MNIST 0/1): a two-layer ReLU network of width ``size.width``,
    Gaussian initialisation (W ~ N(0, I/d), second layer ~ N(0, 1/m), zero biases), SGD with momentum
    ``size.momentum`` and no regulariser (the source's E.4), cross-entropy, mini-batches, on centred pixels.
    ``replicas`` networks train on the labels and as many on one fixed shuffle of them, one batched program. The first
    ``3 chunk`` steps' gradients are kept for Table 7."""
    g = run.generator("digits_cluster")
    x, target = load_digits(torch.float32)
    keep = target <= 1
    x, target = x[keep], target[keep]
    train_idx, test_idx = random_split(len(target), size.n_train, g)
    mean = x[train_idx].mean(0)
    x_train, y_train, x_test, y_test = x[train_idx] - mean, target[train_idx], x[test_idx] - mean, target[test_idx]
    R, n = size.replicas, size.n_train
    shuffled = y_train[torch.randperm(n, generator=g)]
    labels = torch.stack([y_train] * R + [shuffled] * R)
    net = init_lecun(2 * R, x.shape[1], size.width, d_out=2, activation="relu", generator=g, dtype=torch.float32)
    opt = torch.optim.SGD(net.parameters(), lr=size.lr, momentum=size.momentum)
    per_epoch = n // size.batch
    steps = size.epochs * per_epoch
    order = torch.stack([torch.randperm(n, generator=g)[: per_epoch * size.batch] for _ in range(size.epochs)])
    order = order.reshape(steps, size.batch)
    log_at = sorted({0, size.early_epochs * per_epoch, *(e * per_epoch for e in size.log_epochs), steps})
    logged, grads, fitted = [], [], []
    for s in range(steps + 1):
        if s in log_at:
            logged.append(net.W.detach().clone())
            with torch.no_grad():
                fitted.append(argmax_accuracy(net(x_train), labels))
        if s == steps:
            break
        opt.zero_grad()
        cross_entropy(net(x_train[order[s]]), labels[:, order[s]]).mean(-1).sum().backward()
        if s < 3 * size.chunk:
            grads.append(net.W.grad.detach().clone())
        opt.step()
    with torch.no_grad():
        acc = argmax_accuracy(net(x_test), y_test.expand(2 * R, -1))
    Ws = torch.stack(logged)  # (L, 2R, m, d)
    stats = [cluster_statistics(W) for W in Ws]
    within, centres = torch.stack([s[0] for s in stats]), torch.stack([s[1] for s in stats])
    early = log_at.index(size.early_epochs * per_epoch)
    move_early = (Ws[early] - Ws[0]).flatten(1).norm(dim=-1)
    move_late = (Ws[-1] - Ws[early]).flatten(1).norm(dim=-1)
    # Table 7: the unit nearest each final centre, its first 3 chunk gradients
    _, C = spherical_two_means(Ws[-1])
    U = Ws[-1] / Ws[-1].norm(dim=-1, keepdim=True)
    nearest = (U @ C.transpose(1, 2)).argmax(1)  # (2R, 2): per centre, the unit of largest cosine
    G = torch.stack(grads, 1)  # (2R, 3 chunk, m, d)
    picked = torch.stack([G[r, :, nearest[r]] for r in range(2 * R)])  # (2R, 3 chunk, 2, d)
    cos6 = chunk_cosines(picked.transpose(1, 2), size.chunk)  # (2R, 2, 6)

    def split(t):
        return {"real": t[:R].cpu(), "shuffled": t[R:].cpu()}

    def split_logged(t):
        return {"real": t[:, :R].cpu(), "shuffled": t[:, R:].cpu()}

    if size.chunk not in log_at:
        raise ValueError("the end of Table 7's first block must be a logged step (log_epochs)")
    return DigitsClusterResult(step=torch.tensor(log_at), early_step=size.early_epochs * per_epoch, chunk=size.chunk,
                               acc=split(acc),
                               within=split_logged(within), centres=split_logged(centres),
                               move_early=split(move_early), move_late=split(move_late), chunk_cos=split(cos6),
                               W=split_logged(Ws), train_acc=split_logged(torch.stack(fitted)))

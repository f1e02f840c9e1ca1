"""From the runs to the claims and glue of the chapter: seed means and standard errors of the groups, the
estimates with their nulls, the derived predictions at the source's sizes, the tables, and the source map."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import torch

from feature_learning.experiments.feature_emergence.runs import (
    DigitsClusterResult,
    GroupResult,
    InjectionResult,
    SelectionResult,
    Theorem2Result,
    interval_cosine,
    source_ratio_sample,
)
from feature_learning.experiments.feature_emergence.sizes import (
    BASELINE_TUNING,
    FIRST_LAYER_FACTOR,
    NTK_STEP,
    PROTOTYPE_STEP,
    RF_STEP,
    SECOND_LAYER_STEP,
    SOURCE_N,
    FeatureEmergenceSizes,
    IntervalSizes,
    ParitySizes,
    Theorem2Sizes,
)
from feature_learning.experiments.feature_emergence.stage import stage_step
from feature_learning.measure.statistics import Estimate, Null, difference, mean_se
from feature_learning.theory.feature_emergence import (
    mixture_cosine_and_sd,
)


def accuracy_se(values: torch.Tensor, n_test: int | None, *others: torch.Tensor) -> tuple[float, float]:
    """:func:`~feature_learning.measure.statistics.mean_se` of a seed-wise accuracy (or a difference of accuracies,
    ``values``); with a single seed, where the standard error over training runs is undefined, the binomial standard
    error over the ``n_test`` test samples of ``values`` and of each accuracy in ``others`` it is a difference of (a
    lower bound: it omits the variation between training runs; nan without ``n_test``)."""
    mean, se = mean_se(values)
    if math.isnan(se) and n_test:
        parts = [values] if not others else others
        se = math.sqrt(sum(float(p.flatten()[0]) * (1 - float(p.flatten()[0])) for p in parts) / n_test)
    return mean, se


def group_summary(result: GroupResult, n_test: int | None = None) -> dict[str, tuple[float, float]]:
    """Seed means and standard errors of a group, with structure unless the key says ``_nostruct``: accuracies and
    hinge losses of the three models, the network's gaps to the fixed-feature models (and to the better of each and
    the majority rate), accuracies minus the majority rate, the best cosines, the probes. With one seed the
    accuracies' standard errors are binomial over ``n_test`` test samples (:func:`accuracy_se`)."""
    out = {}
    acc, majority = result.test_acc, result.majority
    for key, values in acc.items():
        out[key] = accuracy_se(values[:, 0], n_test)
        out[f"{key}_nostruct"] = accuracy_se(values[:, 1], n_test)
        out[f"{key}_minus_majority"] = accuracy_se(values[:, 0] - majority[:, 0], n_test, values[:, 0])
        out[f"{key}_nostruct_minus_majority"] = accuracy_se(values[:, 1] - majority[:, 1], n_test, values[:, 1])
        out[f"hinge_{key}"] = mean_se(result.test_hinge[key][:, 0])
    for key in ("ntk", "rf") if "rf" in acc else ():
        net, other = acc["net"][:, 0], acc[key][:, 0]
        out[f"net_beats_{key}"] = accuracy_se(net - other, n_test, net, other)
        best = torch.maximum(other, majority[:, 0].to(other.dtype))
        out[f"net_leads_{key}"] = accuracy_se(net - best, n_test, net, best)
    for key, values in result.max_cos.items():
        out[f"cos_{key}"] = mean_se(values[:, 0])
        out[f"cos_{key}_nostruct"] = mean_se(values[:, 1])
    for key, values in result.probes.items():
        out[f"probe_{key}"] = mean_se(values)
    out["majority"] = mean_se(result.majority[:, 0])
    out["structure_drop"] = accuracy_se(acc["net"][:, 0] - acc["net"][:, 1], n_test, acc["net"][:, 0],
                                        acc["net"][:, 1])
    return out


CHANCE = 0.5  # the untrained network: g^(0) = 0 exactly, so every prediction is a tie (balanced classes)
RF_NULL = "random features: the same network's first layer frozen at initialisation (this run)"


def estimate(summary: dict[str, tuple[float, float]], key: str, null: Null | None = None) -> Estimate:
    """A seed mean of :func:`group_summary` with its standard error and the null it is to beat (no standard error
    where it is undefined: nan in the summary, None in the ledger)."""
    mean, se = summary[key]
    return Estimate(mean, None if math.isnan(se) else se, null)


def lead_bound(negative_ratio: float | None) -> float:
    """The network's required lead over the better of a fixed-feature model and the majority class: 0.10 (the
    notes' margin), or half the room above the majority rate where that is smaller (at a share 0.9 of class -1 no
    model can lead the majority class by more than 0.10). Fixed by the group's class share, not by a run."""
    majority = 0.5 if negative_ratio is None else max(negative_ratio, 1 - negative_ratio)
    return round(min(0.10, (1 - majority) / 2), 6)


def group_estimates(summary: dict[str, tuple[float, float]]) -> dict[str, Estimate]:
    """The reproduction claims of a group of the parity program, each with its null measured in the same run or
    exact: the network's accuracy against random features'; its lead over the better of a fixed-feature model and
    the majority class against the same lead of the trivial predictor (½ or the majority class); the
    step-2 cosine against the same units at initialisation; the drop without input structure against the
    untrained network's (0); the probe on the step-2 features against the probe on the random features (where
    fitted); the fixed-feature models' accuracy against chance."""
    majority = summary["majority"][0]
    out = {"net": estimate(summary, "net", Null(summary["rf"][0], RF_NULL)),
           "hinge_net": estimate(summary, "hinge_net", Null(1.0, "the untrained network ($g = 0$: hinge 1, exact)")),
           "cos_two": estimate(summary, "cos_two", Null(summary["cos_init"][0], "the same units at initialisation")),
           "structure_drop": estimate(summary, "structure_drop",
                                      Null(0.0, "the untrained network (½ with and without structure)"))}
    for name in ("ntk", "rf"):
        out[f"net_leads_{name}"] = estimate(summary, f"net_leads_{name}", Null(
            max(CHANCE, majority) - max(summary[name][0], majority),
            "the trivial predictor (the untrained network's ½, or the majority class) in place of the network"))
        out[name] = estimate(summary, name, Null(CHANCE, "chance (the untrained model)"))
    if "probe_two" in summary:
        null = (Null(summary["probe_init"][0], "a converged probe on the random features at initialisation")
                if "probe_init" in summary else Null(summary["rf"][0], RF_NULL))
        out["probe_two"] = estimate(summary, "probe_two", null)
    out["nostruct_minus_majority"] = estimate(summary, "net_nostruct_minus_majority",
                                              Null(0.0, "the majority-class predictor"))
    if "probe_one" in summary:
        gain = difference(estimate(summary, "probe_two"), estimate(summary, "probe_one"))
        out["probe_gain"] = dataclasses.replace(gain, null=Null(0.0, "features that step 2 leaves unchanged"))
    return out


SOURCE_ROUNDING = 0.0005  # the source prints cosines to three decimals
OFFSET_NOTE = ("the source's printed cosine is farther from the derived prediction at its own sample than its "
               "rounding and three sd of a five-seed mean allow; the prediction is exact arithmetic, so this is fixed "
               "before any run (the printed values sit below it in Tables 1, 2 and 5 and at $d = 2000$, above it at "
               "$d = 100$, so no single account, such as a step 1 that kept part of $w^{(0)}$, covers every table)")


def source_cosine(n: int, source: float, negative_ratio: float | None = None, *,
                  not_reproduced: str | None = None) -> dict:
    """The derived step-2 cosine at the source's D = 100, sample n and five seeds, against the source's printed
    cosine: the ledger arguments of a ``close_to`` prediction with tolerance ``SOURCE_ROUNDING`` plus three sd of the
    five-seed mean. Exact arithmetic (no run): the caller declares the outcome (``not_reproduced``), fixed."""
    pred, sd = cosine_prediction(dataclasses.replace(ParitySizes(), D=100), n, 5, negative_ratio)
    return {"kind": "prediction", "source_value": source, "measured": pred, "atol": SOURCE_ROUNDING + 3 * sd,
            "not_reproduced": not_reproduced}


def interval_source_cosine(size: IntervalSizes, setting: int, source: float, *,
                           not_reproduced: str | None = None) -> dict:
    """The same comparison under interval labels (E.1.2) at the source's n = 50,000, with structure (``setting``
    0) or without (1): :func:`~.runs.interval_cosine`, exact arithmetic; the caller declares the outcome."""
    preds, sds = interval_cosine(size, SOURCE_N)
    return {"kind": "prediction", "source_value": source, "measured": preds[setting],
            "atol": SOURCE_ROUNDING + 3 * sds[setting] / math.sqrt(5), "not_reproduced": not_reproduced}


def random_direction_cosine(D: int, seeds: int) -> tuple[float, float]:
    """E|cos| of a uniformly random direction in D dimensions with a fixed one, sqrt(2/(pi D)) (Gaussian
    approximation), and the sd of a mean over ``seeds`` seeds, sqrt((1 - 2/pi)/(D seeds)): after two steps without
    input structure every unit follows the empirical E[yx], pure sampling noise with an isotropic covariance."""
    return math.sqrt(2 / (math.pi * D)), math.sqrt((1 - 2 / math.pi) / D / seeds)


def nostruct_source_cosine(source: float) -> dict:
    """The derived best cosine after two steps without input structure at the source's D = 100 and five seeds (a
    random direction's, :func:`random_direction_cosine`) against the source's printed value: the same tolerance
    as :func:`source_cosine`. Exact arithmetic."""
    mean, sd = random_direction_cosine(100, 5)
    return {"kind": "prediction", "source_value": source, "measured": mean, "atol": SOURCE_ROUNDING + 3 * sd}


def theorem2_floor(N: int, B: float, k: int, p_o: float = 0.5) -> float:
    """Theorem 2's floor on the hinge loss of a linear model with ||w|| <= B on N features in [-1, 1]:
    p_o (1 - sqrt(2N) B/2^k)."""
    return p_o * (1 - math.sqrt(2 * N) * B / 2**k)


def theorem2_claim(result: Theorem2Result, size: Theorem2Sizes) -> dict:
    """The ledger arguments of the check of Theorem 2 at k = ``size.k``: the trained random-feature model's test
    hinge minus the floor at its own measured norm, mean over the replicas (se: the test samples' standard errors,
    combined); the null is a data-dependent feature, the parity on A itself (N = 1, B = 1), whose hinge is 0
    exactly (y times it is 1 on every input), so it is below any floor under 1/2."""
    floors = torch.tensor([theorem2_floor(result.features, float(B), size.k) for B in result.norm],
                          dtype=torch.float64)
    gaps = result.hinge - floors
    se = float(result.hinge_se.pow(2).sum().sqrt()) / len(gaps)
    null = Null(-theorem2_floor(1, 1.0, size.k), "a data-dependent feature, the parity on $A$ itself ($N = 1$, "
                "$B = 1$): hinge 0, exact")
    return {"kind": "verification", "source_value": 0, "bound": 0.0,
            "measured": Estimate(float(gaps.mean()), se, null)}


def lemma_sampling_sd(size: ParitySizes, seeds: int) -> float:
    """The standard deviation of the mean over A of E^[y z_j] over its population value gamma/sigma~, for a mean over
    ``seeds`` samples of n: under D_A^mix the mean over A of y z_j is y (S - k/2)/(k sigma~) with the count S, whose
    variance is p_o k/4 + (1 - p_o) k^2/4 (uniform, or all k patterns together), so the relative sd is
    sqrt(Var S/k^2 - gamma^2)/gamma/sqrt(n seeds) (p_o = 1/2). Exact arithmetic: every unit's ratio in
    :func:`lemma_estimates` shares this sampling error."""
    k, p, gamma = size.k, size.p_o, (1 - size.p_o) / 2
    var_count = p * k / 4 + (1 - p) * k**2 / 4
    return math.sqrt(var_count / k**2 - gamma**2) / gamma / math.sqrt(size.n * seeds)


def lemma_estimates(result: GroupResult, size: ParitySizes) -> dict[str, Estimate]:
    """Lemmas 15 and 20 from the first group's replicas (:func:`~.runs.lemma_coordinates`): the units' coordinates
    on A over beta gamma/sigma~ (step 1: median over the units; step 2: mean), seed means with the sampling error
    they share (:func:`lemma_sampling_sd`) and the same without input structure as the null; the spread of step 2's
    ratio over the units (worst seed) against step 1's spread in the same replicas."""
    lem = result.lemmas
    se = lemma_sampling_sd(size, lem["two_mean"].shape[0])
    out = {}
    for key, name in (("one_median", "one"), ("two_mean", "two")):
        out[name] = Estimate(float(lem[key][:, 0].mean()), se, Null(
            float(lem[key][:, 1].mean()), "the same replicas without input structure"))
    out["spread"] = Estimate(float(lem["two_spread"][:, 0].max()), None, Null(
        float(lem["one_spread"][:, 0].max()), "the same ratio after step 1 (its beta depends on $w^{(0)}$)"))
    return out


def tuning_table() -> tuple[list[str], list[list[str]]]:
    """The baseline step sweep (``BASELINE_TUNING``) as a table, the chosen steps marked."""
    rows = [[f"{step:g}", f"{ntk:.3f}" + (" (chosen)" if step == NTK_STEP else ""),
             f"{rf:.3f}" + (" (chosen)" if step == RF_STEP else "")] for step, (ntk, rf) in BASELINE_TUNING.items()]
    return ["SGD step", "NTK test accuracy", "RF test accuracy"], rows


STAGE_REVISED = (r"the classifier stage's output step raised from the stage fixed before the runs ($\eta_a = 100$, "
                 r"constant) to $\eta_a = 1800$ with a cosine decay of every step, because under the first stage "
                 "the seeds stayed on a plateau below 0.99 at step $T$ (at no seed of the ci sweep does it reach "
                 "0.99); the original form stays as net_with_structure_prototype")
THM2_NOT_TESTABLE = (r"Theorem 2's floor $p_o(1 - \sqrt{2N}B/2^k)$ is negative for $N = 600$ features at $k = 5$ "
                     r"once $B \ge 32/\sqrt{1200} = 0.924$: vacuous at simulation scale, and an untrained model "
                     "(hinge 1) passes any floor below 1")
THM1_NOT_TESTABLE = (r"Theorem 1 needs $m \ge k^{12}/\epsilon^{3/2}$ units, $2.4 \times 10^8$ at $k = 5$, "
                     r"$\epsilon = 1$, against 600 here: it promises nothing at simulation scale; its schedule's "
                     "accuracy is shown, not tested")


def prototype_claim(result: GroupResult, n_test: int, source_value: float) -> dict:
    """The ledger arguments of the network-accuracy claim under the prototype stage
    (:func:`~.runs.prototype_stage_experiment`): it holds at the source's sample size (every seed of the stored
    `full` run reaches 0.99) and fails at `ci`'s (no seed does), so it is declared to hold at the source's scale
    only; the rate counts this run's seeds that reach 0.99."""
    acc = result.test_acc["net"][:, 0]
    passes, runs = int((acc >= 0.99).sum()), acc.numel()
    mean, se = accuracy_se(acc, n_test)
    return {"id": "net_with_structure_prototype", "kind": "reproduction", "source_value": source_value,
            "statement": r"network test accuracy with the classifier stage fixed before the runs ($\eta_a = 100$, "
                         "constant; notes: ≥ 0.99)", "bound": 0.99,
            "measured": Estimate(mean, se, Null(CHANCE, "the untrained network ($g = 0$: accuracy ½)")),
            "source_scale_only": "the prototype stage reaches 0.99 at the source's $n = 50{,}000$ (5 of 5 seeds of "
                                 "the stored full run) and at no seed of the ci sweep", "rate": (passes, runs)}


def cosine_prediction(size: ParitySizes, n: int, seeds: int, negative_ratio: float | None = None) -> tuple[
        float, float]:
    """The derived step-2 cosine at sample size n and the standard deviation of a mean over ``seeds`` seeds
    (:func:`feature_learning.theory.feature_emergence.mixture_cosine_and_sd`, enumerated from the law)."""
    rho = None if negative_ratio is None else Fraction(negative_ratio).limit_denominator(1000)
    cos, sd = mixture_cosine_and_sd(size.k, size.D, n, size.p_o, rho)
    return cos, sd / math.sqrt(seeds)


# -- what the chapter glues and draws -------------------------------------------------------------------------------
def summary_values(prefix: str, summary: dict[str, tuple[float, float]]) -> dict[str, float]:
    """A group summary as glue values: ``<prefix>_<key>`` (the seed mean) and ``<prefix>_<key>_se``."""
    out = {}
    for key, (mean, se) in summary.items():
        out[f"{prefix}_{key}"] = mean
        out[f"{prefix}_{key}_se"] = se
    return out


def seed_phrases(name: str, seeds: int) -> dict[str, str]:
    """How the prose and the captions name a number of seeds, so that one seed reads as one: ``<name>_count`` ("one
    seed", "5 seeds"), ``<name>_each`` ("one seed each"), ``<name>_mean`` ("one seed", "mean over 5 seeds") and
    ``<name>_bars`` (a curve figure's spread: "one seed, so no error bars", "mean over 5 seeds, error bars one
    standard deviation")."""
    count = "one seed" if seeds == 1 else f"{seeds} seeds"
    return {f"{name}_count": count, f"{name}_each": f"{count} each",
            f"{name}_mean": count if seeds == 1 else f"mean over {count}",
            f"{name}_bars": "one seed, so no error bars" if seeds == 1
            else f"mean over {count}, error bars one standard deviation"}


def size_values(size: FeatureEmergenceSizes) -> dict[str, float | str]:
    """The sizes the prose names, and the numbers of seeds as phrases (:func:`seed_phrases`)."""
    P = size.parity
    n_half, n_fifth = (source_ratio_sample(n, P) for n in size.samples.source_ns)
    phrases = (seed_phrases("seeds", P.seeds) | seed_phrases("variant_seeds", size.variants.seeds)
               | seed_phrases("sample_seeds", size.samples.seeds) | seed_phrases("mix_seeds", size.mixture.seeds))
    return phrases | {"size_d": P.d, "size_D": P.D, "size_n": P.n, "size_T": P.steps, "size_width": 2 * P.m,
            "size_batch": P.batch, "seeds": P.seeds, "variant_seeds": size.variants.seeds,
            "dim_small": size.variants.dims[0], "dim_large": size.variants.dims[1], "sample_seeds": size.samples.seeds,
            "n_half": n_half, "n_fifth": n_fifth, "small_m": size.samples.widths[1],
            "ratio_source": (100 - 5) / SOURCE_N, "ratio_ours": (P.D - P.k) / P.n,
            "interval_n": size.interval.n, "interval_width": 2 * size.interval.m, "hidden_n": size.hidden.n,
            "hidden_width": 2 * size.hidden.m, "inj_teacher_width": size.injection.teacher_width,
            "mix_seeds": size.mixture.seeds, "mix_n": size.mixture.n, "inj_seeds": size.injection.seeds,
            "inj_teachers": size.injection.teachers, "t2_k": size.theorem2.k, "t2_D": 16 * size.theorem2.k,
            "t2_n": size.theorem2.n, "t2_n_test": size.theorem2.n_test, "t2_replicas": size.theorem2.replicas,
            "t2_steps": size.theorem2.steps, "t2_lr": size.theorem2.lr,
            "eta_a": SECOND_LAYER_STEP, "first_layer_factor": FIRST_LAYER_FACTOR, "rf_step": RF_STEP,
            "ntk_step": NTK_STEP, "prototype_step": PROTOTYPE_STEP,
            "stage_eta": FIRST_LAYER_FACTOR * stage_step(P.k, P.m, P.steps), "half_width": P.m,
            "init_replicas": P.init_replicas}


TABLE_COLUMNS = [("net", "Network"), ("ntk", "NTK"), ("rf", "RF"), ("one", "One Step"), ("two", "Two Step"),
                 ("net_nostruct", "Network w/o structure"), ("cos_two", "cos (two steps)")]


def source_table(rows: dict[str, dict], columns=None) -> tuple[list[str], list[list[str]]]:
    """Rows of the source's tables (label -> values) as (columns, rows) for ``chapter.glue_table``: accuracies in
    percent and cosines as the source prints them."""
    columns = columns or TABLE_COLUMNS

    def cell(key, value):
        if key.startswith("cos"):
            return f"{value:.3f}"
        text = f"{100 * value:.2f}".rstrip("0")
        return text + "0" if text.endswith(".") else text

    return ["setting"] + [name for _, name in columns], [[label] + [cell(c, values[c]) for c, _ in columns]
                                                         for label, values in rows.items()]



# -- the source map: every result of the source the chapter rests on -------------------------------------------------
def _ids(*prefixes: str, suffixes: tuple[str, ...]) -> list[str]:
    return [f"{p}_{s}" for p in prefixes for s in suffixes]


VARIANT_CLAIMS = ("net", "net_beats_ntk", "net_beats_rf")
def injection_more(result: InjectionResult) -> dict[str, tuple[float, float]]:
    """Mean and standard error over teachers of the final-step differences of Figs. 23-25: per share alpha of
    Gaussian inputs the digits part minus the Gaussian part (``alpha<100 alpha>_gap``) and the digits-only student
    minus the mixture (``alpha<..>_lower``); the permuted-digits part minus the Gaussian part of the alpha = 1/2
    student (``structured_above``) and the digits part minus the permuted part (``structured_below``); the
    separation of the two parts at the students' width minus at ``narrow_width`` (``width_gap``)."""
    E = result.alpha_real.shape[1]
    only = result.real_acc[-1, :E, 1]
    out = {}
    for i, alpha in enumerate(result.alphas):
        real, gauss = result.alpha_real[-1, :, i], result.alpha_injected[-1, :, i]
        out[f"alpha{round(100 * alpha)}_gap"] = mean_se(real - gauss)
        out[f"alpha{round(100 * alpha)}_lower"] = mean_se(only - ((1 - alpha) * real + alpha * gauss))
    out["structured_above"] = mean_se(result.structured_acc[-1] - result.injected_acc[-1, :E, 0])
    out["structured_below"] = mean_se(result.structured_real[-1] - result.structured_acc[-1])
    wide = result.real_acc[-1, :, 0] - result.injected_acc[-1, :, 0]
    out["width_gap"] = mean_se(wide - (result.narrow_real[-1, :, 0] - result.narrow_injected[-1, :, 0]))
    return {key: (float(m), float(se)) for key, (m, se) in out.items()}



SELECTION_RISE = 0.02  # nats of test cross-entropy: a rise or a fall smaller than this is not visible on a loss plot


def selection_values(result: SelectionResult) -> dict[str, tuple[float, float] | float | int]:
    """Algorithm 1 and Fig. 26 from :func:`~.runs.selection_experiment`: on the measuring half of the replicas (those
    that did not choose the widths), the mean and standard error over replicas of the rise of the teachers' test
    loss from the classical minimum to the peak after it (``rise``) and of its fall from the peak to the valley after
    it (``fall``), each 0 where the choosing half found no such width; the chosen width ``m_sel``, the peak's and the
    valley's widths (0: none), the students' teachers' widths and the width at the classical minimum of each
    teacher's students (``student_min_<i>``); ``near``: |log2| of the first teacher's students' minimum over the
    chosen width, and ``widest``: the same for the widest student (the minimum of a curve that never rises)."""
    measuring = result.loss[result.selection:]
    zero = torch.zeros(len(measuring), dtype=measuring.dtype)
    i, p, v = result.chosen, result.peak, result.valley
    rise = zero if p is None else measuring[:, p] - measuring[:, i]
    fall = zero if v is None else measuring[:, p] - measuring[:, v]
    widths, students = result.widths, result.student_widths
    m_sel = widths[i]
    out = {"rise": mean_se(rise), "fall": mean_se(fall)}
    out = {key: (float(m), float(se)) for key, (m, se) in out.items()}
    out |= {"m_sel": m_sel, "m_peak": 0 if p is None else widths[p], "m_valley": 0 if v is None else widths[v],
            "near": abs(math.log2(students[result.student_minimum[0]] / m_sel)),
            "widest": abs(math.log2(students[-1] / m_sel))}
    for j, (t, k) in enumerate(zip(result.teacher_widths, result.student_minimum, strict=True)):
        out |= {f"teacher_{j}": t, f"student_min_{j}": students[k]}
    return out


def digits_cluster_values(result: DigitsClusterResult, target: float) -> dict[str, tuple[float, float]]:
    """Mean and standard error over the networks trained on the labels (``real``) or their shuffle (``shuffled``):
    at the end and at initialisation, the within-cluster cosine and the two centres' cosine; the movement of W in
    the first epochs over that after; Table 7's smallest cosine (mean over the two units) and the mean of the
    three cos(v_c, v-bar); the training accuracy at the end of Table 7's first block; and ``reached``: networks on
    the labels whose test accuracy is at least ``target``."""
    out = {}
    for key in ("real", "shuffled"):
        chunks = result.chunk_cos[key]
        first = int((result.step == result.chunk).nonzero()[0])  # the end of Table 7's first block
        out |= {f"{key}_within": mean_se(result.within[key][-1]), f"{key}_within_init": mean_se(result.within[key][0]),
                f"{key}_centres": mean_se(result.centres[key][-1]),
                f"{key}_centres_init": mean_se(result.centres[key][0]),
                f"{key}_move_ratio": mean_se(result.move_early[key] / result.move_late[key]),
                f"{key}_chunk_min": mean_se(chunks.min(-1).values.mean(-1)),
                f"{key}_chunk_mean": mean_se(chunks[..., :3].mean((-1, -2))),
                f"{key}_train_first_block": mean_se(result.train_acc[key][first])}
    out = {k: (float(m), float(se)) for k, (m, se) in out.items()}
    out["reached"] = (int((result.acc["real"] >= target).sum()), len(result.acc["real"]))
    return out


SOURCE_MAP = [
    {"id": "thm1", "where": "Thm 1 = Thm 26", "claims": ["theorem_schedule"],
     "what": "gradient descent on a two-layer network learns every labelling of the relevant count (parity here)",
     "note": "its own schedule after step 2 stalls near the best halfspace, 27/32; Table 1's 100% is reached with "
             "the chapter's tuned classifier stage (net_with_structure)"},
    {"id": "lemma5", "where": "Lemma 5 / A.2", "claims": ["lemma5_exact"],
     "what": r"$3(k+1)$ truncated-ReLU units along $\sum_A M_j$ fit any labelling, with bounded weights"},
    {"id": "mixture_law", "where": "App. C", "claims": ["mixture_gamma"],
     "what": r"$\mathcal{D}_A^{\mathrm{mix}}$ has balanced classes and $\gamma = (1 - p_o)/2$"},
    {"id": "thm2", "where": "Thm 2, Cor. 3", "claims": ["thm2_floor", "ntk_hinge", "rf_hinge"],
     "what": r"fixed features need exponentially many features or norm: hinge $\ge p_o(1 - \sqrt{2N}B/2^k)$",
     "note": r"checked at $k = 13$, $D = 208$ (odd $k \le D/16$, as the theorem asks), where the floor at 600 "
             r"random features stays positive up to $B = 236$; at Table 1's $k = 5$ it is vacuous for "
             r"$B \ge 0.924$ (ntk_hinge, rf_hinge). Cor. 3's kernel version has unstated polynomials: not checked"},
    {"id": "lemma6", "where": "Lemma 6 = Lemmas 15-18 (B.4)", "claims": ["lemma15_coordinates"],
     "what": r"step 1: each unit's gradient has coordinates $T_j \approx \beta\gamma/\tilde\sigma$ on $A$, "
             r"with $\beta$ the unit's activation probability over the background, and small ones off $A$",
     "note": r"the lemma's error term is vacuous at these sizes ($\epsilon_e > 1$); the tolerance is ours"},
    {"id": "lemmas19_22", "where": "Lemmas 19-22 (B.5)", "claims": ["lemma20_coordinates", "lemma20_common_beta"],
     "what": r"step 2: each unit's gradient is $\beta\gamma/\tilde\sigma$ on $A$ with "
             r"$\beta = \Pr_\xi[\xi \in (-b^{(0)}, 1 - b^{(0)})]$, "
             "which depends on the bias alone, not on the weights",
     "note": "the finite-sample cosine that follows (derived here, not in the source) is tested under Tables 1, "
             "4, 5 and Fig. 15"},
    {"id": "thm4", "where": "Thm 4", "claims": [],
     "what": "without input structure no polynomial SQ learner (mini-batch SGD included) learns the parity",
     "not_testable": r"an asymptotic SQ bound: at $D = 100$, $k = 5$ it asks for $\frac12\binom{100}{5}^{1/3} = "
                     r"211$ queries or $1/\tau \ge 211$, while a query estimated from $n = 50{,}000$ samples has "
                     r"$1/\tau \approx \sqrt{n} = 224$: borderline, so no run at this size confirms or contradicts "
                     "it; the failure without structure is measured under Table 1 (net_without_structure, "
                     "structure_drop)"},
    {"id": "table1_accuracy", "where": "Table 1 / Fig. 1 (E.1.1)",
     "claims": ["net_with_structure", "net_with_structure_prototype", "net_hinge", "net_beats_ntk", "net_beats_rf",
                "ntk_accuracy", "rf_accuracy", "rf_at_optimum", "structure_drop", "net_without_structure",
                "ntk_without_structure", "rf_without_structure"],
     "what": "network 100% against NTK 86.4% and RF 76.0%; 52% without input structure",
     "note": r"the source gives no step after step 2, so every classifier stage here is ours. The stage fixed before "
             r"the runs ($\eta_a = 100$, constant; net_with_structure_prototype) reaches 0.99 at the source's "
             "n = 50,000 and at no seed of the ci sweep, so this result is not reproduced below the "
             r"source's scale; the stage tuned after it ($\eta_a = 1800$ with a cosine decay) is net_with_structure"},
    {"id": "table1_cos_two", "where": "Table 1 / Fig. 2 (E.1.1)",
     "claims": ["cos_two_steps", "cos_two_formula", "cos_init_formula"],
     "what": r"after two steps the weights align with $\sum_A M_j$ (best cosine at least 0.99; 0.114 at "
             "initialisation)"},
    {"id": "table1_cos_two_printed", "where": "Table 1 (E.1.1)", "claims": ["cos_two_source"],
     "what": "the printed best cosine after two steps, 0.997, at the source's n = 50,000"},
    {"id": "table1_cos_nostruct", "where": "Table 1 (E.1.1)",
     "claims": ["cos_two_no_structure", "cos_two_no_structure_source"],
     "what": "without input structure the best cosine after two steps is 0.253"},
    {"id": "table1_cos_one", "where": "Table 1 / Fig. 2 (E.1.1)", "claims": ["cos_one_step"],
     "what": "after one step the best cosine is 0.848",
     "note": r"with the stated $\lambda_w = 1/(2\eta)$ step 1 erases $w^{(0)}$ and the cosine is ≈ 0.99 at every seed"},
    {"id": "table1_two_step", "where": "Table 1 / Sec. 5.2", "claims": ["probe_two_steps"],
     "what": "the best classifier on the step-two features: 100%"},
    {"id": "table1_one_step", "where": "Table 1 / Sec. 5.2",
     "claims": ["probe_step_gain", "probe_one_halfspace", "probe_one_unscaled"],
     "what": "the best classifier on the step-one features: 52%, far below step two",
     "note": "a probe at the features' own scale scores near chance, as the source's 52% (probe_one_unscaled); a "
             "converged probe finds the best halfspace, 27/32, at every seed: the gap to step two is not reproduced"},
    {"id": "table2", "where": "Table 2 (E.1.2)",
     "claims": ["interval_two_step", "interval_cos_two", "interval_cos_no_structure", "interval_cos_no_structure_notes",
                "interval_cos_formula_with", "interval_cos_formula_without"],
     "what": r"interval labels: the two-step features reach 100% and align with $\sum_A M_j$, with and without "
             "input structure"},
    {"id": "table2_cos_printed", "where": "Table 2 (E.1.2)",
     "claims": ["interval_cos_source_with", "interval_cos_source_without"],
     "what": "interval labels: the printed best cosines after two steps, 0.994 with and 0.965 without structure"},
    {"id": "table2_fixed_features", "where": "Table 2, Fig. 7 (E.1.2)",
     "claims": ["interval_ntk", "interval_rf", "interval_ntk_beats_rf"],
     "what": "interval labels: the NTK reaches the network's 100%, random features a decent but lower 73.2%"},
    {"id": "table3", "where": "Table 3 / Fig. 9 (E.2.1)",
     "claims": _ids("dim_small", "dim_large", suffixes=(*VARIANT_CLAIMS, "cos_two", "structure_drop")),
     "what": "$d = 100$ and 2000: the network still beats NTK and RF, and needs the input structure",
     "note": "in the stated model $d$ changes no accuracy and no cosine after step 1 (an exact reduction, "
             "Experiment 4): this reproduces the $d$-independence, seed by seed"},
    {"id": "table3_d_dependence", "where": "Table 3 (E.2.1)", "claims": ["dim_small_cos_source",
                                                                         "dim_large_cos_source"],
     "what": "the printed $d$-dependence: NTK 81.5/86.4/75.4%, One-Step cosine 0.967/0.848/0.560 and two-step cosine "
             "1.000/0.997/0.998 for $d = 100/500/2000$",
     "note": "not reproducible in the source's stated model, where no accuracy and no cosine after step 1 depends on "
             "$d$ (exact reduction); the two-step cosines are compared with the $d$-free derived value"},
    {"id": "table4", "where": "Table 4 / Fig. 11 (E.2.2)",
     "claims": _ids("ratio_low", "ratio_high", suffixes=(*VARIANT_CLAIMS, "two_step", "no_structure",
                                                         "cos_two_formula", "cos_source")),
     "what": "negative shares 0.8 and 0.9: the network reaches 100%; without structure it falls below the majority"},
    {"id": "table5", "where": "Table 5 / Fig. 13 (E.2.3)",
     "claims": _ids("n25000", "n10000", suffixes=(*VARIANT_CLAIMS, "two_step", "structure_drop", "cos_two_formula")),
     "what": "n = 25,000 and 10,000 (m = 50): the same picture at smaller samples"},
    {"id": "table5_cos_printed", "where": "Table 5 (E.2.3)", "claims": ["n25000_cos_source", "n10000_cos_source"],
     "what": "the printed best cosines after two steps, 0.997 at n = 25,000 and 0.994 at n = 10,000"},
    {"id": "fig15", "where": "Fig. 15 (E.3.1)", "claims": ["hidden_clusters", "hidden_cos_two_formula"],
     "what": "labels from a hidden representation: the weights form clusters after one and two steps",
     "note": r"under the erasing step 2 the clusters form for any labels; the data-specific check is that they sit "
             r"on $\pm M\,\mathbb{E}[yz]$ at the derived cosine (hidden_cos_two_formula)"},
    {"id": "fig16", "where": "Fig. 16 / Table 6 (E.3.2)",
     "claims": ["mixture1_centres_covered", "mixture2_centres_covered", "mixture3_centres_covered"],
     "what": "Gaussian mixture: every cluster centre is covered by some neurons"},
    {"id": "injection", "where": "Figs. 4, 22 (E.5)",
     "claims": ["injection_ordering", "injection_mixture_lower", "injection_real_part"],
     "analogue": r"scikit-learn's 8×8 digits with Gaussian inputs of their mean and covariance, $\alpha = \frac{1}{2}$",
     "what": "a student learns injected inputs slower and worse than the real ones labelled by the same teacher"},
    {"id": "injection_alpha", "where": "Fig. 24 (E.5.2)",
     "claims": ["injection_alpha25_ordering", "injection_alpha25_mixture_lower", "injection_alpha75_ordering",
                "injection_alpha75_mixture_lower"],
     "analogue": r"the digits with Gaussian inputs of their mean and covariance at $\alpha = \frac14$ and $\frac34$ "
                 "(the source: CIFAR-10)",
     "what": r"the same trend at other shares $\alpha$ of Gaussian inputs: the real part learnt better, the mixture "
             "below training on the original data"},
    {"id": "injection_structured", "where": "Fig. 23 (E.5.2)", "claims": ["injection_structured_below_real"],
     "analogue": "the digits with one fixed permutation of their 64 pixels in place of Tiny ImageNet (structured "
                 "inputs without the digits' structure), the digits in place of CIFAR-10 and SVHN",
     "what": "with Tiny ImageNet as injected inputs the same trend: its part learnt worse than the original part"},
    {"id": "injection_structured_gauss", "where": "Fig. 23 (E.5.2)", "claims": ["injection_structured_above_gauss"],
     "analogue": "the digits with one fixed permutation of their 64 pixels in place of Tiny ImageNet",
     "what": "the Tiny ImageNet part is learnt better than a Gaussian part"},
    {"id": "injection_width", "where": "Fig. 25 (E.5.3)", "claims": ["injection_width_gap"],
     "analogue": "the digits in place of MNIST",
     "what": "with m = 50 students the separation between the original and the Gaussian part is larger than with "
             "m = 9"},
    {"id": "teacher_selection", "where": "Fig. 26(a), Alg. 1 (E.5.1, E.5.4)",
     "claims": ["selection_rise", "selection_second_descent"],
     "analogue": r"scikit-learn's $8\times8$ digits in place of MNIST, teachers FC($m$) of widths 1 to 32 (16 at "
                 "`ci`, 512 at `full`); the minimum read off by a fixed rule on half of the replicas and measured on "
                 "the others",
     "what": "the teachers' test loss over their size is a double-descent curve; Algorithm 1 takes its teacher at the "
             "local minimum of the classical U-shaped part (FC(9) on MNIST)"},
    {"id": "teacher_selection_students", "where": "Fig. 26(b)-(d) (E.5.4)",
     "claims": ["selection_students_near", "selection_students_move_up"],
     "analogue": r"the digits with Gaussian inputs of their mean and covariance; teachers of the chosen width $m$ and "
                 r"of $\frac{50}{9}m$ ($\frac{500}{9}m$ too at `full`) in place of FC(9), FC(50) and FC(500)",
     "what": "students trained on Gaussian inputs labelled by the chosen teacher have the minimum of their own curve "
             "at roughly the teacher's size, and at larger sizes for larger teachers"},
    {"id": "real_data", "where": "Figs. 3, 17-19 (E.4)", "claims": ["digits_within_cluster", "digits_centres_opposed"],
     "analogue": "scikit-learn's 8×8 digits 0 and 1 (360 images) in place of MNIST 0/1; CIFAR-10 and SVHN have no "
                 "bundled stand-in",
     "what": "the neurons of a two-layer network (m = 50, SGD with momentum 0.95) trained on two classes of real "
             "images gradually form two clusters"},
    {"id": "real_data_early", "where": "Figs. 20-21 (E.4.1)", "claims": ["digits_early_movement"],
     "analogue": "the first layer of the digits network in place of ResNet-18's filters on binary CIFAR-10",
     "what": "the weights change much more in the first 3 epochs than in the 17 after"},
    {"id": "table7", "where": "Table 7 (E.4.1)", "claims": ["digits_gradient_chunks"],
     "analogue": "the first layer of the digits network in place of ResNet-18's filters on binary CIFAR-10",
     "what": "the mean gradients of three consecutive blocks of 10 steps of a unit near a final cluster centre point "
             "the same way: the six cosines are 0.51 to 0.97"},
    {"id": "variant_weights", "where": "Figs. 10, 12, 14 (E.2)",
     "claims": _ids("dim_small", "dim_large", "ratio_low", "ratio_high", "n25000", "n10000", suffixes=("clusters",)),
     "what": r"MDS pictures of the weights in the variants: after two steps they sit in two antipodal clusters at "
             r"$\pm\sum_A M_j$"},
    {"id": "nostruct_cos_printed", "where": "Tables 3-5 (E.2)",
     "claims": _ids("dim_small", "dim_large", "ratio_low", "ratio_high", "n25000", "n10000",
                    suffixes=("cos_nostruct_source",)),
     "what": "the printed best cosines after two steps without input structure: 0.331 and 0.309 ($d = 100$, "
             "2000), 0.218 and 0.286 (negative shares 0.8, 0.9), 0.230 and 0.176 ($n$ = 25,000, 10,000)",
     "note": r"without structure every unit follows $\hat{\mathbb{E}}[yx]$, sampling noise, so the cosine is a "
             r"random direction's at $D = 100$ (0.080) whatever $d$, the class share or $n$"},
    {"id": "erratum_bias_gradient", "where": "eq. (24) / (A.20)", "claims": ["smoothed_activation"],
     "printed": r"the bias gradient omits $\xi_i$ inside the indicator",
     "correct": r"the derivative of the smoothed activation is $\Pr[z + \xi \in (0, 1)]$: the noise belongs inside"},
    {"id": "erratum_first_step", "where": "Thm 26 (A.20) / Lemma 23 (A.17)", "claims": [],
     "printed": r"$\eta^{(1)} = \gamma^2\tilde\sigma^2/(km^3)$ in Thm 26, $\gamma^2\tilde\sigma/(km^3)$ in Lemma 23",
     "correct": r"one of the two; we use Thm 26's (only the direction of $w^{(1)}$ matters for the features)"},
    {"id": "erratum_noise_level", "where": "Thm 26 / Lemmas 18, 20, 23", "claims": [],
     "printed": r"$\sigma_\xi = 1/k^2$ in Thm 26, $1/k^{3/2}$ in the lemmas",
     "correct": r"one of the two (Lemma 15 needs $\sigma_\xi < 1/k$; both satisfy it); we use the lemmas' $1/k^{3/2}$"},
    {"id": "erratum_sq_class", "where": "Thm 4 proof", "claims": [],
     "printed": r"the SQ concept class sums $1 - \tilde\phi_j$ over all $j$",
     "correct": r"the sum runs over $j \in A$"},
    {"id": "erratum_component_names", "where": "Sec. 5.2 / App. C", "claims": [],
     "printed": r"the uniform component is called $\mathcal{D}_A^{(1)}$ in Sec. 5.2 and $\mathcal{D}^{(0)}$ in App. C",
     "correct": "one name; we follow App. C"},
    {"id": "erratum_noise_normalisation", "where": "the general setting (App. A.8)", "claims": [],
     "printed": r"the noise is normalised as $\zeta/\sigma_\zeta$",
     "correct": r"$\zeta/\tilde\sigma$"},
    {"id": "erratum_thm2_constant", "where": "Thm 2 (dissertation)", "claims": [],
     "printed": r"$\sqrt{2NB}$", "correct": r"$\sqrt{2N}\,B$, as the Parseval argument of the proof gives"},
]

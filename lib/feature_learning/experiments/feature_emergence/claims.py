"""From the runs to the claims and glue of the chapter: seed means and standard errors of the groups, the
estimates with their nulls, the derived predictions at the source's sizes, the tables, and the source map."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import torch

from feature_learning.experiments.feature_emergence.runs import GroupResult, source_ratio_sample
from feature_learning.experiments.feature_emergence.sizes import (
    BASELINE_TUNING,
    FIRST_LAYER_FACTOR,
    NTK_STEP,
    PROTOTYPE_STEP,
    RF_STEP,
    SECOND_LAYER_STEP,
    SOURCE_N,
    FeatureEmergenceSizes,
    ParitySizes,
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
OFFSET_NOTE = ("the source's cosine sits below our derived prediction at its own $n$ by more than its rounding and "
               "three sd of a five-seed mean, at n = 50,000, 25,000 and 10,000 alike (Tables 1 and 5), as it would if "
               "its step 1 kept part of $w^{(0)}$ (see cos_one_step)")


def source_cosine(n: int, source: float, negative_ratio: float | None = None) -> dict:
    """The derived step-2 cosine at the source's D = 100, sample n and five seeds, against the source's printed
    cosine: the ledger arguments of a ``close_to`` prediction with tolerance ``SOURCE_ROUNDING`` plus three sd of the
    five-seed mean. Exact arithmetic (no run): documented as not reproduced where the printed value is outside."""
    pred, sd = cosine_prediction(dataclasses.replace(ParitySizes(), D=100), n, 5, negative_ratio)
    atol = SOURCE_ROUNDING + 3 * sd
    return {"kind": "prediction", "source_value": source, "measured": pred, "atol": atol,
            "not_reproduced": OFFSET_NOTE if abs(pred - source) > atol else None}


def tuning_table() -> tuple[list[str], list[list[str]]]:
    """The baseline step sweep (``BASELINE_TUNING``) as a table, the chosen steps marked."""
    rows = [[f"{step:g}", f"{ntk:.3f}" + (" (chosen)" if step == NTK_STEP else ""),
             f"{rf:.3f}" + (" (chosen)" if step == RF_STEP else "")] for step, (ntk, rf) in BASELINE_TUNING.items()]
    return ["SGD step", "NTK test accuracy", "RF test accuracy"], rows


STAGE_REVISED = (r"the classifier stage's output step was raised from the notes' prototype ($\eta_a = 100$, "
                 r"constant) to $\eta_a = 1800$ with a cosine decay of every step (commit 8a103d5), after prototype "
                 "runs left seeds on a plateau below 0.99; the prototype recipe stays as net_with_structure_prototype")
THM2_NOT_TESTABLE = (r"Theorem 2's floor $p_o(1 - \sqrt{2N}B/2^k)$ is negative for $N = 600$ features once "
                     r"$B \ge 0.92$: vacuous at simulation scale, and an untrained model (hinge 1) passes any floor "
                     "below 1")


def prototype_claim(result: GroupResult, n_test: int, source_value: float) -> dict:
    """The ledger arguments of the network-accuracy claim under the prototype stage
    (:func:`~.runs.prototype_stage_experiment`): it holds at the source's sample size (every seed of the stored
    `full` run reaches 0.99) and fails at `ci`'s (no seed does), so it is declared to hold at the source's scale
    only; the rate counts this run's seeds that reach 0.99."""
    acc = result.test_acc["net"][:, 0]
    passes, runs = int((acc >= 0.99).sum()), acc.numel()
    mean, se = accuracy_se(acc, n_test)
    return {"id": "net_with_structure_prototype", "kind": "reproduction", "source_value": source_value,
            "statement": r"network test accuracy with the notes' prototype classifier stage ($\eta_a = 100$, "
                         "constant), the recipe before the tuning (notes: ≥ 0.99)", "bound": 0.99,
            "measured": Estimate(mean, se, Null(CHANCE, "the untrained network ($g = 0$: accuracy ½)")),
            "source_scale_only": "the prototype stage reaches 0.99 at the source's $n = 50{,}000$ (5 of 5 seeds of "
                                 "the stored full run) and at no seed of the ci sweep", "rate": (passes, runs)}


def prototype_source(ledger) -> dict:
    """The source-map entry of the prototype-stage claim (its status is computed from the claim)."""
    return {"id": "table1_prototype", "where": "Table 1 / A.1 (E.1.1); chapter notes §4.1",
            "what": r"the network reaches 100% with the classifier stage fixed before the tuning ($\eta_a = 100$)",
            "claims": ["net_with_structure_prototype"]}


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


def size_values(size: FeatureEmergenceSizes) -> dict[str, float]:
    """The sizes the prose names."""
    P = size.parity
    n_half, n_fifth = (source_ratio_sample(n, P) for n in size.samples.source_ns)
    return {"size_d": P.d, "size_D": P.D, "size_n": P.n, "size_T": P.steps, "size_width": 2 * P.m,
            "size_batch": P.batch, "seeds": P.seeds, "variant_seeds": size.variants.seeds,
            "dim_small": size.variants.dims[0], "dim_large": size.variants.dims[1], "sample_seeds": size.samples.seeds,
            "n_half": n_half, "n_fifth": n_fifth, "small_m": size.samples.widths[1],
            "ratio_source": (100 - 5) / SOURCE_N, "ratio_ours": (P.D - P.k) / P.n,
            "interval_n": size.interval.n, "interval_width": 2 * size.interval.m, "hidden_n": size.hidden.n,
            "hidden_width": 2 * size.hidden.m, "inj_teacher_width": size.injection.teacher_width,
            "mix_seeds": size.mixture.seeds, "mix_n": size.mixture.n, "inj_seeds": size.injection.seeds,
            "eta_a": SECOND_LAYER_STEP, "first_layer_factor": FIRST_LAYER_FACTOR, "rf_step": RF_STEP,
            "ntk_step": NTK_STEP, "prototype_step": PROTOTYPE_STEP,
            "stage_eta": FIRST_LAYER_FACTOR * stage_step(P.k, P.m, P.steps)}


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



# -- the source map: every result of the source the chapter rests on ---------------------------------------------------
def _ids(*prefixes: str, suffixes: tuple[str, ...]) -> list[str]:
    return [f"{p}_{s}" for p in prefixes for s in suffixes]


SOURCE_MAP = [
    {"id": "thm1", "where": "Thm 1 = Thm 26", "claims": ["net_with_structure", "net_hinge"],
     "what": "gradient descent on a two-layer network learns every labelling of the relevant count (parity here)"},
    {"id": "lemma5", "where": "Lemma 5 / A.2", "claims": ["lemma5_exact"],
     "what": r"$3(k+1)$ truncated-ReLU units along $\sum_A M_j$ fit any labelling, with bounded weights"},
    {"id": "mixture_law", "where": "App. C", "claims": ["mixture_gamma"],
     "what": r"$\mathcal{D}_A^{\mathrm{mix}}$ has balanced classes and $\gamma = (1 - p_o)/2$"},
    {"id": "thm2", "where": "Thm 2, Cor. 3", "claims": ["ntk_hinge", "rf_hinge"],
     "what": r"fixed features need exponentially many features or norm: hinge $\ge p_o(1 - \sqrt{2N}B/2^k)$",
     "note": "vacuous at $N = 600$ features; its direction is carried by Table 1's NTK and RF accuracies"},
    {"id": "thm4", "where": "Thm 4", "claims": ["parities_uncorrelated", "sq_bound", "net_without_structure",
     "ntk_without_structure",
                "rf_without_structure"],
     "what": "without input structure no polynomial SQ learner (mini-batch SGD included) learns the parity"},
    {"id": "table1_accuracy", "where": "Table 1 / Fig. 1 (E.1.1)", "claims": ["net_beats_ntk", "net_beats_rf",
     "ntk_accuracy", "rf_accuracy", "structure_drop", "rf_at_optimum"],
     "what": "network 100% against NTK 86.4% and RF 76.0%; 52% without input structure"},
    {"id": "table1_cos_two", "where": "Table 1 / Fig. 2 (E.1.1)",
     "claims": ["cos_two_steps", "cos_two_no_structure", "cos_two_formula", "cos_two_source", "cos_init_formula"],
     "what": r"after two steps the weights align with $\sum_A M_j$ (0.997; 0.253 without structure)"},
    {"id": "table1_cos_one", "where": "Table 1 / Fig. 2 (E.1.1)", "claims": ["cos_one_step"],
     "what": "after one step the best cosine is 0.848",
     "note": r"with the stated $\lambda_w = 1/(2\eta)$ step 1 erases $w^{(0)}$ and the cosine is ≈ 0.99 at every seed"},
    {"id": "table1_two_step", "where": "Table 1 / Sec. 5.2", "claims": ["probe_two_steps"],
     "what": "the best classifier on the step-two features: 100%"},
    {"id": "table1_one_step", "where": "Table 1 / Sec. 5.2", "claims": ["probe_step_gain", "probe_one_halfspace"],
     "what": "the best classifier on the step-one features: 52%, far below step two",
     "note": "a converged probe finds the best halfspace, 27/32, at every seed"},
    {"id": "table2", "where": "Table 2 (E.1.2)", "claims": ["interval_two_step", "interval_cos_two",
     "interval_cos_no_structure", "interval_cos_formula_with", "interval_cos_formula_without"],
     "what": "interval labels: the two-step features reach 100% and align (0.994; 0.965 without structure)"},
    {"id": "table2_fixed_features", "where": "Table 2, Figs. 7-8 (E.1.2)", "claims": [],
     "what": "interval labels: NTK and random features come close to the network (the advantage disappears)",
     "not_attempted": "the classifier stage is not run at $k = 30$, where the chapter notes found our parity recipe "
                      "unstable"},
    {"id": "table3", "where": "Table 3 / Fig. 9 (E.2.1)", "claims": _ids("dim_small", "dim_large", suffixes=("net",
     "net_beats_ntk", "net_beats_rf", "cos_two",
                                                        "structure_drop"))
     + _ids("n25000", "n10000", suffixes=("cos_two_formula", "cos_source")),
     "what": "$d = 100$ and 2000: the network still beats NTK and RF, and needs the input structure"},
    {"id": "table4", "where": "Table 4 / Fig. 11 (E.2.2)", "claims": _ids("ratio_low", "ratio_high", suffixes=("net",
     "net_beats_ntk", "net_beats_rf", "two_step",
                                                         "no_structure"))
     + _ids("ratio_low", "ratio_high", suffixes=("cos_two_formula", "cos_source")),
     "what": "negative shares 0.8 and 0.9: the network reaches 100%; without structure it falls below the majority"},
    {"id": "table5", "where": "Table 5 / Fig. 13 (E.2.3)", "claims": _ids("n25000", "n10000", suffixes=("net",
     "net_beats_ntk", "net_beats_rf", "two_step",
                                                  "structure_drop"))
     + _ids("n25000", "n10000", suffixes=("cos_two_formula", "cos_source")),
     "what": "n = 25,000 and 10,000 (m = 50): the same picture at smaller samples"},
    {"id": "fig15", "where": "Fig. 15 (E.3.1)", "claims": ["hidden_clusters", "hidden_cos_two_formula"],
     "what": "labels from a hidden representation: the weights form clusters after one and two steps"},
    {"id": "fig16", "where": "Fig. 16 / Table 6 (E.3.2)", "claims": ["mixture1_centres_covered",
     "mixture2_centres_covered", "mixture3_centres_covered"],
     "what": "Gaussian mixture: every cluster centre is covered by some neurons"},
    {"id": "injection", "where": "Figs. 4, 22 (E.5)", "claims": ["injection_ordering", "injection_mixture_lower",
     "injection_real_part"],
     "analogue": r"scikit-learn's 8×8 digits with Gaussian inputs of their mean and covariance, $\alpha = \frac{1}{2}$",
     "what": "a student learns injected inputs slower and worse than the real ones labelled by the same teacher"},
    {"id": "injection_rest", "where": "Figs. 23-26, Alg. 1 (E.5)", "claims": [],
     "what": r"Tiny ImageNet injection, the sweep over $\alpha$, the double-descent choice of the teacher",
     "not_attempted": r"no dataset can be downloaded here; the $\alpha$ sweep and the teacher selection are not built"},
    {"id": "real_data", "where": "Figs. 3, 17-21, Table 7 (E.4)", "claims": [],
     "what": "on MNIST, CIFAR-10 and SVHN the neurons of trained networks cluster; a small CNN analogue",
     "not_attempted": "the datasets cannot be downloaded here, and the notes' digits analogue is not built"},
    {"id": "variant_weights", "where": "Figs. 10, 12, 14 (E.2)", "claims": [],
     "what": "MDS pictures of the weights in the variants",
     "not_attempted": "pictures only; the cosines they show are claimed with Tables 3-5"},
    {"id": "erratum_bias_gradient", "where": "eq. (24) / (A.20)", "claims": ["smoothed_activation"],
     "printed": r"the bias gradient omits $\xi_i$ inside the indicator",
     "correct": r"the derivative of the smoothed activation is $\Pr[z + \xi \in (0, 1)]$: the noise belongs inside"},
]

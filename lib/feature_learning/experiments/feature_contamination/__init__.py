"""Sizes, recipes and runs of the chapter "Feature contamination" (Zhang et al., ICML 2024).

The source's numerical configuration (appendix F.1) is d_core = d_bg = 32, d = 256, m = 256, N = 1000, SGD with
step size 0.001 and weight decay 0.001; it does not state the number of steps. The state of the dynamics depends on
eta * t (the weight-decay factor is (1 - eta lambda)^t ~ e^{-lambda eta t}, the gradient term is eta times a
smooth drift; the chapter derives this with SymPy and checks it with a run), so every profile runs a larger step
size (0.4 at ``ci`` and ``book``, 0.1 at ``full``) and reports time as the equivalent number of the source's steps,
eta t / 0.001.

Each experiment is a function ``experiment(size, run, ...)`` that draws from the run's named random streams and
returns a dataclass of what the chapter shows and checks; per-seed values come with their standard error over
seeds (:func:`feature_learning.measure.statistics.mean_se`).

The package: ``sizes`` (the profiles and the source's numbers), ``runs`` (the classification runs, the theory on the
trained networks, the controls and the gradient mechanism), ``authors`` (the authors' toy recipe and the table of
recipes), ``transfer`` (regression, the other activations and the
digits analogue) and ``figures``; every public name is re-exported here.
"""

from feature_learning.experiments.feature_contamination.authors import (  # noqa: F401
    PAPER,
    AuthorsRun,
    authors_recipe,
    init_authors,
    recipe_table,
    run_authors,
    training_set,
)
from feature_learning.experiments.feature_contamination.figures import (  # noqa: F401
    extension_figure,
    mechanism_figure,
    neurons_figure,
    regression_figure,
    risks_figure,
)
from feature_learning.experiments.feature_contamination.measures import selectivity  # noqa: F401
from feature_learning.experiments.feature_contamination.runs import (  # noqa: F401
    MILLS_DELTAS,
    BernsteinExample,
    ClassificationRun,
    Controls,
    DriftCheck,
    GradientGap,
    Mechanism,
    MechanismRow,
    RegionCheck,
    ReluVsLinear,
    Stat,
    TheoryChecks,
    bernstein_example,
    controls,
    coupled_shift_risks,
    drift_check,
    feature_model,
    final,
    gradient_gap,
    gradient_mechanism,
    held_out_sets,
    hinge_gradient_check,
    history_reached,
    initial,
    ood_margin_allowance,
    reached,
    relu_vs_linear,
    run_classification,
    theory_checks,
)
from feature_learning.experiments.feature_contamination.sizes import (  # noqa: F401
    BOOK,
    CI,
    EXTENSION_ACTIVATIONS,
    FULL,
    SIZES,
    SOURCE_LR,
    SOURCE_TIME,
    WEIGHT_DECAY,
    AuthorsRecipe,
    CheckSizes,
    ClassificationSizes,
    ContaminationSizes,
    DigitsSizes,
    ExtensionSizes,
    RegressionSizes,
)
from feature_learning.experiments.feature_contamination.transfer import (  # noqa: F401
    DigitsRun,
    Distillation,
    ExtensionResult,
    RegressionRun,
    StandardModels,
    border_projection,
    class_rates,
    digits,
    effective_robustness,
    extension,
    gain_over_standard,
    logit,
    near_zero_share,
    regression,
    run_digits_distillation,
    run_extension,
    run_regression,
    run_standard_models,
    standard_models,
)

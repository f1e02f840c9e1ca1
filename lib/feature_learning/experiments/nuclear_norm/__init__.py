"""Chapter "Rank regularisation for domain generalisation" (dissertation ch. 6, Shi et al., CPAL 2024): sizes,
recipes and runs.

Four experiments, each a function returning a dataclass:

1. :func:`~.runs.population` -- Sec. 6.4's model at infinite data: the ERM-l2
   optimum from the two-parameter reduction (E.10) on a Monte-Carlo sample of the block sums (common random numbers
   across lambda), the full d-dimensional optimum on a smaller sample (block-constant?), the ERM-rank optimum by
   exhaustive search over supports, and OOD accuracy against d - r with the CLT curve.
2. :func:`~.runs.finite_sample` -- the full weight vector w trained on n samples:
   ERM-l2, ERM-l1, IHT (ERM-rank) and ERM-NU (lambda ||Z_B diag(w)||_* / sqrt(B) on a mini-batch) with a batch larger
   and smaller than d, across lambda.
3. :func:`~.runs.toy_2d` -- the 2-D task of Sec. 6.3.1, Phi(x) = A x with a linear head, as specified.
4. :func:`~.runs.domain_analogue` -- ERM against ERM-NU with an MLP featurizer on a synthetic DomainBed analogue and
   on the
   bundled digits with an environmental block, lambda x seeds as one batched program.

The package: ``sizes`` (the profiles), ``runs`` (the four experiments), ``figures`` and ``source_map``; every public
name is re-exported here.
"""

from feature_learning.experiments.nuclear_norm.figures import (  # noqa: F401
    analogues_figure,
    erm_vs_nu_figure,
    finite_sample_figure,
    population_figure,
    toy_figure,
)
from feature_learning.experiments.nuclear_norm.runs import (  # noqa: F401
    SETTLE,
    Analogue,
    BlockOptimum,
    FiniteSample,
    Method,
    Population,
    SweepPoint,
    Toy,
    ToyRun,
    block_optimum,
    domain_analogue,
    evaluate,
    finite_sample,
    full_optimum,
    log_steps,
    logistic_grad,
    logistic_objective,
    nu_penalty,
    population,
    reached_target,
    stable_rank_scaling,
    target_reached,
    toy_2d,
    train_featurizers,
    train_nu_linear,
)
from feature_learning.experiments.nuclear_norm.sizes import (  # noqa: F401
    BOOK,
    CI,
    DTYPE,
    FULL,
    SIZES,
    AnalogueSizes,
    FiniteSampleSizes,
    NuclearSizes,
    PopulationSizes,
    ToySizes,
)
from feature_learning.experiments.nuclear_norm.source_map import (  # noqa: F401
    SOURCE_MAP,
)

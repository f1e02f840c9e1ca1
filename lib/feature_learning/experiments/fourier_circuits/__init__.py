"""Sizes, recipes and runs of the chapter "Fourier circuits for k-input modular addition" (dissertation ch. 4).

``BOOK`` is written out; ``CI`` and ``FULL`` are overrides of it, each with its reason. The notebook's ``k`` and
``p`` parameters replace the main run's (:func:`sizes`). Recipes follow appendix C.10.1 where the source states
them; where it is silent (steps, initialisation, the transformer's token format and widths) the choice is named
here and stated in the chapter.

Runs (each returns a dataclass of what the chapter shows and checks):

* :func:`~.runs.margin_run`           -- S1: the k-th power network on all of Z_p^k with the objective of
  Definition 4.1.
* :func:`~.runs.split_run`            -- S2: a random 50% split with the source's AdamW recipe.
* :func:`~.runs.grokking_sweep`       -- S3: one-layer transformers on a 50% split for each (k, p) (Figure 4.4).
* :func:`~.runs.attention_concentration` -- Figure 4.3's statistic on the sweep's attention matrices.

The package: ``sizes`` (the profiles, the notebook's (k, p) parameters and the recipes), ``runs`` (the trainers
and the runs, in notebook order) and ``figures``; every public name is re-exported here.
"""

from feature_learning.experiments.fourier_circuits.figures import (  # noqa: F401
    attention_figure,
    grokking_figure,
    margin_figure,
    neurons_figure,
    spectra_figure,
    split_figure,
)
from feature_learning.experiments.fourier_circuits.runs import (  # noqa: F401
    CENSORED,
    CONTROL_WEIGHT_DECAY,
    EVAL_CHUNK,
    EVAL_ELEMENTS,
    SPARSE_POWER,
    AttentionConcentration,
    GrokRun,
    MarginRun,
    NeuronStats,
    SplitRun,
    Trained,
    attention_concentration,
    bounds_text,
    delays_text,
    eval_chunk,
    fit_steps_grow,
    fit_steps_text,
    fitted_below,
    grok_pair,
    grokking_glue,
    grokking_sweep,
    k5_transformers,
    logits_in_chunks,
    margin_control_run,
    margin_run,
    median_fit_steps,
    medians_measured,
    min_or_nan,
    monotone_in_k,
    neuron_stats,
    record_attention_claims,
    record_fit_claims,
    record_grokking_claims,
    record_k5_claims,
    record_transformer_claims,
    regularized_objective,
    split_run,
    stored_full_glue,
    train_poly_net,
    train_transformer,
    weaker_at_k,
    weaker_at_k_pairs,
)
from feature_learning.experiments.fourier_circuits.sizes import (  # noqa: F401
    BOOK,
    CI,
    FULL,
    INIT_SCALE,
    MIN_PER_FREQUENCY,
    NORM_PENALTY,
    SIZES,
    TESTED_PAIRS,
    ConstructionSizes,
    FourierCircuitSizes,
    GrokSizes,
    K5Sizes,
    MarginRecipe,
    MarginSizes,
    SplitSizes,
    every_k_limit,
    grok_recipe,
    k5_limit,
    k5_split_limit,
    margin_recipe,
    margin_width,
    sizes,
    source_transformer_recipe,
    split_recipe,
    theorem_width,
    transformer_config,
    transformer_recipe,
    weight_decay_time,
)

"""The chapter "Early layers find the gems (GemFilter)" (dissertation ch. 9, appendix G): sizes, the trainer of the
needle decoder, the layer-by-layer localisation, and the runs the notebook calls, each returning what the prose and
the claims read.

The toy: a rotary decoder (:mod:`feature_learning.models.rope_decoder`) trained from scratch on synthetic
needle-in-a-haystack prompts (:mod:`feature_learning.data.needle_haystack`); GemFilter and its baselines come from
:mod:`feature_learning.inference.token_selection`, the prompt-phase timings from :mod:`feature_learning.measure.timing`,
Theorem 9.3 and the source's tables from :mod:`feature_learning.theory.gemfilter`.

The package: ``sizes`` (the profiles and the training recipe), ``runs`` (the trainer and one run per notebook
section, in notebook order), ``figures`` and ``source_map``; every public name is re-exported here.
"""

from feature_learning.experiments.gemfilter.figures import (  # noqa: F401
    filter_layer_figure,
    heatmap_figure,
    layers_figure,
    speedup_figure,
    training_figure,
)
from feature_learning.experiments.gemfilter.runs import (  # noqa: F401
    LATE_DRIFT_VARIES,
    LISTING,
    LOCATING_SHARE,
    NEAR_FIRST_LAYER,
    NEAR_KEEPS,
    NEAR_KEY_LAST,
    NEAR_MIDDLE_ROW,
    NEAR_ONE_RUN,
    RANDOM,
    ROW_VARIANTS,
    TRAINING_CLAIM,
    AccuracyGrid,
    Convergence,
    FlopRow,
    LayerLocalisation,
    LiveBytes,
    Localisation,
    Probe,
    Trained,
    accuracy_grid,
    all_kv_correct,
    all_kv_in_distribution,
    answer_loss,
    baselines,
    cache_bytes,
    correct,
    count_flops,
    filter_layer_sweep,
    first_locating_layer,
    full_layer_seconds,
    full_run_values,
    gemfilter_correct,
    head_table,
    index_focus,
    interleaved_full_layer_seconds,
    k_sweep,
    keeps_accuracy_extra,
    kept_example,
    kv_cache_sizes,
    layer_bytes,
    localise_by_layer,
    locate,
    memory_comparison,
    new_model,
    one_run_extra,
    probe_set,
    prompt_flops,
    prompt_memory,
    random_correct,
    random_index,
    row_ablation,
    select_full_layer,
    selection_correct,
    smoke_values,
    snapkv_beyond_training,
    snapkv_layerwise_prefill,
    timing,
    timing_prompt,
    train_decoder,
    train_needle_decoder,
    training_record,
    untrained_model,
)
from feature_learning.experiments.gemfilter.sizes import (  # noqa: F401
    BOOK,
    CI,
    FULL,
    FULL_CANDIDATES,
    SIZES,
    GemFilterSizes,
    GridSizes,
    NeedleTraining,
    ProbeSizes,
    TimingSizes,
)
from feature_learning.experiments.gemfilter.source_map import (  # noqa: F401
    SOURCE_MAP,
    TOY,
)

"""Chapter "Contrastive learning between universality and label efficiency" (dissertation ch. 7 with appendix F;
Shi et al., ICLR 2023): sizes, recipes and runs.

Every run is the linear multi-task model of Sec. 7.2.2 (:class:`feature_learning.data.multitask_linear.MultiTaskLinear`)
in float64: representations W (k x d) are learned by projected gradient descent on the logistic contrastive loss with
the batch mean as the negative (F.38), projected exactly onto {||W|| <= 1, ||W||_F <= sqrt(r)}
(:func:`feature_learning.training.constraints.project_spectral_frobenius`); linear probes are scikit-learn's
L2-penalised logistic regression (C = 1), solved to optimality by
:func:`feature_learning.measure.probes.logistic_probe`. Seeds are a replica axis: every replica has its own
initialisation, label directions u_t* and samples, and the replicas train as one batched program.
The closed forms of :mod:`feature_learning.theory.contrastive` are what the runs are compared with.

The package: ``sizes`` (the profiles), ``runs`` (the experiments), ``figures`` and ``source_map``; every public
name is re-exported here.
"""

from feature_learning.experiments.contrastive.figures import (  # noqa: F401
    block_weights_figure,
    finetune_figure,
    tradeoff_figure,
)
from feature_learning.experiments.contrastive.runs import (  # noqa: F401
    AllocationResult,
    EncodingSweep,
    Finetuned,
    NonlinearTradeoff,
    Pretrained,
    RegularisationRow,
    Tradeoff,
    TradeoffCurve,
    TrainingTarget,
    Unbudgeted,
    allocation,
    block_mean,
    closed_form_curve,
    contrastive_loss,
    draw_model,
    encoding_sweep,
    finetune,
    further_finetune_gain,
    further_probes,
    further_target_drops,
    label_budget_advantage,
    learn_representations,
    learned_probe_accuracy,
    nonlinear_mixing,
    nonlinear_tradeoff,
    optimum_weights,
    pretrain,
    pretrain_configs,
    pretrain_unbudgeted,
    probe_accuracy,
    reduced_probe_accuracy,
    regularisation_table,
    regularised_finetune,
    sign,
    target_features,
    tradeoff,
    training_target,
)
from feature_learning.experiments.contrastive.sizes import (  # noqa: F401
    BOOK,
    CHANCE_FRACTION,
    CI,
    DTYPE,
    FULL,
    ROUNDING,
    SIZES,
    TARGET_GAP,
    AllocationSizes,
    ContrastiveSizes,
    EncodingSizes,
    FinetuneSizes,
    ModelSizes,
    NonlinearSizes,
    PretrainSizes,
    RegularisationSizes,
    TradeoffSizes,
)
from feature_learning.experiments.contrastive.source_map import (  # noqa: F401
    LINEAR_ANALOGUE,
    LINEAR_ONLY,
    source_map,
)

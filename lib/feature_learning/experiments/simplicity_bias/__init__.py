"""Sizes, recipes and runs of the chapter "Simplicity bias of two-layer networks beyond linearly separable data"
(Tsoy & Konstantinov, ICML 2024).

Recipes follow the source's Sec. 5.4.2 (four neurons, adaptive step size), Sec. 6 (wide network on skewed XOR,
PyTorch default init times 2^-7, GD with step 2^-4 for 2^13 epochs, flow time 512) and Sec. 7 with App. F.2 (probes
of mid-training features, here on a synthetic "simple plus complex" domino instead of MNIST-CIFAR images, with the
training pairs perfectly correlated or, for Fig. 10, 5% mismatched). Prop. 5.8 is checked with a certificate built
from its proof (``max_margin_certificate``). The ci and book profiles keep the flow time of Sec. 6 (T = 512) with a
larger step and fewer epochs.

Every network is the bias-free ReLU :class:`~feature_learning.models.two_layer.TwoLayerNet` (W = the source's v_j,
a = its u_j) trained by exact full-batch gradient descent on the logistic loss (:func:`~.runs.logistic_gd`), in float64:
the four-neuron schedule reaches step sizes of 2^30 and losses of 1e-14. Networks of different widths train as
replicas of one batch, padded with zero neurons (:func:`~feature_learning.models.two_layer.pad_width`).

The package: ``sizes`` (the profiles and the source's recipes and constants), ``runs`` (the trainer and one run
per experiment, in notebook order) and ``figures``; every public name is re-exported here.
"""

from feature_learning.experiments.simplicity_bias.figures import (  # noqa: F401
    FOUR_NEURON_WINDOWS,
    four_neurons_figure,
    margin_figure,
    mismatch_figure,
    probe_figure,
    skew_figure,
    skew_panels,
)
from feature_learning.experiments.simplicity_bias.runs import (  # noqa: F401
    CAPTURE_INIT_SCALE,
    CAPTURE_LR,
    DIAGNOSIS,
    DOMINO_SMALL_INIT,
    DOMINO_STANDARD_INIT,
    XOR_BASE,
    XOR_DELTA,
    XOR_SIGMA,
    CaptureResult,
    DominoResult,
    FourNeuronResult,
    MaxMarginCertificate,
    MismatchResult,
    PairedDifference,
    SkewResult,
    SkewRun,
    capture_run,
    domino_mismatch_run,
    domino_notes_run,
    domino_probe_run,
    early_diagnosis,
    four_neuron_run,
    logistic_gd,
    max_margin_certificate,
    paired_difference,
    skewed_xor_run,
    skewed_xor_width_aware,
    stored_diagnosis,
)
from feature_learning.experiments.simplicity_bias.sizes import (  # noqa: F401
    BOOK,
    CI,
    DOMINO,
    DOMINO_DTYPE,
    DOMINO_MISMATCH,
    DOMINO_NOTES_MU,
    DT,
    FOUR_NEURON_DIRECTIONS,
    FOUR_NEURON_INITS,
    FULL,
    LEMMA_INIT_SCALE,
    MID_FRACTION,
    PROBE_C,
    PROBES,
    SIZES,
    SKEW_ANGLES,
    SKEW_CLEAN_EXTREMA,
    SKEW_CLUSTERS,
    SKEW_INIT_SCALE,
    SKEW_REF_WIDTH,
    CaptureSizes,
    DominoSizes,
    FourNeuronSizes,
    SimplicityBiasSizes,
    SkewSizes,
    four_neuron_schedule,
)

"""Where the first-layer weight mass of a two-layer network sits on the circle, and linear probes on its features
(Sec. 6 and Sec. 7 of Tsoy & Konstantinov, ICML 2024): kept importable from here; the implementations are in
:mod:`feature_learning.measure.geometry` and :mod:`feature_learning.measure.probes`."""

from feature_learning.measure.geometry import (
    angle_gap,
    best_cosine_per_target,
    mass_near,
    neuron_angles,
    weighted_centres,
)
from feature_learning.measure.probes import logistic_probe, rms_normalize

__all__ = ["angle_gap", "best_cosine_per_target", "logistic_probe", "mass_near", "neuron_angles", "rms_normalize",
           "weighted_centres"]

"""Statistics for claims: means with standard errors over seeds or samples, and one-sided tests.

A claim's bound is the source's number with a margin fixed in advance; these give the standard error that the
ledger (``se=``) uses to refuse a verdict that sits within noise of its bound.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def mean_se(values, axis: int = 0) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Mean and standard error of the mean (sample sd with ddof=1, over sqrt(n)) along ``axis``.

    With one value the standard error is undefined: ``nan``, so a claim cannot silently treat it as exact.
    ``values`` may be a torch tensor on any device (read as float64 on the CPU).
    """
    a = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values, dtype=float)
    n = a.shape[axis]
    mean = a.mean(axis=axis)
    se = a.std(axis=axis, ddof=1) / math.sqrt(n) if n > 1 else np.full_like(mean, np.nan)
    return (float(mean), float(se)) if np.ndim(mean) == 0 else (mean, se)


def seed_mean_sd(values, axis: int = 0) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Mean and sample standard deviation (ddof=1) over seeds along ``axis``: the spread of a single run, where
    :func:`mean_se` gives the uncertainty of the mean. With one seed the standard deviation is ``nan``."""
    a = np.asarray(values, dtype=float)
    mean = a.mean(axis=axis)
    sd = a.std(axis=axis, ddof=1) if a.shape[axis] > 1 else np.full_like(mean, np.nan)
    return (float(mean), float(sd)) if np.ndim(mean) == 0 else (mean, sd)


def binomial_se(p, n) -> float | np.ndarray:
    """Standard error sqrt(p (1 - p) / n) of an accuracy ``p`` measured on ``n`` independent samples."""
    p = np.asarray(p, dtype=float)
    se = np.sqrt(p * (1 - p) / np.asarray(n, dtype=float))
    return float(se) if se.ndim == 0 else se


def paired_one_sided_t(a, b) -> tuple[float, float]:
    """Paired one-sided t test of mean(a - b) > 0: the t statistic and its p-value (Student t, n - 1 dof)."""
    from scipy import stats

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    result = stats.ttest_1samp(d, 0.0, alternative="greater")
    return float(result.statistic), float(result.pvalue)


def paired_ratio(a, b) -> tuple[float, float]:
    """Ratio mean(a) / mean(b) of two paired samples (the same prompts, seeds, ...) and its delta-method standard
    error sd(a_i - R b_i) / (sqrt(n) mean(b)). With mean(b) = 0 the ratio is undefined: ``nan`` for both."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if b.mean() == 0:
        return float("nan"), float("nan")
    ratio = a.mean() / b.mean()
    return float(ratio), float(mean_se(a - ratio * b)[1] / b.mean())


def finite_mean_se(values) -> tuple[float, float]:
    """:func:`mean_se` of the finite entries of a 1-d array (a quantity that is undefined for some seeds, e.g. a
    ratio over an empty set of neurons, is averaged over the seeds where it is defined); nan if none is."""
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    return mean_se(a) if a.size else (float("nan"), float("nan"))


def smallest_step(means, ses, *, increasing: bool) -> tuple[float, float]:
    """For a claim that a sequence of means is monotone: the smallest step between consecutive means in the claimed
    direction (``increasing`` or not) and the standard error of that difference, sqrt(se_i^2 + se_{i+1}^2), for
    independent estimates. A positive step more than two standard errors from 0 is a monotone trend, not noise."""
    m, s = np.asarray(means, dtype=float), np.asarray(ses, dtype=float)
    steps = m[1:] - m[:-1] if increasing else m[:-1] - m[1:]
    i = int(np.argmin(steps))
    return float(steps[i]), float(math.hypot(s[i], s[i + 1]))


@dataclasses.dataclass(frozen=True)
class Null:
    """The same measurement on a trivial model (chance, the majority class, the untrained network, random features,
    the prior rule): a reproduction must beat it, so the claim's test must fail on it. ``model`` names the trivial
    model; ``passes`` is the test's verdict on the null where the test is a condition the caller computes (the
    ledger evaluates numeric tests itself)."""

    value: Any
    model: str
    se: float | None = None
    passes: bool | None = None


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A measured value with its standard error (over the trained models, seeds or samples it varies with) and,
    optionally, the null it is to be compared with. The claims ledger takes it as ``measured=`` directly."""

    value: float
    se: float | None = None
    null: Null | None = None

    @classmethod
    def of(cls, values, axis: int = 0, null: Null | None = None) -> Estimate:
        """Mean and standard error (:func:`mean_se`) of a 1-d sample of values."""
        mean, se = mean_se(values, axis)
        return cls(float(mean), float(se), null)


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b of two independent estimates, standard error sqrt(se_a^2 + se_b^2)."""
    return Estimate(a.value - b.value, math.hypot(a.se or 0.0, b.se or 0.0))


def ls_slope(x, y, *, mask=None):
    """Least-squares slope of ``y`` against ``x`` along the first axis, vectorised over the trailing axes of ``y``
    (NumPy arrays or torch tensors alike). ``x`` has shape (n,) (or broadcasts against ``y``, shape (n, ...));
    ``mask`` (broadcasting against ``y``; bool or 0/1) keeps the points to fit, column by column."""
    if getattr(x, "ndim", 1) == 1 and getattr(y, "ndim", 1) > 1:
        x = x.reshape(-1, *([1] * (y.ndim - 1)))
    w = 1.0 if mask is None else mask * 1.0
    count = (w * (x * 0 + y * 0 + 1)).sum(0)
    x_mean, y_mean = (w * x).sum(0) / count, (w * y).sum(0) / count
    xc = x - x_mean
    return (w * xc * (y - y_mean)).sum(0) / (w * xc * xc).sum(0)


def slope_se(x, y, *, se=None) -> tuple[float, float]:
    """Least-squares slope of ``y`` on ``x`` and its standard error. Without ``se``: from the residual variance over
    n - 2 degrees of freedom, divided by the spread of ``x``. With ``se`` (the standard errors of independent
    points ``y``): propagated through the slope's weights, sqrt(sum w_i^2 se_i^2)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    xc = x - x.mean()
    if se is not None:
        w = xc / (xc**2).sum()
        return float(w @ y), float(np.sqrt((w**2 * np.asarray(se, dtype=float) ** 2).sum()))
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean()) / sxx)
    residual = y - y.mean() - slope * xc
    dof = len(x) - 2
    return slope, (math.sqrt(float(residual @ residual) / dof / sxx) if dof > 0 else float("nan"))


def pass_rate(values, test=None, *, at_least: float | None = None, at_most: float | None = None) -> tuple[int, int]:
    """(passes, runs): how many of the per-run ``values`` (one per replica, training run or subsample) pass the
    claim's own test, given as a function ``test(value)`` or as ``value >= at_least`` and/or ``value <= at_most``
    (NaN never passes): the ``rate=`` of an inconclusive claim."""
    v = np.asarray(values, dtype=float).ravel()
    ok = np.isfinite(v)
    if test is not None:
        ok &= np.array([bool(test(x)) for x in v], dtype=bool)
    if at_least is not None:
        ok &= v >= at_least
    if at_most is not None:
        ok &= v <= at_most
    return int(ok.sum()), int(v.size)


# -- ch-lg-con (label granularity, contrastive) -------------------------------------------------------------------
def ratio_of_means(a, b, null: Null | None = None) -> Estimate:
    """mean(a) / mean(b) of two independent samples, its standard error by the delta method,
    R sqrt((se_a / mean_a)^2 + (se_b / mean_b)^2)."""
    (ma, sa), (mb, sb) = mean_se(np.ravel(a)), mean_se(np.ravel(b))
    ratio = ma / mb
    return Estimate(float(ratio), float(abs(ratio) * math.hypot(sa / ma, sb / mb)), null)


# -- added for fourier_circuits and looped_transformers ------------------------------------------------------------
def bootstrap_se(samples, statistic, *, draws: int = 1000, seed: int = 0) -> float:
    """Bootstrap standard error of ``statistic(*samples)``: each sample (a 1-d array: replicas, restarts, prompts)
    is resampled with replacement, independently of the others, ``draws`` times with a fixed ``seed``; the se is the
    sample standard deviation of the statistic over the draws. For statistics without a textbook se (a median, the
    best of several restarts, a ratio of minima). Non-finite draws make it ``nan`` (so a claim cannot use it)."""
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(s, dtype=float).ravel() for s in samples]
    values = np.array([statistic(*(a[rng.integers(0, len(a), len(a))] for a in arrays)) for _ in range(draws)])
    return float(values.std(ddof=1)) if np.isfinite(values).all() else float("nan")


def significant(estimate: Estimate, ses: float = 2.0) -> bool:
    """Whether an estimate is positive by more than ``ses`` standard errors (a trend, not noise); False without a
    finite se."""
    se = estimate.se
    return se is not None and math.isfinite(se) and estimate.value > ses * se


# -- ICL and nuclear norm chapters (claims over seeds) ----------------------------------------------------------------
def paired_difference(a, b, null: Null | None = None) -> Estimate:
    """mean(a - b) of two samples paired along their first axis (the same seeds, prompts or data) and its standard
    error, :func:`mean_se` of the differences; ``null`` is carried to the claim."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    mean, se = mean_se(d)
    return Estimate(float(mean), float(se), null)


def strictly_monotone_rate(values, *, decreasing: bool = True) -> tuple[int, int]:
    """(runs whose sequence is strictly monotone in the claimed direction, runs) for ``values`` of shape
    (runs, steps): the rate of a claim that holds in some runs (seeds, replicas) and not in others."""
    v = np.asarray(values, dtype=float)
    steps = np.diff(v, axis=-1)
    ok = (steps < 0).all(-1) if decreasing else (steps > 0).all(-1)
    return int(ok.sum()), int(ok.size)

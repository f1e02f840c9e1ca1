"""Statistics for claims: means with standard errors over seeds or samples, and one-sided tests.

A claim's bound is the source's number with a margin fixed in advance; these give the standard error that the
ledger (``se=``) uses to refuse a verdict that sits within noise of its bound.
"""

from __future__ import annotations

import math

import numpy as np


def mean_se(values, axis: int = 0) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Mean and standard error of the mean (sample sd with ddof=1, over sqrt(n)) along ``axis``.

    With one value the standard error is undefined: ``nan``, so a claim cannot silently treat it as exact.
    """
    a = np.asarray(values, dtype=float)
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


def smallest_step(means, ses, *, increasing: bool) -> tuple[float, float]:
    """For a claim that a sequence of means is monotone: the smallest step between consecutive means in the claimed
    direction (``increasing`` or not) and the standard error of that difference, sqrt(se_i^2 + se_{i+1}^2), for
    independent estimates. A positive step more than two standard errors from 0 is a monotone trend, not noise."""
    m, s = np.asarray(means, dtype=float), np.asarray(ses, dtype=float)
    steps = m[1:] - m[:-1] if increasing else m[:-1] - m[1:]
    i = int(np.argmin(steps))
    return float(steps[i]), float(math.hypot(s[i], s[i + 1]))

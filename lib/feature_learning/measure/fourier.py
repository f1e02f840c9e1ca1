"""Fourier analysis of functions on Z_p (p odd), as used for the Fourier-circuit figures (dissertation 4.4-4.5).

The DFT convention is the source's: f_hat(j) = sum_a f(a) exp(-2 pi i j a / p). For a real f the power at
frequency zeta and at -zeta is the same, so spectra here are one-sided: power(0) = |f_hat(0)|^2 and
power(zeta) = 2 |f_hat(zeta)|^2 for zeta = 1..(p-1)/2. A two-sided normalised power of a real vector is capped at
1/2, which would hide the one-sparsity the source reports.
"""

from __future__ import annotations

import math

import torch


def one_sided_power(x: torch.Tensor) -> torch.Tensor:
    """Power per frequency 0..(p-1)/2 along the last axis (length p, odd); sums to p * ||x||^2 (Plancherel)."""
    p = x.shape[-1]
    if p % 2 == 0:
        raise ValueError(f"one-sided spectra are defined here for odd p, got p={p}")
    power = torch.fft.rfft(x, dim=-1).abs().pow(2)
    power[..., 1:] *= 2
    return power


def normalized_power(x: torch.Tensor) -> torch.Tensor:
    power = one_sided_power(x)
    return power / power.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(power.dtype).tiny)


def max_normalized_power(x: torch.Tensor) -> torch.Tensor:
    """max_zeta |x_hat(zeta)|^2 / sum_j |x_hat(j)|^2 (one-sided), the source's one-sparsity statistic (Fig. 4.2)."""
    return normalized_power(x).max(dim=-1).values


def dominant_frequency(x: torch.Tensor) -> torch.Tensor:
    """The frequency 0..(p-1)/2 with the largest power."""
    return one_sided_power(x).argmax(dim=-1)


def phase_at(x: torch.Tensor, zeta: torch.Tensor) -> torch.Tensor:
    """theta with x(a) ~ beta cos(theta + 2 pi zeta a / p): the angle of x_hat(zeta)."""
    coeff = torch.fft.rfft(x, dim=-1)
    return torch.angle(coeff.gather(-1, zeta.unsqueeze(-1)).squeeze(-1))


def wrap_angle(theta: torch.Tensor) -> torch.Tensor:
    """Into (-pi, pi]."""
    return torch.remainder(theta + math.pi, 2 * math.pi) - math.pi


def interpolate(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The band-limited (trigonometric) interpolant of x on Z_p, evaluated at real points t (Fig. 4.1's blue curve).

    x(t) = (1/p) sum_{|j| <= (p-1)/2} x_hat(j) exp(2 pi i j t / p), which equals x at the integers.
    """
    p = x.shape[-1]
    coeff = torch.fft.rfft(x, dim=-1)  # j = 0..(p-1)/2
    j = torch.arange(coeff.shape[-1], dtype=t.dtype)
    angle = 2 * math.pi * j.unsqueeze(-1) * t.unsqueeze(0) / p  # (J, T)
    weight = torch.full((coeff.shape[-1], 1), 2.0, dtype=t.dtype)
    weight[0] = 1.0
    terms = weight * (coeff.real.unsqueeze(-1) * torch.cos(angle) - coeff.imag.unsqueeze(-1) * torch.sin(angle))
    return terms.sum(dim=-2) / p


def power_2d(matrix: torch.Tensor) -> torch.Tensor:
    """Normalised 2-D power spectrum |fft2(M)|^2 / sum, DC term removed first (over the last two axes)."""
    centred = matrix - matrix.mean(dim=(-2, -1), keepdim=True)
    power = torch.fft.fft2(centred).abs().pow(2)
    return power / power.sum(dim=(-2, -1), keepdim=True).clamp_min(torch.finfo(power.dtype).tiny)


def top_power_fraction(matrix: torch.Tensor, n: int = 4) -> torch.Tensor:
    """Fraction of the (DC-free) 2-D power in the ``n`` largest Fourier coefficients.

    A 2-D cosine cos(2 pi (zeta_1 a + zeta_2 b)/p + phi) puts all its power on 2 coefficients, a sum of two
    such waves on 4: this is the concentration statistic for the transformer's attention matrices.
    """
    flat = power_2d(matrix).flatten(-2)
    return flat.topk(n, dim=-1).values.sum(dim=-1)


def off_axis_top_power_fraction(matrix: torch.Tensor, n: int = 4) -> torch.Tensor:
    """Fraction of the (DC-free) 2-D power in the ``n`` largest Fourier coefficients with both frequencies nonzero.

    A wave in one index alone (a matrix whose rows are all one cosine of the column, or the reverse) puts its power
    on an axis of the spectrum and scores 0 here; a 2-D cosine cos(2 pi (zeta_1 a + zeta_2 b)/p + phi) with
    zeta_1, zeta_2 != 0 scores 1: what :func:`top_power_fraction` cannot tell apart.
    """
    power = power_2d(matrix).clone()
    power[..., 0, :] = 0
    power[..., :, 0] = 0
    return power.flatten(-2).topk(n, dim=-1).values.sum(dim=-1)

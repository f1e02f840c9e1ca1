"""Closed forms of dissertation ch. 4 (appendix C) as SymPy expressions, and exact constructions to check them.

* :func:`gamma_star`           -- the maximum L_{2,k+1} margin (Lemma C.15 / Theorem C.22).
* :func:`derive_gamma_star`    -- the derivation of Lemma C.15: Fourier reduction (C.10), Plancherel, AM-GM (C.15).
* :func:`sum_to_product`       -- Lemma C.16: 2^k k! prod a_i = sum_c (-1)^{#(c=-1)} (sum_j c_j a_j)^k.
* :func:`cosine_expansion`     -- (C.21): cos(sum a_i) as signed products of cosines and sines.
* :func:`frequency_block`      -- the 2^(2k-1) neurons of one frequency in Lemma C.18's construction.
* :func:`max_margin_network`   -- the whole construction theta*, 2^(2k-2)(p-1) neurons, float64.
* :func:`single_neuron_objective` -- eta(0) - E_{delta != 0} eta(delta) (Definitions C.12-C.13), brute force.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import sympy as sp
import torch

k_sym, p_sym = sp.symbols("k p", positive=True, integer=True)


def gamma_star(k=k_sym, p=p_sym) -> sp.Expr:
    """gamma* = 2 k! / ((2k+2)^((k+1)/2) (p-1) p^((k-1)/2))  (Theorem 4.9)."""
    return 2 * sp.factorial(k) / ((2 * k + 2) ** ((k + 1) / sp.Integer(2)) * (p - 1) * p ** ((k - 1) / sp.Integer(2)))


def neuron_count(k=k_sym, p=p_sym) -> sp.Expr:
    """2^(2k-1) neurons per frequency times (p-1)/2 frequencies = 2^(2k-2) (p-1)  (Theorem 4.9)."""
    return 2 ** (2 * k - 1) * (p - 1) / 2


def equal_amplitude_optimum(n: int):
    """KKT for max prod_{i<n} x_i subject to sum x_i^2 = z (the AM-GM step (C.15)), solved by SymPy.

    Returns (solution x_i, maximal product); the solution is x_i = sqrt(z/n) for all i.
    """
    xs = sp.symbols(f"x0:{n}", positive=True)
    z, lam = sp.symbols("z lambda", positive=True)
    lagrangian = sp.Mul(*xs) - lam * (sum(x**2 for x in xs) - z)
    sols = sp.solve([sp.diff(lagrangian, v) for v in (*xs, lam)], [*xs, lam], dict=True)
    (sol,) = [s for s in sols if all(s[x].is_positive for x in xs)]
    return sol[xs[0]], sp.simplify(sp.Mul(*[sol[x] for x in xs]))


def derive_gamma_star():
    """Lemma C.15's chain, symbolically in k and p.

    By (C.13) the single-neuron objective is 2 k!/((p-1) p^k) sum_{zeta >= 1} |w_hat| prod |u_hat_i| cos(phase).
    Plancherel turns the unit-norm ball into sum_{zeta >= 1} z(zeta) <= p/2 with
    z = sum_i |u_hat_i(zeta)|^2 + |w_hat(zeta)|^2; AM-GM bounds the product by (z/(k+1))^((k+1)/2), and
    sum z^((k+1)/2) <= (sum z)^((k+1)/2) since (k+1)/2 >= 1; all is tight for one frequency, equal amplitudes
    sqrt(p / (2(k+1))) and phases with sum theta_u = theta_w.

    Returns a dict of the steps as SymPy expressions.
    """
    k, p = k_sym, p_sym
    prefactor = 2 * sp.factorial(k) / ((p - 1) * p**k)
    budget = p / 2
    amplitude = sp.sqrt(budget / (k + 1))
    best_product = amplitude ** (k + 1)
    bound = sp.simplify(prefactor * best_product)
    return {
        "prefactor": prefactor,
        "budget": budget,
        "amplitude": amplitude,
        "best_product": best_product,
        "gamma": bound,
        "matches_closed_form": sp.simplify(sp.powsimp(bound / gamma_star(k, p), force=True)) == 1,
    }


def sum_to_product(k: int):
    """Both sides of Lemma C.16 part 3 for symbols a_1..a_k; returns (lhs, rhs, half_rhs).

    ``half_rhs`` keeps only the sign patterns with c_1 = +1; it equals 2^(k-1) k! prod a_i, which is why
    2^(k-1) neurons suffice for each product term of the construction.
    """
    a = sp.symbols(f"a1:{k + 1}")
    lhs = 2**k * sp.factorial(k) * sp.Mul(*a)
    terms = {
        c: (-1) ** sum(1 for ci in c if ci < 0) * sum(ci * ai for ci, ai in zip(c, a, strict=True)) ** k
        for c in itertools.product((1, -1), repeat=k)
    }
    return lhs, sp.Add(*terms.values()), sp.Add(*[t for c, t in terms.items() if c[0] == 1])


def cosine_expansion(n: int):
    """Both sides of (C.21) for angles x_1..x_n; returns (lhs, rhs)."""
    x = sp.symbols(f"x1:{n + 1}", real=True)
    rhs = 0
    for b in itertools.product((0, 1), repeat=n):
        if sum(b) % 2:
            continue
        sign = -1 if sum(b) % 4 == 2 else 1
        rhs += sign * sp.Mul(*[sp.sin(xi) if bi else sp.cos(xi) for xi, bi in zip(x, b, strict=True)])
    return sp.cos(sum(x)), rhs


def block_neurons(k: int):
    """The neurons of one frequency in Lemma C.18, as (signs and trig choices), without amplitudes.

    For each term b of the cosine expansion of cos(x_1 + ... + x_k - x_c) (an even number of sines, sign s_b)
    and each sign pattern c in {+-1}^k with c_1 = +1: u_j = c_j trig_{b_j}(x_j), w = s_b (-1)^{#(c=-1)} trig(-x_c).
    Returns a list of (c, b, weight_sign) with b of length k+1 (b[k] for the output part).
    """
    neurons = []
    for b in itertools.product((0, 1), repeat=k + 1):
        if sum(b) % 2:
            continue
        s_b = -1 if sum(b) % 4 == 2 else 1
        for c in itertools.product((1, -1), repeat=k - 1):
            c = (1, *c)
            neurons.append((c, b, s_b * (-1) ** sum(1 for ci in c if ci < 0)))
    return neurons


def frequency_block(k: int):
    """Symbolic sum over one frequency's neurons of (sum_j u_j(x_j))^k w(x_c), and its claimed value.

    Returns (block_sum, 2^(k-1) k! cos(x_1 + ... + x_k - x_c), number of neurons). The two agree identically
    (checked by :func:`check_frequency_block`); the number of neurons is 2^(2k-1).
    """
    x = sp.symbols(f"x1:{k + 1}", real=True)
    xc = sp.Symbol("x_c", real=True)
    angles = (*x, -xc)

    def trig(bit, angle):
        return sp.sin(angle) if bit else sp.cos(angle)

    total = 0
    neurons = block_neurons(k)
    for c, b, w_sign in neurons:
        pre = sum(cj * trig(bj, xj) for cj, bj, xj in zip(c, b[:k], angles[:k], strict=True))
        total += pre**k * w_sign * trig(b[k], angles[k])
    return total, 2 ** (k - 1) * sp.factorial(k) * sp.cos(sum(x) - xc), len(neurons)


def check_frequency_block(k: int) -> bool:
    block, target, _ = frequency_block(k)
    return sp.expand(sp.expand_trig(block - target)) == 0


def construction_margin():
    """Normalised margin of theta*, symbolically: correct logit minus wrong logit over ||theta||^(k+1).

    With beta = sqrt(2/((k+1)p)) each neuron has ||theta_i|| = 1; a frequency block outputs
    K cos_zeta(sum a - c) with K = 2^(k-1) k! beta^(k+1); summing cos_zeta over zeta = 1..(p-1)/2 gives (p-1)/2 on
    the correct class and -1/2 on every wrong one, so the margin is K p/2 and ||theta||_{2,k+1}^(k+1) = N.
    """
    k, p = k_sym, p_sym
    beta = sp.sqrt(2 / ((k + 1) * p))
    block_gain = 2 ** (k - 1) * sp.factorial(k) * beta ** (k + 1)
    n_neurons = neuron_count(k, p)
    margin = block_gain * ((p - 1) / 2 - sp.Rational(-1, 2)) / n_neurons
    return {
        "beta": beta,
        "neuron_norm_sq": sp.simplify((k + 1) * beta**2 * p / 2),
        "correct": sp.simplify(block_gain * (p - 1) / 2 / n_neurons),
        "wrong": sp.simplify(block_gain * sp.Rational(-1, 2) / n_neurons),
        "margin": margin,
        "matches_gamma_star": sp.simplify(sp.powsimp(margin / gamma_star(k, p), force=True)) == 1,
    }


def cosine_sum_over_frequencies(p: int, x: int) -> sp.Expr:
    """sum_{zeta=1}^{(p-1)/2} cos(2 pi zeta x / p), exactly: (p-1)/2 if x = 0 mod p, else -1/2 (erratum E13)."""
    total = sum(sp.cos(2 * sp.pi * zeta * x / p) for zeta in range(1, (p - 1) // 2 + 1))
    return sp.nsimplify(sp.N(total, 50), rational=True, tolerance=1e-40)


def max_margin_network(k: int, p: int, dtype=torch.float64):
    """theta* of Lemma C.18 as neuron tables (u of shape (N, k, p), w of shape (N, p)), normalised so that
    ||theta*||_{2,k+1} = 1, with N = 2^(2k-2) (p-1) neurons. Also returns each neuron's frequency and phases.
    """
    beta = math.sqrt(2.0 / ((k + 1) * p))
    a = torch.arange(p, dtype=dtype)
    us, ws, freqs, phases = [], [], [], []
    for zeta in range(1, (p - 1) // 2 + 1):
        angle = 2 * math.pi * zeta * a / p
        for c, b, w_sign in block_neurons(k):
            # cos(angle) has phase 0, sin(angle) = cos(angle - pi/2), and a sign -1 is a phase pi.
            u_phase = [
                (0.0 if cj > 0 else math.pi) - (math.pi / 2 if bj else 0.0) for cj, bj in zip(c, b[:k], strict=True)
            ]
            # w(c) = w_sign * trig_b(-angle): cos(-x) = cos(x), sin(-x) = -sin(x) = cos(x + pi/2).
            w_phase = (0.0 if w_sign > 0 else math.pi) + (math.pi / 2 if b[k] else 0.0)
            us.append(torch.stack([beta * torch.cos(angle + ph) for ph in u_phase]))
            ws.append(beta * torch.cos(angle + w_phase))
            freqs.append(zeta)
            phases.append((*u_phase, w_phase))
    u, w = torch.stack(us), torch.stack(ws)
    n = u.shape[0]
    scale = n ** (-1.0 / (k + 1))  # each neuron has unit norm, so this makes ||theta||_{2,k+1} = 1
    return u * scale, w * scale, torch.tensor(freqs), torch.tensor(phases, dtype=dtype)


def single_neuron_objective(u: np.ndarray, w: np.ndarray) -> float:
    """eta(0) - E_{delta != 0} eta(delta), eta(delta) = E_a[(sum_j u_j(a_j))^k w(sum a - delta)], brute force.

    ``u`` has shape (k, p), ``w`` shape (p,); float64 over all of Z_p^k.
    """
    k, p = u.shape
    grids = np.meshgrid(*[np.arange(p)] * k, indexing="ij")
    pre = sum(u[j][grids[j]] for j in range(k))
    total = sum(grids) % p
    eta = np.array([np.mean(pre**k * w[(total - delta) % p]) for delta in range(p)])
    return float(eta[0] - eta[1:].mean())


def fourier_objective(u: np.ndarray, w: np.ndarray) -> float:
    """The right side of (C.10): k!/((p-1) p^k) sum_{j != 0} w_hat(-j) prod_i u_hat_i(j)."""
    k, p = u.shape
    u_hat = np.fft.fft(u, axis=1)
    w_hat = np.fft.fft(w)
    j = np.arange(1, p)
    total = np.sum(w_hat[(-j) % p] * np.prod(u_hat[:, j], axis=0))
    return float((math.factorial(k) / ((p - 1) * p**k) * total).real)


def fourier_objective_polar(u: np.ndarray, w: np.ndarray) -> float:
    """(C.13): 2 k!/((p-1) p^k) sum_{j=1}^{(p-1)/2} |w_hat(j)| prod_i |u_hat_i(j)| cos(sum_i theta_ui(j) - theta_w(j)),
    the real form of (C.10) for real neurons (p odd), with u_hat(j) = |u_hat(j)| exp(i theta_u(j))."""
    k, p = u.shape
    u_hat, w_hat = np.fft.fft(u, axis=1), np.fft.fft(w)
    j = np.arange(1, (p - 1) // 2 + 1)
    phase = np.angle(u_hat[:, j]).sum(axis=0) - np.angle(w_hat[j])
    terms = np.abs(w_hat[j]) * np.prod(np.abs(u_hat[:, j]), axis=0) * np.cos(phase)
    return float(2 * math.factorial(k) / ((p - 1) * p**k) * terms.sum())


def optimal_neuron(k: int, p: int, zeta: int, phases_u, dtype=np.float64):
    """The single-neuron optimum of Lemma C.15: u_j = beta cos(theta_j + 2 pi zeta a / p) and w likewise with
    theta_w = sum_j theta_j, beta = sqrt(2 / ((k+1) p))."""
    beta = math.sqrt(2.0 / ((k + 1) * p))
    a = np.arange(p, dtype=dtype)
    u = np.stack([beta * np.cos(th + 2 * np.pi * zeta * a / p) for th in phases_u])
    w = beta * np.cos(sum(phases_u) + 2 * np.pi * zeta * a / p)
    return u, w

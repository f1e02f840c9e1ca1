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

import dataclasses
import itertools
import math

import numpy as np
import sympy as sp
import torch

from feature_learning.data.modular import all_tuples, modular_sum
from feature_learning.measure.fourier import dominant_frequency, max_normalized_power, phase_at, wrap_angle
from feature_learning.measure.metrics import class_weighted_margins, margins
from feature_learning.models.poly_net import poly_net_from_neurons

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


@dataclasses.dataclass(frozen=True)
class GammaStarDerivation:
    """The steps of Lemmas C.14-C.15, each computed by SymPy from the objective (symbolic in k and p).

    The single-neuron problem (Definitions C.12-C.13) is the class-weighted margin of Definition 4.6 with uniform
    tau, averaged over the uniform q on Z_p^k: eta(0) - E_{delta != 0} eta(delta) with
    eta(delta) = E_a[(u_1(a_1) + ... + u_k(a_k))^k w(a_1 + ... + a_k - delta)], over sum_j ||u_j||^2 + ||w||^2 <= 1.
    """

    character_mean: sp.Expr  # E_{a in Z_p} rho^(t a): 1 if p | t, else 0 (orthogonality of the characters)
    margin_on_character: sp.Expr  # D[delta -> rho^(-n delta)] with D[f] = f(0) - E_{delta != 0} f(delta)
    margin_on_constant: sp.Expr  # D[1] = 0: delta-independent terms cancel (erratum E10)
    multilinear_coefficient: sp.Expr  # coefficient of u_1(a_1)...u_k(a_k) in (sum_j u_j(a_j))^k: k!
    prefactor: sp.Expr  # of (C.10): k!/((p-1) p^k)
    paired_terms: sp.Expr  # the j and -j terms of (C.10) for real neurons, in polar form (C.13)
    plancherel_factor: sp.Expr  # sum_a f(a)^2 = plancherel_factor * sum_j |f_hat(j)|^2  (1/p)
    budget: sp.Expr  # sum_{j >= 1} z(j) <= budget, z(j) = sum_i |u_hat_i(j)|^2 + |w_hat(j)|^2  (p/2)
    amplitude: sp.Expr  # the KKT optimum |u_hat_i(zeta)| = |w_hat(zeta)| = sqrt(budget / (k+1))
    kkt_multiplier: sp.Expr  # its Lagrange multiplier
    best_product: sp.Expr  # max prod of the k+1 magnitudes on one frequency: (budget/(k+1))^((k+1)/2)
    curvature: sp.Expr  # d^2/dz^2 z^((k+1)/2) >= 0: the sum over frequencies is convex, all mass on one
    gamma: sp.Expr  # the derived maximum: 2 * prefactor * best_product, simplified


def derive_gamma_star() -> GammaStarDerivation:
    """gamma* derived from the single-neuron objective of Definitions C.12-C.13 (Lemmas C.14-C.15), symbolically.

    1. Orthogonality: E_a rho^(t a) over Z_p is 1 if p | t and 0 otherwise (SymPy sums the geometric series), and
       the margin functional D maps delta -> rho^(-n delta) to p/(p-1) for p not dividing n and to 0 otherwise
       ((C.9); erratum E9).
    2. Fourier reduction (C.10): write each part by its inverse DFT, u(a) = (1/p) sum_j u_hat(j) rho^(j a). The
       objective is multilinear in the k+1 parts; on characters u_i = rho^(l_i a), w = rho^(n c) a monomial of
       (sum u_i)^k that misses some a_i averages to a multiple of [p | n], i.e. a constant in delta, which D maps to
       0 (erratum E10); the multilinear monomial, with coefficient k!, gives k! prod_i [l_i = -n] D[rho^(-n delta)].
       Collecting the 1/p of each of the k+1 inverse DFTs: prefactor = k! * p/(p-1) / p^(k+1).
    3. For real parts u_hat(-j) = conj(u_hat(j)); the j and -j terms pair to 2 |w_hat| prod |u_hat| cos(phases)
       (C.13).
    4. Plancherel, from the same orthogonality: sum_a f(a)^2 = (1/p) sum_j |f_hat(j)|^2, so the unit ball gives
       (1/p)(constant terms + 2 sum_{j >= 1} z(j)) <= 1 and the budget sum_{j >= 1} z(j) <= p/2 (the constant
       frequency does not enter (C.13), so the optimum puts no norm there).
    5. On one frequency, max prod x_i subject to sum x_i^2 = z (KKT; the symmetric critical point for general k,
       :func:`equal_amplitude_optimum` solves the full system for a given k); across frequencies z^((k+1)/2) is
       convex, so the maximum over the budget's simplex puts all mass on one frequency (a vertex).
    """
    k, p = k_sym, p_sym
    t, n, a, delta = sp.symbols("t n a delta", integer=True)
    rho = sp.exp(2 * sp.pi * sp.I / p)
    character_mean = sp.simplify(sp.summation(rho ** (t * a), (a, 0, p - 1)) / p)
    shifted = sp.summation(rho ** (-n * delta), (delta, 1, p - 1))  # sum over delta != 0
    margin_on_character = sp.Piecewise(*[(sp.simplify(e), c) for e, c in sp.piecewise_fold(1 - shifted / (p - 1)).args])
    margin_on_constant = sp.simplify(1 - sp.summation(sp.Integer(1), (delta, 1, p - 1)) / (p - 1))
    # coefficient of the multilinear monomial: the multinomial coefficient k!/(1!...1!) (checked by expansion in
    # :func:`multilinear_coefficient` for small k)
    multilinear = sp.factorial(k) / sp.Product(sp.factorial(1), (sp.Symbol("i", integer=True), 1, k)).doit()
    nonzero_frequency = margin_on_character.args[-1][0]  # the branch p does not divide n
    prefactor = sp.simplify(multilinear * nonzero_frequency / p ** (k + 1))
    # paired terms of (C.10) at j and -j, written for three inputs and any k by the same algebra
    paired = _paired_terms(3)
    # Plancherel: (1/p) sum_j |f_hat(j)|^2 = sum_{a, b} f(a) f(b) E_j rho^(j (a - b)) = sum_a f(a)^2
    plancherel_factor = 1 / (p * character_mean.args[0][0])  # sum_j rho^(-j(a-b)) = p E_j[...] = p [a = b]
    budget_symbol = sp.Symbol("B", positive=True)
    (budget,) = sp.solve(sp.Eq(plancherel_factor * 2 * budget_symbol, 1), budget_symbol)
    # KKT on one frequency, symmetric critical point for general n = k+1 factors
    x, lam, z = sp.symbols("x lambda z", positive=True)
    n_factors = k + 1
    (kkt,) = sp.solve([x ** (n_factors - 1) - 2 * lam * x, n_factors * x**2 - z], [x, lam], dict=True)
    amplitude = kkt[x].subs(z, budget)
    best_product = sp.powsimp(amplitude**n_factors, force=True)
    curvature = sp.factor(sp.diff(z ** (n_factors / sp.Integer(2)), z, 2))
    gamma = sp.simplify(sp.powsimp(2 * prefactor * best_product, force=True))
    return GammaStarDerivation(
        character_mean=character_mean, margin_on_character=margin_on_character, margin_on_constant=margin_on_constant,
        multilinear_coefficient=multilinear, prefactor=prefactor, paired_terms=paired,
        plancherel_factor=plancherel_factor, budget=budget, amplitude=amplitude, kkt_multiplier=kkt[lam],
        best_product=best_product, curvature=curvature, gamma=gamma,
    )


def _paired_terms(k: int) -> sp.Expr:
    """w_hat(-j) prod_i u_hat_i(j) plus its j -> -j partner for real parts (u_hat(-j) = conj u_hat(j)), in polar
    form |u_hat_i(j)| e^(i theta_ui), |w_hat(j)| e^(i theta_w): 2 |w_hat| prod |u_hat_i| cos(sum theta_ui - theta_w)."""
    r_u = sp.symbols(f"r_u1:{k + 1}", positive=True)
    r_w = sp.Symbol("r_w", positive=True)
    th_u = sp.symbols(f"theta_u1:{k + 1}", real=True)
    th_w = sp.Symbol("theta_w", real=True)
    term = r_w * sp.exp(-sp.I * th_w) * sp.Mul(*[r * sp.exp(sp.I * th) for r, th in zip(r_u, th_u, strict=True)])
    return sp.simplify(sp.expand_complex(term + sp.conjugate(term)))


def multilinear_coefficient(k: int) -> sp.Expr:
    """The coefficient of x_1 x_2 ... x_k in (x_1 + ... + x_k)^k, by expansion (k! by the multinomial theorem)."""
    xs = sp.symbols(f"x1:{k + 1}")
    return sp.Poly(sp.expand(sum(xs) ** k), *xs).coeff_monomial(sp.Mul(*xs))


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
    (checked in the chapter and the tests); the number of neurons is 2^(2k-1).
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
        "margin": sp.simplify(sp.powsimp(margin, force=True)),
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


def fourier_objective(u: np.ndarray, w: np.ndarray, prefactor: float) -> float:
    """The right side of (C.10): prefactor * sum_{j != 0} w_hat(-j) prod_i u_hat_i(j), with the prefactor
    k!/((p-1) p^k) of :func:`derive_gamma_star` evaluated at (k, p)."""
    k, p = u.shape
    u_hat = np.fft.fft(u, axis=1)
    w_hat = np.fft.fft(w)
    j = np.arange(1, p)
    total = np.sum(w_hat[(-j) % p] * np.prod(u_hat[:, j], axis=0))
    return float((prefactor * total).real)


def fourier_objective_polar(u: np.ndarray, w: np.ndarray, prefactor: float) -> float:
    """(C.13): 2 prefactor sum_{j=1}^{(p-1)/2} |w_hat(j)| prod_i |u_hat_i(j)| cos(sum_i theta_ui(j) - theta_w(j)),
    the real form of (C.10) for real neurons (p odd), with u_hat(j) = |u_hat(j)| exp(i theta_u(j))."""
    k, p = u.shape
    u_hat, w_hat = np.fft.fft(u, axis=1), np.fft.fft(w)
    j = np.arange(1, (p - 1) // 2 + 1)
    phase = np.angle(u_hat[:, j]).sum(axis=0) - np.angle(w_hat[j])
    terms = np.abs(w_hat[j]) * np.prod(np.abs(u_hat[:, j]), axis=0) * np.cos(phase)
    return float(2 * prefactor * terms.sum())


def optimal_neuron(k: int, p: int, zeta: int, phases_u, amplitude: float | None = None, phase_error: float = 0.0):
    """The single-neuron optimum of Lemma C.15: u_j = beta cos(theta_j + 2 pi zeta a / p) and w likewise with
    theta_w = sum_j theta_j + ``phase_error``; beta = sqrt(2 / ((k+1) p)) unless ``amplitude`` is given."""
    beta = math.sqrt(2.0 / ((k + 1) * p)) if amplitude is None else amplitude
    a = np.arange(p, dtype=np.float64)
    u = np.stack([beta * np.cos(th + 2 * np.pi * zeta * a / p) for th in phases_u])
    w = beta * np.cos(sum(phases_u) + phase_error + 2 * np.pi * zeta * a / p)
    return u, w


def single_neuron_objective_torch(u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """:func:`single_neuron_objective` for a batch of neurons u (R, k, p), w (R, p), differentiable: (R,).

    eta(delta) = (1/p^k) sum_s G(s) w(s - delta) with G(s) the sum of (sum_j u_j(a_j))^k over the a with
    a_1 + ... + a_k = s (mod p)."""
    r, k, p = u.shape
    grids = torch.meshgrid(*[torch.arange(p)] * k, indexing="ij")
    idx = torch.stack([g.reshape(-1) for g in grids])  # (k, p^k)
    pre = sum(u[:, j, idx[j]] for j in range(k))  # (R, p^k)
    total = idx.sum(0) % p
    g = torch.zeros(r, p, dtype=u.dtype).index_add_(1, total, pre**k) / p**k  # (R, p)
    shift = (torch.arange(p)[:, None] - torch.arange(p)[None, :]) % p  # [s, delta] -> s - delta
    eta = torch.einsum("rs,rsd->rd", g, w[:, shift])  # (R, p): eta(delta)
    return eta[:, 0] - eta[:, 1:].mean(dim=1)


def _project(u: torch.Tensor, w: torch.Tensor):
    """Scale each neuron onto the unit sphere sum_j ||u_j||^2 + ||w||^2 = 1."""
    norm = (u.pow(2).sum((1, 2)) + w.pow(2).sum(1)).sqrt()
    return u / norm[:, None, None], w / norm[:, None]


def single_neuron_ascent(k: int, p: int, starts: int, steps: int, generator: torch.Generator,
                         return_neurons: bool = False):
    """Projected gradient ascent of the single-neuron objective (Definitions C.12-C.13, by brute force over Z_p^k)
    on the unit sphere sum ||u_j||^2 + ||w||^2 = 1, from ``starts`` random neurons. Monotone: a step
    x -> (x + eta grad) / ||.|| is taken only if it does not lower the objective, and eta grows by 1.2 after a taken
    step and halves after a refused one. Returns the objective at the end, one value per start (R,): an optimiser's
    view of the maximum that Lemma C.15 computes, which uses neither the Fourier reduction nor gamma*. With
    ``return_neurons``, also the neurons it ends at: u (R, k, p) and w (R, p)."""
    u, w = _project(torch.randn(starts, k, p, generator=generator, dtype=torch.float64),
                    torch.randn(starts, p, generator=generator, dtype=torch.float64))
    eta = None
    for _ in range(steps):
        u.requires_grad_(), w.requires_grad_()
        value = single_neuron_objective_torch(u, w)
        grad_u, grad_w = torch.autograd.grad(value.sum(), [u, w])
        with torch.no_grad():
            u, w, value = u.detach(), w.detach(), value.detach()
            if eta is None:  # a first step of about a tenth of the sphere's radius
                eta = 0.1 / (grad_u.pow(2).sum((1, 2)) + grad_w.pow(2).sum(1)).sqrt()
            new_u, new_w = _project(u + eta[:, None, None] * grad_u, w + eta[:, None] * grad_w)
            better = single_neuron_objective_torch(new_u, new_w) >= value
            u = torch.where(better[:, None, None], new_u, u)
            w = torch.where(better[:, None], new_w, w)
            eta = torch.where(better, 1.2 * eta, 0.5 * eta)
    value = single_neuron_objective_torch(u, w)
    return (value, u, w) if return_neurons else value


def neuron_sparsity(u: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Theorem 4.9 (2) on single neurons u (R, k, p), w (R, p): per neuron, the smallest one-sided max normalised
    power over its k+1 parts (1 for a pure cosine), whether all parts share their dominant frequency, and the phase
    residual |sum_j theta_uj - theta_w| (rad, wrapped) at the dominant frequency of w."""
    parts = torch.cat([u, w[:, None, :]], dim=1)  # (R, k+1, p)
    top, freq = max_normalized_power(parts), dominant_frequency(parts)  # (R, k+1)
    same = (freq == freq[:, -1:]).all(dim=1)
    angle = phase_at(parts, freq[:, -1:].expand_as(freq))
    residual = wrap_angle(angle[:, :-1].sum(1) - angle[:, -1])
    return top.min(dim=1).values, same, residual.abs()


@dataclasses.dataclass(frozen=True)
class SingleNeuronCheck:
    """The single-neuron problem at one (k, p), by brute force over Z_p^k, against Lemma C.15 (all ratios to gamma)."""

    k: int
    p: int
    gamma: float  # the maximum Lemma C.15 derives, at (k, p)
    reduction_error: float  # largest relative gap of (C.10) and (C.13) to the brute-force objective, random neurons
    optimum_ratio: float  # the cosine neuron of Lemma C.15 (random phases, sum theta_u = theta_w) / gamma
    phase_error_ratio: float  # the same with theta_w off by 1 rad / gamma: cos(1) by (C.13)
    random_ratio: float  # best of the random unit-norm neurons / gamma
    ascent_ratios: np.ndarray  # projected gradient ascent from random starts / gamma, one per start (or none)
    ascent_power: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))  # per start: the smallest max
    # normalised power over the neuron's k+1 parts where the ascent ends (Thm 4.9 (2): 1)
    ascent_same_frequency: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))  # per start: one
    # dominant frequency shared by all parts
    ascent_phase: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))  # per start: phase residual


def single_neuron_checks(pairs, derivation: GammaStarDerivation, generator: torch.Generator, random_neurons: int = 20,
                         ascent_starts: int = 8, ascent_steps: int = 500,
                         ascent_points: int | None = None) -> list[SingleNeuronCheck]:
    """For each (k, p): the derived (C.10) prefactor and gamma evaluated at (k, p), checked against the brute-force
    single-neuron objective of Definitions C.12-C.13 on random neurons, on the optimal cosine neuron, on a phase
    error and under gradient ascent (only where p^k <= ``ascent_points``, if given; elsewhere ``ascent_ratios`` is
    empty). Random draws come from ``generator``."""
    rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
    out = []
    for k, p in pairs:
        values = {k_sym: k, p_sym: p}
        prefactor, gamma = float(derivation.prefactor.subs(values)), float(derivation.gamma.subs(values))
        reduction = 0.0
        for _ in range(3):
            u, w = rng.normal(size=(k, p)), rng.normal(size=p)
            exact = single_neuron_objective(u, w)
            for fourier_side in (fourier_objective(u, w, prefactor), fourier_objective_polar(u, w, prefactor)):
                reduction = max(reduction, abs(exact - fourier_side) / max(1.0, abs(exact)))
        zeta = 1 + (p - 1) // 4
        phases = rng.uniform(-np.pi, np.pi, size=k)
        random_best = -np.inf
        for _ in range(random_neurons):
            u, w = rng.normal(size=(k, p)), rng.normal(size=p)
            scale = math.sqrt((u**2).sum() + (w**2).sum())
            random_best = max(random_best, single_neuron_objective(u / scale, w / scale))
        if ascent_points is None or p**k <= ascent_points:
            value, u_end, w_end = single_neuron_ascent(k, p, ascent_starts, ascent_steps, generator,
                                                       return_neurons=True)
            ascent = value.numpy()
            sparsity = [x.numpy() for x in neuron_sparsity(u_end, w_end)]
        else:
            ascent, sparsity = np.empty(0), [np.empty(0)] * 3
        out.append(SingleNeuronCheck(
            k=k, p=p, gamma=gamma, reduction_error=reduction,
            optimum_ratio=single_neuron_objective(*optimal_neuron(k, p, zeta, phases)) / gamma,
            phase_error_ratio=single_neuron_objective(*optimal_neuron(k, p, zeta, phases, phase_error=1.0)) / gamma,
            random_ratio=random_best / gamma, ascent_ratios=ascent / gamma, ascent_power=sparsity[0],
            ascent_same_frequency=sparsity[1], ascent_phase=sparsity[2],
        ))
    return out


@dataclasses.dataclass(frozen=True)
class ConstructionCheck:
    """theta* of Lemma C.18 at one (k, p), evaluated in float64 on all of Z_p^k."""

    k: int
    p: int
    neurons: int
    norm: float  # ||theta*||_{2,k+1}
    margin: float  # h(theta*): min over Z_p^k of the margin (Definition 4.3)
    class_weighted_margin: float  # min of g' with uniform tau (Definition 4.6)
    correct: tuple[float, float]  # (min, max) over the inputs of the correct label's logit
    wrong: tuple[float, float]  # (min, max) over inputs and wrong labels of the logits
    phase_law: float  # max over neurons of |wrap(sum_j theta_uj - theta_w)|
    frequencies: tuple[int, ...]  # the neurons' frequencies, each once
    support: int  # number of (k+1)-D DFT coefficients of f(theta*) on j_1 = ... = j_k = -j_(k+1) != 0 that are nonzero
    off_support: float  # largest |DFT coefficient| off that set, relative to the largest


def check_construction(k: int, p: int) -> ConstructionCheck:
    """Build theta* (:func:`max_margin_network`) and measure what Lemmas C.18 and C.20 say about it."""
    u, w, freqs, phases = max_margin_network(k, p)
    net = poly_net_from_neurons(u, w)
    inputs = all_tuples(k, p)
    labels = modular_sum(inputs, p)
    logits = net(inputs)[0]
    is_correct = torch.zeros_like(logits, dtype=torch.bool).scatter(1, labels[:, None], True)
    correct, wrong = logits[is_correct], logits[~is_correct]
    # the (k+1)-dimensional DFT of f(a_1..a_k)[c]: Lemma C.20 puts it on j_1 = ... = j_k = -j_(k+1) != 0
    spectrum = torch.fft.fftn(logits.reshape(*([p] * (k + 1)))).abs()
    js = torch.stack(torch.meshgrid(*[torch.arange(p)] * (k + 1), indexing="ij"))
    diagonal = (js[:k] == js[0]).all(0) & ((js[0] + js[k]) % p == 0) & (js[0] != 0)
    return ConstructionCheck(
        k=k, p=p, neurons=u.shape[0], norm=float(net.group_norm()),
        margin=float(margins(logits, labels).min()),
        class_weighted_margin=float(class_weighted_margins(logits, labels).min()),
        correct=(float(correct.min()), float(correct.max())), wrong=(float(wrong.min()), float(wrong.max())),
        phase_law=float(wrap_angle(phases[:, :k].sum(1) - phases[:, k]).abs().max()),
        frequencies=tuple(sorted(set(freqs.tolist()))),
        support=int((spectrum[diagonal] > 1e-9 * spectrum.max()).sum()),
        off_support=float(spectrum[~diagonal].max() / spectrum.max()),
    )

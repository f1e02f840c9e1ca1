"""The trainer and runs of the simplicity-bias chapter, in notebook order: four neurons and the small-init network
on XOR (Sec. 5.4.2, Lemma 5.5), the capture of the four extrema (Lemma 5.3), skewed XOR (Sec. 6) and the probes of
mid-training features (Sec. 7)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable

import numpy as np
import torch

from feature_learning.book.claims import project_root
from feature_learning.book.profiles import Run
from feature_learning.data.xor import simple_plus_complex_data, skewed_xor_data, xor_cluster_data
from feature_learning.experiments.simplicity_bias.sizes import (
    DOMINO,
    DOMINO_DTYPE,
    DOMINO_MISMATCH,
    DOMINO_NOTES_MU,
    DT,
    FOUR_NEURON_DIRECTIONS,
    FOUR_NEURON_INITS,
    LEMMA_INIT_SCALE,
    MID_FRACTION,
    PROBE_C,
    PROBES,
    SKEW_ANGLES,
    SKEW_CLEAN_EXTREMA,
    SKEW_CLUSTERS,
    SKEW_INIT_SCALE,
    SKEW_REF_WIDTH,
    CaptureSizes,
    DominoSizes,
    FourNeuronSizes,
    SkewSizes,
    four_neuron_schedule,
)
from feature_learning.measure.geometry import (
    angle_gap,
    cluster_amplitudes,
    mass_near,
    neuron_angles,
    sign_consistency,
    weighted_centres,
)
from feature_learning.measure.lucky_neurons import level_crossing
from feature_learning.measure.probes import logistic_probe, rms_normalize
from feature_learning.measure.statistics import mean_se, paired_one_sided_t
from feature_learning.models.two_layer import (
    TwoLayerNet,
    cat_replicas,
    init_aligned,
    init_balanced,
    init_torch_default,
    logistic_loss_and_grads,
    normalized_margin,
    pad_width,
)
from feature_learning.theory.simplicity_bias import (
    capture_probability_exact,
    capture_probability_paper,
    g_extrema_on_circle,
    g_function,
)
from feature_learning.training.loop import OptimConfig, train

XOR_DELTA, XOR_SIGMA, XOR_BASE = 0.01, 0.005, 16  # Assumption 5.1 data of Sec. 5.4.2 (256 points in R^2)


CAPTURE_INIT_SCALE, CAPTURE_LR = 1e-8, 0.5


DOMINO_SMALL_INIT, DOMINO_STANDARD_INIT = 2.0**-7, 1.0


# -- training ----------------------------------------------------------------------------------------------------------


def logistic_gd(net: TwoLayerNet, X: torch.Tensor, y: torch.Tensor, *, steps: int,
                lr: float | Callable[[int], float], log_at: Iterable[int] = ()) -> dict[str, torch.Tensor]:
    """Full-batch gradient descent on the mean logistic loss (the discretised gradient flow of eq. (1)), with the
    exact gradients of :func:`~feature_learning.models.two_layer.logistic_loss_and_grads`, through
    :func:`~feature_learning.training.loop.train` (``optimizer="gd"``, no warm-up). ``lr`` is a number or a
    function epoch -> step size. ``net`` is trained in place (copy it first to keep the initial weights).

    Returns the history at the steps ``log_at`` and at the end: ``step`` (T,), ``W`` (T, R, m, d), ``a`` (T, R, m)
    and the ``loss`` (T, R) before the update of that step (the weights after ``step`` updates)."""
    names = list(net.named_parameters())

    def grad_fn(step):
        _, grads = logistic_loss_and_grads(net, X, y)
        return [grads[name] for name in names]

    def log_fn(step):
        loss, _ = logistic_loss_and_grads(net, X, y)
        return {"W": net.W.detach().clone(), "a": net.a.detach().clone(), "loss": loss}

    schedule = lr if callable(lr) else "constant"
    config = OptimConfig(steps=steps, lr=1.0 if callable(lr) else float(lr), optimizer="gd", warmup=0,
                         schedule=schedule)
    return train(net.parameters(), None, config, log_at=log_at, log_fn=log_fn, grad_fn=grad_fn)


def _bias_free(W: torch.Tensor, a: torch.Tensor) -> TwoLayerNet:
    return TwoLayerNet(W=W, a=a, activation="relu", trained=("W", "a"))


# -- Experiment 1: four neurons and the small-init network on XOR (Sec. 5.4.2, Lemma 5.5) ------------------------------


@dataclasses.dataclass
class FourNeuronResult:
    X: torch.Tensor
    y: torch.Tensor
    extrema: tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # angles, G-values and signs of G's extrema on the data
    lam: float  # max |G| on the data
    g_e1: float  # G(e_1) on the data
    axes_gap: float  # largest distance (rad) of an extremum of the sampled G from the nearest of 0, pi/2, pi, -pi/2
    gamma_mm: float  # min_i y_i (|x_i^1| - |x_i^2|) / 8
    init: TwoLayerNet  # the initial networks: the three four-neuron inits (padded), then the small-init networks
    labels: list[str]
    epochs: torch.Tensor  # snapshot epochs (S,)
    scales: torch.Tensor  # ||v_k|| of the four neurons (S, 3, 4)
    angles: torch.Tensor  # signed angle to the neuron's axis (S, 3, 4)
    margin_epochs: torch.Tensor
    margins: torch.Tensor  # normalised margin (S', R)
    final_loss: torch.Tensor  # (R,)
    growth12: float  # scale of neuron 1 after the 12 steps at eta = 4, over its initial scale
    growth_pred: float  # (1 + 4 lambda)^12
    scale_spread: float  # max over the three runs of max/min final scale - 1
    final_scale: float
    max_angle: float  # max |angle to the axis| over training
    gamma_four: float
    gamma_lemma: float
    min_yf_four: float  # min over the three four-neuron runs and the points of y_i f(x_i) at the end (Prop. 5.7)
    min_yf_four_init: float  # the same at epoch 0
    lemma_mass: float  # min over seeds of the mass within 0.05 rad of the axes
    amplitudes: torch.Tensor  # U_k^2 of the small-init networks after lemma_epochs (seeds, 4)
    amplitude_spread: float  # max over seeds of max/min U_k^2 - 1, after lemma_epochs
    amplitude_spread_end: float  # the same at the end of the source's schedule (epochs)
    amplitude_spreads: list[float]  # per small-init network: max/min U_k^2 - 1 after lemma_epochs
    amplitude_spreads_end: list[float]  # ... and at the end of the source's schedule (epochs)
    # nulls: the same measurements, taken the same way over the replicas, on the initial (untrained) networks
    scale_spread_init: float  # the four neurons' scale spread at epoch 0
    gamma_init_four: float  # the four-neuron runs' normalised margin at epoch 0 (smallest)
    gamma_init_lemma: float  # the small-init networks' normalised margin at epoch 0 (smallest)
    lemma_mass_init: float  # mass within 0.05 rad of the axes at epoch 0 (smallest over seeds)
    amplitude_spread_init: float  # max/min U_k^2 - 1 at epoch 0 (largest over seeds)
    seconds: float = 0.0


def _relative_spreads(values: torch.Tensor) -> torch.Tensor:
    """max / min - 1 along the last axis, one per leading (replica) index."""
    return values.max(-1).values / values.min(-1).values - 1


def _relative_spread(values: torch.Tensor) -> float:
    """max / min - 1 along the last axis, the largest over the leading (replica) axes."""
    return float(_relative_spreads(values).max())


def four_neuron_run(size: FourNeuronSizes, run: Run) -> FourNeuronResult:
    """The three four-neuron inits of Figs. 1, 6, 7 and ``lemma_seeds`` balanced isotropic networks of width
    ``lemma_width`` (scale 1e-4) on Assumption 5.1 data, one batch, the source's schedule for ``epochs`` steps; the
    small-init networks then continue on the schedule to ``lemma_epochs`` for their cluster amplitudes."""
    if size.lemma_epochs < size.epochs:
        raise ValueError(f"lemma_epochs: {size.lemma_epochs} < epochs {size.epochs}; the lemma network continues")
    dev = run.device
    X, y = xor_cluster_data(XOR_BASE, 2, delta=XOR_DELTA, sigma=XOR_SIGMA, generator=run.generator("xor_data"))
    extrema = g_extrema_on_circle(X, y)
    lam = float(extrema[1].abs().max())
    g_e1 = float(g_function(torch.tensor([[1.0, 0.0]], dtype=DT), X, y)[0])
    axes = torch.tensor([-math.pi, -math.pi / 2, 0.0, math.pi / 2], dtype=DT)
    axes_gap = float(angle_gap(extrema[0].unsqueeze(-1), axes).min(-1).values.max())
    gamma_mm = float((y * (X[:, 0].abs() - X[:, 1].abs())).min() / 8)
    width = size.lemma_width
    dirs = torch.tensor(FOUR_NEURON_DIRECTIONS, dtype=DT)
    a0 = torch.tensor(list(FOUR_NEURON_INITS.values()), dtype=DT)
    four = init_aligned(len(FOUR_NEURON_INITS), 2, 4, a0=a0, directions=dirs)
    lemma = init_balanced(size.lemma_seeds, 2, width, scale=LEMMA_INIT_SCALE,
                          generator=run.generator("lemma_init"))
    net = cat_replicas([pad_width(four, width), lemma]).to(device=dev)
    init = net.detached()
    snaps = sorted(set(range(0, size.epochs + 1, size.snapshot_every)) | {12})
    hist = logistic_gd(net, X.to(dev), y.to(dev), steps=size.epochs, lr=four_neuron_schedule, log_at=snaps)

    n_four = len(FOUR_NEURON_INITS)
    V4 = hist["W"][:, :n_four, :4]  # (S, 3, 4, 2)
    scales = V4.norm(dim=-1)
    target = torch.atan2(dirs[:, 1], dirs[:, 0])
    angles = torch.remainder(neuron_angles(V4) - target + math.pi, 2 * math.pi) - math.pi
    epochs = hist["step"]
    growth12 = float(scales[epochs.tolist().index(12), 0, 0] / scales[0, 0, 0])
    final = scales[-1]
    every = max(1, len(snaps) // 64)
    margins = torch.stack([normalized_margin(_bias_free(hist["W"][s], hist["a"][s]), X, y)
                           for s in range(0, len(epochs), every)])
    trained = _bias_free(hist["W"][-1], hist["a"][-1])
    gamma = normalized_margin(trained, X, y)
    with torch.no_grad():
        yf = [(_bias_free(hist["W"][s], hist["a"][s])(X)[:n_four] * y).min() for s in (-1, 0)]
    W_l, a_l = hist["W"][-1, n_four:], hist["a"][-1, n_four:]
    _, lemma_mass = mass_near(W_l, target, 0.05)
    later = _bias_free(W_l.to(dev, copy=True), a_l.to(dev, copy=True))  # the history keeps CPU copies
    logistic_gd(later, X.to(dev), y.to(dev), steps=size.lemma_epochs - size.epochs,
                lr=lambda epoch: four_neuron_schedule(size.epochs + epoch))
    U2 = cluster_amplitudes(later.a.detach().cpu(), later.W.detach().cpu(), target)
    U2_end = cluster_amplitudes(a_l, W_l, target)
    W_0, a_0 = hist["W"][0, n_four:], hist["a"][0, n_four:]
    return FourNeuronResult(
        X=X, y=y, extrema=extrema, lam=lam, g_e1=g_e1, axes_gap=axes_gap, gamma_mm=gamma_mm, init=init,
        labels=list(FOUR_NEURON_INITS) + [f"m={width}, seed {i}" for i in range(size.lemma_seeds)],
        epochs=epochs, scales=scales, angles=angles, margin_epochs=epochs[::every], margins=margins,
        final_loss=hist["loss"][-1], growth12=growth12, growth_pred=(1 + 4 * lam) ** 12,
        scale_spread=_relative_spread(final), final_scale=float(final.mean()),
        max_angle=float(angles.abs().max()), gamma_four=float(gamma[:n_four].min()),
        gamma_lemma=float(gamma[n_four:].min()), min_yf_four=float(yf[0]), min_yf_four_init=float(yf[1]),
        lemma_mass=float(lemma_mass.min()), amplitudes=U2,
        amplitude_spread=_relative_spread(U2), amplitude_spread_end=_relative_spread(U2_end),
        amplitude_spreads=_relative_spreads(U2).tolist(), amplitude_spreads_end=_relative_spreads(U2_end).tolist(),
        scale_spread_init=_relative_spread(scales[0]), gamma_init_four=float(margins[0, :n_four].min()),
        gamma_init_lemma=float(margins[0, n_four:].min()),
        lemma_mass_init=float(mass_near(W_0, target, 0.05)[1].min()),
        amplitude_spread_init=_relative_spread(cluster_amplitudes(a_0, W_0, target)))


# -- Prop. 5.8: theta^mm is a strict local max-margin direction (a certificate, and sampled directions) ------------


@dataclasses.dataclass
class MaxMarginCertificate:
    """Source Prop. 5.8's proof turned into a certificate on the data (App. D.4). With the activation patterns of
    theta^mm fixed (a neighbourhood of it), every y_i f(theta, x_i) is a quadratic form theta' Y_i theta; for the
    orbit M of the point of least margin under the group of P, R_1, R_2 (R_r = I in R^2), min_i y_i f <= theta' A
    theta with A the mean of Y_i over M, so gamma(theta) <= lambda_max(A) in that neighbourhood. The proposition
    holds there if lambda_max(A) = gamma(theta^mm), its eigenspace E is spanned by the neurons' aligned balanced
    directions (u_j, v_j) ~ (s_k, b_k e_a(k)) (the proof's equality case), and on E (where gamma is a linear
    program in the neurons' squared amplitudes t_j) the optimum has equal cluster amplitudes T_k = 1/4."""

    neurons: tuple[int, ...]  # neurons per cluster (e_1, e_2, -e_1, -e_2)
    gamma_mm: float  # gamma(theta^mm) = min_i y_i (|x^1| - |x^2|) / 8
    orbit: int  # data points in the orbit M (the data repeat every point under R_r = I)
    bound_gap: float  # lambda_max(A) / gamma_mm - 1
    eigenspace: int  # eigenvalues within 1e-9 (relative) of lambda_max
    expected: int  # the aligned balanced directions: one per neuron
    span_gap: float  # sin of the largest principal angle between E and the aligned balanced directions
    spectral_gap: float  # 1 - (next eigenvalue) / lambda_max
    lp_gamma_gap: float  # the linear program's optimum on E over gamma_mm, minus 1
    cluster_range: tuple[float, float]  # min and max of T_k over the optimal face, over k
    neuron_range: tuple[float, float]  # min and max of a single neuron's t_j over the optimal face, over j
    directions: int  # sampled directions
    epsilon: float  # their length (relative to ||theta^mm||), well inside the fixed-pattern neighbourhood
    sampled_rise: float  # max over the sampled directions of gamma(theta^mm + eps d) / gamma_mm - 1
    pattern_kept: bool  # no sampled perturbation changed an activation pattern
    resplit_gap: float  # |gamma / gamma(embedding) - 1| with each cluster's split among its neurons reversed

    @property
    def values(self) -> dict[str, float]:
        """The certificate's numbers, as the claims record them."""
        return {"bound gap": self.bound_gap, "eigenspace": self.eigenspace, "sine": self.span_gap,
                "max |T_k - 1/4|": max(abs(t - 0.25) for t in self.cluster_range)}

    @property
    def holds(self) -> bool:
        lo, hi = self.cluster_range
        return (abs(self.bound_gap) <= 1e-9 and self.eigenspace == self.expected and self.span_gap <= 1e-6
                and self.spectral_gap > 1e-6 and abs(self.lp_gamma_gap) <= 1e-9 and abs(lo - 0.25) <= 1e-9
                and abs(hi - 0.25) <= 1e-9)


def _orbit(X: torch.Tensor, i: int) -> list[int]:
    """Indices of the data points that are images of x_i under the group of P, R_1, R_2 (within 1e-12)."""
    a, b = float(X[i, 0]), float(X[i, 1])
    images = torch.tensor([(sa * p, sb * q) for p, q in ((a, b), (b, a)) for sa in (1, -1) for sb in (1, -1)],
                          dtype=X.dtype)
    near = torch.cdist(images, X[:, :2]) <= 1e-12
    if not bool(near.any(-1).all()):
        raise ValueError("the data are not closed under P, R_1, R_2: no orbit")
    return near.any(0).nonzero().flatten().tolist()


def max_margin_certificate(X: torch.Tensor, y: torch.Tensor, neurons=(1, 1, 1, 1), *, directions: int = 2000,
                           generator: torch.Generator) -> MaxMarginCertificate:
    """The certificate of :class:`MaxMarginCertificate` for theta^mm embedded with ``neurons[k]`` neurons on cluster
    k (unequal splits 1..n of the cluster amplitude; (1, 1, 1, 1) is the four-neuron network), and the margin along
    ``directions`` random directions of the weights (a test that can refute a local maximum, not establish it)."""
    from scipy.optimize import linprog

    X, y = X.detach().to("cpu", DT), y.detach().to("cpu", DT)  # a certificate in float64 on the CPU (SciPy's LP)
    dirs = torch.tensor(FOUR_NEURON_DIRECTIONS, dtype=DT)
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=DT)
    cluster = torch.tensor([k for k, n in enumerate(neurons) for _ in range(n)])
    split = torch.cat([torch.arange(1, n + 1, dtype=DT) / (n * (n + 1) / 2) for n in neurons])  # sums to 1 per k
    m, d = len(cluster), X.shape[1]
    u = signs[cluster] * split.sqrt()
    V = dirs[cluster] * split.sqrt()[:, None]
    theta = torch.cat([u, V.flatten()])
    resplit = torch.cat([torch.arange(n, 0, -1, dtype=DT) / (n * (n + 1) / 2) for n in neurons])
    theta_resplit = torch.cat([signs[cluster] * resplit.sqrt(), (dirs[cluster] * resplit.sqrt()[:, None]).flatten()])
    margins = y * (X[:, 0].abs() - X[:, 1].abs())
    gamma_mm = float(margins.min() / 8)

    def gamma(th):  # normalised margin of the width-m network, batched over leading axes
        uu, VV = th[..., :m], th[..., m:].unflatten(-1, (m, d))
        f = (torch.relu(X @ VV.transpose(-1, -2)) * uu.unsqueeze(-2)).sum(-1)
        return (y * f).min(-1).values / th.pow(2).sum(-1)

    pattern = (X @ V.T) > 0  # (n, m) at theta^mm
    M = _orbit(X, int(margins.argmin()))
    A = torch.zeros(m * (1 + d), m * (1 + d), dtype=DT)
    # Y_i couples u_j with v_j: y_i 1[v_j . x_i > 0] x_i / 2 in both off-diagonal blocks; A is their mean over M
    blocks = (pattern[M].to(DT)[:, :, None] * (y[M, None] * X[M] / 2)[:, None, :]).mean(0)  # (m, d)
    for j in range(m):
        A[j, m + j * d:m + (j + 1) * d] = A[m + j * d:m + (j + 1) * d, j] = blocks[j]
    evals, evecs = torch.linalg.eigh(A)
    top = float(evals[-1])
    in_E = (top - evals).abs() <= 1e-9 * abs(top)
    E = evecs[:, in_E]
    aligned = torch.zeros(m * (1 + d), m, dtype=DT)
    for j in range(m):
        aligned[j, j] = signs[cluster[j]] / math.sqrt(2)
        aligned[m + j * d:m + (j + 1) * d, j] = dirs[cluster[j]] / math.sqrt(2)
    cosines = torch.linalg.svdvals(E.T @ aligned) if E.shape[1] == m else torch.zeros(1, dtype=DT)
    span_gap = float((1 - cosines.min().clamp(max=1.0) ** 2).clamp(min=0).sqrt())
    spectral_gap = 1 - float(evals[~in_E].max()) / top
    # on E: theta = sum_j c_j aligned_j, y_i f = sum_j t_j w_ij with t_j = c_j^2, sum_j t_j = ||theta||^2 = 1
    w = (y[:, None] * signs[cluster][None] * torch.relu(X @ dirs[cluster].T) / 2).numpy()  # (n, m)
    # max z s.t. w t >= z, sum t = 1, t >= 0 (variables t_1..t_m, z)
    A_ub = np.hstack([-w, np.ones((len(w), 1))])
    A_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    bounds = [(0, None)] * m + [(None, None)]
    best = linprog(np.r_[np.zeros(m), -1.0], A_ub=A_ub, b_ub=np.zeros(len(w)), A_eq=A_eq, b_eq=[1.0],
                   bounds=bounds, method="highs")
    z = -best.fun
    face = [(A_ub, np.zeros(len(w))), (np.r_[np.zeros(m), -1.0][None], [-(z - 1e-13 * abs(z))])]
    A_face = np.vstack([face[0][0], face[1][0]])
    b_face = np.r_[face[0][1], face[1][1]]

    def extreme(c):
        res = linprog(c, A_ub=A_face, b_ub=b_face, A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
        return float(c @ res.x)

    clusters = [np.r_[(cluster.numpy() == k).astype(float), 0.0] for k in range(len(neurons))]
    cluster_lo = min(extreme(c) for c in clusters)
    cluster_hi = max(-extreme(-c) for c in clusters)
    units = [np.r_[np.eye(m)[j], 0.0] for j in range(m)]
    neuron_lo = min(extreme(c) for c in units)
    neuron_hi = max(-extreme(-c) for c in units)
    # sampled directions, well inside the neighbourhood where no activation pattern changes
    reach = float((X @ dirs.T).abs()[(X @ dirs.T).abs() > 0].min())
    eps = 1e-3 * reach
    D = torch.randn(directions, theta.numel(), generator=generator, dtype=DT)
    D = D / D.norm(dim=-1, keepdim=True) * theta.norm()
    moved = theta + eps * D
    kept = bool((((X @ moved[:, m:].unflatten(-1, (m, d)).transpose(-1, -2)) > 0) == pattern).all())
    return MaxMarginCertificate(
        neurons=tuple(neurons), gamma_mm=gamma_mm, orbit=len(M), bound_gap=top / gamma_mm - 1,
        eigenspace=int(in_E.sum()), expected=m, span_gap=span_gap, spectral_gap=spectral_gap,
        lp_gamma_gap=z / gamma_mm - 1, cluster_range=(cluster_lo, cluster_hi), neuron_range=(neuron_lo, neuron_hi),
        directions=directions, epsilon=eps, sampled_rise=float((gamma(moved) / gamma(theta) - 1).max()),
        pattern_kept=kept, resplit_gap=abs(float(gamma(theta_resplit) / gamma(theta)) - 1))


# -- Lemma 5.3: capturing the four extrema -----------------------------------------------------------------------------


@dataclasses.dataclass
class CaptureResult:
    widths: tuple[int, ...]
    seeds: int
    monte_carlo: list[float]  # share of runs in which every extremum holds a neuron of the right sign
    exact: list[float]  # the inclusion-exclusion value
    paper: list[float]  # the paper's product bound
    z: list[float]  # (Monte Carlo - exact) / binomial se of the exact value
    seconds: float = 0.0


def capture_run(size: CaptureSizes, run: Run, X: torch.Tensor, y: torch.Tensor, extrema) -> CaptureResult:
    """Phase 1 only: GD at step 0.5 for ``steps`` steps from balanced isotropic neurons of scale 1e-8 (f stays
    negligible), ``seeds`` networks per width in one batch (narrower networks zero-padded); a run captures an
    extremum when a neuron of the extremum's sign lies within 0.1 rad of it."""
    widths, S = size.widths, size.seeds
    net = init_balanced(len(widths) * S, 2, max(widths), scale=CAPTURE_INIT_SCALE,
                         generator=run.generator("capture_init"))
    with torch.no_grad():
        for i, w in enumerate(widths):  # narrower networks: zero neurons beyond the width
            net.a[i * S:(i + 1) * S, w:] = 0
            net.W[i * S:(i + 1) * S, w:] = 0
    net = net.to(device=run.device)
    hist = logistic_gd(net, X.to(run.device), y.to(run.device), steps=size.steps, lr=CAPTURE_LR)
    W, a = hist["W"][-1], hist["a"][-1]
    phi, _, sign = extrema
    alive = W.norm(dim=-1) > 0
    gaps = angle_gap(neuron_angles(W).unsqueeze(-1), phi)  # (R, m, 4)
    hit = ((gaps < 0.1) & (torch.sign(a).unsqueeze(-1) == sign) & alive.unsqueeze(-1)).any(1).all(-1)
    mc = hit.reshape(len(widths), S).double().mean(-1).tolist()
    exact = [float(capture_probability_exact(w)) for w in widths]
    z = [(m - p) / math.sqrt(p * (1 - p) / S) for m, p in zip(mc, exact, strict=True)]
    return CaptureResult(widths=tuple(widths), seeds=S, monte_carlo=mc, exact=exact,
                         paper=[float(capture_probability_paper(w)) for w in widths], z=z)


# -- Experiment 2: skewed XOR (Sec. 6, Fig. 2) -------------------------------------------------------------------------


@dataclasses.dataclass
class SkewRun:
    """One (alpha, width) network at the end of training, against the extrema of its data's G."""

    alpha: float
    width: int
    frob: float  # final first-layer scale ||V||_F
    mass_end: float  # share of sum ||v_j||^2 within 0.05 rad of G's extrema
    shares: torch.Tensor  # that share per extremum (k,)
    mass_early: float  # share within 0.1 rad at the early checkpoint
    sign_ok: float  # share of the mass with the sign the theory assigns
    centre_shift: float  # max move of the mass-weighted cluster centres from the early checkpoint to the end
    centres: torch.Tensor  # final mass-weighted cluster centres (k,)
    # nulls: the same measurements on the initial (untrained) network
    frob_init: float
    mass_init: float  # share within 0.1 rad of G's extrema at epoch 0
    mass_init_end: float  # share within 0.05 rad at epoch 0
    shares_init: torch.Tensor
    sign_init: float
    centre_shift_init: float  # max move of the centres from epoch 0 to the end (the initial network as the "early" one)
    centres_init: torch.Tensor


@dataclasses.dataclass
class SkewResult:
    runs: list[SkewRun]  # angle-major: (alpha_0, w_0), (alpha_0, w_1), (alpha_1, w_0), ...
    widths: tuple[int, ...]
    data: list[tuple[torch.Tensor, torch.Tensor]]  # per angle
    extrema: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]  # per angle: angles, G-values, signs
    init: TwoLayerNet
    epochs: torch.Tensor  # snapshot epochs (S,)
    frob: torch.Tensor  # first-layer scale (S, R)
    final: TwoLayerNet
    early_epoch: int  # the first snapshot where the mean loss has fallen 1% below ln 2
    flow_time: float
    width_gap: float  # max over angles of |scale(w_0) - scale(w_1)|
    centre_gap: float  # max over angles and extrema of the centre difference between the widths
    clean_gap: float  # alpha = pi/3: max distance of the trained centres from the clean -pi/2, -pi/6, pi/2, 5pi/6
    sampled_clean_gap: float  # the same for the extrema of this data set's G
    resampled_gap_mean: float  # ... over fresh data sets of the same size: mean
    resampled_gap_sd: float  # ... and standard deviation
    centre_gaps: list[float]  # per angle: the largest centre difference between the widths
    # nulls
    width_gap_lazy: float  # the width gap if each network kept its initial scale ratio (the lazy rule; max over angles)
    centre_gap_init: float  # the initial networks' centre difference between the widths (max over angles)
    clean_gaps: list[float]  # alpha = pi/3: clean_gap of each width
    cluster_gap: float  # alpha = pi/3: the clusters' own directions against the source's extrema (pi/6)
    seconds: float = 0.0


@dataclasses.dataclass
class WidthAwareResult:
    """The skew runs again with the init scale times sqrt(SKEW_REF_WIDTH / m) (sizes.py), the same data and init
    draws: the early checkpoint by the same rule (the mean loss of these runs 1% below ln 2), then per run the mass
    within 0.1 rad of G's extrema there and the centres' move from there to the end."""

    early_epoch: int
    scales: tuple[float, ...]  # the init scale of each width
    mass_early: list[float]  # per run (angle-major, as SkewResult.runs)
    centre_shift: list[float]  # per run, rad
    mass_init: list[float]  # per run: the mass within 0.1 rad at epoch 0 (the null)
    centre_shift_init: list[float]  # per run: the end centres against the initial network's


def skewed_xor_width_aware(size: SkewSizes, run: Run, skew: SkewResult) -> WidthAwareResult:
    """:func:`skewed_xor_run`'s runs with a width-aware init scale (a departure from the source, sizes.py)."""
    dev, width = run.device, max(size.widths)
    scales = tuple(SKEW_INIT_SCALE * math.sqrt(SKEW_REF_WIDTH / w) for w in size.widths)
    nets = [pad_width(init_torch_default(1, 2, w, scale=sc, bias=False, trained=("W", "a"),
                                         generator=run.generator("skew_init", i, w), dtype=DT), width)
            for i in range(len(SKEW_ANGLES)) for w, sc in zip(size.widths, scales, strict=True)]
    X = torch.stack([skew.data[i][0] for i in range(len(SKEW_ANGLES)) for _ in size.widths]).to(dev)
    y = torch.stack([skew.data[i][1] for i in range(len(SKEW_ANGLES)) for _ in size.widths]).to(dev)
    every = max(1, size.epochs // 128)
    hist = logistic_gd(cat_replicas(nets).to(device=dev), X, y, steps=size.epochs, lr=size.lr,
                       log_at=range(0, size.epochs + 1, every))
    below = torch.nonzero(hist["loss"].mean(-1) < 0.99 * math.log(2))
    if len(below) == 0:
        raise ValueError(f"the loss never fell 1% below ln 2 in {size.epochs} epochs of step {size.lr}")
    early = int(below[0, 0])
    mass, shift, mass0, shift0 = [], [], [], []
    for i in range(len(SKEW_ANGLES)):
        phi = skew.extrema[i][0]
        for j, w in enumerate(size.widths):
            r = i * len(size.widths) + j
            V_end, V_early, V_0 = (hist["W"][s, r:r + 1, :w] for s in (-1, early, 0))
            centres = weighted_centres(V_end, phi)
            mass.append(float(mass_near(V_early, phi, 0.1)[1][0]))
            mass0.append(float(mass_near(V_0, phi, 0.1)[1][0]))
            shift.append(float(angle_gap(centres, weighted_centres(V_early, phi)).max()))
            shift0.append(float(angle_gap(centres, weighted_centres(V_0, phi)).max()))
    return WidthAwareResult(int(hist["step"][early]), scales, mass, shift, mass0, shift0)


def _clean_gap(angles: torch.Tensor) -> float:
    clean = torch.tensor(SKEW_CLEAN_EXTREMA, dtype=angles.dtype)
    return float(angle_gap(angles.unsqueeze(-1), clean).min(-1).values.max())


def skewed_xor_run(size: SkewSizes, run: Run) -> SkewResult:
    """Both angles and both widths in one batch (the narrower network zero-padded), PyTorch's default init times
    2^-7, full-batch GD for ``epochs`` steps of ``lr``; neurons compared with the extrema of the sampled G."""
    dev = run.device
    data = [skewed_xor_data(size.base, al, generator=run.generator("skew_data", i)) for i, al in enumerate(SKEW_ANGLES)]
    width = max(size.widths)
    nets, Xs, ys = [], [], []
    for i in range(len(SKEW_ANGLES)):
        for w in size.widths:
            net = init_torch_default(1, 2, w, scale=SKEW_INIT_SCALE, bias=False, trained=("W", "a"),
                                     generator=run.generator("skew_init", i, w), dtype=DT)
            nets.append(pad_width(net, width))
            Xs.append(data[i][0])
            ys.append(data[i][1])
    net = cat_replicas(nets).to(device=dev)
    init = net.detached()
    every = max(1, size.epochs // 128)
    hist = logistic_gd(net, torch.stack(Xs).to(dev), torch.stack(ys).to(dev), steps=size.epochs, lr=size.lr,
                       log_at=range(0, size.epochs + 1, every))
    frob = hist["W"].pow(2).sum((-1, -2)).sqrt()
    below = torch.nonzero(hist["loss"].mean(-1) < 0.99 * math.log(2))
    if len(below) == 0:
        raise ValueError(f"the loss never fell 1% below ln 2 in {size.epochs} epochs of step {size.lr}")
    early = int(below[0, 0])
    extrema = [g_extrema_on_circle(X, y) for X, y in data]
    runs = []
    for i, al in enumerate(SKEW_ANGLES):
        phi, _, sign = extrema[i]
        for j, w in enumerate(size.widths):
            r = i * len(size.widths) + j
            V_end, V_early = hist["W"][-1, r:r + 1, :w], hist["W"][early, r:r + 1, :w]
            V_0, a_0 = hist["W"][0, r:r + 1, :w], hist["a"][0, r:r + 1, :w]
            a_end = hist["a"][-1, r:r + 1, :w]
            shares, mass_end = mass_near(V_end, phi, 0.05)
            _, mass_early = mass_near(V_early, phi, 0.1)
            shares_0, mass_0_end = mass_near(V_0, phi, 0.05)
            centres, centres_0 = weighted_centres(V_end, phi), weighted_centres(V_0, phi)
            shift = angle_gap(centres, weighted_centres(V_early, phi)).max()
            runs.append(SkewRun(alpha=al, width=w, frob=float(frob[-1, r]), mass_end=float(mass_end[0]),
                                shares=shares[0], mass_early=float(mass_early[0]),
                                sign_ok=float(sign_consistency(a_end, V_end, phi, sign)[0]),
                                centre_shift=float(shift), centres=centres[0], frob_init=float(frob[0, r]),
                                mass_init=float(mass_near(V_0, phi, 0.1)[1][0]),
                                mass_init_end=float(mass_0_end[0]), shares_init=shares_0[0],
                                sign_init=float(sign_consistency(a_0, V_0, phi, sign)[0]),
                                centre_shift_init=float(angle_gap(centres, centres_0).max()),
                                centres_init=centres_0[0]))
    nw = len(size.widths)
    pairs = [(runs[i * nw], runs[i * nw + nw - 1]) for i in range(len(SKEW_ANGLES))]
    resampled = []
    for k in range(size.resamples):  # the spread of the sampled G's extrema over fresh data sets of this size
        X, y = skewed_xor_data(size.base, SKEW_ANGLES[1], generator=run.generator("skew_resample", k))
        resampled.append(_clean_gap(g_extrema_on_circle(X, y, n_grid=4000)[0]))
    resampled = torch.tensor(resampled, dtype=DT)
    return SkewResult(
        runs=runs, widths=tuple(size.widths), data=data, extrema=extrema, init=init, epochs=hist["step"],
        frob=frob, final=_bias_free(hist["W"][-1], hist["a"][-1]), early_epoch=int(hist["step"][early]),
        flow_time=size.epochs * size.lr,
        width_gap=max(abs(a.frob - b.frob) for a, b in pairs),
        centre_gap=max(float(angle_gap(a.centres, b.centres).max()) for a, b in pairs),
        clean_gap=max(_clean_gap(r.centres) for r in runs if r.alpha == SKEW_ANGLES[1]),
        sampled_clean_gap=_clean_gap(extrema[1][0]), resampled_gap_mean=float(resampled.mean()),
        resampled_gap_sd=float(resampled.std()),
        centre_gaps=[float(angle_gap(a.centres, b.centres).max()) for a, b in pairs],
        width_gap_lazy=max(a.frob * abs(b.frob_init / a.frob_init - 1) for a, b in pairs),
        centre_gap_init=max(float(angle_gap(a.centres_init, b.centres_init).max()) for a, b in pairs),
        clean_gaps=[_clean_gap(r.centres) for r in runs if r.alpha == SKEW_ANGLES[1]],
        cluster_gap=_clean_gap(torch.tensor(SKEW_CLUSTERS, dtype=DT)))


# -- Experiment 3: do mid-training features transfer better? (Sec. 7, Fig. 4) ------------------------------------------


@dataclasses.dataclass
class PairedDifference:
    """a - b over paired seeds: mean, standard error, and the one-sided paired t test of mean > 0."""

    values: torch.Tensor
    mean: float
    se: float
    t: float
    p: float

    @property
    def value(self) -> float:  # the claims ledger reads value and se
        return self.mean


def paired_difference(a: torch.Tensor, b: torch.Tensor) -> PairedDifference:
    d = (a - b).double().cpu()
    mean, se = mean_se(d.numpy())
    t, p = paired_one_sided_t(a.double().cpu().numpy(), b.double().cpu().numpy())
    return PairedDifference(values=d, mean=float(mean), se=float(se), t=t, p=p)


@dataclasses.dataclass
class DominoResult:
    checkpoints: list[int]
    seeds: int
    mid: int  # the fixed mid-training epoch, a quarter of training (the source: 64 of 256)
    accuracy: dict[str, torch.Tensor]  # probe -> OOD accuracy (C, R); replicas: small-init seeds, then standard
    rms: dict[str, torch.Tensor]  # probe -> coefficient RMS (C, R)
    simple_share: torch.Tensor  # share of ||V||_F^2 on the simple coordinate (C, R)
    g_data: tuple[float, float]  # G(e_s), G(e_1) on the training sets (mean over seeds)
    final_loss: torch.Tensor  # (R,)
    init: TwoLayerNet
    rise: PairedDifference  # C = 1000, small init: acc(mid) - acc(0)
    drop: PairedDifference  # C = 1000, small init: acc(mid) - acc(end)
    drop_standard: PairedDifference  # C = 1000, standard init: acc(mid) - acc(end)
    drop_vs_standard: PairedDifference  # drop(small) - drop(standard), paired by training set
    unpenalized_drop: PairedDifference  # no penalty, small init: acc(mid) - acc(end)
    drop_vs_unpenalized: PairedDifference  # drop(C = 1000) - drop(no penalty), small init
    rms_ratio: torch.Tensor  # no-penalty over C = 1000 coefficient RMS, small init (C, S)
    rms_ratio_end: float  # its geometric mean over the training sets at the end
    log_ratio_end_se: float  # the standard error of ln(ratio at the end) over the training sets
    scale_growth: PairedDifference  # ln(ratio at the end) - ln(ratio at epoch 0), small init
    peak_epoch: int  # the argmax of the mean C = 1000 curve (shown, not tested)
    coin_accuracy: torch.Tensor | None = None  # C = 1000 probe for the OOD coin (the simple label), (C, R)
    network_accuracy: torch.Tensor | None = None  # the network's own OOD accuracy on the label, (C, R)
    network_coin: torch.Tensor | None = None  # how often its own OOD prediction agrees with the coin, (C, R)
    mu_simple: float = DOMINO["mu_simple"]
    seconds: float = 0.0


def _probe_checkpoints(hist: dict[str, torch.Tensor], Xo: torch.Tensor, yo: torch.Tensor, n_fit: int):
    """At each logged checkpoint of ``hist``: the OOD probes of ``PROBES`` (accuracy and coefficient RMS), a C = 1000
    probe for the OOD coin, and the network's own OOD predictions (agreement with the label and with the coin), on the
    RMS-normalised hidden features of ``Xo`` (its first ``n_fit`` points fit the probes, the rest score them).
    Returns ``accuracy`` and ``rms`` (probe -> (C, R)), the coin probe's accuracy (C, R) and ``own`` (label/coin ->
    (C, R), over every OOD point)."""
    C, R = hist["W"].shape[:2]
    accuracy = {name: torch.zeros(C, R, dtype=DT) for name in PROBES}
    rms = {name: torch.zeros(C, R, dtype=DT) for name in PROBES}
    coin = torch.sign(Xo[..., 0])  # the OOD coin: the noise (sd 0.05) never flips the sign of +-mu_simple
    coin_accuracy = torch.zeros(C, R, dtype=DT)
    own = {"label": torch.zeros(C, R, dtype=DT), "coin": torch.zeros(C, R, dtype=DT)}
    for c in range(C):  # one checkpoint at a time: the features of every replica, (R, n_fit + n_eval, m)
        net = _bias_free(hist["W"][c].to(Xo.device, DT), hist["a"][c].to(Xo.device, DT))
        features = net.features(Xo)
        out = torch.sign(net(Xo.to(DT)))
        own["label"][c], own["coin"][c] = (out == yo).to(DT).mean(-1).cpu(), (out == coin).to(DT).mean(-1).cpu()
        F_fit, F_eval = rms_normalize(features[:, :n_fit], features[:, n_fit:])
        for name, penalty in PROBES.items():
            res = logistic_probe(F_fit, yo[:, :n_fit], F_eval, yo[:, n_fit:], penalty, iterations=30)
            accuracy[name][c], rms[name][c] = res["accuracy"].cpu(), res["rms"].cpu()
        coin_accuracy[c] = logistic_probe(F_fit, coin[:, :n_fit], F_eval, coin[:, n_fit:], PROBE_C,
                                          iterations=30)["accuracy"].cpu()
    return accuracy, rms, coin_accuracy, own


def _domino_sets(size: DominoSizes, run: Run, data: dict) -> tuple[list, list]:
    """The ``seeds`` training sets and, for each, its OOD set (``n_fit + n_eval`` points), drawn from fixed streams:
    runs that differ in ``data`` or in the training coins draw the same numbers, so they pair by training set."""
    train_sets = [simple_plus_complex_data(size.n_train, **data, generator=run.generator("domino_train", s))
                  for s in range(size.seeds)]
    ood_sets = [simple_plus_complex_data(size.n_fit + size.n_eval, ood=True, **data,
                                         generator=run.generator("domino_ood", s)) for s in range(size.seeds)]
    return train_sets, ood_sets


def domino_probe_run(size: DominoSizes, run: Run, mu_simple: float | None = None) -> DominoResult:
    """``seeds`` training sets, each trained from a small (x 2^-7) and a standard PyTorch init in one batch by
    full-batch GD; at each checkpoint, logistic probes (C = 1000 and unpenalised) on the RMS-normalised hidden
    features of an OOD set drawn for each training set (``n_fit`` points to fit, ``n_eval`` to score). The drop is
    compared at fixed epochs chosen in advance: a quarter of training against the end, as the source compares epoch
    64 with epoch 256. ``mu_simple`` replaces the simple feature's strength (the same random draws otherwise, so
    runs at two strengths are paired by training set). A third probe (C = 1000) reads the OOD
    coin, the sign of the simple coordinate (source Fig. 8's probe for the MNIST label), at every checkpoint."""
    data = DOMINO if mu_simple is None else {**DOMINO, "mu_simple": mu_simple}
    ck = list(size.checkpoints)
    mid = size.epochs // MID_FRACTION
    if ck[0] != 0 or ck[-1] != size.epochs or mid not in ck:
        raise ValueError(f"domino checkpoints must contain 0, epochs/{MID_FRACTION} = {mid} and epochs "
                         f"= {size.epochs}; got {ck}")
    dev, S = run.device, size.seeds
    train_sets, ood_sets = _domino_sets(size, run, data)
    Xd = torch.stack([X for X, _ in train_sets] * 2).to(DOMINO_DTYPE)  # replicas: small-init, then standard
    yd = torch.stack([y for _, y in train_sets] * 2).to(DOMINO_DTYPE)
    Xo = torch.stack([X for X, _ in ood_sets] * 2)  # each network is probed on its training set's OOD set
    yo = torch.stack([y for _, y in ood_sets] * 2)
    d_in = Xd.shape[-1]
    e_dirs = torch.eye(d_in, dtype=DT)[:2]
    g = torch.stack([g_function(e_dirs, X, y) for X, y in train_sets]).mean(0)
    nets = [init_torch_default(S, d_in, size.width, scale=scale, bias=False, trained=("W", "a"),
                               generator=run.generator("domino_init", name), dtype=DOMINO_DTYPE)
            for name, scale in (("small", DOMINO_SMALL_INIT), ("standard", DOMINO_STANDARD_INIT))]
    net = cat_replicas(nets).to(device=dev)
    init = net.detached()
    hist = logistic_gd(net, Xd.to(dev), yd.to(dev), steps=size.epochs, lr=size.lr, log_at=ck)
    R = 2 * S
    accuracy, rms, coin_accuracy, own = _probe_checkpoints(hist, Xo.to(dev), yo.to(dev), size.n_fit)
    W = hist["W"].to(DT)
    share = W[..., 0].pow(2).sum(-1) / W.pow(2).sum((-1, -2))
    i0, im = 0, ck.index(mid)
    reg, free = accuracy["C=1000"], accuracy["no penalty"]
    small, standard = slice(0, S), slice(S, R)
    drop_small = reg[im, small] - reg[-1, small]
    drop_std = reg[im, standard] - reg[-1, standard]
    drop_free = free[im, small] - free[-1, small]
    ratio = rms["no penalty"][:, small] / rms["C=1000"][:, small]
    return DominoResult(
        checkpoints=ck, seeds=S, mid=mid, accuracy=accuracy, rms=rms, simple_share=share,
        g_data=(float(g[0]), float(g[1])), final_loss=hist["loss"][-1], init=init,
        rise=paired_difference(reg[im, small], reg[i0, small]),
        drop=paired_difference(reg[im, small], reg[-1, small]),
        drop_standard=paired_difference(reg[im, standard], reg[-1, standard]),
        drop_vs_standard=paired_difference(drop_small, drop_std),
        unpenalized_drop=paired_difference(free[im, small], free[-1, small]),
        drop_vs_unpenalized=paired_difference(drop_small, drop_free),
        rms_ratio=ratio, rms_ratio_end=float(ratio[-1].log().mean().exp()),
        log_ratio_end_se=float(mean_se(ratio[-1].log().double().cpu().numpy())[1]),
        scale_growth=paired_difference(ratio[-1].log(), ratio[0].log()),
        peak_epoch=ck[int(reg[:, small].mean(1).argmax())], coin_accuracy=coin_accuracy,
        network_accuracy=own["label"], network_coin=own["coin"], mu_simple=data["mu_simple"])


def domino_notes_run(size: DominoSizes, run: Run) -> DominoResult:
    """:func:`domino_probe_run` at the extraction notes' pre-registered simple-feature strength ``DOMINO_NOTES_MU``
    on the first ``notes_seeds`` training sets (the same random draws as the main run's), probed at
    epochs 0, a quarter of training and the end only: the epochs its claims compare."""
    ck = (0, size.epochs // MID_FRACTION, size.epochs)
    return domino_probe_run(dataclasses.replace(size, seeds=size.notes_seeds, checkpoints=ck), run,
                            mu_simple=DOMINO_NOTES_MU)


@dataclasses.dataclass
class MismatchResult:
    """Source Fig. 10's analogue: the small-init networks of :func:`domino_probe_run` retrained on the same training
    sets with a share ``mismatch`` of the training coins drawn against the label; replicas are the training sets."""

    checkpoints: list[int]
    seeds: int
    mid: int
    mismatch: float
    flipped: torch.Tensor  # (S,) share of each training set's coins drawn against the label
    accuracy: dict[str, torch.Tensor]  # probe -> OOD accuracy (C, S)
    rms: dict[str, torch.Tensor]  # probe -> coefficient RMS (C, S)
    coin_accuracy: torch.Tensor  # C = 1000 probe for the OOD coin (C, S)
    network_accuracy: torch.Tensor  # the network's own OOD accuracy on the label (C, S)
    network_coin: torch.Tensor  # how often its own OOD prediction agrees with the coin (C, S)
    train_accuracy: torch.Tensor  # (S,) on its own training set at the end (the coin alone scores 1 - flipped)
    final_loss: torch.Tensor  # (S,)
    rise: PairedDifference  # C = 1000: acc(mid) - acc(0)
    drop: PairedDifference  # C = 1000: acc(mid) - acc(end)
    drop_vs_perfect: PairedDifference  # drop(perfectly correlated training sets) - drop(mismatched), paired
    unpenalized_drop: PairedDifference  # no penalty: acc(mid) - acc(end)
    follows_coin: PairedDifference  # the network's own OOD predictions at the end: agreement with the coin - accuracy
    follows_coin_init: PairedDifference  # the same at epoch 0 (the untrained network)
    follows_coin_blind: PairedDifference  # the same at the end with the coin input set to 0 (blind to the coin)


def domino_mismatch_run(size: DominoSizes, run: Run, perfect: DominoResult,
                        mismatch: float = DOMINO_MISMATCH) -> MismatchResult:
    """Source Fig. 10 on the dominoes: the small-init networks of ``perfect`` (same training sets, same initial
    weights, same OOD sets and checkpoints) trained again with each training coin drawn against its label with
    probability ``mismatch`` (the source: "with 5% probability MNIST class might not match CIFAR-10 class"), probed
    as in :func:`domino_probe_run`. Only the small initialisation, as the source's Fig. 10."""
    ck, S = list(perfect.checkpoints), perfect.seeds
    if S != size.seeds:
        raise ValueError(f"the mismatch run pairs with the perfect run's {S} training sets; size has {size.seeds}")
    dev, mid = run.device, perfect.mid
    train_sets, ood_sets = _domino_sets(size, run, {**DOMINO, "mu_simple": perfect.mu_simple})
    flips = [torch.rand(size.n_train, generator=run.generator("domino_mismatch", s)) < mismatch for s in range(S)]
    Xd = torch.stack([X for X, _ in train_sets]).to(DOMINO_DTYPE)
    yd = torch.stack([y for _, y in train_sets]).to(DOMINO_DTYPE)
    flip = torch.stack(flips)
    Xd[..., 0] = torch.where(flip, -Xd[..., 0], Xd[..., 0])  # the coin against the label: s = -y mu_s + noise
    Xo = torch.stack([X for X, _ in ood_sets]).to(dev)
    yo = torch.stack([y for _, y in ood_sets]).to(dev)
    net = init_torch_default(S, Xd.shape[-1], size.width, scale=DOMINO_SMALL_INIT, bias=False, trained=("W", "a"),
                             generator=run.generator("domino_init", "small"), dtype=DOMINO_DTYPE).to(device=dev)
    hist = logistic_gd(net, Xd.to(dev), yd.to(dev), steps=size.epochs, lr=size.lr, log_at=ck)
    accuracy, rms, coin_accuracy, own = _probe_checkpoints(hist, Xo, yo, size.n_fit)
    with torch.no_grad():
        fit = (torch.sign(net(Xd.to(dev))) == yd.to(dev)).to(DT).mean(-1).cpu()
        blind = Xo.clone()
        blind[..., 0] = 0.0  # the trained networks with the coin input removed: they cannot read the simple feature
        out = torch.sign(net(blind.to(DOMINO_DTYPE)))
        coin = torch.sign(Xo[..., 0])
        blind_coin, blind_label = (out == coin).to(DT).mean(-1).cpu(), (out == yo).to(DT).mean(-1).cpu()
    reg, free = accuracy["C=1000"], accuracy["no penalty"]
    im = ck.index(mid)
    drop = reg[im] - reg[-1]
    return MismatchResult(
        checkpoints=ck, seeds=S, mid=mid, mismatch=mismatch, flipped=flip.to(DT).mean(-1), accuracy=accuracy,
        rms=rms, coin_accuracy=coin_accuracy, network_accuracy=own["label"], network_coin=own["coin"],
        train_accuracy=fit, final_loss=hist["loss"][-1].cpu(),
        rise=paired_difference(reg[im], reg[0]), drop=paired_difference(reg[im], reg[-1]),
        drop_vs_perfect=paired_difference(perfect.drop.values.to(DT), drop),
        unpenalized_drop=paired_difference(free[im], free[-1]),
        follows_coin=paired_difference(own["coin"][-1], own["label"][-1]),
        follows_coin_init=paired_difference(own["coin"][0], own["label"][0]),
        follows_coin_blind=paired_difference(blind_coin, blind_label))


# -- the diagnosis of the `full` run's early checkpoint (stored output, read for the chapter's full-run section) ------
LN2 = math.log(2.0)


def _span(values: list[float], fmt: str) -> str:
    low, high = format(min(values), fmt), format(max(values), fmt)
    return low if low == high else f"{low}-{high}"


def early_diagnosis(text: str) -> dict[str, str]:
    """Readings of the stored diagnosis of the `full` skewed-XOR runs (``benchmarks/simplicity_bias_full_early.py``,
    ``results/diagnostics/simplicity_bias_full_early.txt``): the flow time of the early checkpoint (mean loss 1% below
    ln 2) and the runs' mass within 0.1 rad of G's extrema there (``diag_flow``, ``diag_mass_early``); the first
    printed flow time at which each run holds half, 90% and 99% of its mass there (``diag_t50``, ``diag_t90``,
    ``diag_t99``: the range over the runs); and for the widest runs alone, each run's own crossing of 1% below ln 2
    and its mass there, interpolated linearly between the printed times (``diag_own_t``, ``diag_own_mass``; the
    last printed time for a run that never crosses: :func:`~feature_learning.measure.lucky_neurons.level_crossing`)."""
    widths, early, ts, losses, masses, flow = [], [], [], [], [], None
    for line in text.splitlines():
        words = line.split()
        if line.startswith("alpha="):
            fields = dict(w.split("=") for w in words)
            widths.append(int(fields["w"]))
            early.append(float(fields["mass_early"]))
        elif words[:1] == ["seconds"] and "flow" in words:
            flow = float(words[words.index("flow") + 1])
        elif " t=" in line and "per-run loss=" in line:
            ts.append(float(line.split("t=")[1].split()[0]))
            losses.append([float(v) for v in line.split("per-run loss=[")[1].split("]")[0].split(",")])
            masses.append([float(v) for v in line.split("mass0.1=[")[1].split("]")[0].split(",")])
    runs = range(len(widths))
    first = {level: [next((t for t, m in zip(ts, masses, strict=True) if m[r] >= level), math.inf) for r in runs]
             for level in (0.5, 0.9, 0.99)}  # inf: a run that never gets there within the output
    widest = [r for r in runs if widths[r] == max(widths)]
    own_t = level_crossing(ts, torch.tensor(losses).T[widest], 0.99 * LN2).tolist()
    own_mass = [float(np.interp(t, ts, [row[r] for row in masses])) for r, t in zip(widest, own_t, strict=True)]
    return {"diag_flow": f"{flow:g}", "diag_mass_early": _span(early, ".2f"),
            "diag_t50": _span(first[0.5], "g"), "diag_t90": _span(first[0.9], "g"), "diag_t99": _span(first[0.99], "g"),
            "diag_own_t": _span(own_t, ".1f"), "diag_own_mass": _span(own_mass, ".2f")}


DIAGNOSIS = "results/diagnostics/simplicity_bias_full_early.txt"  # stored output of the diagnosis script


def stored_diagnosis() -> dict[str, str]:
    """:func:`early_diagnosis` of the stored diagnosis (``DIAGNOSIS`` under the project root), or "not stored"."""
    path = project_root() / DIAGNOSIS
    if not path.exists():
        return dict.fromkeys(("diag_flow", "diag_mass_early", "diag_t50", "diag_t90", "diag_t99", "diag_own_t",
                              "diag_own_mass"), "not stored")
    return early_diagnosis(path.read_text())

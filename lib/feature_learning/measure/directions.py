"""Where the first-layer weight mass of a two-layer network sits on the circle, and linear probes on its features
(Sec. 6 and Sec. 7 of Tsoy & Konstantinov, ICML 2024)."""

from __future__ import annotations

import math

import torch


def neuron_angles(V: torch.Tensor) -> torch.Tensor:
    """atan2(v^2, v^1) of each neuron (the source's Fig. 2 angle): (..., m, 2) -> (..., m)."""
    return torch.atan2(V[..., 1], V[..., 0])


def angle_gap(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a - b| wrapped to [0, pi]."""
    return torch.remainder(a - b + math.pi, 2 * math.pi).sub(math.pi).abs()


def mass_near(V: torch.Tensor, targets: torch.Tensor, tol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Share of sum_j ||v_j||^2 within ``tol`` rad of each target angle, and in total.

    V (R, m, 2), targets (k,) -> (per-target share (R, k), total share (R,)). The relative scale of the source's
    Fig. 2 is ||v_j||^2 / sum_i ||v_i||^2."""
    mass = V.pow(2).sum(-1)
    rel = mass / mass.sum(-1, keepdim=True)
    gaps = angle_gap(neuron_angles(V).unsqueeze(-1), targets.to(V.dtype))  # (R, m, k)
    nearest = gaps.argmin(-1)
    close = gaps.min(-1).values <= tol
    per = torch.stack([(rel * (close & (nearest == k))).sum(-1) for k in range(targets.shape[0])], dim=-1)
    return per, per.sum(-1)


def weighted_centres(V: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mass-weighted circular mean angle of the neurons nearest to each target: (R, m, 2) -> (R, k)."""
    mass = V.pow(2).sum(-1)
    ang = neuron_angles(V)
    nearest = angle_gap(ang.unsqueeze(-1), targets.to(V.dtype)).argmin(-1)
    out = []
    for k in range(targets.shape[0]):
        w = mass * (nearest == k)
        out.append(torch.atan2((w * ang.sin()).sum(-1), (w * ang.cos()).sum(-1)))
    return torch.stack(out, dim=-1)


def rms_normalize(F_fit: torch.Tensor, F_eval: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Divide both feature sets by the root mean square entry of ``F_fit`` (per leading batch entry), as the
    source normalises features before its probes (Sec. 7)."""
    rms = F_fit.pow(2).mean((-1, -2), keepdim=True).sqrt().clamp_min(1e-300)
    return F_fit / rms, F_eval / rms


def logistic_probe(F_fit: torch.Tensor, y_fit: torch.Tensor, F_eval: torch.Tensor, y_eval: torch.Tensor,
                   C: float | None, *, iterations: int = 60) -> dict[str, torch.Tensor]:
    """Binary logistic-regression probes, batched over the leading axis B: F (B, n, k), y in {-1, +1}.

    Minimises 1/2 ||w||^2 + C sum_i ln(1 + exp(-y_i (w . f_i + b))) (scikit-learn's convention; the intercept b is
    not penalised) by damped Newton steps; ``C=None`` is the unpenalised fit (a 1e-10 ridge keeps the Newton system
    solvable). Returns eval ``accuracy`` (B,), coefficient ``rms`` (B,), ``w`` and ``b``."""
    B, n, k = F_fit.shape
    Z = torch.cat([F_fit, torch.ones(B, n, 1, dtype=F_fit.dtype, device=F_fit.device)], dim=-1)
    ridge = torch.ones(k + 1, dtype=F_fit.dtype, device=F_fit.device)
    ridge[-1] = 0.0
    c = 1.0 if C is None else float(C)
    ridge = ridge * (1e-10 if C is None else 1.0) + 1e-12
    zero = torch.zeros((), dtype=F_fit.dtype, device=F_fit.device)

    def objective(w):
        z = (Z @ w.unsqueeze(-1)).squeeze(-1) * y_fit
        return 0.5 * (ridge * w * w).sum(-1) + c * torch.logaddexp(zero, -z).sum(-1)

    w = torch.zeros(B, k + 1, dtype=F_fit.dtype, device=F_fit.device)
    obj = objective(w)
    for _ in range(iterations):
        z = (Z @ w.unsqueeze(-1)).squeeze(-1) * y_fit
        p = torch.sigmoid(-z)  # -l'(z)
        grad = ridge * w - c * (Z * (p * y_fit).unsqueeze(-1)).sum(1)
        hess = torch.diag_embed(ridge) + c * Z.transpose(-1, -2) @ (Z * (p * (1 - p)).unsqueeze(-1))
        step = torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
        t = torch.ones(B, dtype=w.dtype, device=w.device)
        new = w - step
        new_obj = objective(new)
        for _ in range(30):  # step halving where the objective did not decrease
            bad = new_obj > obj
            if not bad.any():
                break
            t = torch.where(bad, t / 2, t)
            new = w - t.unsqueeze(-1) * step
            new_obj = objective(new)
        w = torch.where((new_obj <= obj).unsqueeze(-1), new, w)
        obj = torch.minimum(new_obj, obj)
    logits = F_eval @ w[:, :k].unsqueeze(-1)
    acc = ((logits.squeeze(-1) + w[:, k:]) * y_eval > 0).to(F_fit.dtype).mean(-1)
    return {"accuracy": acc, "rms": w[:, :k].pow(2).mean(-1).sqrt(), "w": w[:, :k], "b": w[:, k]}


def best_cosine_per_target(W: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """max_i cos(w_i, c) for each target direction c: W (R, m, d), targets (R, K, d) -> (R, K) in float64. "Each
    Gaussian centre is covered by some neuron" (Shi, Wei and Liang 2022, App. E.3.2) reads min_c of this is large."""
    Wn = W.double() / W.double().norm(dim=-1, keepdim=True).clamp_min(1e-300)
    Cn = targets.double() / targets.double().norm(dim=-1, keepdim=True).clamp_min(1e-300)
    return torch.einsum("rid,rcd->ric", Wn, Cn).max(1).values

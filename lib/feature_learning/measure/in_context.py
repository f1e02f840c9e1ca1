"""Monte Carlo measurements for the in-context-learning chapter (dissertation ch. 5)."""

from __future__ import annotations

import math

import torch

from feature_learning.data.in_context import icl_classification_tokens, icl_regression_prompts, sparse_parity_prompts
from feature_learning.models.linear_attention import parity_heads_diagonal, reduced_lsa_predict


def mc_regression_risk(Q, lam, Us: torch.Tensor, M: int, prompts: int, generator: torch.Generator, *, w=None,
                       sigma: float = 0.0, flip_frac: float = 0.0, chunk: int = 10000):
    """Evaluation risk E (y_hat_q - <w, x_q>)^2 (no 1/2, rho = M, section 5.4.2) of several attentions Us (K, d, d),
    u = 1, all on the same prompts (common random numbers). ``w=None`` draws w ~ N(0, I) per prompt.

    Returns mean (K,), standard error (K,), sign accuracy (K,) of sign(y_hat) = sign(y_q).
    """
    K = Us.shape[0]
    ones = torch.ones(K, dtype=Us.dtype)
    s1, s2, acc, count = torch.zeros(K, dtype=torch.float64), torch.zeros(K, dtype=torch.float64), \
        torch.zeros(K, dtype=torch.float64), 0
    while count < prompts:
        B = min(chunk, prompts - count)
        pr = icl_regression_prompts(B, M, Q, lam, generator, w=w, sigma=sigma, flip_frac=flip_frac)
        pred = reduced_lsa_predict(pr.X, pr.y, pr.xq, Us, ones, rho=M)  # (K, B)
        err = (pred - pr.yq) ** 2
        s1 += err.sum(1)
        s2 += (err**2).sum(1)
        acc += (torch.sign(pred) == torch.sign(pr.yq)).double().sum(1)
        count += B
    mean = s1 / count
    se = ((s2 / count - mean**2).clamp_min(0) / count).sqrt()
    return mean, se, acc / count


def mc_parity_accuracy(models, d: int, pairs: list[tuple[int, int]], gamma: float, M: int, prompts: int,
                       generator: torch.Generator, *, flip_frac: float = 0.0, chunk: int = 5000):
    """Finite-context accuracy and hinge loss of diagonal multi-head models [(V, a), ...] (section 5.5, rho = M) on
    prompts whose task is uniform over ``pairs``. Returns accuracy (K,), hinge (K,)."""
    K = len(models)
    acc, hinge, count = torch.zeros(K, dtype=torch.float64), torch.zeros(K, dtype=torch.float64), 0
    table = torch.tensor(pairs)
    while count < prompts:
        B = min(chunk, prompts - count)
        task = table[torch.randint(0, len(pairs), (B,), generator=generator)]
        phi, y, phi_q, y_q = sparse_parity_prompts(B, M, d, task, gamma, generator, flip_frac=flip_frac)
        s = torch.einsum("bm,bmd->bd", y, phi) / M
        for k, (V, a) in enumerate(models):
            g = parity_heads_diagonal(s, phi_q, V, a)
            acc[k] += (torch.sign(g) == y_q).double().sum()
            hinge[k] += torch.relu(1 - y_q * g).sum()
        count += B
    return acc / count, hinge / count


def projection_energy(D: torch.Tensor, M: int, prompts: int, generator: torch.Generator) -> tuple[float, float]:
    """E ||P_D(Xi)||^2 with Xi the mean of M uniform +-1 vectors (Theorem 5.5.2); returns (mean, standard error)."""
    d = D.shape[0]
    P = D @ torch.linalg.pinv(D)
    xi = (torch.randint(0, 2, (prompts, M, d), generator=generator).double() * 2 - 1).mean(1)
    e = ((xi @ P) ** 2).sum(-1)
    return float(e.mean()), float(e.std() / math.sqrt(prompts))


def icl_flip_accuracy(model, prior: torch.Tensor, tau: float, M: int, flips, prompts: int,
                      generator: torch.Generator, *, chunk: int = 2000, device: torch.device | str = "cpu"):
    """The flipped-label protocol of Figures 5.1-5.2 (after Wei et al. 2023b) on the synthetic binary ICL task of
    :func:`~feature_learning.data.in_context.icl_classification_tokens`: accuracy against the *clean* query label
    as a fraction p of the M context labels is flipped, for every replica of a
    :class:`~feature_learning.models.transformer.Transformer` read on real-valued tokens.

    Every p sees the same prompts (common random numbers; only which labels are flipped differs). Two reference rules
    are scored on the same prompts: the prior rule sign(<prior, x_q>), which ignores the context, and the context
    rule sign(sum_i y_i <x_i, x_q>), which ignores the prior (the linear-attention estimate of section 5.4).
    Returns accuracy (F, R) and reference accuracy (F, 2) [prior rule, context rule], both float64 on the CPU.
    """
    d = prior.shape[0]
    flips = tuple(flips)
    acc = torch.zeros(len(flips), model.replicas, dtype=torch.float64)
    ref = torch.zeros(len(flips), 2, dtype=torch.float64)
    count = 0
    while count < prompts:
        B = min(chunk, prompts - count)
        state = generator.get_state()
        for f, p in enumerate(flips):
            generator.set_state(state)
            tokens, yq = icl_classification_tokens(B, M, d, prior, tau, generator, flip_frac=p)
            with torch.no_grad():
                logit = model.forward_continuous(tokens.to(device))[..., 0].cpu()  # (R, B)
            acc[f] += (torch.sign(logit) == yq).double().sum(-1)
            X, y, xq = tokens[:, :M, :d], tokens[:, :M, d], tokens[:, M, :d]
            prior_rule = torch.sign(xq @ prior.to(xq.dtype))
            context_rule = torch.sign(torch.einsum("bm,bmd,bd->b", y, X, xq))
            ref[f, 0] += (prior_rule == yq).double().sum()
            ref[f, 1] += (context_rule == yq).double().sum()
        count += B
    return acc / count, ref / count

"""A two-layer convolutional ReLU network on patches with one group of neurons per output and frozen output weights
(Hong et al., "How does pretraining label granularity affect generalization", eqs. (2)-(3) and (91)):

    F_c(X) = sum_{r <= m} a_{c,r} sum_{p <= P} relu(<w_{c,r}, x_p> + b_{c,r}),   a_{c,r} = 1 (frozen).

The kernel has the patch dimension d and stride d (each neuron sees one patch at a time) and the pooling is a sum.
Neurons are not shared between outputs (appendix B.2's remark). Batched over a leading replica axis R:
W (R, C, m, d), b (R, C, m); inputs X (R, N, P, d); outputs F (R, N, C).

The loss is the softmax cross-entropy of eq. (4); :meth:`PatchConvNet.loss` is its mean over the batch divided by P,
whose gradient is exactly the step of eq. (5) divided by eta: (1/(NP)) sum_n (logit_c(X_n) - 1{y_n = c})
sum_p relu'(<w, x_np> + b) x_np with relu'(z) = 1{z > 0} (:meth:`PatchConvNet.gradient`, tested against autograd).
The bias is not trained by gradient: :mod:`feature_learning.experiments.label_granularity.bias_schedule` moves it.

Initialisation (appendix B.3): w ~ N(0, sigma0^2 I_d), b = -tau sigma0 (the source's tau is sqrt((4 + 2 c0) ln d)
for coarse and sqrt((2 + 2 c0) ln d) for fine labels; at small d it is a knob). A neuron whose initial projections
on every data feature lie below (tau - delta) sigma0 never fires if the noise and the feature-noise patches cannot
lift it by delta sigma0: it gets no gradient, its bias never moves, and it can be dropped at initialisation
(``prune_margin=delta`` in :func:`init_thresholded`). Outputs with fewer kept neurons are padded with silent
neurons (w = 0, b = ``PAD_BIAS``) that never fire and never move.

Memory: the forward pass and the gradient hold the (R, C m, N P) pre-activations and the activations of the live
neurons. Where the pre-activations would exceed ``max_elements`` (default ``MAX_PRE_ELEMENTS``) elements, the
batch is processed in chunks of samples (:meth:`PatchConvNet.chunks`): F is per sample and the gradient a sum over
the chunks. The chunking depends on the shapes only; a batch within the budget takes the unchunked path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import torch

PAD_BIAS = -1.0e4  # the bias of a padding neuron: relu(<0, x> - 1e4) = 0 for every input
# The largest (R, C m, N P) pre-activation held at once, in elements (4.3 GB in float32); a larger batch is processed
# in chunks of samples. Chosen from the label-granularity chapter's largest ones (R C m N P from sizes.py's CI, BOOK
# and FULL, m the pruned width as drawn at seed 0):
#   ci:   1.3e8 (coarse k = 16 evaluation, 12 x 2 x 361 x 640 x 24);
#   book: 5.5e8 (fine k = 16 evaluation, 3 x 32 x 375 x 640 x 24); ci and book fit, so their numbers are those of
#         the unchunked code;
#   full: fine k = 32 evaluation 8 x 64 x 672 x 1280 x 24 = 1.06e10 (42 GB in float32 for the pre-activations alone,
#         ~35 GB more for the live activations: the out-of-memory crash on the H200), in 10 chunks of 130 samples;
#         fine k = 16 evaluation 1.5e9 in 2 chunks; fine k = 32 training 1.06e9, just within. The pre-activations,
#         the activations and the eq. (93) look-ahead then take at most ~4.3 GB each, ~13 GB together.
MAX_PRE_ELEMENTS = 2**30


@dataclasses.dataclass
class PatchConvNet:
    """F_c(X) = sum_r sum_p relu(<w_{c,r}, x_p> + b_{c,r}) for R replicas (shapes in the module docstring)."""

    W: torch.Tensor  # (R, C, m, d)
    b: torch.Tensor  # (R, C, m)
    redraws: int = 0  # initialisation blocks rejected by the condition of :func:`init_thresholded`
    # reusable scratch memory for the (R, C m, N P) pre-activations of :meth:`_live` (see :func:`scratch`)
    workspace: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)
    # the largest pre-activation (R, C m, n P) computed at once, in elements: larger batches go in chunks of samples
    max_elements: int = dataclasses.field(default=MAX_PRE_ELEMENTS, repr=False, compare=False)

    def __post_init__(self):
        if self.W.dim() != 4 or self.b.shape != self.W.shape[:3]:
            raise ValueError(f"W must be (R, C, m, d) and b (R, C, m), got {tuple(self.W.shape)}, "
                             f"{tuple(self.b.shape)}")

    @property
    def replicas(self) -> int:
        return self.W.shape[0]

    @property
    def n_outputs(self) -> int:
        return self.W.shape[1]

    @property
    def width(self) -> int:
        return self.W.shape[2]

    def parameters(self) -> list[torch.Tensor]:
        return [self.W, self.b]

    def preactivation(self, X: torch.Tensor) -> torch.Tensor:
        """<w_{c,r}, x_{n,p}> + b_{c,r} as (R, N, P, C, m); X (R, N, P, d)."""
        R, N, P, d = X.shape
        C, m = self.n_outputs, self.width
        pre = torch.baddbmm(self.b.reshape(R, 1, C * m), X.reshape(R, N * P, d),
                            self.W.reshape(R, C * m, d).transpose(1, 2))
        return pre.view(R, N, P, C, m)

    def chunks(self, X: torch.Tensor) -> list[tuple[int, int]]:
        """The sample ranges [lo, hi) the batch X (R, N, P, d) is processed in: [(0, N)] if its (R, C m, N P)
        pre-activations fit ``max_elements``, else consecutive ranges of as many samples as fit (at least one)."""
        R, N, P, _ = X.shape
        return chunk_ranges(N, R * self.n_outputs * self.width * P, self.max_elements)

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        """F (R, N, C)."""
        parts = self.chunks(X)
        if len(parts) == 1:
            return self._live(X)[0]
        return torch.cat([self._live(X[:, lo:hi])[0] for lo, hi in parts], dim=1)

    def _live(self, X: torch.Tensor):
        """F and the activations of the neurons that fire somewhere in the batch (in any replica): most neurons of
        a thresholded network are silent, so the ReLU, the pooling and the backward pass run on those only.
        Returns F (R, N, C), act (R, L, N, P), the live neuron indices (L,) into C*m and their outputs (L,).
        The whole batch at once: callers split it by :meth:`chunks`."""
        R, N, P, d = X.shape
        C, m = self.n_outputs, self.width
        reuse = not (torch.is_grad_enabled() and (self.W.requires_grad or self.b.requires_grad or X.requires_grad))
        args = (self.b.reshape(R, C * m, 1), self.W.reshape(R, C * m, d), X.reshape(R, N * P, d).transpose(1, 2))
        if reuse:  # the same pre-activations, written into reused memory
            pre = torch.baddbmm(*args, out=scratch(self.workspace, "pre", (R, C * m, N * P), X.dtype, X.device))
        else:
            pre = torch.baddbmm(*args)  # (R, C m, N P)
        live = (pre.amax(dim=(0, 2)) > 0).nonzero().squeeze(-1)
        if reuse:
            act = torch.index_select(pre, 1, live, out=scratch(self.workspace, "act", (R, live.numel(), N * P),
                                                               X.dtype, X.device)).relu_().view(R, -1, N, P)
        else:
            act = torch.relu(pre.index_select(1, live)).view(R, -1, N, P)
        owner = torch.div(live, m, rounding_mode="floor")
        F = torch.zeros(R, C, N, dtype=X.dtype, device=X.device)
        F.index_add_(1, owner, act.sum(-1))
        return F.transpose(1, 2), act, live, owner

    def loss(self, X: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """(1/(N P)) sum_n -ln softmax_{y_n}(F(X_n)), one value per replica (R,); eq. (4) scaled as in eq. (5).
        Dense and unchunked, for autograd on small batches (the tests); training uses :meth:`gradient`."""
        F = torch.relu(self.preactivation(X)).sum(dim=(2, 4))
        ce = -torch.log_softmax(F, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        return ce.mean(-1) / X.shape[2]

    @torch.no_grad()
    def gradient(self, X: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The gradient of :meth:`loss` with respect to W in closed form (eq. (5) without -eta), and F (R, N, C).
        A batch beyond ``max_elements`` goes in chunks of samples (:meth:`chunks`), the gradient summed over them."""
        R, N, P, d = X.shape
        C, m = self.n_outputs, self.width
        parts = self.chunks(X)
        grad = torch.zeros(R, C * m, d, dtype=X.dtype, device=X.device)
        Fs = []
        for lo, hi in parts:
            Xc = X if len(parts) == 1 else X[:, lo:hi]
            yc = labels if len(parts) == 1 else labels[:, lo:hi]
            n = hi - lo
            F, act, live, owner = self._live(Xc)
            g = torch.softmax(F, dim=-1)
            g.scatter_add_(-1, yc.unsqueeze(-1), -torch.ones_like(g[..., :1]))  # logit_c - 1{y = c}
            coef = act.sign_().mul_(g.transpose(1, 2).index_select(1, owner).unsqueeze(-1))  # relu'(pre)(...)
            grad_live = torch.bmm(coef.view(R, -1, n * P), Xc.reshape(R, n * P, d))  # (R, L, d)
            if len(parts) == 1:
                grad.index_copy_(1, live, grad_live)
            else:
                grad.index_add_(1, live, grad_live)
            Fs.append(F)
        F = Fs[0] if len(parts) == 1 else torch.cat(Fs, dim=1)
        return grad.view(R, C, m, d) / (N * P), F

    def projections(self, features: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """<w_{c,r}, v_j> for the dictionary's standard-basis features j: (R, C, m, n_features)."""
        return self.W[..., torch.as_tensor(features, device=self.W.device)]


def chunk_ranges(n: int, per_item: int, max_elements: int) -> list[tuple[int, int]]:
    """Ranges [lo, hi) covering n items of ``per_item`` elements each: [(0, n)] if all fit ``max_elements``, else
    consecutive ranges of as many items as fit (at least one)."""
    if per_item * n <= max_elements:
        return [(0, n)]
    step = max(1, max_elements // per_item)
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def scratch(workspace: dict, name: str, shape: tuple[int, ...], dtype: torch.dtype, device) -> torch.Tensor:
    """A tensor of ``shape`` carved from the buffer ``workspace[name]``, which grows to the largest size asked for
    (its contents are undefined: write before reading). Training steps allocate the same large temporaries at every
    step; freshly allocated memory of that size comes from the kernel page by page (a system call and page faults
    per page), so reusing one buffer removes most of the loop's system time without changing a single value."""
    n = 1
    for s in shape:
        n *= s
    buf = workspace.get(name)
    if buf is None or buf.numel() < n or buf.dtype != dtype or buf.device != torch.device(device):
        buf = torch.empty(n, dtype=dtype, device=device)
        workspace[name] = buf
    return buf[:n].view(shape)


def merge_heads(F: torch.Tensor, groups: torch.Tensor, n_groups: int | None = None) -> torch.Tensor:
    """Sum the outputs of each group: F_y = sum_{c in group y} F_c (the transfer of fine heads to the coarse task,
    remark after Proposition 3). F (..., C), groups (C,) -> (..., n_groups)."""
    n_groups = int(groups.max()) + 1 if n_groups is None else n_groups
    out = torch.zeros(*F.shape[:-1], n_groups, dtype=F.dtype, device=F.device)
    return out.index_add_(-1, groups.to(F.device), F)


def gaussian_tail(t: float) -> float:
    """Q(t) = P[g >= t] for g ~ N(0, 1)."""
    import math

    return 0.5 * math.erfc(t / math.sqrt(2.0))


def width_for_lucky(n_lucky: float, tau: float) -> int:
    """The width m with m Q(tau) = n_lucky expected neurons above the threshold on a given feature (seed notes,
    section 4.9: m = n_lucky / Q(tau), 2222 for 3 neurons at tau = 3)."""
    return int(n_lucky / gaussian_tail(tau))


def init_thresholded(replicas: int, n_outputs: int, width: int, d: int, *, sigma0: float, tau: float,
                     generator: torch.Generator, features: Sequence[int] | None = None,
                     prune_margin: float | None = None, require: Mapping[int, Sequence[int]] | None = None,
                     max_draws: int = 1000, dtype=torch.float32, device=None) -> PatchConvNet:
    """w ~ N(0, sigma0^2 I_d), b = -tau sigma0 (appendix B.3 with the threshold tau as a knob), ``width`` neurons per
    output, drawn in float64 one (output, replica) block at a time, so a profile's precision does not change them.

    ``require = {output: [feature, ...]}`` conditions the draw on Proposition 1's event: a block is redrawn until each
    listed feature has a *singly activated* neuron in that output (at or above tau sigma0 on it, below on every other
    one of ``features``). The source proves the event with probability 1 - d^-2; at the widths of a simulation it can
    fail (about 5% per feature at 3 expected neurons), and the draws that fail are rejected. The number of redrawn
    blocks is in the network's ``redraws``.

    With ``prune_margin = delta`` only the neurons whose largest projection on ``features`` is at least
    (tau - delta) sigma0 are kept, in their original order (the same generator gives the unpruned network's
    neurons), and outputs are padded to the largest kept count with silent neurons (module docstring)."""
    idx = None if features is None else torch.as_tensor(list(features))
    require = dict(require or {})
    if require and idx is None:
        raise ValueError("the condition on singly-activated neurons needs the data features")
    W = torch.empty(replicas, n_outputs, width, d, dtype=torch.float64)
    redraws = 0
    for c in range(n_outputs):
        needed = [int((idx == j).nonzero()[0, 0]) for j in require.get(c, ())] if require else []
        for r in range(replicas):
            for _ in range(max_draws):
                block = sigma0 * torch.randn(width, d, generator=generator, dtype=torch.float64)
                if not needed:
                    break
                above = block[:, idx] >= tau * sigma0
                single = above & (above.sum(-1, keepdim=True) == 1)
                if bool(single[:, needed].any(0).all()):
                    break
                redraws += 1
            else:
                raise RuntimeError(f"no initialisation of output {c} met the condition in {max_draws} draws")
            W[r, c] = block
    b = torch.full(W.shape[:3], -tau * sigma0, dtype=torch.float64)
    if prune_margin is not None:
        if idx is None:
            raise ValueError("pruning needs the data features (their coordinates) to test the projections on")
        keep = W[..., idx].max(dim=-1).values >= (tau - prune_margin) * sigma0  # (R, C, m)
        m_keep = max(1, int(keep.sum(-1).max()))
        order = torch.argsort((~keep).to(torch.int8), dim=-1, stable=True)[..., :m_keep]  # kept first, in order
        W = W.gather(2, order.unsqueeze(-1).expand(-1, -1, -1, d))
        kept = keep.gather(2, order)
        W = W * kept.unsqueeze(-1)
        b = torch.where(kept, -tau * sigma0, torch.full_like(b[..., :m_keep], PAD_BIAS))
    return PatchConvNet(W=W.to(dtype=dtype, device=device), b=b.to(dtype=dtype, device=device), redraws=redraws)

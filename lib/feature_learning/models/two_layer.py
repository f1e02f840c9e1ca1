"""The two-layer network h(x) = sum_k a_k sigma(<w_k, x> + b_k) (+ c), batched over a leading replica axis R.

One container for every two-layer chapter: the truncated-ReLU network of Shi, Wei and Liang (ICLR 2022, eqs.
(2)-(3)) and its quadratic teacher/student (E.5), the bias-free ReLU network of Tsoy & Konstantinov (ICML 2024,
Sec. 2), the fixed-output network of Zhang et al. (ICML 2024, eq. (2)) and PyTorch-default networks.

Shapes: W (R, m, d_in); a (R, m) for a scalar output or (R, m, d_out); b (R, m) or None; c (R,) or (R, d_out) or
None. Inputs are (n, d_in) shared by the replicas or (R, n, d_in); outputs are (R, n) or (R, n, d_out).

Which tensors are trained is explicit: ``trained`` names the parameter groups ("W", "b", "a", "c");
:meth:`TwoLayerNet.parameters` returns those tensors and :meth:`TwoLayerNet.param_groups` gives each group its own
step size and weight decay for :func:`feature_learning.training.loop.train` (a step size 0 freezes a group).

Initialisations, one signature ``(replicas, d_in, width, *, d_out=None, generator, dtype, device, ...)``, named by
their source: :func:`init_symmetric_gaussian`, :func:`init_fixed_output`, :func:`init_torch_default`,
:func:`init_balanced`, :func:`init_aligned`, :func:`init_lecun`. Each draws its random numbers in the order of the
function it replaces (named in its docstring), so that the same generator gives the same network.
"""

from __future__ import annotations

import dataclasses
import math

import torch

GROUPS = ("W", "b", "a", "c")
SQRT2 = math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def trunc_relu(z: torch.Tensor) -> torch.Tensor:
    """sigma(z) = min(1, max(z, 0)), the truncated ReLU of Shi et al., eq. (2)."""
    return z.clamp(0.0, 1.0)


def _rho(u: torch.Tensor, s: float) -> torch.Tensor:
    """E relu(u + xi), xi ~ N(0, s^2): u Phi(u/s) + s phi(u/s)."""
    t = u / s
    return u * torch.special.ndtr(t) + s * INV_SQRT_2PI * torch.exp(-0.5 * t * t)


def smoothed_trunc_relu(z: torch.Tensor, s: float) -> torch.Tensor:
    """E_xi sigma(z + xi) with xi ~ N(0, s^2) = rho_s(z) - rho_s(z - 1) (Shi et al., footnote 1 / eq. (3));
    s = 0 gives sigma itself."""
    if s == 0:
        return trunc_relu(z)
    return _rho(z, s) - _rho(z - 1.0, s)


def smoothed_trunc_relu_grad(z: torch.Tensor, s: float) -> torch.Tensor:
    """d/dz of the smoothed activation = Pr_xi[z + xi in (0, 1)] = Phi(z/s) - Phi((z-1)/s) (Shi et al., Lemma 12's
    indicator); s = 0 gives 1{0 < z < 1}."""
    if s == 0:
        return ((z > 0) & (z < 1)).to(z.dtype)
    return torch.special.ndtr(z / s) - torch.special.ndtr((z - 1.0) / s)


ACTIVATIONS = {
    "relu": torch.relu,
    "trunc_relu": trunc_relu,
    "square": torch.square,
    "gelu": torch.nn.functional.gelu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "identity": lambda u: u,
}

# sigma'(z) of the activations with a closed-form derivative (for the NTK model and the analytic gradients)
DERIVATIVES = {
    "relu": lambda z: (z > 0).to(z.dtype),
    "trunc_relu": lambda z: smoothed_trunc_relu_grad(z, 0.0),
    "square": lambda z: 2 * z,
    "sigmoid": lambda z: torch.sigmoid(z) * (1 - torch.sigmoid(z)),
    "tanh": lambda z: 1 - torch.tanh(z) ** 2,
    "identity": torch.ones_like,
}


@dataclasses.dataclass
class TwoLayerNet:
    """h(x) = sum_k a_k sigma(<w_k, x> + b_k) (+ c) for R replicas at once (shapes in the module docstring).

    ``noise_std`` > 0 replaces the truncated ReLU by its Gaussian smoothing E_xi sigma(z + xi), xi ~ N(0, s^2), in
    closed form (:func:`smoothed_trunc_relu`; Shi et al., eq. (3)). ``trained`` names the groups that
    :meth:`parameters` returns (absent tensors are skipped)."""

    W: torch.Tensor
    a: torch.Tensor
    activation: str = "relu"
    b: torch.Tensor | None = None
    c: torch.Tensor | None = None
    noise_std: float = 0.0
    trained: tuple[str, ...] = ("W", "b")

    def __post_init__(self):
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; use one of {', '.join(ACTIVATIONS)}")
        if self.noise_std < 0 or (self.noise_std > 0 and self.activation != "trunc_relu"):
            raise ValueError(f"noise_std must be >= 0, and > 0 only for 'trunc_relu', got {self.noise_std} "
                             f"with {self.activation!r}")
        unknown = set(self.trained) - set(GROUPS)
        if unknown:
            raise ValueError(f"unknown parameter groups {sorted(unknown)}; use names from {GROUPS}")
        self.trained = tuple(self.trained)
        R, m, _ = self.W.shape
        if self.a.shape[:2] != (R, m) or self.a.dim() not in (2, 3):
            raise ValueError(f"a must have shape (R, m) or (R, m, d_out) = ({R}, {m}, ...), got {tuple(self.a.shape)}")
        if self.b is not None and self.b.shape != (R, m):
            raise ValueError(f"b must have shape (R, m) = ({R}, {m}), got {tuple(self.b.shape)}")
        if self.c is not None and self.c.shape != (R, *self.a.shape[2:]):
            raise ValueError(f"c must have shape {(R, *self.a.shape[2:])}, got {tuple(self.c.shape)}")

    @property
    def replicas(self) -> int:
        return self.W.shape[0]

    @property
    def width(self) -> int:
        return self.W.shape[1]

    @property
    def d_in(self) -> int:
        return self.W.shape[2]

    def named_parameters(self) -> dict[str, torch.Tensor]:
        """The trained groups that exist, in the order W, b, a, c."""
        return {name: getattr(self, name) for name in GROUPS
                if name in self.trained and getattr(self, name) is not None}

    def parameters(self) -> list[torch.Tensor]:
        """The trained tensors, for an optimiser (see :meth:`param_groups` for one group each)."""
        return list(self.named_parameters().values())

    def param_groups(self, lr: dict[str, float] | None = None,
                     weight_decay: dict[str, float] | None = None) -> list[dict]:
        """One optimiser parameter group per trained tensor, ``{"name", "params", ["lr"], ["weight_decay"]}``; a group
        missing from ``lr`` / ``weight_decay`` takes the optimiser's value
        (:class:`~feature_learning.training.loop.OptimConfig`). With SGD, weight decay 2 lambda is the penalty
        lambda ||.||^2; lr 0 freezes the group."""
        lr, weight_decay = lr or {}, weight_decay or {}
        named = self.named_parameters()
        unknown = (set(lr) | set(weight_decay)) - set(named)
        if unknown:
            raise ValueError(f"no trained group {sorted(unknown)}; trained groups are {list(named)}")
        groups = []
        for name, tensor in named.items():
            group = {"name": name, "params": [tensor]}
            if name in lr:
                group["lr"] = lr[name]
            if name in weight_decay:
                group["weight_decay"] = weight_decay[name]
            groups.append(group)
        return groups

    def detached(self) -> TwoLayerNet:
        """A copy with detached, cloned tensors that require gradients where they are trained."""
        def copy(name):
            t = getattr(self, name)
            return None if t is None else t.detach().clone().requires_grad_(name in self.trained)

        return dataclasses.replace(self, **{name: copy(name) for name in GROUPS})

    def to(self, dtype=None, device=None) -> TwoLayerNet:
        """A detached copy in another dtype or on another device (gradients required where trained)."""
        def move(name):
            t = getattr(self, name)
            if t is None:
                return None
            return t.detach().to(device=device, dtype=dtype).clone().requires_grad_(name in self.trained)

        return dataclasses.replace(self, **{name: move(name) for name in GROUPS})

    def preactivation(self, x: torch.Tensor) -> torch.Tensor:
        """<w_k, x> + b_k, shape (R, n, m); x (n, d_in) shared or (R, n, d_in)."""
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.replicas, -1, -1)
        pre = torch.matmul(x, self.W.transpose(1, 2))
        return pre if self.b is None else pre + self.b.unsqueeze(1)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """sigma(preactivation) (smoothed if ``noise_std`` > 0), shape (R, n, m): the hidden representation."""
        pre = self.preactivation(x)
        if self.noise_std > 0:
            return smoothed_trunc_relu(pre, self.noise_std)
        return ACTIVATIONS[self.activation](pre)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.features(x)
        if self.a.dim() == 2:
            out = torch.bmm(hidden, self.a.unsqueeze(-1)).squeeze(-1)
            return out if self.c is None else out + self.c.unsqueeze(-1)
        out = torch.bmm(hidden, self.a)
        return out if self.c is None else out + self.c.unsqueeze(1)


def zeros_like(net: TwoLayerNet) -> TwoLayerNet:
    """The same network with every tensor zero (the start of the NTK model's displacement)."""
    return dataclasses.replace(net, **{name: None if getattr(net, name) is None else
                                       torch.zeros_like(getattr(net, name)).requires_grad_(name in net.trained)
                                       for name in GROUPS})


# -- initialisations ------------------------------------------------------------------------------------------------
def _finish(tensors: dict, trained, device, **fields) -> TwoLayerNet:
    out = {}
    for name, t in tensors.items():
        out[name] = None if t is None else t.to(device).requires_grad_(name in trained)
    return TwoLayerNet(**out, trained=tuple(trained), **fields)


def _out_shape(replicas: int, width: int, d_out: int | None) -> tuple[int, ...]:
    return (replicas, width) if d_out is None else (replicas, width, d_out)


def init_symmetric_gaussian(replicas: int, d_in: int, width: int, *, d_out: int | None = None,
                            sigma_w: float, sigma_a: float, sigma_b: float | None = None, bias: float | None = None,
                            blocks: int = 2, activation: str = "trunc_relu", noise_std: float = 0.0,
                            trained: tuple[str, ...] = ("W", "b", "a"), generator: torch.Generator,
                            dtype=torch.float64, device=None) -> TwoLayerNet:
    """A symmetric initialisation whose output is exactly 0: ``width / blocks`` base units
    w_i ~ N(0, sigma_w^2 I), b_i ~ N(0, sigma_b^2) (or the fixed value ``bias``, or no bias), a_i ~ N(0, sigma_a^2),
    then copies with flipped signs.

    * ``blocks=2`` (Shi, Wei and Liang, ICLR 2022, Sec. 3.1): (w_{m+i}, b_{m+i}, a_{m+i}) = (w_i, b_i, -a_i).
      Same draws as ``models.truncated_relu.symmetric_init(replicas, width // 2, d_in, ...)``: W, b, a drawn in that
      order in float64, then cast to ``dtype``.
    * ``blocks=4`` (dissertation ch. 3, eq. (3.9), fixed biases): the blocks (w, b, a), (-w, -b, -a), (w, b, -a),
      (-w, -b, a). The source writes sigma(<w, x> - b) with b = b~ in the first block; here the bias is added, so
      pass ``bias=-b_tilde`` and ``trained=("W", "a")`` (the biases stay fixed).

    The biases are either Gaussian (``sigma_b``), fixed (``bias``) or absent (both None)."""
    if blocks not in (2, 4) or width % blocks:
        raise ValueError(f"blocks must be 2 or 4 and divide the width, got blocks={blocks}, width={width}")
    if sigma_b is not None and bias is not None:
        raise ValueError("give sigma_b (Gaussian biases) or bias (a fixed value), not both")
    m = width // blocks
    W = sigma_w * torch.randn(replicas, m, d_in, generator=generator, dtype=torch.float64)
    b = None
    if sigma_b is not None:
        b = sigma_b * torch.randn(replicas, m, generator=generator, dtype=torch.float64)
    elif bias is not None:
        b = torch.full((replicas, m), float(bias), dtype=torch.float64)
    a = sigma_a * torch.randn(*_out_shape(replicas, m, d_out), generator=generator, dtype=torch.float64)
    if blocks == 2:
        W, a = torch.cat([W, W], 1), torch.cat([a, -a], 1)
        b = None if b is None else torch.cat([b, b], 1)
    else:
        W, a = torch.cat([W, -W, W, -W], 1), torch.cat([a, -a, -a, a], 1)
        b = None if b is None else torch.cat([b, -b, b, -b], 1)
    tensors = {name: None if t is None else t.to(dtype=dtype) for name, t in (("W", W), ("b", b), ("a", a))}
    return _finish(tensors, trained, device, activation=activation, noise_std=noise_std)


def paper_init_scales(k: int, sigma_tilde: float, gamma: float) -> dict[str, float]:
    """sigma_w = 1/k, sigma_b = 1/k^2, sigma_a = sigma~^2/(gamma k^2) (Shi et al., Sec. 3.1 / Theorem 26)."""
    return {"sigma_w": 1.0 / k, "sigma_b": 1.0 / k**2, "sigma_a": sigma_tilde**2 / (gamma * k**2)}


def init_fixed_output(replicas: int, d_in: int, width: int, *, d_out: int | None = None,
                      d_ambient: int | None = None, activation: str = "relu", trained: tuple[str, ...] = ("W",),
                      generator: torch.Generator, dtype=torch.float32, device=None) -> TwoLayerNet:
    """Zhang et al. (ICML 2024), eq. (2), in reduced coordinates: w_k ~ N(0, I/d_ambient) restricted to the d_in
    feature coordinates (d_ambient = d_in by default), a_k ~ Uniform{-1/m, +1/m} (shape (R, m), or (R, m, d_out)),
    no biases. Only W is trained unless ``trained`` says otherwise (the regression variant trains a too).
    Draws W then a, as the former ``init_fixed_output(replicas, width, d0, ...)`` did."""
    W = torch.randn(replicas, width, d_in, generator=generator, dtype=dtype) / math.sqrt(d_ambient or d_in)
    a = (torch.randint(0, 2, _out_shape(replicas, width, d_out), generator=generator).to(dtype) * 2 - 1) / width
    return _finish({"W": W, "a": a}, trained, device, activation=activation)


def init_torch_default(replicas: int, d_in: int, width: int, *, d_out: int | None = None, scale: float = 1.0,
                       bias: bool = True, activation: str = "relu", trained: tuple[str, ...] = GROUPS,
                       generator: torch.Generator, dtype=torch.float32, device=None) -> TwoLayerNet:
    """PyTorch's ``nn.Linear`` default times ``scale``: every weight and bias ~ U(-s/sqrt(fan_in), s/sqrt(fan_in)),
    fan_in = d_in for W and b, m for a and c; both layers (and both biases, with ``bias=True``) trained.
    Tsoy & Konstantinov's "sigma = 2^-7" (Sec. 6) and "init scaled by 2^-5" (Sec. 7) are ``scale`` with
    ``bias=False``.

    Draws W, b, a, c (W, a without biases) as U = rand * 2 - 1 times s/sqrt(fan_in): with ``scale=1`` this is the
    former ``models.two_layer.init_default`` bit for bit. The draws of ``models.bias_free_relu.init_torch_default``
    (R, m, d, scale) are the same numbers, but it computed scale * ((2 U' - 1) / sqrt(fan_in)), which differs from
    this in the last bit of some entries."""
    def uniform(shape, fan_in):
        bound = scale / math.sqrt(fan_in)
        return (torch.rand(*shape, generator=generator, dtype=dtype) * 2 - 1) * bound

    out_shape = () if d_out is None else (d_out,)
    W = uniform((replicas, width, d_in), d_in)
    b = uniform((replicas, width), d_in) if bias else None
    a = uniform((replicas, width, *out_shape), width)
    c = uniform((replicas, *out_shape), width) if bias else None
    return _finish({"W": W, "b": b, "a": a, "c": c}, trained, device, activation=activation)


def init_balanced(replicas: int, d_in: int, width: int, *, scale: float, d_out: int | None = None,
                  activation: str = "relu", trained: tuple[str, ...] = ("W", "a"), generator: torch.Generator,
                  dtype=torch.float64, device=None) -> TwoLayerNet:
    """Tsoy & Konstantinov's theta(0) = scale * theta_0 with isotropic directions: ||w_k|| = |a_k| = scale and random
    signs (balanced neurons, no biases). Same draws and arithmetic as ``models.bias_free_relu.init_balanced``."""
    if d_out is not None:
        raise ValueError("balanced neurons have a scalar output (d_out=None)")
    W = torch.randn(replicas, width, d_in, generator=generator, dtype=dtype)
    W = scale * W / W.norm(dim=-1, keepdim=True)
    sign = torch.where(torch.rand(replicas, width, generator=generator) < 0.5, 1.0, -1.0).to(dtype)
    return _finish({"W": W, "a": scale * sign}, trained, device, activation=activation)


def init_aligned(replicas: int, d_in: int, width: int, *, a0: torch.Tensor, directions: torch.Tensor,
                 d_out: int | None = None, activation: str = "relu", trained: tuple[str, ...] = ("W", "a"),
                 generator: torch.Generator | None = None, dtype=None, device=None) -> TwoLayerNet:
    """Balanced neurons on given unit directions (Tsoy & Konstantinov, Sec. 5.4.2, the four-neuron experiment):
    a = a0 (R, m), w_k = |a0_k| direction_k with directions (m, d_in). Deterministic (``generator`` unused); same
    arithmetic as ``models.bias_free_relu.init_aligned``."""
    if a0.shape != (replicas, width) or directions.shape != (width, d_in) or d_out is not None:
        raise ValueError(f"need a0 ({replicas}, {width}) and directions ({width}, {d_in}), scalar output; got "
                         f"{tuple(a0.shape)} and {tuple(directions.shape)}")
    a0 = a0 if dtype is None else a0.to(dtype)
    return _finish({"W": a0.abs().unsqueeze(-1) * directions.to(a0.dtype), "a": a0.clone()}, trained, device,
                   activation=activation)


def init_lecun(replicas: int, d_in: int, width: int, *, d_out: int, activation: str = "square",
               trained: tuple[str, ...] = GROUPS, generator: torch.Generator, dtype=torch.float64,
               device=None) -> TwoLayerNet:
    """FC(m) of Shi et al., Appendix E.5 (Algorithm 1): standard Gaussian (LeCun) weights W ~ N(0, 1/d_in), second
    layer ~ N(0, 1/m), zero biases, quadratic activation; logits of d_out classes. Same draws as
    ``models.fc_quadratic.init_fc``: W, then the second layer as a (R, d_out, m) matrix, stored here transposed
    (a view), so that the logits are computed by the same product."""
    W = torch.randn(replicas, width, d_in, generator=generator, dtype=dtype) / math.sqrt(d_in)
    V = torch.randn(replicas, d_out, width, generator=generator, dtype=dtype) / math.sqrt(width)
    tensors = {"W": W, "b": torch.zeros(replicas, width, dtype=dtype), "a": V.transpose(1, 2).detach(),
               "c": torch.zeros(replicas, d_out, dtype=dtype)}
    return _finish(tensors, trained, device, activation=activation)


# -- functions of a network -----------------------------------------------------------------------------------------
def ntk_forward(init: TwoLayerNet, delta: TwoLayerNet, x: torch.Tensor) -> torch.Tensor:
    """The network linearised at ``init`` (Shi et al., Appendix E.1), with the displacement ``delta`` (same
    shapes): sum_k da_k sigma(z_k) + a_k sigma'(z_k) (<dw_k, x> + db_k) (+ dc), z_k = <w_k^(0), x> + b_k^(0).
    The output of ``init`` itself is left out (it is 0 after a symmetric initialisation). Linear in ``delta``; its
    features are the network's NTK features. Scalar output; sigma' at noise_std 0 (the truncated ReLU's is
    1{0 < z < 1}). For a truncated-ReLU net these are the operations of ``models.truncated_relu.ntk_forward``."""
    if init.a.dim() != 2 or init.activation not in DERIVATIVES:
        raise ValueError(f"ntk_forward needs a scalar output and one of {', '.join(DERIVATIVES)}")
    z = init.preactivation(x)
    slope = DERIVATIVES[init.activation](z) * init.a[:, None, :]
    moved = torch.matmul(x, delta.W.transpose(1, 2))
    if delta.b is not None:
        moved = moved + delta.b[:, None, :]
    out = (ACTIVATIONS[init.activation](z) * delta.a[:, None, :] + slope * moved).sum(-1)
    return out if delta.c is None else out + delta.c.unsqueeze(-1)


def logistic_loss_and_grads(net: TwoLayerNet, X: torch.Tensor, y: torch.Tensor):
    """Mean logistic loss L = (1/n) sum_i ln(1 + exp(-y_i h(x_i))) per replica (R,), and its exact gradients for a
    ReLU network with a scalar output (Tsoy & Konstantinov, eq. (1) with a minus sign): a dict with "W" (R, m, d),
    "a" (R, m) and, where present, "b" (R, m) and "c" (R,). Stable in float64 far past interpolation:
    -l'(z) = exp(-logaddexp(0, z)). For a bias-free net these are the operations of
    ``models.bias_free_relu.logistic_loss_and_grads`` (bit for bit)."""
    if net.activation != "relu" or net.a.dim() != 2:
        raise ValueError("the analytic gradients are for a ReLU network with a scalar output")
    R = net.replicas
    Xb = X.unsqueeze(0).expand(R, *X.shape) if X.dim() == 2 else X
    yb = y if y.dim() == 2 else y.unsqueeze(0).expand(R, -1)
    pre = Xb @ net.W.transpose(-1, -2)  # (R, n, m)
    if net.b is not None:
        pre = pre + net.b.unsqueeze(1)
    act = torch.relu(pre)
    out = (act * net.a.unsqueeze(1)).sum(-1)
    if net.c is not None:
        out = out + net.c.unsqueeze(-1)
    margin = out * yb  # (R, n)
    zero = torch.zeros((), dtype=margin.dtype, device=margin.device)
    loss = torch.logaddexp(zero, -margin).mean(-1)
    weight = torch.exp(-torch.logaddexp(zero, margin)) * yb / yb.shape[-1]  # -l'(y h) y / n, (R, n)
    mask = (pre > 0).to(pre.dtype) * weight.unsqueeze(-1)  # (R, n, m)
    grads = {"W": -net.a.unsqueeze(-1) * (mask.transpose(-1, -2) @ Xb)}
    if net.b is not None:
        grads["b"] = -net.a * mask.sum(1)
    grads["a"] = -(weight.unsqueeze(-1) * act).sum(1)
    if net.c is not None:
        grads["c"] = -weight.sum(-1)
    return loss, grads


def normalized_margin(net: TwoLayerNet, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """gamma(theta) = min_i y_i h(x_i) / ||theta||^2 with ||theta||^2 the squared norm of every present tensor
    (Tsoy & Konstantinov, Sec. 5.3, bias-free: sum a^2 + sum ||w||^2), per replica (R,)."""
    out = net(X)
    yb = y if y.dim() == 2 else y.unsqueeze(0)
    norm_sq = sum(t.pow(2).reshape(net.replicas, -1).sum(-1)
                  for t in (net.W, net.b, net.a, net.c) if t is not None)
    return (out * yb).min(-1).values / norm_sq

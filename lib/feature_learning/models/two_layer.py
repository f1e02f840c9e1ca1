"""Two-layer networks h(x) = sum_k a_k sigma(<w_k, x> + b_k) (+ c), batched over a leading replica dimension R.

* :func:`init_fixed_output` is the network of Zhang et al. (ICML 2024), Eq. (2): no biases, w_k ~ N(0, I/d) and
  output weights a_k ~ Uniform{-1/m, +1/m} that stay fixed (only W is trained).
* :func:`init_default` is a PyTorch-default (``nn.Linear``) two-layer net with biases and trainable layers, as in
  the extension of appendix F.1 (Fig. 3d, 10).

Shapes: W (R, m, d_in); a (R, m) for a scalar output or (R, m, d_out); b (R, m) or None; c (R,) or (R, d_out) or None.
Inputs are (n, d_in) shared by the replicas or (R, n, d_in); outputs are (R, n) or (R, n, d_out).
"""

from __future__ import annotations

import dataclasses
import math

import torch

ACTIVATIONS = {
    "relu": torch.relu,
    "identity": lambda u: u,
    "gelu": torch.nn.functional.gelu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
}


@dataclasses.dataclass
class TwoLayerNet:
    W: torch.Tensor
    a: torch.Tensor
    activation: str = "relu"
    b: torch.Tensor | None = None
    c: torch.Tensor | None = None
    train_output: bool = False  # whether a (and c) are trained

    def __post_init__(self):
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; use one of {', '.join(ACTIVATIONS)}")

    @property
    def replicas(self) -> int:
        return self.W.shape[0]

    @property
    def width(self) -> int:
        return self.W.shape[1]

    def parameters(self) -> list[torch.Tensor]:
        params = [self.W] + ([self.b] if self.b is not None else [])
        if self.train_output:
            params += [self.a] + ([self.c] if self.c is not None else [])
        return params

    def preactivation(self, x: torch.Tensor) -> torch.Tensor:
        """<w_k, x> + b_k, shape (R, n, m)."""
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.replicas, -1, -1)
        pre = torch.bmm(x, self.W.transpose(1, 2))
        return pre if self.b is None else pre + self.b.unsqueeze(1)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """sigma(preactivation), shape (R, n, m): the hidden representation."""
        return ACTIVATIONS[self.activation](self.preactivation(x))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.features(x)
        if self.a.dim() == 2:
            out = torch.bmm(hidden, self.a.unsqueeze(-1)).squeeze(-1)
            return out if self.c is None else out + self.c.unsqueeze(-1)
        out = torch.bmm(hidden, self.a)
        return out if self.c is None else out + self.c.unsqueeze(1)


def init_fixed_output(replicas: int, width: int, d0: int, *, d_ambient: int, activation: str = "relu",
                      generator: torch.Generator, dtype=torch.float32, device=None,
                      d_out: int | None = None, train_output: bool = False) -> TwoLayerNet:
    """Eq. (2) of the source in reduced coordinates: w_k ~ N(0, I/d_ambient) restricted to the d0 feature
    coordinates, a_k ~ Uniform{-1/m, +1/m} (shape (R, m), or (R, m, d_out) for a vector output), no biases."""
    W = torch.randn(replicas, width, d0, generator=generator, dtype=dtype) / math.sqrt(d_ambient)
    shape = (replicas, width) if d_out is None else (replicas, width, d_out)
    a = (torch.randint(0, 2, shape, generator=generator).to(dtype) * 2 - 1) / width
    W, a = W.to(device).requires_grad_(True), a.to(device).requires_grad_(train_output)
    return TwoLayerNet(W=W, a=a, activation=activation, train_output=train_output)


def init_default(replicas: int, d_in: int, width: int, d_out: int | None, *, activation: str,
                 generator: torch.Generator, dtype=torch.float32, device=None) -> TwoLayerNet:
    """PyTorch's ``nn.Linear`` default: every weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)); both layers and
    both biases trained."""
    def uniform(shape, fan_in):
        bound = 1.0 / math.sqrt(fan_in)
        return ((torch.rand(*shape, generator=generator, dtype=dtype) * 2 - 1) * bound).to(device).requires_grad_(True)

    out_shape = () if d_out is None else (d_out,)
    return TwoLayerNet(
        W=uniform((replicas, width, d_in), d_in), b=uniform((replicas, width), d_in),
        a=uniform((replicas, width, *out_shape), width), c=uniform((replicas, *out_shape), width),
        activation=activation, train_output=True,
    )

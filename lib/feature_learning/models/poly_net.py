"""The one-hidden-layer network with k-th power activation of dissertation ch. 4, eq. (4.2).

    f(theta, a) = sum_i (u_{i,1}(a_1) + ... + u_{i,k}(a_k))^k  w_i        (a p-vector of logits)

Parameters carry a leading replica dimension R so that independent seeds train as one tensor program:
``U`` has shape (R, k, p, m) (``U[r, j, a, i]`` = u_{i,j}(a)) and ``W`` has shape (R, m, p).
"""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass
class PolyNet:
    U: torch.Tensor  # (R, k, p, m)
    W: torch.Tensor  # (R, m, p)

    @property
    def k(self) -> int:
        return self.U.shape[1]

    @property
    def p(self) -> int:
        return self.U.shape[2]

    @property
    def width(self) -> int:
        return self.U.shape[3]

    @property
    def replicas(self) -> int:
        return self.U.shape[0]

    @property
    def homogeneity(self) -> int:
        """f(alpha theta) = alpha^(k+1) f(theta): the degree nu of the source's Lemma 4.7."""
        return self.k + 1

    def parameters(self) -> list[torch.Tensor]:
        return [self.U, self.W]

    def hidden(self, a: torch.Tensor) -> torch.Tensor:
        """Pre-activations sum_j u_{i,j}(a_j), shape (R, N, m), for inputs a of shape (N, k).

        Computed as one-hot(a) @ U, one matrix product whose backward pass is also a product (a gather's
        backward is a scatter-add, several times slower on the CPU).
        """
        one_hot = torch.nn.functional.one_hot(a, self.p).to(self.U.dtype).flatten(1)  # (N, k p)
        return torch.matmul(one_hot, self.U.flatten(1, 2))

    def grid_hidden(self) -> torch.Tensor:
        """Pre-activations on every input of Z_p^k, shape (R, p^k, m), in the lexicographic order of
        :func:`feature_learning.data.modular.all_tuples`: a broadcast sum of the k tables u_{.,j}, whose backward
        pass is a sum (no product with a one-hot matrix, k p / k times fewer operations than :meth:`hidden`)."""
        h = self.U[:, 0]
        for j in range(1, self.k):
            h = (h.unsqueeze(2) + self.U[:, j].unsqueeze(1)).flatten(1, 2)
        return h

    def grid(self) -> torch.Tensor:
        """Logits on every input of Z_p^k in ``all_tuples`` order, shape (R, p^k, p): ``self(all_tuples(k, p))``."""
        return self.activate(self.grid_hidden())

    def activate(self, h: torch.Tensor) -> torch.Tensor:
        """Logits (R, N, p) from pre-activations h (R, N, m): (h^k) W."""
        act = h
        for _ in range(self.k - 1):  # repeated products: faster than pow on CPU and exact for integers
            act = act * h
        return torch.bmm(act, self.W)

    def __call__(self, a: torch.Tensor) -> torch.Tensor:
        """Logits of shape (R, N, p)."""
        return self.activate(self.hidden(a))

    def neuron_norms(self) -> torch.Tensor:
        """||theta_i||_2 = (sum_j ||u_{i,j}||^2 + ||w_i||^2)^(1/2), shape (R, m)."""
        return (self.U.pow(2).sum(dim=(1, 2)) + self.W.pow(2).sum(dim=2)).sqrt()

    def group_norm(self) -> torch.Tensor:
        """||theta||_{2,k+1} = (sum_i ||theta_i||_2^(k+1))^(1/(k+1)) (Definition C.2), shape (R,)."""
        q = self.k + 1
        return self.neuron_norms().pow(q).sum(dim=1).pow(1.0 / q)

    def detached(self) -> PolyNet:
        return PolyNet(self.U.detach().clone(), self.W.detach().clone())

    def replica(self, r: int) -> PolyNet:
        return PolyNet(self.U[r : r + 1], self.W[r : r + 1])


def init_poly_net(
    k: int,
    p: int,
    width: int,
    replicas: int = 1,
    scale: float = 0.1,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
) -> PolyNet:
    """Every entry i.i.d. N(0, scale^2), drawn on the CPU from ``generator`` (so CPU and CUDA runs agree)."""
    U = torch.randn(replicas, k, p, width, generator=generator, dtype=dtype) * scale
    W = torch.randn(replicas, width, p, generator=generator, dtype=dtype) * scale
    return PolyNet(U.to(device).requires_grad_(), W.to(device).requires_grad_())


def poly_net_from_neurons(u: torch.Tensor, w: torch.Tensor) -> PolyNet:
    """A single-replica network from neuron tables u of shape (m, k, p) and w of shape (m, p)."""
    return PolyNet(u.permute(1, 2, 0).unsqueeze(0).contiguous(), w.unsqueeze(0).contiguous())

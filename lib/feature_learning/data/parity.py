"""Sparse parities on structured and on uniform inputs: the parity data of dissertation ch. 3 (Shi, Wei and Liang,
NeurIPS 2023), Sec. 3.4.2 / B.5.4 (structured, eqs. (B.396)-(B.397)) and B.5.5 (uniform, after Barak et al. 2022).

A hidden vector phi in {-1, 0, +1}^d is mapped through an orthonormal dictionary M (d x d) to x = M phi. The relevant
set is A = {1, ..., r k} (the first r k coordinates, WLOG in the source), split into r blocks A_j of k coordinates,
and the label is

    y = sign( sum_{j in [r]} XOR(phi_{A_j}) ),     XOR(phi_{A_j}) = prod_{l in A_j} phi_l,

with r odd. The law of phi mixes a uniform part and 2r structured parts:

    X = (1 - 2 r p_A) X_U + sum_j p_A (X_{j,+} + X_{j,-}),

* X_U: phi_A uniform on {-1, +1}^{rk};
* X_{j,+} / X_{j,-}: phi_{A_j} = +1 / -1 (all k coordinates) and phi_{A \\ A_j} = 0;
* every background coordinate l outside A, independently, is +1 or -1 with probability p_o each and 0 otherwise.

For odd k the structured part X_{j,+} has label +1 and X_{j,-} label -1. With r = 1, p_A = 0, p_o = 1/2 and M = I
this is the k-sparse parity on uniform inputs of Barak et al. (Assumption B.53, k even there); with M = I, r = 1,
p_A = 1/4, p_o = 1/2 it is the distribution of Daniely and Malach (2020).

Parts are labelled by integers: 0 is X_U, 2j + 1 is X_{j,+} and 2j + 2 is X_{j,-} (j = 0, ..., r - 1).
"""

from __future__ import annotations

import dataclasses
import math

import torch

UNIFORM_PART = 0


def part_names(r: int) -> list[str]:
    """Readable names of the 2r + 1 parts, in part-label order: "U", "1+", "1-", "2+", ..."""
    return ["U"] + [f"{j + 1}{s}" for j in range(r) for s in ("+", "-")]


@dataclasses.dataclass(frozen=True)
class StructuredParity:
    """The law of (x, y) above; ``M=None`` in the methods means the identity dictionary."""

    d: int
    k: int
    r: int = 1
    p_A: float = 0.25
    p_o: float = 0.5

    def __post_init__(self):
        if self.r < 1 or self.r % 2 == 0:
            raise ValueError(f"r must be odd (the label is the sign of a sum of r parities), got r={self.r}")
        if not 1 <= self.r * self.k <= self.d:
            raise ValueError(f"need 1 <= r k <= d, got r={self.r}, k={self.k}, d={self.d}")
        if not 0 <= 2 * self.r * self.p_A <= 1:
            raise ValueError(f"p_A must lie in [0, 1/(2r)], got {self.p_A}")
        if not 0 <= 2 * self.p_o <= 1:
            raise ValueError(f"p_o must lie in [0, 1/2], got {self.p_o}")
        if self.p_A > 0 and self.k % 2 == 0:
            raise ValueError("the structured parts need k odd (X_{j,-} then has label -1); use p_A = 0 for even k")

    @property
    def parts(self) -> int:
        return 2 * self.r + 1

    def part_probabilities(self) -> torch.Tensor:
        """(1 - 2 r p_A, p_A, p_A, ..., p_A), in part-label order."""
        return torch.tensor([1 - 2 * self.r * self.p_A] + [self.p_A] * (2 * self.r), dtype=torch.float64)

    def blocks(self) -> torch.Tensor:
        """The index blocks A_j, shape (r, k)."""
        return torch.arange(self.r * self.k).reshape(self.r, self.k)

    def directions(self, M: torch.Tensor | None = None, dtype=torch.float64) -> torch.Tensor:
        """The gradient features D_j = sum_{l in A_j} M_l / ||.|| (eq. (B.399)), shape (r, d)."""
        M = torch.eye(self.d, dtype=dtype) if M is None else M
        return M[:, : self.r * self.k].T.reshape(self.r, self.k, self.d).sum(1) / math.sqrt(self.k)

    def labels(self, phi: torch.Tensor) -> torch.Tensor:
        """y = sign(sum_j prod_{l in A_j} phi_l) (eq. (B.396)); r odd makes the sum odd on X_U and +-1 elsewhere."""
        xor = phi[..., : self.r * self.k].reshape(*phi.shape[:-1], self.r, self.k).prod(-1)
        return torch.sign(xor.sum(-1))

    def sample_phi(self, n: int, generator: torch.Generator, *, part: int | None = None,
                   dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
        """n hidden vectors phi (n, d) and their part labels (n,); ``part`` draws from one part only."""
        rk = self.r * self.k
        if part is None:
            parts = torch.multinomial(self.part_probabilities(), n, replacement=True, generator=generator)
        else:
            if not 0 <= part < self.parts:
                raise ValueError(f"part must lie in 0..{self.parts - 1}, got {part}")
            parts = torch.full((n,), part, dtype=torch.long)
        u = torch.rand(n, self.d - rk, generator=generator, dtype=torch.float64)
        background = torch.where(u < self.p_o, 1.0, torch.where(u < 2 * self.p_o, -1.0, 0.0))
        uniform = torch.randint(0, 2, (n, rk), generator=generator).double() * 2 - 1
        block = (torch.arange(rk) // self.k)[None, :]  # (1, rk): which block each relevant coordinate is in
        j, sign = (parts - 1) // 2, torch.where(parts % 2 == 1, 1.0, -1.0)
        structured = torch.where(block == j[:, None], sign[:, None], 0.0)
        relevant = torch.where((parts == UNIFORM_PART)[:, None], uniform, structured)
        return torch.cat([relevant, background], 1).to(dtype), parts

    def sample(self, n: int, generator: torch.Generator, M: torch.Tensor | None = None, *, part: int | None = None,
               dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x, y, part): inputs x = M phi (n, d), labels (n,) in {-1, +1} and part labels (n,)."""
        phi, parts = self.sample_phi(n, generator, part=part, dtype=dtype)
        x = phi if M is None else phi @ M.T.to(dtype)
        return x, self.labels(phi), parts


def uniform_parity(d: int, k: int) -> StructuredParity:
    """The k-sparse parity on uniform inputs {-1, +1}^d (Assumption B.53: r = 1, p_A = 0, p_o = 1/2, M = I)."""
    return StructuredParity(d=d, k=k, r=1, p_A=0.0, p_o=0.5)

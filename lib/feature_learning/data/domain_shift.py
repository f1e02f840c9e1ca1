"""Domain-generalisation data with invariant and environmental features (dissertation ch. 6, Shi et al., CPAL 2024).

* :func:`sign_mixture_uniform`: the distribution D_gamma of Sec. 6.4: U[0, 1] with probability 1/2 + gamma, else
  U[-1, 0] (mean gamma, variance 1/3 - gamma^2).
* :func:`reweighting_features` and :func:`reweighting_sums`: the feature re-weighting model of Sec. 6.4, r invariant
  label-multiplied features z_j ~ U[0, 1] and d - r environmental ones z_j ~ D_gamma (gamma in distribution, -gamma
  out of distribution); z = z~(x) y, so the margin of f_w is sum_j w_j z_j and the labels drop out.
* :func:`spurious_2d`: the 2-D task of Sec. 6.3.1, x1 = y U[0, 1] (invariant), x2 = y b U[0, 1] with
  P(b = +1) = 0.7 in distribution and 0.3 out of distribution (the symmetric completion of the text, which states
  only y = +1).
* :class:`ClassCodeDomains`: a multi-class synthetic DomainBed analogue: random +-1 class codes on r invariant and u
  environmental coordinates, environmental signs agreeing with the class code with probability 1/2 + gamma_e per
  domain, mixed by a random orthogonal map plus a tanh nonlinearity.
* :func:`with_environment_block`: any labelled data (the bundled digits) with the same environmental block appended.
"""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.data.bases import random_orthogonal


def sign_mixture_uniform(gamma: float, shape: tuple[int, ...], generator: torch.Generator,
                         dtype=torch.float64) -> torch.Tensor:
    """Samples of D_gamma (Sec. 6.4): |U[0, 1]| with a + sign with probability 1/2 + gamma, else a - sign."""
    if not -0.5 <= gamma <= 0.5:
        raise ValueError(f"gamma must lie in [-1/2, 1/2], got {gamma}")
    magnitude = torch.rand(shape, generator=generator, dtype=dtype)
    positive = torch.rand(shape, generator=generator, dtype=dtype) < 0.5 + gamma
    return torch.where(positive, magnitude, -magnitude)


def reweighting_features(n: int, r: int, d: int, gamma: float, generator: torch.Generator,
                         dtype=torch.float64) -> torch.Tensor:
    """(n, d) label-multiplied features of Sec. 6.4: the first r columns U[0, 1] (invariant, R), the other d - r
    D_gamma (environmental, U). Use gamma for the training distribution and -gamma for the OOD test."""
    if not 0 < r <= d:
        raise ValueError(f"need 0 < r <= d, got r={r}, d={d}")
    invariant = torch.rand(n, r, generator=generator, dtype=dtype)
    environmental = sign_mixture_uniform(gamma, (n, d - r), generator, dtype)
    return torch.cat([invariant, environmental], dim=1)


def reweighting_sums(n: int, r: int, d: int, gamma: float, generator: torch.Generator, chunk: int = 20_000,
                     dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """The two block sums (S_R, S_U) = (sum_{j in R} z_j, sum_{j in U} z_j) of ``n`` draws of the Sec. 6.4 model,
    drawn in chunks so that the (n, d) matrix is never held: every block-constant weight vector (alpha on R, beta on
    U) has the margin alpha S_R + beta S_U, which is all the population problem (E.10) needs."""
    sums_r, sums_u = [], []
    for start in range(0, n, chunk):
        z = reweighting_features(min(chunk, n - start), r, d, gamma, generator, dtype)
        sums_r.append(z[:, :r].sum(1))
        sums_u.append(z[:, r:].sum(1))
    return torch.cat(sums_r), torch.cat(sums_u)


def spurious_2d(n: int, p_align: float, generator: torch.Generator,
                dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """The 2-D task of Sec. 6.3.1: balanced labels y in {-1, +1}, x1 = y U[0, 1], x2 = y b U[0, 1] with
    P(b = +1) = ``p_align`` (0.7 in distribution, 0.3 out of distribution). Returns x (n, 2) and y (n,)."""
    y = torch.where(torch.rand(n, generator=generator, dtype=dtype) < 0.5, -1.0, 1.0).to(dtype)
    b = torch.where(torch.rand(n, generator=generator, dtype=dtype) < p_align, 1.0, -1.0).to(dtype)
    u = torch.rand(n, 2, generator=generator, dtype=dtype)
    return torch.stack([y * u[:, 0], y * b * u[:, 1]], dim=1), y



def environment_block(labels: torch.Tensor, code: torch.Tensor, gamma: float, generator: torch.Generator,
                      dtype=torch.float64) -> torch.Tensor:
    """Environmental coordinates code[y] * b * U[0, 1] with b = +1 with probability 1/2 + gamma (the D_gamma of
    Sec. 6.4 along each class's code): (n, u) for labels (n,) and a +-1 code (classes, u)."""
    return code[labels].to(dtype) * sign_mixture_uniform(gamma, (len(labels), code.shape[1]), generator, dtype)


@dataclasses.dataclass
class ClassCodeDomains:
    """A synthetic multi-class DomainBed analogue: z = [code_R[y] * U[0, 1]^r, code_U[y] * b * U[0, 1]^u] and
    x = M z + ``bend`` * tanh(M z) with M random orthogonal. Domains differ only in gamma_e, the probability
    1/2 + gamma_e that an environmental sign agrees with the class code; the invariant block is the same in every
    domain (z_c depends only on y, z_e on (e, y): Sec. 6.2)."""

    code_r: torch.Tensor  # (classes, r) +-1
    code_u: torch.Tensor  # (classes, u) +-1
    mixer: torch.Tensor  # (r + u, r + u) orthogonal
    bend: float = 0.3

    @classmethod
    def draw(cls, classes: int, r: int, u: int, generator: torch.Generator, bend: float = 0.3,
             dtype=torch.float64) -> ClassCodeDomains:
        def signs(shape):
            return torch.where(torch.rand(shape, generator=generator) < 0.5, -1.0, 1.0).to(dtype)

        return cls(signs((classes, r)), signs((classes, u)), random_orthogonal(r + u, generator, dtype), bend)

    @property
    def classes(self) -> int:
        return self.code_r.shape[0]

    def sample(self, n: int, gamma: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """n inputs (n, r + u) and labels (n,) of the domain with environmental agreement 1/2 + gamma."""
        dtype = self.mixer.dtype
        labels = torch.randint(0, self.classes, (n,), generator=generator)
        invariant = self.code_r[labels] * torch.rand(n, self.code_r.shape[1], generator=generator, dtype=dtype)
        z = torch.cat([invariant, environment_block(labels, self.code_u, gamma, generator, dtype)], dim=1)
        mixed = z @ self.mixer.T
        return mixed + self.bend * torch.tanh(mixed), labels


def with_environment_block(x: torch.Tensor, labels: torch.Tensor, code: torch.Tensor, gamma: float,
                           generator: torch.Generator) -> torch.Tensor:
    """Inputs ``x`` (n, p) with the environmental block of :func:`environment_block` appended: (n, p + u)."""
    return torch.cat([x, environment_block(labels, code, gamma, generator, x.dtype)], dim=1)

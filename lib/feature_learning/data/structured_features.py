"""The structured feature model of Zhang et al. (ICML 2024), Definition 3.1, and its variants.

Features m_1..m_{d0} are orthonormal in R^d; an input is

    x = sum_{j in S_core} y z_j m_j + sum_{j in S_bg} z_j m_j ,      y ~ Uniform{-1, +1},

with independent z_j. In training (ID) every z_j ~ U[0, 1]; at test time (OOD) the core z_j keep their law and the
background z_j ~ U[-1, 0] (appendix F.1). The background features are independent of the label.

Every input lies in span(M), and Gaussian initialisation and (S)GD are rotation-equivariant, so the components of a
weight vector orthogonal to span(M) receive only weight decay and never change the output. We therefore sample in
the *reduced coordinates* x = M^T x in R^{d0} (core coordinates first); the ambient dimension d enters only through
the initialisation variance 1/d (see :func:`feature_learning.data.bases.orthonormal_dictionary` and the tests for
the equivalence).
"""

from __future__ import annotations

import dataclasses

import torch

SPLITS = ("id", "ood")


@dataclasses.dataclass(frozen=True)
class StructuredFeatures:
    """Definition 3.1 with uniform feature laws (appendix F.1)."""

    d_core: int
    d_bg: int
    core_range: tuple[float, float] = (0.0, 1.0)
    bg_id_range: tuple[float, float] = (0.0, 1.0)
    bg_ood_range: tuple[float, float] = (-1.0, 0.0)

    @property
    def d0(self) -> int:
        return self.d_core + self.d_bg

    def mu_core(self) -> float:
        return sum(self.core_range) / 2

    def mu_bg(self, split: str = "id") -> float:
        return sum(self.bg_id_range if split == "id" else self.bg_ood_range) / 2

    def sample(self, n: int, *, split: str = "id", replicas: int | None = None, generator: torch.Generator,
               device=None, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x, y, z): x and z of shape ([R,] n, d0) in reduced coordinates, y of shape ([R,] n) in {-1, +1}."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        lead = (n,) if replicas is None else (replicas, n)
        y = torch.randint(0, 2, lead, generator=generator).to(dtype) * 2 - 1
        u = torch.rand(*lead, self.d0, generator=generator, dtype=dtype)
        lo_c, hi_c = self.core_range
        lo_b, hi_b = self.bg_id_range if split == "id" else self.bg_ood_range
        z = torch.cat([lo_c + (hi_c - lo_c) * u[..., : self.d_core], lo_b + (hi_b - lo_b) * u[..., self.d_core:]], -1)
        x = torch.cat([y.unsqueeze(-1) * z[..., : self.d_core], z[..., self.d_core:]], -1)
        return x.to(device), y.to(device), z.to(device)

    def regression_target(self, x: torch.Tensor) -> torch.Tensor:
        """The OOD-optimal representation used as distillation target, (y z_j)_{j in S_core} = (<x, m_j>)_{core}:
        the core part of x (appendix F.1 "regression"; the signed version, see the chapter's discussion)."""
        return x[..., : self.d_core]


@dataclasses.dataclass(frozen=True)
class ConcentricBalls:
    """The non-linear extension of appendix F.1 (Fig. 3d, 10): the core features of class -1 are uniform in the
    ball of radius ``radii[0]`` of R^{d_core}, those of class +1 in the ball of radius ``radii[1]``; the background
    block is as in :class:`StructuredFeatures` (U[0, 1] ID, U[-1, 0] OOD). In high dimension a uniform point of a
    ball lies near its sphere, so the classes are separated (by the norm) with probability 1 - (r0/r1)^{d_core}."""

    d_core: int
    d_bg: int
    radii: tuple[float, float] = (1.0, 2.0)
    bg_id_range: tuple[float, float] = (0.0, 1.0)
    bg_ood_range: tuple[float, float] = (-1.0, 0.0)

    @property
    def d0(self) -> int:
        return self.d_core + self.d_bg

    def sample(self, n: int, *, split: str = "id", replicas: int | None = None, generator: torch.Generator,
               device=None, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        lead = (n,) if replicas is None else (replicas, n)
        y = torch.randint(0, 2, lead, generator=generator).to(dtype) * 2 - 1
        direction = torch.randn(*lead, self.d_core, generator=generator, dtype=dtype)
        direction = direction / direction.norm(dim=-1, keepdim=True)
        radius = torch.where(y > 0, self.radii[1], self.radii[0])
        r = radius * torch.rand(lead, generator=generator, dtype=dtype) ** (1.0 / self.d_core)
        lo, hi = self.bg_id_range if split == "id" else self.bg_ood_range
        bg = lo + (hi - lo) * torch.rand(*lead, self.d_bg, generator=generator, dtype=dtype)
        x = torch.cat([r.unsqueeze(-1) * direction, bg], -1)
        return x.to(device), y.to(device)

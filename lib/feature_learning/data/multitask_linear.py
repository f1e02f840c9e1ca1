"""The linear multi-task hidden-representation model of dissertation ch. 7 (Shi et al., ICLR 2023, Sec. 7.2.2,
eqs. (7.6)-(7.7); the general version in App. F.2.1, (F.35)-(F.37)).

T tasks share a set S of s invariant features; task t also owns a private set P_t of r - s invariant features
(disjoint from S and from the other tasks'); R_t = S + P_t, R = union of the R_t (k = s + T (r - s) coordinates) and
the remaining u coordinates U are *spurious*: the augmentations redraw them. In task t,
z_{R_t} ~ N(0, I), z_{R \\ R_t} = 0, z_U ~ N(0, I), x = M z with M an orthonormal dictionary; the positive x+ keeps
z_R and redraws z_U; a label is y = u_t*^T z_{R_t} (real; sign(y) for classification).

Coordinates are ordered S, P_1, ..., P_T, U. Every sampler takes a leading batch shape (replicas, e.g. seeds).
Samplers draw on their generator's device (a CPU generator draws on the CPU; one on M's device, e.g.
:meth:`feature_learning.book.profiles.Run.device_generator`, draws there) and return tensors on M's device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from feature_learning.data.bases import random_orthogonal


@dataclass
class MultiTaskLinear:
    """The model's sizes and its dictionary M (d x d, orthonormal). Build with :meth:`draw`."""

    s: int
    r: int
    T: int
    u: int
    M: torch.Tensor

    @classmethod
    def draw(cls, s: int, r: int, T: int, u: int, generator: torch.Generator,
             dtype: torch.dtype = torch.float64) -> MultiTaskLinear:
        """A model with a Haar-random orthogonal dictionary M of size d = s + T (r - s) + u."""
        if not 0 < s < r:
            raise ValueError(f"need 0 < s < r (shared and private features), got s={s}, r={r}")
        return cls(s, r, T, u, random_orthogonal(s + T * (r - s) + u, generator, dtype))

    @property
    def k(self) -> int:
        """Number of invariant coordinates |R| = s + T (r - s)."""
        return self.s + self.T * (self.r - self.s)

    @property
    def d(self) -> int:
        return self.k + self.u

    def shared(self) -> torch.Tensor:
        return torch.arange(self.s)

    def private(self, t: int) -> torch.Tensor:
        """Indices of P_t (t = 0, ..., T - 1)."""
        start = self.s + t * (self.r - self.s)
        return torch.arange(start, start + self.r - self.s)

    def invariant(self, t: int) -> torch.Tensor:
        """Indices of R_t = S + P_t, in that order."""
        return torch.cat([self.shared(), self.private(t)])

    def spurious(self) -> torch.Tensor:
        return torch.arange(self.k, self.d)

    def task_mask(self, tasks: torch.Tensor) -> torch.Tensor:
        """(..., d) 0/1 mask of the coordinates drawn in each example's task (R_t and U)."""
        d, s, p = self.d, self.s, self.r - self.s
        j = torch.arange(d, device=tasks.device)
        own = (j >= s + tasks[..., None] * p) & (j < s + (tasks[..., None] + 1) * p)
        return ((j < s) | (j >= self.k) | own).to(self.M.dtype)

    def sample_z(self, tasks: torch.Tensor, generator: torch.Generator, noise_shape: tuple | None = None
                 ) -> torch.Tensor:
        """Hidden representations (..., n, d) for task indices ``tasks`` (..., n), eq. (7.6). ``noise_shape``
        (broadcastable to tasks.shape, e.g. with a 1 on a configuration axis) shares the Gaussian draws along the
        axes where it is 1: common random numbers for runs that differ only in their tasks."""
        shape = tuple(tasks.shape) if noise_shape is None else tuple(noise_shape)
        g = torch.randn(*shape, self.d, generator=generator, dtype=self.M.dtype, device=generator.device)
        g = g.to(self.M.device)
        return g * self.task_mask(tasks.to(self.M.device))

    def augment(self, z: torch.Tensor, generator: torch.Generator, noise_shape: tuple | None = None) -> torch.Tensor:
        """The positive partner of eq. (7.7): z_R kept, z_U redrawn from N(0, I) (``noise_shape`` as in
        :meth:`sample_z`)."""
        shape = tuple(z.shape[:-1]) if noise_shape is None else tuple(noise_shape)
        fresh = torch.randn(*shape, self.u, generator=generator, dtype=z.dtype, device=generator.device).to(z.device)
        return torch.cat([z[..., : self.k], fresh.expand(*z.shape[:-1], self.u)], -1)

    def inputs(self, z: torch.Tensor) -> torch.Tensor:
        """x = M z, row-wise."""
        return z @ self.M.T

    def mixture_tasks(self, included: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
        """Task indices (..., n) of even mixtures: ``included`` (..., T) marks (0/1) the tasks of each replica's
        mixture; each example's task is uniform among them. (Drawn on the generator's device, returned on M's
        device.)"""
        weights = included.to(torch.float64).to(generator.device)
        flat = weights.reshape(-1, self.T)
        idx = torch.multinomial(flat, n, replacement=True, generator=generator)
        return idx.reshape(*weights.shape[:-1], n).to(self.M.device)

    def first_tasks(self, n_tasks: int) -> torch.Tensor:
        """The 0/1 vector (T,) of the mixture of the first ``n_tasks`` tasks (the target is task 0)."""
        return (torch.arange(self.T) < n_tasks).to(torch.float64)

    def label_directions(self, generator: torch.Generator, batch_shape: tuple = ()) -> torch.Tensor:
        """u_t* for every task, (*batch_shape, T, r): Gaussian directions on S and on P_t, each scaled to norm
        1/sqrt(2), so v_{t,1} = v_{t,2} = 1/2 and ||u_t*|| = 1 (the r = 2s illustration of Prop. F.8)."""
        g = torch.randn(*batch_shape, self.T, self.r, generator=generator, dtype=self.M.dtype,
                        device=generator.device).to(self.M.device)
        a, b = g[..., : self.s], g[..., self.s:]
        scale = 1 / math.sqrt(2)
        return torch.cat([a / a.norm(dim=-1, keepdim=True) * scale, b / b.norm(dim=-1, keepdim=True) * scale], -1)

    def labels(self, z: torch.Tensor, u_star: torch.Tensor, t: int) -> torch.Tensor:
        """Real labels y = u_t*^T z_{R_t} of task t: z (..., n, d), u_star (..., T, r) -> (..., n)."""
        zR = z[..., self.invariant(t).to(z.device)]
        return (zR * u_star[..., t, None, :]).sum(-1)

    def representation(self, weights_sq: torch.Tensor) -> torch.Tensor:
        """The closed-form linear representation W = [diag(a) over R, 0] M^T (k x d) whose squared feature weights
        (on the R coordinates) are ``weights_sq`` (..., k); Lemma F.3 with Q = I."""
        A = torch.diag_embed(weights_sq.sqrt())                                   # (..., k, k)
        pad = torch.zeros(*A.shape[:-1], self.u, dtype=A.dtype, device=A.device)
        return torch.cat([A, pad], -1) @ self.M.T

    def block_weights(self, n_tasks: int, alpha: float, beta: float) -> torch.Tensor:
        """Squared weights (k,) with alpha on S, beta on P_1..P_{n_tasks}, 0 on the other tasks' private features."""
        w = torch.zeros(self.k, dtype=self.M.dtype, device=self.M.device)
        w[: self.s] = alpha
        w[self.s: self.s + n_tasks * (self.r - self.s)] = beta
        return w

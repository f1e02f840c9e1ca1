"""The sparse-coding (dictionary) data model of Shi, Wei and Liang (ICLR 2022), Section 3, eq. (1).

An input is ``x~ = M phi~`` with a dictionary ``M`` (d x D) and a hidden pattern vector ``phi~`` in {0,1}^D; the label
depends only on how many of the ``k`` class-relevant patterns ``A`` are present: ``y = +1`` iff
``sum_{j in A} phi~_j in P``. Inputs are normalised as ``x = (x~ - E x~) / sigma~`` with
``sigma~^2 = E ||x~ - E x~||^2`` (Section 3, after eq. (1)), computed from the *population* law.

Laws of ``phi~`` (Appendix C and E of the paper = Appendix A.5 / A.7 of the dissertation, ch. 2):

* ``"parity_mixture"``: the distribution D_A^mix = p_o D^(0) + (1 - p_o) D^(1) of the proof of Theorem 2 and of
  the main experiment (E.1.1): D^(0) is uniform on {0,1}^D; under D^(1) the background patterns are i.i.d.
  Bernoulli(p_o / (2 - 2 p_o)) and the relevant block is all zeros or all ones with probability 1/2 each.
  It satisfies (A0)-(A2) for odd k with parity labels, gamma = (1 - p_o)/2.
* ``"uniform"``: (A1'), phi~ uniform on {0,1}^D -- the family without input structure (Theorem 4).
* ``"bernoulli"``: independent patterns, Pr[phi~_j = 1] = p_in on A and p_o elsewhere (interval labels, E.1.2).

``noise_std`` adds the Gaussian noise zeta ~ N(0, noise_std^2 I_d) of the general setting (Appendix F / A.8,
eq. (A.292)); it enters sigma~^2 as d * noise_std^2.

Class imbalance (Appendix E.2.2 = A.7):
:meth:`feature_learning.data.sparse_coding.SparseCodingTask.sample_class_ratio` draws from the law and keeps a
given fraction of negatives (class-conditional resampling; the source does not say how it resampled).

Pattern coordinates: with orthonormal M and no noise every input lies in span(M), so ``<w, x> = <M^T w, M^T x>``
and any gradient with respect to w lies in span(M). :func:`pattern_coordinates` maps inputs (and first-layer
weights) to the D coordinates ``M^T x``; a network trained there is the d-dimensional one exactly, apart from the
component of w orthogonal to span(M), which gradients never touch.
"""

from __future__ import annotations

import dataclasses
import math

import torch

LAWS = ("parity_mixture", "uniform", "bernoulli")


def parity_set(k: int) -> tuple[int, ...]:
    """Example 2: P = {odd numbers in [k]} (sparse parity on A)."""
    return tuple(i for i in range(1, k + 1) if i % 2 == 1)


def threshold_set(k: int) -> tuple[int, ...]:
    """Example 1: P = {i in [k] : i > k/2}."""
    return tuple(i for i in range(1, k + 1) if i > k / 2)


def interval_set(low: int, high: int) -> tuple[int, ...]:
    """The interval labelling of E.1.2: P = {low, ..., high}."""
    return tuple(range(low, high + 1))


def count_labels(phi_tilde: torch.Tensor, A: torch.Tensor, P: tuple[int, ...]) -> torch.Tensor:
    """eq. (1): y = +1 if sum_{j in A} phi~_j lies in P, else -1 (float tensor of the patterns' dtype)."""
    count = phi_tilde[..., A].sum(-1).round().long()
    inside = torch.isin(count, torch.tensor(P, dtype=torch.long, device=count.device))
    return inside.to(phi_tilde.dtype) * 2 - 1


@dataclasses.dataclass(frozen=True)
class SparseCodingTask:
    """One member of the family F_Xi: sizes, label set and the law of phi~ (see the module docstring)."""

    d: int
    D: int
    k: int
    P: tuple[int, ...]
    law: str = "parity_mixture"
    p_o: float = 0.5
    p_in: float = 0.5  # only for law="bernoulli"
    noise_std: float = 0.0

    def __post_init__(self):
        if self.law not in LAWS:
            raise ValueError(f"law {self.law!r} unknown; use one of {LAWS}")
        if not 1 <= self.k <= self.D <= self.d:
            raise ValueError(f"need 1 <= k <= D <= d, got k={self.k}, D={self.D}, d={self.d}")
        if self.law == "parity_mixture" and not 0 < self.p_o <= 2 / 3:
            raise ValueError("the parity mixture needs 0 < p_o <= 2/3 (p_o/(2-2p_o) is a probability)")

    # -- population moments ------------------------------------------------------------------------------
    def pattern_mean(self, A: torch.Tensor, dtype=torch.float64) -> torch.Tensor:
        """E phi~ (D,): relevant patterns have mean 1/2 (mixture, uniform) or p_in, background p_o or 1/2."""
        if self.law == "uniform":
            return torch.full((self.D,), 0.5, dtype=dtype)
        mean = torch.full((self.D,), self.p_o, dtype=dtype)
        mean[A] = 0.5 if self.law == "parity_mixture" else self.p_in
        return mean

    def sigma_tilde(self) -> float:
        """sigma~ with sigma~^2 = E||x~ - E x~||^2 = sum_j Var(phi~_j) + d noise_std^2 (orthonormal M)."""
        if self.law == "uniform":
            var = self.D / 4
        elif self.law == "parity_mixture":
            var = self.k / 4 + (self.D - self.k) * self.p_o * (1 - self.p_o)
        else:
            var = self.k * self.p_in * (1 - self.p_in) + (self.D - self.k) * self.p_o * (1 - self.p_o)
        return math.sqrt(var + self.d * self.noise_std**2)

    # -- sampling ----------------------------------------------------------------------------------------
    def relevant_set(self, generator: torch.Generator) -> torch.Tensor:
        """A uniformly random class-relevant set A of size k (sorted indices)."""
        return torch.randperm(self.D, generator=generator)[: self.k].sort().values

    def sample_patterns(self, n: int, A: torch.Tensor, generator: torch.Generator, dtype=torch.float64):
        """n i.i.d. hidden vectors phi~ (n, D) in {0,1}."""
        u = torch.rand(n, self.D, generator=generator, dtype=torch.float64)
        if self.law == "uniform":
            phi = (u < 0.5).double()
        elif self.law == "bernoulli":
            p = torch.full((self.D,), self.p_o, dtype=torch.float64)
            p[A] = self.p_in
            phi = (u < p).double()
        else:
            uniform_part = torch.rand(n, generator=generator, dtype=torch.float64) < self.p_o  # D^(0)
            background = (u < self.p_o / (2 - 2 * self.p_o)).double()
            block = (torch.rand(n, 1, generator=generator, dtype=torch.float64) < 0.5).double()
            structured = background.clone()
            structured[:, A] = block.expand(n, self.k)
            phi = torch.where(uniform_part[:, None], (u < 0.5).double(), structured)
        return phi.to(dtype)

    def sample(self, n: int, M: torch.Tensor, A: torch.Tensor, generator: torch.Generator):
        """(x, y, phi~): normalised inputs (n, d), labels (n,) in {-1,+1} and patterns (n, D), dtype of M."""
        phi = self.sample_patterns(n, A, generator, M.dtype)
        centred = phi - self.pattern_mean(A, M.dtype)
        x = centred @ M.T
        if self.noise_std > 0:
            x = x + self.noise_std * torch.randn(n, self.d, generator=generator, dtype=M.dtype)
        return x / self.sigma_tilde(), count_labels(phi, A, self.P), phi

    def sample_class_ratio(self, n: int, M: torch.Tensor, A: torch.Tensor, negative_ratio: float,
                           generator: torch.Generator, *, chunk: int | None = None):
        """(x, y, phi~) with exactly ``round(n * negative_ratio)`` samples of class -1 and the rest of class +1: draws
        from the law in chunks and keeps the first samples of each class (class-conditional resampling, the
        imbalance ratio of Appendix E.2.2 = "class -1 sample size divided by the total"). The normalisation
        (centring and sigma~) stays that of the law, as if the data were drawn and then subsampled by class; the
        sample order is shuffled."""
        if not 0.0 < negative_ratio < 1.0:
            raise ValueError(f"negative_ratio must lie in (0, 1), got {negative_ratio}")
        want = {-1.0: round(n * negative_ratio), 1.0: n - round(n * negative_ratio)}
        kept: dict[float, list] = {-1.0: [], 1.0: []}
        have = {-1.0: 0, 1.0: 0}
        chunk = chunk or max(1024, 2 * n)
        for _ in range(10_000):
            x, y, phi = self.sample(chunk, M, A, generator)
            for label in (-1.0, 1.0):
                need = want[label] - have[label]
                if need > 0:
                    idx = (y == label).nonzero().flatten()[:need]
                    kept[label].append((x[idx], y[idx], phi[idx]))
                    have[label] += len(idx)
            if have == want:
                break
        else:
            raise RuntimeError("class-conditional resampling did not fill both classes; is one class impossible?")
        parts = kept[-1.0] + kept[1.0]
        x, y, phi = (torch.cat([p[i] for p in parts]) for i in range(3))
        order = torch.randperm(n, generator=generator)
        return x[order], y[order], phi[order]

    def without_structure(self) -> SparseCodingTask:
        """The same sizes and labelling with (A1'): phi~ uniform (the family F_Xi0)."""
        return dataclasses.replace(self, law="uniform")


def relevant_direction(M: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """sum_{j in A} M_j (d,), the direction features should align with (Lemma 6 / eq. (6))."""
    return M[:, A].sum(-1)


def pattern_coordinates(x: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """``M^T x`` for inputs (..., n, d) or first-layer weights (..., 2m, d): the coordinates in the dictionary basis.
    ``M`` is (d, D), or (R, d, D) for one dictionary per replica (then the leading dimension of ``x`` is R). Exact
    for inputs in span(M) (orthonormal M, no noise): ``x = M (M^T x)``."""
    return torch.matmul(x, M)


# -- Appendix E.3.1 (= A.7): labels from a hidden representation ----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class HiddenRepresentationTask:
    """The data model of Appendix E.3.1 ("hidden representation labeling"): draw ``per_label`` distinct binary codes
    in {0,1}^k for each label; a sample picks phi~_A uniformly among the 2 * per_label codes and takes its label,
    the background patterns phi~_{-A} are i.i.d. Bernoulli(p_o), and ``x~ = M phi~``, normalised as in Section 3,
    ``x = (x~ - E x~) / sigma~`` with the population mean and sigma~. The source: d = 500, D = 250, k = 50,
    50 codes per label, p_o = 1/2 (we read p_o as the background patterns' probability; the source does not say).
    It generalises D^(1) of the proof of Theorem 2, whose relevant block takes only the codes 0...0 and 1...1."""

    d: int
    D: int
    k: int
    per_label: int = 50
    p_o: float = 0.5

    def __post_init__(self):
        if not 1 <= self.k <= self.D <= self.d:
            raise ValueError(f"need 1 <= k <= D <= d, got k={self.k}, D={self.D}, d={self.d}")
        if 2 * self.per_label > 2**self.k:
            raise ValueError(f"{2 * self.per_label} distinct codes do not exist in {{0,1}}^{self.k}")

    def codes(self, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(codes (2 per_label, k) in {0,1}, distinct; labels (2 per_label,): +1 for the first half, -1 after)."""
        found: list[tuple[int, ...]] = []
        seen: set[tuple[int, ...]] = set()
        while len(found) < 2 * self.per_label:
            c = tuple((torch.rand(self.k, generator=generator) < 0.5).long().tolist())
            if c not in seen:
                seen.add(c), found.append(c)
        codes = torch.tensor(found, dtype=torch.float64)
        labels = torch.cat([torch.ones(self.per_label), -torch.ones(self.per_label)]).double()
        return codes, labels

    def pattern_mean(self, A: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """E phi~ (D,): the codes' mean on A, p_o elsewhere."""
        mean = torch.full((self.D,), self.p_o, dtype=torch.float64)
        mean[A] = codes.double().mean(0)
        return mean

    def pattern_covariance(self, A: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """Cov(phi~) (D, D): the codes' (population) covariance on A x A, p_o (1 - p_o) I off A, zero across."""
        cov = torch.eye(self.D, dtype=torch.float64) * self.p_o * (1 - self.p_o)
        c = codes.double() - codes.double().mean(0)
        cov[A[:, None], A[None, :]] = c.T @ c / c.shape[0]
        return cov

    def sigma_tilde(self, codes: torch.Tensor) -> float:
        """sigma~ = sqrt(E||x~ - E x~||^2) = sqrt(tr Cov(phi~)) (orthonormal M)."""
        c = codes.double() - codes.double().mean(0)
        return math.sqrt(float(c.pow(2).sum(1).mean()) + (self.D - self.k) * self.p_o * (1 - self.p_o))

    def label_correlation(self, A: torch.Tensor, codes: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """E[y z] (D,) for the pattern coordinates z = M^T x: (mean over codes of y (c - E c)) / sigma~ on A, zero
        elsewhere. The first gradient step points along M E[y z] (Lemma 6's E[y x])."""
        g = torch.zeros(self.D, dtype=torch.float64)
        c = codes.double() - codes.double().mean(0)
        g[A] = (labels.double()[:, None] * c).mean(0) / self.sigma_tilde(codes)
        return g

    def sample(self, n: int, M: torch.Tensor, A: torch.Tensor, codes: torch.Tensor, labels: torch.Tensor,
               generator: torch.Generator):
        """(x, y, phi~): normalised inputs (n, d), labels (n,) and patterns (n, D), dtype of M."""
        pick = torch.randint(codes.shape[0], (n,), generator=generator)
        phi = (torch.rand(n, self.D, generator=generator, dtype=torch.float64) < self.p_o).double()
        phi[:, A] = codes.double()[pick]
        x = (phi - self.pattern_mean(A, codes)) @ M.double().T / self.sigma_tilde(codes)
        return x.to(M.dtype), labels.double()[pick].to(M.dtype), phi.to(M.dtype)

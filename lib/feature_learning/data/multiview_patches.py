"""Multi-view patch data with a two-level label hierarchy: a common feature per class and one feature per subclass
(Hong et al., "How does pretraining label granularity affect generalization", appendix B.1; the "multi-view" patch
data of Allen-Zhu & Li).

A sample is ``X = (x_1, ..., x_P)`` in R^{P x d}. The dictionary is orthonormal; Gaussian noise and a Gaussian
initialisation are rotation invariant, so we take the standard basis ``v_j = e_j`` without loss of generality
(``MultiViewPatches.features`` lists the indices). For a *normal* sample of subclass ``(y, c)``:

* (a) common-feature patches ``x_p = alpha_p v_y + zeta_p``, ``alpha_p ~ U[sqrt(1 - iota), sqrt(1 + iota)]``;
* (b) subclass-feature patches ``x_p = alpha_p v_{y,c} + zeta_p`` on patches that are not common-feature patches;
* (c) feature-noise patches ``x_p = sum_{i <= s_f} alpha_i v_{j(i)} + zeta_p`` on the rest, ``alpha_i ~ U[0, gamma]``
  and ``v_{j(i)}`` uniform (with replacement) over the ``k + 1`` features of the *other* class;

with ``zeta_p ~ N(0, sigma_zeta^2 I_d)`` on every patch. Patch counts: ``"bernoulli"`` as in B.1 (each patch is a
common patch with probability ``s*/P``, each other patch a subclass patch with probability ``s*/P``) or
``"exact"`` (exactly ``s*`` of each; the idealisation behind the theory's concentration factors). Sum pooling
makes the network blind to patch positions, so the exact counts take the first patches.

A *hard* sample has its common-feature patches replaced by feature-noise patches (B.1 item 6; the source does not
say what replaces them). ``distract = rho`` adds ``rho v_{y'}`` (the other class's common feature) to every
feature-noise patch: the "misleading patterns" of Sec. 5.3. A batch holds exactly ``n_per_subclass`` samples of
every subclass (B.1 item 8).

:class:`HierarchicalPatches` generalises the tree (any branching below the superclasses, one feature per node,
label-independent nuisance features) for the synthetic analogue of the paper's label-hierarchy experiments.
"""

from __future__ import annotations

import dataclasses
import math

import torch

COUNTS = ("exact", "bernoulli")


def _uniform(shape, low: float, high: float, generator: torch.Generator, dtype) -> torch.Tensor:
    return low + (high - low) * torch.rand(shape, generator=generator, dtype=dtype)


@dataclasses.dataclass(frozen=True)
class MultiViewPatches:
    """The data distribution of appendix B.1 (module docstring), with ``k`` subclasses per class (k+ = k-)."""

    d: int
    P: int
    k: int
    s_star: int
    sigma_zeta: float  # per-coordinate noise sd; the per-patch noise norm is about sigma_zeta sqrt(d)
    gamma: float = 0.05
    s_f: int = 2
    iota: float = 0.05
    counts: str = "exact"

    def __post_init__(self):
        if self.counts not in COUNTS:
            raise ValueError(f"counts must be one of {COUNTS}, got {self.counts!r}")
        if self.n_features > self.d:
            raise ValueError(f"2 + 2k = {self.n_features} features need d >= {self.n_features}, got d={self.d}")
        if self.counts == "exact" and 2 * self.s_star > self.P:
            raise ValueError(f"exact counts need 2 s* <= P, got s*={self.s_star}, P={self.P}")

    # -- the dictionary -----------------------------------------------------------------------------------------
    @property
    def n_features(self) -> int:
        """2 common + 2k subclass features."""
        return 2 + 2 * self.k

    def common(self, y: int) -> int:
        """Index of v_y (class y in {0: "+", 1: "-"})."""
        return y

    def subclass(self, y: int, c: int) -> int:
        """Index of v_{y,c}."""
        return 2 + y * self.k + c

    def fine_label(self, y: int, c: int) -> int:
        """The fine label of subclass (y, c): 0..k-1 for "+", k..2k-1 for "-"."""
        return y * self.k + c

    @property
    def n_subclasses(self) -> int:
        return 2 * self.k

    def coarse_of_fine(self) -> torch.Tensor:
        """(2k,) the class of each fine label."""
        return torch.arange(2 * self.k) // self.k

    # -- sampling -----------------------------------------------------------------------------------------------
    def sample(self, n_per_subclass: int, generator: torch.Generator, *, replicas: int = 1, hard: bool = False,
               distract: float = 0.0, dtype=torch.float32, device=None):
        """A balanced batch: X (R, 2k n, P, d), coarse labels y (R, 2k n) in {0, 1}, fine labels (R, 2k n).

        Samples are ordered by fine label (n_per_subclass of each); every replica draws its own samples."""
        R, k, P, d = replicas, self.k, self.P, self.d
        fine = torch.arange(2 * k).repeat_interleave(n_per_subclass)  # (N,)
        N = fine.numel()
        y = fine // k
        c = fine % k
        # which patches carry the common / subclass feature: (R, N, P) booleans
        if self.counts == "exact":
            common = torch.zeros(R, N, P, dtype=torch.bool)
            common[..., : self.s_star] = True
            sub = torch.zeros(R, N, P, dtype=torch.bool)
            sub[..., self.s_star : 2 * self.s_star] = True
        else:
            q = self.s_star / P
            common = torch.rand(R, N, P, generator=generator) < q
            sub = (torch.rand(R, N, P, generator=generator) < q) & ~common
        if hard:
            common = torch.zeros_like(common)
        noise_patch = ~(common | sub)
        lo, hi = math.sqrt(1 - self.iota), math.sqrt(1 + self.iota)
        alpha = _uniform((R, N, P), lo, hi, generator, dtype)
        X = torch.zeros(R, N, P, d, dtype=dtype)
        common_idx = y.view(1, N, 1).expand(R, N, P)
        sub_idx = (2 + y * k + c).view(1, N, 1).expand(R, N, P)
        X.scatter_add_(-1, common_idx.unsqueeze(-1), (alpha * common).unsqueeze(-1))
        X.scatter_add_(-1, sub_idx.unsqueeze(-1), (alpha * sub).unsqueeze(-1))
        # feature noise: s_f words of the other class (its common feature or one of its k subclass features)
        other = (1 - y).view(1, N, 1, 1)
        pick = torch.randint(0, k + 1, (R, N, P, self.s_f), generator=generator)
        word = torch.where(pick == k, other, 2 + other * k + pick.clamp_max(k - 1))
        amp = _uniform((R, N, P, self.s_f), 0.0, self.gamma, generator, dtype)
        X.scatter_add_(-1, word, amp * noise_patch.unsqueeze(-1))
        if distract:
            X.scatter_add_(-1, other.expand(R, N, P, 1), distract * noise_patch.unsqueeze(-1).to(dtype))
        X += self.sigma_zeta * torch.randn(R, N, P, d, generator=generator, dtype=dtype)
        expand = (lambda t: t.unsqueeze(0).expand(R, N).contiguous().to(device))  # noqa: E731
        return X.to(dtype=dtype, device=device), expand(y), expand(fine)

    def patch_counts(self, X: torch.Tensor) -> dict[str, torch.Tensor]:
        """How many patches of each sample are dominated by each feature (coordinate > 1/2): (R, N, n_features).
        A check of the generator (the noise and feature-noise amplitudes stay far below 1/2)."""
        return (X[..., : self.n_features] > 0.5).sum(-2)


@dataclasses.dataclass(frozen=True)
class HierarchicalPatches:
    """A label tree for the synthetic analogue of the paper's hierarchy experiments (seed notes, section 4.8).

    ``branching = (K0, b1, b2, ...)``: K0 superclasses, each node of level l splitting into b_{l+1} children. Every
    node of every level has its own orthonormal feature (standard basis); ``n_nuisance`` further features carry no
    label information (the grass and furniture of the paper's Sec. 3.2). A sample is a uniform leaf and a uniform
    nuisance type; ``s_per_level[l]`` of its patches carry its level-l ancestor's feature (amplitude in
    [sqrt(1 - iota), sqrt(1 + iota)]), ``s_nuisance`` patches its nuisance feature at amplitude ``a_nuisance``, the
    other patches are feature noise (``s_f`` random node features at amplitude U[0, gamma]); Gaussian noise
    ``N(0, sigma_zeta^2 I_d)`` on every patch. A *hard* sample has no level-0 (superclass) patches."""

    branching: tuple[int, ...]
    P: int
    s_per_level: tuple[int, ...]
    sigma_zeta: float
    n_nuisance: int = 0
    s_nuisance: int = 0
    a_nuisance: float = 1.0
    gamma: float = 0.05
    s_f: int = 2
    iota: float = 0.05
    extra_dims: int = 8  # noise-only coordinates beyond the features

    def __post_init__(self):
        if len(self.s_per_level) != len(self.branching):
            raise ValueError("give one patch count per level of the tree")
        if sum(self.s_per_level) + self.s_nuisance > self.P:
            raise ValueError("more feature patches than patches")

    @property
    def level_sizes(self) -> tuple[int, ...]:
        """Number of nodes at each level: (K0, K0 b1, K0 b1 b2, ...)."""
        return tuple(math.prod(self.branching[: i + 1]) for i in range(len(self.branching)))

    @property
    def n_leaves(self) -> int:
        return self.level_sizes[-1]

    def node_feature(self, level: int, node: torch.Tensor) -> torch.Tensor:
        """Feature index of a node given by its index within its level."""
        return sum(self.level_sizes[:level]) + node

    @property
    def n_node_features(self) -> int:
        return sum(self.level_sizes)

    @property
    def d(self) -> int:
        return self.n_node_features + self.n_nuisance + self.extra_dims

    def ancestor(self, leaf: torch.Tensor, level: int) -> torch.Tensor:
        """The level-``level`` ancestor (index within its level) of leaves."""
        return leaf // (self.n_leaves // self.level_sizes[level])

    def sample(self, n: int, generator: torch.Generator, *, leaves: torch.Tensor | None = None, hard: bool = False,
               distract: float = 0.0, dtype=torch.float32):
        """n samples (uniform leaves unless ``leaves`` is given): X (n, P, d), leaf (n,), nuisance type (n,).
        ``distract`` adds ``rho`` times the feature of another (random) superclass to every feature-noise patch."""
        L, P, d = len(self.branching), self.P, self.d
        leaf = torch.randint(0, self.n_leaves, (n,), generator=generator) if leaves is None else leaves
        n = leaf.numel()
        nuisance = torch.randint(0, max(1, self.n_nuisance), (n,), generator=generator)
        X = torch.zeros(n, P, d, dtype=torch.float64)
        lo, hi = math.sqrt(1 - self.iota), math.sqrt(1 + self.iota)
        rows = torch.arange(n)
        start = 0
        for level in range(L):
            s = self.s_per_level[level]
            if s and not (hard and level == 0):
                feat = self.node_feature(level, self.ancestor(leaf, level))
                for p in range(start, start + s):
                    X[rows, p, feat] = _uniform((n,), lo, hi, generator, torch.float64)
            start += s
        if self.n_nuisance and self.s_nuisance:
            feat = self.n_node_features + nuisance
            for p in range(start, start + self.s_nuisance):
                X[rows, p, feat] = self.a_nuisance
            start += self.s_nuisance
        is_noise = torch.zeros(P, dtype=torch.bool)
        is_noise[start:] = True
        if hard:
            is_noise[: self.s_per_level[0]] = True
        words = torch.randint(0, self.n_node_features, (n, P, self.s_f), generator=generator)
        amp = _uniform((n, P, self.s_f), 0.0, self.gamma, generator, torch.float64) * is_noise.view(1, P, 1)
        X.scatter_add_(-1, words, amp)
        if distract:
            K0 = self.branching[0]
            other = (self.ancestor(leaf, 0) + torch.randint(1, K0, (n,), generator=generator)) % K0
            idx = other.view(n, 1, 1).expand(n, P, 1)
            X.scatter_add_(-1, idx, distract * is_noise.view(1, P, 1).double().expand(n, P, 1))
        X += self.sigma_zeta * torch.randn(n, P, d, generator=generator, dtype=torch.float64)
        return X.to(dtype), leaf, nuisance


# ---- label functions over a label tree (the pretraining label spaces of the paper's Sec. 4) -------------------------
def labels_at_level(tree: HierarchicalPatches, leaf: torch.Tensor, level: int) -> torch.Tensor:
    """The manual hierarchy: each sample's level-``level`` ancestor (level 0: the superclasses)."""
    return tree.ancestor(leaf, level)


def oversplit_labels(leaf: torch.Tensor, parts: int, generator: torch.Generator) -> torch.Tensor:
    """Each leaf split uniformly at random into ``parts`` sub-labels: leaf * parts + U{0..parts-1}. With parts =
    the number of samples per leaf this approaches one label per image (the paper's G = 500,000 point)."""
    return leaf * parts + torch.randint(0, parts, leaf.shape, generator=generator)


def random_sublabels(superclass: torch.Tensor, parts: int, generator: torch.Generator) -> torch.Tensor:
    """Random class IDs within each superclass (the paper's "random class ID", G = 11 x {2, ..., 1024})."""
    return superclass * parts + torch.randint(0, parts, superclass.shape, generator=generator)


def kmeans_labels(embedding: torch.Tensor, clusters: int, seed: int,
                  groups: torch.Tensor | None = None) -> torch.Tensor:
    """k-means cluster IDs of an embedding (scikit-learn, 10 restarts): on the whole data set, or within each group
    (the paper's per-superclass clustering, fine ID = group * clusters + cluster)."""
    from sklearn.cluster import KMeans

    emb = embedding.double().numpy()
    if groups is None:
        return torch.as_tensor(KMeans(clusters, n_init=10, random_state=seed).fit_predict(emb), dtype=torch.long)
    out = torch.empty(len(emb), dtype=torch.long)
    for g in torch.unique(groups).tolist():
        idx = (groups == g).nonzero().squeeze(-1)
        fit = KMeans(clusters, n_init=10, random_state=seed + g).fit_predict(emb[idx.numpy()])
        out[idx] = g * clusters + torch.as_tensor(fit, dtype=torch.long)
    return out


def bag_of_patches(X: torch.Tensor, noise: float, generator: torch.Generator) -> torch.Tensor:
    """A stand-in for an image embedding: the mean patch plus N(0, noise^2) per coordinate (a bag of features in
    which frequent nuisance patches can dominate)."""
    return X.mean(-2) + noise * torch.randn(X.shape[:-2] + X.shape[-1:], generator=generator, dtype=X.dtype)

"""Comparing and reading linear representations.

* :func:`linear_cka`: linear centred kernel alignment of two feature matrices (Kornblith et al., ICML 2019), the
  similarity of dissertation ch. 7's Fig. 7.5 (Shi et al., ICLR 2023, Sec. 7.3.2);
* :func:`feature_weights`: the squared weight a_j^2 = ||W M e_j||^2 that a linear representation W puts on each
  hidden coordinate z_j of data x = M z (the diagonal of (WM)^T WM; ch. 7's Lemma F.3 makes WM = Q diag(a)).
"""

from __future__ import annotations

import torch


def linear_cka(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """||Y_c^T X_c||_F^2 / (||X_c^T X_c||_F ||Y_c^T Y_c||_F) with X_c, Y_c the column-centred features
    (..., n, k1) and (..., n, k2) of the same n inputs. Invariant to rotations and isotropic scalings of either."""
    Xc = X - X.mean(-2, keepdim=True)
    Yc = Y - Y.mean(-2, keepdim=True)

    def fro_sq(A):
        return A.pow(2).sum((-1, -2))

    cross = fro_sq(Yc.transpose(-1, -2) @ Xc)
    return cross / (fro_sq(Xc.transpose(-1, -2) @ Xc).sqrt() * fro_sq(Yc.transpose(-1, -2) @ Yc).sqrt())


def feature_weights(W: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """Squared weights (..., d) of W (..., k, d) on the hidden coordinates of x = M z: diag((WM)^T WM)."""
    return (W @ M).pow(2).sum(-2)

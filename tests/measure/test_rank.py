"""measure.rank: nuclear norm and stable rank against their definitions; the gradient is U V^T."""

import torch

from feature_learning.measure.rank import nuclear_norm, stable_rank


def test_diagonal_matrices():
    m = torch.diag(torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64))
    assert float(nuclear_norm(m)) == 6.0
    assert abs(float(stable_rank(m)) - 14 / 9) < 1e-12
    assert abs(float(stable_rank(5 * m)) - 14 / 9) < 1e-12  # scale-invariant (the printed ||M||_F^2/||M||_2 is not)
    assert float(stable_rank(torch.zeros(3, 2))) == 0.0


def test_nuclear_norm_is_at_most_rank_in_the_unit_spectral_ball_and_batched():
    g = torch.Generator().manual_seed(0)
    m = torch.randn(5, 7, 4, generator=g, dtype=torch.float64)
    m = m / torch.linalg.matrix_norm(m, ord=2)[:, None, None]
    assert (nuclear_norm(m) <= 4 + 1e-12).all()
    assert torch.allclose(nuclear_norm(m), torch.linalg.matrix_norm(m, ord="nuc"))
    assert ((stable_rank(m) >= 1 - 1e-12) & (stable_rank(m) <= 4 + 1e-12)).all()


def test_gradient_is_u_v_transpose():
    m = torch.randn(6, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64, requires_grad=True)
    nuclear_norm(m).backward()
    u, _, vh = torch.linalg.svd(m.detach(), full_matrices=False)
    assert torch.allclose(m.grad, u @ vh, atol=1e-10)

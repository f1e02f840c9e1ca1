"""data.domain_shift: the samplers have the laws the chapter states."""

import pytest
import torch

from feature_learning.data import domain_shift as ds


def test_sign_mixture_sign_probability_and_range():
    x = ds.sign_mixture_uniform(-0.2, (200_000,), torch.Generator().manual_seed(0))
    assert x.abs().max() <= 1
    assert abs(float((x > 0).double().mean()) - 0.3) < 5e-3
    with pytest.raises(ValueError):
        ds.sign_mixture_uniform(0.7, (3,), torch.Generator())


def test_reweighting_sums_equal_the_sums_of_the_features_drawn_in_chunks():
    s_r, s_u = ds.reweighting_sums(50, 3, 7, 0.4, torch.Generator().manual_seed(5), chunk=20)
    g = torch.Generator().manual_seed(5)
    z = torch.cat([ds.reweighting_features(n, 3, 7, 0.4, g) for n in (20, 20, 10)])
    assert torch.equal(s_r, z[:, :3].sum(1)) and torch.equal(s_u, z[:, 3:].sum(1))
    assert (z[:, :3] >= 0).all()


def test_spurious_2d_cells():
    x, y = ds.spurious_2d(100_000, 0.7, torch.Generator().manual_seed(1))
    assert ((x[:, 0] * y) >= 0).all()
    assert abs(float(((x[:, 1] * y) > 0).double().mean()) - 0.7) < 6e-3
    assert abs(float((y > 0).double().mean()) - 0.5) < 6e-3


def test_class_code_domains_invariant_block_is_domain_free_and_mixer_orthogonal():
    task = ds.ClassCodeDomains.draw(5, 4, 6, torch.Generator().manual_seed(2), bend=0.0)
    assert torch.allclose(task.mixer @ task.mixer.T, torch.eye(10, dtype=torch.float64), atol=1e-12)
    for gamma, agree in ((0.45, 0.95), (-0.45, 0.05)):
        x, labels = task.sample(20_000, gamma, torch.Generator().manual_seed(3))
        z = x @ task.mixer  # bend 0: x = M z
        assert ((z[:, :4] * task.code_r[labels]) >= -1e-12).all()
        assert abs(float(((z[:, 4:] * task.code_u[labels]) > 0).double().mean()) - agree) < 6e-3


def test_with_environment_block_appends_class_coded_columns():
    x = torch.zeros(4, 2, dtype=torch.float64)
    labels = torch.tensor([0, 1, 1, 0])
    code = torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], dtype=torch.float64)
    out = ds.with_environment_block(x, labels, code, 0.5, torch.Generator().manual_seed(0))
    assert out.shape == (4, 5)
    assert ((out[:, 2:] * code[labels]) >= 0).all()  # gamma = 1/2: every sign agrees

"""The linear multi-task model of dissertation ch. 7: supports, augmentation, labels, closed-form representations."""

import torch

from feature_learning.data.multitask_linear import MultiTaskLinear
from feature_learning.measure.representations import feature_weights


def model():
    return MultiTaskLinear.draw(2, 4, 3, 3, torch.Generator().manual_seed(0))


def test_sizes_and_orthonormal_dictionary():
    m = model()
    assert (m.k, m.d) == (2 + 3 * 2, 11)
    assert torch.allclose(m.M.T @ m.M, torch.eye(m.d, dtype=torch.float64), atol=1e-12)
    assert m.private(2).tolist() == [6, 7] and m.spurious().tolist() == [8, 9, 10]


def test_samples_live_on_the_task_support_with_unit_variance():
    m = model()
    gen = torch.Generator().manual_seed(1)
    tasks = torch.full((2, 40000), 1)
    z = m.sample_z(tasks, gen)
    assert z.shape == (2, 40000, m.d)
    var = z.pow(2).mean((0, 1))
    on = torch.zeros(m.d, dtype=torch.bool)
    on[m.invariant(1)] = True
    on[m.spurious()] = True
    assert torch.all(var[~on] == 0)
    assert torch.allclose(var[on], torch.ones(int(on.sum()), dtype=torch.float64), atol=0.03)


def test_augmentation_keeps_invariant_and_redraws_spurious():
    m = model()
    gen = torch.Generator().manual_seed(2)
    z = m.sample_z(m.mixture_tasks(m.first_tasks(3), 500, gen), gen)
    zp = m.augment(z, gen)
    assert torch.equal(zp[..., : m.k], z[..., : m.k])
    corr = (zp[..., m.k:] * z[..., m.k:]).mean()
    assert abs(float(corr)) < 0.15 and not torch.equal(zp[..., m.k:], z[..., m.k:])


def test_labels_and_label_directions():
    m = model()
    gen = torch.Generator().manual_seed(3)
    u = m.label_directions(gen, (5,))
    assert torch.allclose(u[..., :2].norm(dim=-1) ** 2, torch.full((5, 3), 0.5, dtype=torch.float64))
    assert torch.allclose(u.norm(dim=-1), torch.ones(5, 3, dtype=torch.float64))
    z = m.sample_z(torch.zeros(5, 7, dtype=torch.long), gen)
    y = m.labels(z, u, 0)
    manual = torch.stack([z[b][:, [0, 1, 2, 3]] @ u[b, 0] for b in range(5)])
    assert torch.allclose(y, manual)


def test_closed_form_representation_has_the_asked_weights():
    m = model()
    w = m.block_weights(2, 1.0, 0.5)
    W = m.representation(w)
    fw = feature_weights(W, m.M)
    assert torch.allclose(fw[: m.k], w, atol=1e-12) and torch.allclose(fw[m.k:], torch.zeros(m.u, dtype=torch.float64))
    x = m.inputs(m.sample_z(torch.zeros(4, dtype=torch.long), torch.Generator().manual_seed(4)))
    assert torch.allclose(x @ m.M, m.sample_z(torch.zeros(4, dtype=torch.long), torch.Generator().manual_seed(4)))


def test_mixture_tasks_are_uniform_on_the_included_tasks():
    m = model()
    inc = torch.stack([m.first_tasks(1), m.first_tasks(3), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)])
    t = m.mixture_tasks(inc, 30000, torch.Generator().manual_seed(5))
    assert t.shape == (3, 30000)
    assert torch.all(t[0] == 0) and torch.all(t[2] == 1)
    freq = torch.bincount(t[1], minlength=3).double() / 30000
    assert torch.allclose(freq, torch.full((3,), 1 / 3, dtype=torch.float64), atol=0.015)


def test_shared_noise_differs_only_in_the_task_mask():
    m = model()
    tasks = torch.stack([torch.zeros(50, dtype=torch.long), torch.full((50,), 2)])[None]  # (1, 2, 50)
    z = m.sample_z(tasks, torch.Generator().manual_seed(6), (1, 1, 50))
    assert torch.equal(z[0, 0, :, :2], z[0, 1, :, :2]) and torch.equal(z[0, 0, :, m.k:], z[0, 1, :, m.k:])
    zp = m.augment(z, torch.Generator().manual_seed(7), (1, 1, 50))
    assert torch.equal(zp[0, 0, :, m.k:], zp[0, 1, :, m.k:]) and torch.equal(zp[..., : m.k], z[..., : m.k])

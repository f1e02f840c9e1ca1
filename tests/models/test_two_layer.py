"""models/two_layer.py: the one two-layer network, its initialisations (same draws as the functions they replace),
its analytic gradients (against autograd) and its NTK model (against the network's directional derivative)."""

import dataclasses
import math

import pytest
import torch

from feature_learning.models.two_layer import (
    TwoLayerNet,
    cat_replicas,
    init_aligned,
    init_balanced,
    init_fixed_output,
    init_lecun,
    init_symmetric_gaussian,
    init_torch_default,
    logistic_loss_and_grads,
    normalized_margin,
    ntk_forward,
    pad_width,
    smoothed_trunc_relu,
    smoothed_trunc_relu_grad,
    trunc_relu,
    zeros_like,
)

D = torch.float64


# -- the former models/two_layer.py (commit a433a57), verbatim: the new module replaced it at the same path ---------
def _old_fixed_output(replicas, width, d0, *, d_ambient, generator, dtype=torch.float32, d_out=None):
    W = torch.randn(replicas, width, d0, generator=generator, dtype=dtype) / math.sqrt(d_ambient)
    shape = (replicas, width) if d_out is None else (replicas, width, d_out)
    a = (torch.randint(0, 2, shape, generator=generator).to(dtype) * 2 - 1) / width
    return W, a


def _old_default(replicas, d_in, width, d_out, *, generator, dtype=torch.float32):
    def uniform(shape, fan_in):
        bound = 1.0 / math.sqrt(fan_in)
        return (torch.rand(*shape, generator=generator, dtype=dtype) * 2 - 1) * bound

    out_shape = () if d_out is None else (d_out,)
    return (uniform((replicas, width, d_in), d_in), uniform((replicas, width), d_in),
            uniform((replicas, width, *out_shape), width), uniform((replicas, *out_shape), width))


def _old_forward(W, b, a, c, x, activation):
    if x.dim() == 2:
        x = x.unsqueeze(0).expand(W.shape[0], -1, -1)
    hidden = activation(torch.bmm(x, W.transpose(1, 2)) + b.unsqueeze(1))
    if a.dim() == 2:
        return torch.bmm(hidden, a.unsqueeze(-1)).squeeze(-1) + c.unsqueeze(-1)
    return torch.bmm(hidden, a) + c.unsqueeze(1)


# -- initialisations: the same numbers as the functions they replace -------------------------------------------------
@pytest.mark.parametrize("d_out", [None, 3])
def test_fixed_output_and_torch_default_reproduce_the_former_two_layer_module(gen, d_out):
    for dtype in (torch.float32, D):
        net = init_fixed_output(2, 6, 9, d_ambient=24, d_out=d_out, generator=gen(1), dtype=dtype)
        W, a = _old_fixed_output(2, 9, 6, d_ambient=24, d_out=d_out, generator=gen(1), dtype=dtype)
        assert torch.equal(net.W, W) and torch.equal(net.a, a)
        assert net.trained == ("W",) and net.parameters() == [net.W] and not net.a.requires_grad

        net = init_torch_default(2, 6, 9, d_out=d_out, activation="tanh", generator=gen(2), dtype=dtype)
        old = _old_default(2, 6, 9, d_out, generator=gen(2), dtype=dtype)
        for new, ref in zip((net.W, net.b, net.a, net.c), old, strict=True):
            assert torch.equal(new, ref)
        x = torch.randn(11, 6, generator=gen(3), dtype=dtype)
        assert torch.equal(net(x), _old_forward(*old, x, torch.tanh))
        assert len(net.parameters()) == 4 and all(t.requires_grad for t in net.parameters())


def test_torch_default_without_bias_is_uniform_in_the_fan_in_bounds(gen):
    scale = 2.0**-7
    net = init_torch_default(3, 2, 5, scale=scale, bias=False, generator=gen(4), dtype=D)
    assert net.b is None and net.c is None and net.trained == ("W", "b", "a", "c")
    assert net.parameters() == [net.W, net.a]
    # W ~ U(+-s/sqrt(d)), then a ~ U(+-s/sqrt(m)), from one stream of uniforms in that order
    U = torch.rand(3 * 5 * 2 + 3 * 5, generator=gen(4), dtype=D)
    assert torch.allclose(net.W.flatten(), (2 * U[:30] - 1) * scale / math.sqrt(2), rtol=1e-15, atol=0)
    assert torch.allclose(net.a.flatten(), (2 * U[30:] - 1) * scale / math.sqrt(5), rtol=1e-15, atol=0)
    big = init_torch_default(1, 4, 20000, scale=3.0, bias=False, generator=gen(5), dtype=D)
    bound = 3.0 / 2.0  # s / sqrt(d_in)
    W = big.W.detach()
    assert W.abs().max() <= bound and abs(float(W.var()) - bound**2 / 3) < 0.02 * bound**2 / 3


def test_symmetric_gaussian_draws_w_b_a_in_order_and_outputs_zero(gen):
    kw = dict(sigma_w=0.5, sigma_b=0.1, sigma_a=1.0)
    for dtype in (D, torch.float32):
        net = init_symmetric_gaussian(2, 8, 12, generator=gen(5), dtype=dtype, **kw)
        g = gen(5)  # W, b, a of the 6 base units, in float64, then the mirrored copies (w, b, -a)
        W, b, a = (s * torch.randn(*shape, generator=g, dtype=D) for s, shape in
                   ((0.5, (2, 6, 8)), (0.1, (2, 6)), (1.0, (2, 6))))
        assert torch.equal(net.W, torch.cat([W, W], 1).to(dtype)) and torch.equal(net.b, torch.cat([b, b], 1).to(dtype))
        assert torch.equal(net.a, torch.cat([a, -a], 1).to(dtype))
        assert net.W.dtype == dtype and net.trained == ("W", "b", "a") and len(net.parameters()) == 3
    net = dataclasses.replace(net.to(dtype=D), noise_std=0.1)
    x = torch.randn(40, 8, generator=gen(6), dtype=D)
    assert net(x).abs().max() < 1e-15
    pre = x @ net.W.transpose(1, 2) + net.b[:, None, :]
    assert torch.equal(net.features(x), smoothed_trunc_relu(pre, 0.1))
    with pytest.raises(ValueError):
        init_symmetric_gaussian(1, 3, 7, generator=gen(), **kw)  # odd width


def test_dissertation_symmetric_init_3_9_and_lemma_b71(gen):
    """(3.9): blocks (w, b, a), (-w, -b, -a), (w, b, -a), (-w, -b, a) with fixed biases. Lemma B.71: the output is
    0; after a step of weight decay 1/eta (which erases the init), w_i = -w_{i+2m}; and w_i = w_{i+m} when
    E[y x] = 0 (data closed under x -> -x with the same label)."""
    m, d = 3, 5
    net = init_symmetric_gaussian(2, d, 4 * m, sigma_w=1.0, sigma_a=0.3, bias=-0.2, blocks=4,
                                  activation="relu", trained=("W", "a"), generator=gen(7))
    assert net.parameters() == [net.W, net.a] and not net.b.requires_grad
    assert torch.equal(net.b[:, :m], torch.full((2, m), -0.2, dtype=D))
    assert torch.equal(net.b[:, m:2 * m], -net.b[:, :m])
    half = torch.randn(30, d, generator=gen(8), dtype=D)
    x = torch.cat([half, -half])
    y = torch.sign(torch.randn(30, generator=gen(9), dtype=D)).repeat(2)
    assert (y[:, None] * x).sum(0).abs().max() < 1e-12  # E[y x] = 0
    out = net(x)
    assert out.abs().max() < 1e-15
    (gW,) = torch.autograd.grad(torch.clamp(1 - y * out, min=0).mean(-1).sum(), net.W)
    w1 = -gW  # w^(1) = -eta grad (eta = 1) once lambda = 1/eta has erased w^(0)
    assert torch.allclose(w1[:, : 2 * m], -w1[:, 2 * m:], atol=1e-15)
    assert torch.allclose(w1[:, :m], w1[:, m: 2 * m], atol=1e-14)
    assert w1[:, :m].abs().max() > 1e-3  # not trivially zero


def test_balanced_aligned_and_lecun_reproduce_their_sources(gen):
    net = init_balanced(3, 2, 7, scale=0.25, generator=gen(10))
    assert torch.allclose(net.W.norm(dim=-1), torch.full((3, 7), 0.25, dtype=D), atol=1e-15)
    assert torch.equal(net.a.abs(), torch.full((3, 7), 0.25, dtype=D)) and net.trained == ("W", "a")
    many = init_balanced(1, 3, 40000, scale=1.0, generator=gen(9))  # isotropic directions, fair signs
    assert many.W.mean(1).abs().max() < 0.02 and abs(float((many.a > 0).double().mean()) - 0.5) < 0.01

    a0 = torch.tensor([[0.5, -0.25, 1.0]], dtype=D)
    dirs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=D)
    net = init_aligned(1, 2, 3, a0=a0, directions=dirs)
    assert torch.equal(net.a, a0) and torch.allclose(net.W[0], a0[0].abs()[:, None] * dirs, atol=0)

    net = init_lecun(2, 6, 5, d_out=4, generator=gen(11))
    g = gen(11)  # W ~ N(0, 1/d), then the read-out V (R, classes, m) ~ N(0, 1/m); zero biases
    W = torch.randn(2, 5, 6, generator=g, dtype=D) / math.sqrt(6)
    V = torch.randn(2, 4, 5, generator=g, dtype=D) / math.sqrt(5)
    assert torch.equal(net.W, W) and torch.equal(net.a, V.transpose(1, 2))
    assert not net.b.any() and not net.c.any()
    x = torch.randn(9, 6, generator=gen(12), dtype=D)
    assert torch.allclose(net(x), ((x @ W.transpose(1, 2)) ** 2) @ V.transpose(1, 2), rtol=1e-13, atol=1e-14)
    assert len(net.parameters()) == 4 and net.a.is_leaf and net.a.requires_grad


# -- the network ------------------------------------------------------------------------------------------------------
def test_forward_is_the_sum_over_units(gen):
    p = init_symmetric_gaussian(2, 6, 8, sigma_w=0.7, sigma_b=0.2, sigma_a=1.0, generator=gen(13))
    net = TwoLayerNet(W=p.W, a=p.a + 0.1, b=p.b, activation="trunc_relu", noise_std=0.05)  # a non-zero output
    x = torch.randn(2, 20, 6, generator=gen(14), dtype=D)
    # g(x) = sum_i a_i E_xi sigma(<w_i, x> + b_i + xi) (Shi et al., eq. (3)), written out unit by unit
    pre = torch.einsum("rnd,rid->rni", x, p.W) + p.b[:, None, :]
    by_units = sum(net.a[:, i, None] * smoothed_trunc_relu(pre[..., i], 0.05) for i in range(8))
    assert torch.allclose(net(x), by_units, rtol=1e-13, atol=1e-15)
    net = init_torch_default(2, 3, 5, bias=False, generator=gen(15), dtype=D)
    X = torch.randn(10, 3, generator=gen(16), dtype=D)
    manual = torch.stack([torch.stack([sum(net.a[r, j] * torch.relu(net.W[r, j] @ x) for j in range(5)) for x in X])
                          for r in range(2)])
    assert torch.allclose(net(X), manual, rtol=1e-13, atol=1e-15)


def test_smoothed_truncated_relu_is_the_noise_average_and_its_derivative(gen):
    z = torch.linspace(-0.5, 1.5, 41, dtype=D)
    xi = 0.2 * torch.randn(400_000, 1, generator=gen(17), dtype=D)
    assert torch.allclose(smoothed_trunc_relu(z, 0.2), trunc_relu(z[None, :] + xi).mean(0), atol=3e-3)
    zz = z.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(smoothed_trunc_relu(zz, 0.2).sum(), zz)
    assert torch.allclose(grad, smoothed_trunc_relu_grad(z, 0.2), atol=1e-12)
    assert torch.equal(smoothed_trunc_relu_grad(z, 0.0), ((z > 0) & (z < 1)).to(D))


def test_validation_and_parameter_groups():
    W, a = torch.zeros(2, 3, 4), torch.zeros(2, 3)
    with pytest.raises(ValueError):
        TwoLayerNet(W=W, a=a, activation="swish")
    with pytest.raises(ValueError):
        TwoLayerNet(W=W, a=torch.zeros(2, 4))
    with pytest.raises(ValueError):
        TwoLayerNet(W=W, a=a, noise_std=0.1)  # smoothing is for the truncated ReLU
    with pytest.raises(ValueError):
        TwoLayerNet(W=W, a=a, trained=("V",))
    net = TwoLayerNet(W=W, a=a, b=torch.zeros(2, 3), trained=("W", "a", "b"))
    assert list(net.named_parameters()) == ["W", "b", "a"]
    groups = net.param_groups(lr={"W": 0.1, "a": 0.0}, weight_decay={"W": 0.02})
    assert [g["name"] for g in groups] == ["W", "b", "a"]
    assert groups[0] == {"name": "W", "params": [net.W], "lr": 0.1, "weight_decay": 0.02}
    assert "lr" not in groups[1] and groups[2]["lr"] == 0.0
    with pytest.raises(ValueError):
        net.param_groups(lr={"c": 1.0})
    copy = net.detached()
    assert copy.W is not net.W and copy.W.requires_grad and copy.trained == net.trained
    assert torch.equal(zeros_like(net).W, torch.zeros_like(W))


def test_square_activation_and_replicated_inputs(gen):
    net = init_lecun(2, 3, 4, d_out=2, generator=gen(18))
    x = torch.randn(2, 5, 3, generator=gen(19), dtype=D)
    pre = torch.einsum("rnd,rmd->rnm", x, net.W) + net.b[:, None, :]
    ref = torch.einsum("rnm,rmc->rnc", pre**2, net.a) + net.c[:, None, :]
    assert torch.allclose(net(x), ref, atol=1e-14)


# -- functions of the network ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("with_bias", [False, True])
def test_logistic_gradients_match_autograd(gen, with_bias):
    if with_bias:
        net = init_torch_default(3, 4, 6, generator=gen(20), dtype=D)
    else:
        net = init_torch_default(3, 4, 6, bias=False, generator=gen(20), dtype=D)
    X = torch.randn(25, 4, generator=gen(21), dtype=D)
    y = torch.sign(torch.randn(25, generator=gen(22), dtype=D))
    loss = torch.nn.functional.softplus(-y * net(X)).mean(-1)
    names = list(net.named_parameters())
    auto = torch.autograd.grad(loss.sum(), net.parameters())
    ours, grads = logistic_loss_and_grads(net.detached(), X, y)
    assert list(grads) == names
    assert torch.allclose(ours, loss.detach(), atol=1e-14)
    for name, g in zip(names, auto, strict=True):
        assert torch.allclose(grads[name], g, atol=1e-14), name


def test_logistic_gradients_need_a_relu_network_with_a_scalar_output(gen):
    net = init_torch_default(2, 2, 7, bias=False, activation="tanh", generator=gen(23), dtype=D)
    X = torch.randn(30, 2, generator=gen(24), dtype=D)
    y = torch.sign(torch.randn(30, generator=gen(25), dtype=D))
    with pytest.raises(ValueError):
        logistic_loss_and_grads(net, X, y)


def test_ntk_model_is_the_linearisation_of_the_network(gen):
    p = init_symmetric_gaussian(1, 6, 10, sigma_w=0.3, sigma_b=0.05, sigma_a=1.0, generator=gen(26))
    init = TwoLayerNet(W=p.W.detach(), a=p.a.detach(), b=p.b.detach(), activation="trunc_relu")
    delta = TwoLayerNet(*(1e-6 * torch.randn(t.shape, generator=gen(27), dtype=D) for t in (p.W, p.a)),
                        activation="trunc_relu", b=1e-6 * torch.randn(p.b.shape, generator=gen(28), dtype=D))
    x = torch.randn(20, 6, generator=gen(29), dtype=D)
    moved = TwoLayerNet(W=init.W + delta.W, a=init.a + delta.a, b=init.b + delta.b, activation="trunc_relu")
    assert not ntk_forward(init, zeros_like(init), x).any()
    assert torch.allclose(moved(x) - init(x), ntk_forward(init, delta, x), atol=1e-10)
    # a smooth activation: the NTK model is the directional derivative (finite differences at two step sizes)
    net = init_torch_default(2, 3, 4, activation="tanh", generator=gen(30), dtype=D)
    direction = dataclasses.replace(net, **{k: torch.randn(getattr(net, k).shape, generator=gen(31), dtype=D)
                                            for k in ("W", "b", "a", "c")})
    x = torch.randn(7, 3, generator=gen(32), dtype=D)
    with torch.no_grad():
        def moved_by(eps):
            return dataclasses.replace(net, **{k: getattr(net, k) + eps * getattr(direction, k)
                                               for k in ("W", "b", "a", "c")})(x)

        fd = (moved_by(1e-5) - moved_by(-1e-5)) / 2e-5
        assert torch.allclose(ntk_forward(net, direction, x), fd, atol=1e-8)


def test_normalized_margin_is_the_formula_and_scale_invariant(gen):
    net = init_balanced(2, 2, 4, scale=0.5, generator=gen(33))
    X = torch.randn(12, 2, generator=gen(34), dtype=D)
    y = torch.sign(torch.randn(12, generator=gen(35), dtype=D))
    f = (torch.relu(X @ net.W.detach().transpose(1, 2)) * net.a.detach()[:, None, :]).sum(-1)  # (R, n)
    ref = (f * y).min(-1).values / (net.a.detach().pow(2).sum(-1) + net.W.detach().pow(2).sum((-1, -2)))
    assert torch.allclose(normalized_margin(net, X, y), ref, rtol=1e-13, atol=0)
    # homogeneity: scaling every weight by s scales h by s^2 and ||theta||^2 by s^2
    scaled = TwoLayerNet(W=3 * net.W.detach(), a=3 * net.a.detach())
    assert torch.allclose(normalized_margin(scaled, X, y), ref, rtol=1e-13, atol=0)


def test_pad_width_and_cat_replicas(gen):
    net = init_torch_default(2, 3, 4, bias=True, generator=gen(36), dtype=D)
    wide = pad_width(net, 7)
    X = torch.randn(9, 3, generator=gen(37), dtype=D)
    assert wide.width == 7 and torch.equal(wide.W[:, 4:], torch.zeros(2, 3, 3, dtype=D))
    assert torch.allclose(wide(X), net(X), atol=1e-15) and wide.W.requires_grad and torch.equal(wide.c, net.c)
    with pytest.raises(ValueError):
        pad_width(net, 3)
    both = cat_replicas([net, pad_width(net, 4)])
    assert both.replicas == 4 and torch.equal(both.W[2:], net.W.detach()) and both.trained == net.trained


# -- dissertation ch. 3: the four-block symmetric initialisation (3.9) ----------------------------------------------
def test_four_blocks_output_zero_and_structure(gen):
    from feature_learning.models.two_layer import init_symmetric_damian, init_symmetric_sign, symmetric_four_blocks

    net = init_symmetric_gaussian(3, 5, 8, sigma_w=1.0, sigma_a=1.0, bias=-0.7, blocks=4, activation="relu",
                                  trained=("W", "a"), generator=gen(1))
    x = torch.randn(50, 5, generator=gen(2), dtype=D)
    assert net(x).abs().max() < 1e-14
    W, b, a = symmetric_four_blocks(net.W[:, :2], net.b[:, :2], net.a[:, :2])
    assert torch.equal(W, net.W) and torch.equal(b, net.b) and torch.equal(a, net.a)
    sign = init_symmetric_sign(2, 7, 12, bias_levels=3, generator=gen(3))
    assert set(sign.W.unique().tolist()) == {-1.0, 1.0} and set(sign.a.abs().unique().tolist()) == {1.0}
    levels = {round(v * 3) for v in (-sign.b[:, :3]).flatten().tolist()}
    assert levels <= {-2, -1, 0, 1, 2}
    assert sign(x[:, :5].repeat(1, 2)[:, :7]).abs().max() < 1e-14
    dam = init_symmetric_damian(2, 400, 4000, generator=gen(4))
    assert (dam.b == 0).all() and abs(float(dam.W.detach().pow(2).sum(-1).mean()) - 1) < 0.02


def test_fixed_output_init_is_eq_2_of_zhang_et_al(gen):
    """w_k ~ N(0, I/d) (in the feature coordinates), a_k uniform on {-1/m, +1/m} and fixed: only W is trained."""
    net = init_fixed_output(4, 30, 500, d_ambient=120, generator=gen(9))
    assert net.W.shape == (4, 500, 30) and torch.all(net.a.abs() == 1 / 500)
    assert abs(net.W.var().item() - 1 / 120) < 5 * (2 / 60000) ** 0.5 / 120  # five standard errors of the variance
    assert abs((net.a > 0).float().mean().item() - 0.5) < 5 * (0.25 / 2000) ** 0.5
    assert net.parameters() == [net.W] and not net.a.requires_grad

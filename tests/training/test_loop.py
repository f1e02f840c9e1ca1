"""training/loop.py: the one loop reproduces the hand-written trainers it replaces (bit for bit with "gd"), trains
replicas independently, freezes a group with lr 0, and logs where it is asked to."""

import dataclasses
import io

import pytest
import torch

from feature_learning.models.two_layer import (
    TwoLayerNet,
    init_symmetric_gaussian,
    init_torch_default,
    logistic_loss_and_grads,
)
from feature_learning.training import loop
from feature_learning.training.loop import (
    OptimConfig,
    batches_with_replacement,
    fresh_batches,
    minibatches,
    progress_wanted,
    train,
)
from feature_learning.training.losses import hinge, logistic

D = torch.float64


def _sparse_problem(gen, R=2, n=40, d=6, seed=0):
    x = torch.randn(R, n, d, generator=gen(seed), dtype=D)
    y = torch.sign(x[..., 0] + 0.3 * x[..., 1])
    return x, y


def test_gd_with_groups_is_a_hand_written_loop_bit_for_bit(gen):
    """(a) per-group step sizes, weight decay 2 lambda on W and a (none on b): w <- (1 - 2 eta lambda) w - eta g,
    against the loop written out (mini-batches drawn with replacement by the same generator)."""
    x, y = _sparse_problem(gen)
    start = init_symmetric_gaussian(2, 6, 10, sigma_w=0.5, sigma_b=0.1, sigma_a=0.5, generator=gen(1), dtype=D)
    eta_w, eta_b, eta_a, lam, steps = 0.2, 0.05, 0.7, 0.03, 9

    hand = start.detached()
    draw = gen(2)
    for _ in range(steps):
        idx = torch.randint(0, 40, (8,), generator=draw)
        gW, gb, ga = torch.autograd.grad(hinge(hand(x[:, idx]), y[:, idx]).mean(-1).sum(), [hand.W, hand.b, hand.a])
        with torch.no_grad():
            hand = dataclasses.replace(hand, W=(1.0 - eta_w * 2 * lam) * hand.W - eta_w * gW, b=hand.b - eta_b * gb,
                                       a=(1.0 - eta_a * 2 * lam) * hand.a - eta_a * ga).detached()

    net = start.detached()
    batch = batches_with_replacement(40, 8, gen(2))

    def loss_fn(step):
        idx = batch(step)
        return hinge(net(x[:, idx]), y[:, idx]).mean(-1).sum()

    groups = net.param_groups(lr={"W": eta_w, "b": eta_b, "a": eta_a}, weight_decay={"W": 2 * lam, "a": 2 * lam})
    train(groups, loss_fn, OptimConfig(steps, 1.0, optimizer="gd"))
    assert torch.equal(net.W, hand.W) and torch.equal(net.b, hand.b) and torch.equal(net.a, hand.a)


def test_sgd_weight_decay_is_the_penalty_lambda_norm_squared(gen):
    """torch's SGD with weight decay 2 lambda makes the same step as gd, up to rounding (it fuses the products)."""
    x, y = _sparse_problem(gen, seed=3)
    start = init_torch_default(2, 6, 5, generator=gen(4), dtype=D)
    out = {}
    for optimizer in ("sgd", "gd"):
        net = start.detached()
        train(net.param_groups(lr={"a": 0.3}, weight_decay={"W": 0.1, "b": 0.0, "a": 0.1, "c": 0.0}),
              lambda step, net=net: logistic(net(x), y).mean(-1).sum(),
              OptimConfig(5, 0.2, optimizer=optimizer))
        out[optimizer] = net
    for name in ("W", "b", "a", "c"):
        assert torch.allclose(getattr(out["sgd"], name), getattr(out["gd"], name), rtol=1e-13, atol=1e-15)
    # and one gd step is (1 - lr wd) w - lr g
    net = start.detached()
    (gW,) = torch.autograd.grad(logistic(net(x), y).mean(-1).sum(), [net.W])
    train(net.param_groups(weight_decay={"W": 0.1}), lambda s: logistic(net(x), y).mean(-1).sum(),
          OptimConfig(1, 0.2, optimizer="gd"))
    assert torch.equal(net.W, (1 - 0.2 * 0.1) * start.W.detach() - 0.2 * gW)


def test_analytic_gradients_reproduce_gradient_descent_bit_for_bit(gen):
    """(b) grad_fn on the bias-free ReLU net, an epoch-dependent step size and snapshots at chosen epochs, against
    the hand-written loop of the former ``training.gradient_descent`` (same operations, same order)."""
    start = init_torch_default(2, 2, 6, scale=0.5, bias=False, trained=("W", "a"), generator=gen(5), dtype=D)
    X = torch.randn(16, 2, generator=gen(6), dtype=D)
    y = torch.sign(X[:, 0] * X[:, 1])

    def rate(epoch):
        return 0.8 if epoch < 5 else 0.5 * (1 + epoch / 20)

    ref = start.detached()
    ref_loss, ref_W = {}, {}
    with torch.no_grad():
        for epoch in range(31):
            loss, grads = logistic_loss_and_grads(ref, X, y)
            if epoch in (0, 7, 10, 20, 30):
                ref_loss[epoch], ref_W[epoch] = loss, ref.W.clone()
            if epoch < 30:
                ref.W -= rate(epoch) * grads["W"]
                ref.a -= rate(epoch) * grads["a"]
    net = start.detached()

    def grad_fn(step):
        grads = logistic_loss_and_grads(net, X, y)[1]
        return [grads[name] for name in net.named_parameters()]

    def log_fn(step):
        return {"loss": logistic_loss_and_grads(net, X, y)[0], "W": net.W.clone(), "a": net.a.clone()}

    hist = train(net.parameters(), None, OptimConfig(30, 1.0, optimizer="gd", schedule=rate),
                 grad_fn=grad_fn, log_every=10, log_at=(7, 30), log_fn=log_fn)
    assert hist["step"].tolist() == [0, 7, 10, 20, 30]
    assert torch.equal(net.W, ref.W) and torch.equal(net.a, ref.a)
    for i, epoch in enumerate(hist["step"].tolist()):
        assert torch.equal(hist["loss"][i], ref_loss[epoch]) and torch.equal(hist["W"][i], ref_W[epoch])


def test_replicas_train_independently(gen):
    """(c) three replicas trained together with AdamW end where each one trained alone ends."""
    x, y = _sparse_problem(gen, R=3, seed=7)
    start = init_torch_default(3, 6, 8, generator=gen(8), dtype=D)
    cfg = OptimConfig(12, 0.05, weight_decay=0.01)
    net = start.detached()
    train(net.parameters(), lambda s: logistic(net(x), y).mean(-1).sum(), cfg)
    for r in range(3):
        alone = TwoLayerNet(*(t.detach()[r:r + 1].clone().requires_grad_(True) for t in (start.W, start.a)),
                            b=start.b.detach()[r:r + 1].clone().requires_grad_(True),
                            c=start.c.detach()[r:r + 1].clone().requires_grad_(True), trained=("W", "b", "a", "c"))
        train(alone.parameters(), lambda s, alone=alone, r=r: logistic(alone(x[r:r + 1]), y[r:r + 1]).mean(-1).sum(),
              cfg)
        for name in ("W", "b", "a", "c"):
            assert torch.allclose(getattr(net, name)[r], getattr(alone, name)[0], atol=1e-13), (r, name)


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "gd"])
def test_a_group_with_lr_zero_is_frozen(gen, optimizer):
    """(d) lr 0 freezes a group, also under weight decay (decoupled or not)."""
    x, y = _sparse_problem(gen, seed=9)
    net = init_torch_default(2, 6, 5, generator=gen(10), dtype=D)
    W0, a0 = net.W.detach().clone(), net.a.detach().clone()
    train(net.param_groups(lr={"W": 0.0}), lambda s: logistic(net(x), y).mean(-1).sum(),
          OptimConfig(6, 0.1, optimizer=optimizer, weight_decay=0.05, warmup=2, schedule="cosine"))
    assert torch.equal(net.W, W0)
    assert not torch.equal(net.a, a0)


def test_schedules_and_warmup():
    cfg = OptimConfig(100, 1.0, warmup=4, schedule=lambda step: 2.0**-step)
    assert [cfg.lr_factor(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert cfg.lr_factor(10) == 2.0**-10
    cos = OptimConfig(14, 1.0, warmup=4, schedule="cosine")
    assert cos.lr_factor(4) == 1.0 and cos.lr_factor(9) == pytest.approx(0.5) and cos.lr_factor(14) == pytest.approx(0)
    with pytest.raises(ValueError):
        OptimConfig(3, 1.0, schedule="linear")
    # the factor reaches the optimiser: one parameter, gradient 1, gd: w_T = -sum_t factor(t)
    w = torch.zeros(1, requires_grad=True)
    train([w], lambda s: w.sum(), OptimConfig(5, 0.5, optimizer="gd", schedule=lambda s: s + 1))
    assert w.item() == pytest.approx(-0.5 * (1 + 2 + 3 + 4 + 5))


def test_logging_steps_and_argument_checks():
    w = torch.zeros(1, requires_grad=True)
    hist = train([w], lambda s: w.sum(), OptimConfig(10, 0.1, optimizer="gd"), log_every=4,
                 log_at=[1, 10], log_fn=lambda s: {"w": w.clone()})
    assert hist["step"].tolist() == [0, 1, 4, 8, 10]
    assert hist["w"][:, 0].tolist() == pytest.approx([0.0, -0.1, -0.4, -0.8, -1.0])
    with pytest.raises(ValueError):
        train([w], lambda s: w.sum(), OptimConfig(3, 0.1), log_at=[4])
    with pytest.raises(ValueError):
        train([w], lambda s: w.sum(), OptimConfig(3, 0.1), grad_fn=lambda s: [torch.ones(1)])
    with pytest.raises(ValueError):
        train([w], None, OptimConfig(3, 0.1), grad_fn=lambda s: [])
    with pytest.raises(ValueError):
        train([{"params": [w], "momentum": 0.9}], lambda s: w.sum(), OptimConfig(3, 0.1))
    with pytest.raises(ValueError):
        OptimConfig(3, 0.1, optimizer="lbfgs")


def test_stop_ends_the_loop_and_records_the_last_step():
    w = torch.zeros(1, requires_grad=True)
    hist = train([w], lambda s: w.sum(), OptimConfig(100, 0.1, optimizer="gd"), log_every=4,
                 log_fn=lambda s: {"w": w.clone()}, stop=lambda done: w.item() <= -0.55)
    assert hist["step"].tolist() == [0, 4, 6] and hist["w"][-1, 0].item() == pytest.approx(-0.6)


def test_samplers(gen):
    idx = torch.arange(10)
    batch = minibatches(idx, 4, gen(11))
    first_epoch = torch.cat([batch(0), batch(1)])
    assert len(set(first_epoch.tolist())) == 8  # without replacement within an epoch
    assert torch.equal(minibatches(idx, 20, gen())(3), idx)
    g = gen(12)
    expected = [torch.randint(0, 30, (7,), generator=g) for _ in range(3)]
    sampler = batches_with_replacement(30, 7, gen(12))
    assert all(torch.equal(sampler(s), e) for s, e in enumerate(expected))
    assert batches_with_replacement(5, 7, gen())(0).shape == (5,)


def test_fresh_batches_is_the_mean_over_the_batch_summed_over_replicas(gen):
    net = init_torch_default(2, 3, 4, generator=gen(13), dtype=D)
    data = [(torch.randn(2, 6, 3, generator=gen(14 + s), dtype=D), torch.sign(torch.randn(2, 6, generator=gen(20 + s),
             dtype=D))) for s in range(2)]
    loss_fn = fresh_batches(net, lambda step: data[step], hinge)
    for step, (x, y) in enumerate(data):
        assert torch.equal(loss_fn(step), hinge(net(x), y).mean(-1).sum())


def test_progress_is_quiet_unless_asked(monkeypatch, capsys):
    monkeypatch.delenv(loop.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(loop.sys, "stderr", io.StringIO())  # not a terminal
    assert not progress_wanted()
    monkeypatch.setenv(loop.PROGRESS_ENV, "1")
    assert progress_wanted() and not progress_wanted(False)
    monkeypatch.setenv(loop.PROGRESS_ENV, "0")
    assert not progress_wanted() and progress_wanted(True)
    stream = io.StringIO()
    monkeypatch.setattr(loop.sys, "stderr", stream)
    w = torch.zeros(1, requires_grad=True)
    train([w], lambda s: w.sum(), OptimConfig(3, 0.1), progress=True, description="demo")
    assert "demo: step 3/3 (100%)" in stream.getvalue() and stream.getvalue().endswith("\n")
    stream.truncate(0)
    train([w], lambda s: w.sum(), OptimConfig(3, 0.1))
    assert stream.getvalue() == ""


def test_defaults_are_pytorchs():
    """No warm-up and AdamW's own betas unless a chapter writes its source's values out."""
    cfg = OptimConfig(3, 0.1)
    assert cfg.warmup == 0 and cfg.lr_factor(0) == 1.0
    assert cfg.betas == torch.optim.AdamW([torch.zeros(1, requires_grad=True)]).defaults["betas"]


def test_progress_shows_in_an_interactive_kernel_only(monkeypatch):
    import types

    monkeypatch.delenv(loop.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(loop.sys, "stderr", io.StringIO())
    kernel = types.SimpleNamespace(_allow_stdin=True)
    fake_ipython = types.SimpleNamespace(get_ipython=lambda: types.SimpleNamespace(kernel=kernel))
    monkeypatch.setitem(loop.sys.modules, "IPython", fake_ipython)
    assert progress_wanted()  # a notebook frontend: its requests allow input
    kernel._allow_stdin = False  # papermill, nbval, the book's execution
    assert not progress_wanted()

"""training/loop.py: the one loop reproduces the hand-written trainers it replaces (bit for bit with "gd"), trains
replicas independently, freezes a group with lr 0, and logs where it is asked to."""

import io
import math

import pytest
import torch

from feature_learning.measure import metrics
from feature_learning.models import bias_free_relu as bias_free
from feature_learning.models import truncated_relu as truncated
from feature_learning.models.two_layer import TwoLayerNet, init_torch_default, logistic_loss_and_grads
from feature_learning.training import loop
from feature_learning.training import truncated_relu as old_trainer
from feature_learning.training.gradient_descent import gradient_descent
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


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _sparse_problem(R=2, n=40, d=6, seed=0):
    x = torch.randn(R, n, d, generator=gen(seed), dtype=D)
    y = torch.sign(x[..., 0] + 0.3 * x[..., 1])
    return x, y


def test_gd_with_groups_is_the_hand_loop_of_train_stage_bit_for_bit():
    """(a) per-group step sizes, weight decay 2 lambda on W and a (none on b): w <- (1 - 2 eta lambda) w - eta g."""
    x, y = _sparse_problem()
    p0 = truncated.symmetric_init(2, 5, 6, sigma_w=0.5, sigma_b=0.1, sigma_a=0.5, generator=gen(1))
    cfg = old_trainer.StageConfig(steps=9, batch=8, eta_w=0.2, eta_b=0.05, eta_a=0.7, lam=0.03)
    old, _ = old_trainer.train_stage(p0, x, y, cfg, gen(2))

    W, b, a = (t.clone().requires_grad_(True) for t in p0.tensors())
    groups = [{"params": [W], "lr": cfg.eta_w, "weight_decay": 2 * cfg.lam},
              {"params": [b], "lr": cfg.eta_b},
              {"params": [a], "lr": cfg.eta_a, "weight_decay": 2 * cfg.lam}]
    batch = batches_with_replacement(40, cfg.batch, gen(2))

    def loss_fn(step):
        idx = batch(step)
        out = truncated.forward(truncated.TwoLayerParams(W, b, a), x[..., idx, :])
        return hinge(out, y[..., idx]).mean(-1).sum()

    train([*groups], loss_fn, OptimConfig(cfg.steps, 1.0, optimizer="gd", warmup=0))
    assert torch.equal(W, old.W) and torch.equal(b, old.b) and torch.equal(a, old.a)


def test_sgd_weight_decay_is_the_penalty_lambda_norm_squared():
    """torch's SGD with weight decay 2 lambda makes the same step as gd, up to rounding (it fuses the products)."""
    x, y = _sparse_problem(seed=3)
    start = init_torch_default(2, 6, 5, generator=gen(4), dtype=D)
    out = {}
    for optimizer in ("sgd", "gd"):
        net = start.detached()
        train(net.param_groups(lr={"a": 0.3}, weight_decay={"W": 0.1, "b": 0.0, "a": 0.1, "c": 0.0}),
              lambda step, net=net: logistic(net(x), y).mean(-1).sum(),
              OptimConfig(5, 0.2, optimizer=optimizer, warmup=0))
        out[optimizer] = net
    for name in ("W", "b", "a", "c"):
        assert torch.allclose(getattr(out["sgd"], name), getattr(out["gd"], name), rtol=1e-13, atol=1e-15)
    # and one gd step is (1 - lr wd) w - lr g
    net = start.detached()
    (gW,) = torch.autograd.grad(logistic(net(x), y).mean(-1).sum(), [net.W])
    train(net.param_groups(weight_decay={"W": 0.1}), lambda s: logistic(net(x), y).mean(-1).sum(),
          OptimConfig(1, 0.2, optimizer="gd", warmup=0))
    assert torch.equal(net.W, (1 - 0.2 * 0.1) * start.W.detach() - 0.2 * gW)


def test_analytic_gradients_reproduce_gradient_descent_bit_for_bit():
    """(b) grad_fn on the bias-free ReLU net, an epoch-dependent step size and snapshots at chosen epochs."""
    u, V = bias_free.init_torch_default(2, 6, 2, 0.5, generator=gen(5))
    X = torch.randn(16, 2, generator=gen(6), dtype=D)
    y = torch.sign(X[:, 0] * X[:, 1])

    def rate(epoch):
        return 0.8 if epoch < 5 else 0.5 * (1 + epoch / 20)

    ref = gradient_descent(u, V, X, y, epochs=30, lr=rate, snapshot_epochs=(0, 7, 30), log_every=10)
    net = TwoLayerNet(W=V.clone(), a=u.clone(), trained=("W", "a"))

    def grad_fn(step):
        grads = logistic_loss_and_grads(net, X, y)[1]
        return [grads[name] for name in net.named_parameters()]

    def log_fn(step):
        return {"loss": logistic_loss_and_grads(net, X, y)[0], "W": net.W.clone(), "a": net.a.clone()}

    hist = train(net.parameters(), None, OptimConfig(30, 1.0, optimizer="gd", warmup=0, schedule=rate),
                 grad_fn=grad_fn, log_every=10, log_at=(7, 30), log_fn=log_fn)
    assert hist["step"].tolist() == [0, 7, 10, 20, 30]
    assert torch.equal(net.W, ref["V"]) and torch.equal(net.a, ref["u"])
    logged = [hist["step"].tolist().index(e) for e in ref["epoch"].tolist()]
    assert torch.equal(hist["loss"][logged], ref["loss"])
    snaps = [hist["step"].tolist().index(e) for e in ref["snap_epoch"].tolist()]
    assert torch.equal(hist["W"][snaps], ref["snap_V"]) and torch.equal(hist["a"][snaps], ref["snap_u"])


def test_replicas_train_independently():
    """(c) three replicas trained together with AdamW end where each one trained alone ends."""
    x, y = _sparse_problem(R=3, seed=7)
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
def test_a_group_with_lr_zero_is_frozen(optimizer):
    """(d) lr 0 freezes a group, also under weight decay (decoupled or not)."""
    x, y = _sparse_problem(seed=9)
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
    train([w], lambda s: w.sum(), OptimConfig(5, 0.5, optimizer="gd", warmup=0, schedule=lambda s: s + 1))
    assert w.item() == pytest.approx(-0.5 * (1 + 2 + 3 + 4 + 5))


def test_logging_steps_and_argument_checks():
    w = torch.zeros(1, requires_grad=True)
    hist = train([w], lambda s: w.sum(), OptimConfig(10, 0.1, optimizer="gd", warmup=0), log_every=4,
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


def test_samplers():
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


def test_fresh_batches_is_the_mean_over_the_batch_summed_over_replicas():
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
    train([w], lambda s: w.sum(), OptimConfig(3, 0.1, warmup=0), progress=True, description="demo")
    assert "demo: step 3/3 (100%)" in stream.getvalue() and stream.getvalue().endswith("\n")
    stream.truncate(0)
    train([w], lambda s: w.sum(), OptimConfig(3, 0.1, warmup=0))
    assert stream.getvalue() == ""


def test_steps_to_reach_is_importable_from_the_loop():
    assert loop.steps_to_reach is metrics.steps_to_reach
    curve = torch.tensor([[0.1, 0.0], [0.6, 0.2], [0.9, 0.3]])
    out = metrics.steps_to_reach(curve, torch.tensor([0, 10, 20]), 0.5)
    assert out[0] == 10 and math.isinf(out[1])


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

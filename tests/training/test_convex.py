"""training.convex: Newton's minimiser against L-BFGS and the stationarity condition; IHT and soft thresholding."""

import torch

from feature_learning.training.convex import keep_top_k, logistic_ridge_newton, logistic_ridge_objective, soft_threshold


def test_newton_reaches_the_stationary_point():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(3000, 3, generator=g, dtype=torch.float64) + torch.tensor([0.5, 0.2, -0.1], dtype=torch.float64)
    penalty = torch.tensor([0.01, 0.1, 1.0], dtype=torch.float64)
    w = logistic_ridge_newton(f, penalty)
    wg = w.clone().requires_grad_()
    logistic_ridge_objective(f, penalty, wg).backward()
    assert float(wg.grad.abs().max()) < 1e-10
    w2 = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w2], max_iter=500, tolerance_grad=1e-13, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = logistic_ridge_objective(f, penalty, w2)
        loss.backward()
        return loss

    opt.step(closure)
    assert torch.allclose(w, w2.detach(), atol=1e-5)  # L-BFGS stops at its own tolerance


def test_keep_top_k_and_soft_threshold():
    w = torch.tensor([[0.1, -3.0, 2.0, 0.5], [1.0, 0.0, -0.2, 0.3]])
    assert torch.equal(keep_top_k(w, 2), torch.tensor([[0.0, -3.0, 2.0, 0.0], [1.0, 0.0, 0.0, 0.3]]))
    assert torch.equal(keep_top_k(w, 9), w)
    assert torch.allclose(soft_threshold(torch.tensor([1.0, -0.2, -2.0]), 0.5), torch.tensor([0.5, 0.0, -1.5]))

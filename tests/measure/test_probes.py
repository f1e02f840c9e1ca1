"""measure/probes.py: the Newton probe reaches scikit-learn's optimum; the multiclass probe is scikit-learn's."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from feature_learning.data.digits import load_digits
from feature_learning.measure.probes import logistic_probe, multiclass_probe, rms_normalize

D = torch.float64


def _problem(gen, B=2, n=150, k=3, seed=0):
    F = torch.randn(B, n, k, generator=gen(seed), dtype=D) * torch.tensor([1.0, 3.0, 0.5], dtype=D)
    w = torch.tensor([1.0, -0.5, 2.0], dtype=D)
    noise = torch.randn(B, n, generator=gen(seed + 1), dtype=D)
    y = torch.sign(F @ w + 0.3 + 1.5 * noise)  # not separable: the unpenalised optimum is finite
    return F, y


@pytest.mark.parametrize("C", [0.05, 1.0, None])
def test_newton_probe_reaches_the_scikit_learn_optimum(gen, C):
    F, y = _problem(gen)
    out = logistic_probe(F, y, F, y, C)
    for b in range(2):
        clf = LogisticRegression(C=1.0 if C is None else C, l1_ratio=0.0, tol=1e-12, max_iter=100_000)
        if C is None:
            clf = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000)
        clf.fit(F[b].numpy(), y[b].numpy())
        assert np.allclose(out["w"][b].numpy(), clf.coef_[0], atol=1e-6, rtol=1e-6)
        assert out["b"][b].item() == pytest.approx(clf.intercept_[0], abs=1e-6)
        assert out["fit_accuracy"][b].item() == pytest.approx(clf.score(F[b].numpy(), y[b].numpy()))


def test_probes_of_a_batch_are_independent_and_standardize_is_a_change_of_units(gen):
    F, y = _problem(gen, seed=3)
    Fe, ye = _problem(gen, seed=7)
    both = logistic_probe(F, y, Fe, ye, 1.0, iterations=20)
    for b in range(2):
        alone = logistic_probe(F[b:b + 1], y[b:b + 1], Fe[b:b + 1], ye[b:b + 1], 1.0, iterations=20)
        assert torch.allclose(alone["w"][0], both["w"][b], atol=1e-12)
        assert alone["accuracy"][0] == both["accuracy"][b]
    mu, sd = F.mean(-2, keepdim=True), F.std(-2, keepdim=True)
    manual = logistic_probe((F - mu) / sd, y, (Fe - mu) / sd, ye, 1.0, iterations=20)
    std = logistic_probe(F, y, Fe, ye, 1.0, standardize=True, iterations=20)
    assert torch.equal(std["w"], manual["w"]) and torch.equal(std["accuracy"], manual["accuracy"])
    # without a penalty the fit is invariant to the units: same predictions, so the same accuracies
    raw = logistic_probe(F, y, Fe, ye, None, iterations=20)
    scaled = logistic_probe(F, y, Fe, ye, None, standardize=True, iterations=20)
    assert torch.equal(raw["accuracy"], scaled["accuracy"])


def test_rms_normalize(gen):
    F = torch.randn(3, 20, 4, generator=gen(9), dtype=D) * 7.0
    Ff, Fe = rms_normalize(F, 2 * F)
    assert torch.allclose(Ff.pow(2).mean((-1, -2)), torch.ones(3, dtype=D))
    assert torch.allclose(Fe, 2 * Ff)


def test_multiclass_probe_is_scikit_learn_and_batches():
    x, labels = load_digits()
    xf, yf, xe, ye = x[:300], labels[:300], x[300:500], labels[300:500]
    out = multiclass_probe(xf, yf, {"test": (xe, ye), "train": (xf, yf)}, max_iter=500)
    clf = LogisticRegression(max_iter=500).fit(xf.numpy(), yf.numpy())
    assert out == {"test": pytest.approx(clf.score(xe.numpy(), ye.numpy())), "train": pytest.approx(clf.score(
        xf.numpy(), yf.numpy()))}
    assert out["test"] > 0.8
    batched = multiclass_probe(torch.stack([xf, xf.flip(-1)]), yf,
                               {"test": (torch.stack([xe, xe.flip(-1)]), ye)}, max_iter=500)
    assert batched["test"].shape == (2,) and batched["test"][0] == pytest.approx(out["test"])


def test_ridge_probe_against_numpy_lstsq():
    import numpy as np

    from feature_learning.measure.probes import ridge_probe

    g = torch.Generator().manual_seed(7)
    F = torch.randn(2, 300, 5, generator=g, dtype=torch.float64)
    y = F @ torch.tensor([1.0, 0.0, -1.0, 2.0, 0.5], dtype=torch.float64) + 0.3
    out = ridge_probe(F, y, F, y, ridge=0.0)
    for r in range(2):
        Z = np.hstack([F[r].numpy(), np.ones((300, 1))])
        coef = np.linalg.lstsq(Z, y[r].numpy(), rcond=None)[0]
        assert np.allclose(out["w"][r].numpy(), coef[:5], atol=1e-8) and abs(float(out["b"][r]) - coef[5]) < 1e-8
    assert float(out["mse"].max()) < 1e-16
    shrunk = ridge_probe(F, y, F, y, ridge=10.0)
    assert (shrunk["w"].norm(dim=-1) < out["w"].norm(dim=-1)).all()

"""Every chapter's experiments run with their tensors on a device other than the CPU, with the CPU's numbers.

No GPU is needed: ``build.device_audit.pretend_accelerator`` makes the device ``meta`` a second device that computes
on the CPU and raises, as CUDA does, on an operation that mixes it with CPU tensors (the simplicity-bias chapter's
lemma network, built from the CPU copies of ``train()``'s history and trained on device data, crashed on CUDA that
way at every profile). Each case runs an experiment entry point at a tiny size on the CPU and on the pretend device
and requires identical results, and that the run did put tensors on the device.
"""

import dataclasses

import pytest
import torch

from feature_learning.book.profiles import Run, override
from feature_learning.build.device_audit import ACCELERATOR, DeviceMismatch, pretend_accelerator
from feature_learning.experiments import contrastive as ct
from feature_learning.experiments import feature_contamination as fc
from feature_learning.experiments import feature_emergence as fe
from feature_learning.experiments import fourier_circuits as fo
from feature_learning.experiments import gradient_features as gf
from feature_learning.experiments import icl_model_scale as icl
from feature_learning.experiments import label_granularity as lg
from feature_learning.experiments import simplicity_bias as sb
from feature_learning.models.two_layer import TwoLayerNet

GF = override(
    gf.BOOK,
    emergence={"m": 20, "n_step": 2000, "seeds": 2},
    parity={"m": 12, "n_step": 4000, "n_fit": 500, "steps": 50, "n_test": 300, "seeds": 2,
            "ticket_per_threshold": (1,), "ticket_steps": 50},
    xor={"dims": (10,), "m": 10, "n_step": 2000, "n_fit": 300, "steps": 50, "n_test": 300, "seeds": 2},
    uniform={"d": 9, "m": 12, "n_step": 4000, "n_fit": 300, "steps": 50, "n_test": 300, "seeds": 2},
    multi_index={"d": 8, "widths": (8,), "n_step": 2000, "n_fit": 500, "n_test": 500, "seeds": 2},
)
FC = override(
    fc.BOOK,
    classification={"d_core": 3, "d_bg": 3, "d": 24, "width": 8, "batch": 16, "steps": 12, "seeds": 2, "log_every": 4,
                    "n_test": 200},
    regression={"d_half": 3, "d": 24, "width": 8, "batch": 16, "steps": 5},
    extension={"d_core": 3, "d_bg": 3, "width": 8, "batch": 16, "steps": 5},
    checks={"gradient_samples": 500, "init_neurons": 400, "estimate_samples": 300},
)
CT = override(ct.CI, allocation={"pairs": ((5, 10),), "Ts": (1, 4), "n": 5000, "grid_points": 21},
                 pretrain={"steps": 20, "batch": 256, "replicas": 2, "cka_samples": 500})
CT_LATER = override(CT, pretrain={"steps": 5, "batch": 64, "cka_samples": 100},
                    tradeoff={"ms": (10,), "draws": 2, "n_test": 100, "large_T": 4, "large_prefixes": (1, 4),
                              "closed_replicas": 2},
                    finetune={"gammas": (0.0, 0.5), "steps": 5, "ms": (10,)},
                    regularisation={"Ts": (4,), "ms": (10,), "steps": 5, "replicas": 2, "n_test": 100})
FE = override(fe.CI, parity={"d": 12, "D": 8, "k": 3, "m": 6, "n": 300, "n_test": 200, "steps": 12, "batch": 50,
                                "log_every": 5, "seeds": 2}, variants={"seeds": 1, "dims": (8, 24)})
LG = dataclasses.replace(lg.PatchModel(), n_lucky=1.0, P=12, s_star=3, d_min=16, d_spare=4, batch=16)


ICL = override(icl.CI, transformer={"shapes": ((8, 1, 1), (16, 2, 2)), "steps": 10, "batch": 16, "seeds": 2,
                                        "eval_prompts": 200})


def _finetune_readouts(fin):
    """Contrastive fine-tuning's results but its spectral norms, whose 2-norm differs in the last bit between the CPU
    and the pretend device (2.2e-16, already before the draws moved to the run's device)."""
    return fin.weights, fin.distance, fin.accuracy


def _parity_and_ticket(run):
    """The structured parity and the lottery ticket built on it: both results, as the chapter reads both."""
    parity = gf.parity_comparison(GF.parity, run)
    return parity, gf.lottery_ticket(GF.parity, run, parity)


CASES = {
    "simplicity_bias.four_neuron_run": lambda run: sb.four_neuron_run(
        dataclasses.replace(sb.CI.four, epochs=200, lemma_epochs=400, lemma_width=6, lemma_seeds=2), run),
    "simplicity_bias.skewed_xor_run": lambda run: sb.skewed_xor_run(
        dataclasses.replace(sb.CI.skew, base=16, widths=(4, 8), epochs=256, lr=1.0, resamples=2), run),
    "simplicity_bias.domino_probe_run": lambda run: sb.domino_probe_run(dataclasses.replace(
        sb.CI.domino, width=8, seeds=2, epochs=32, n_train=64, n_fit=100, n_eval=100, checkpoints=(0, 8, 32)), run),
    "gradient_features.emergence": lambda run: gf.emergence(GF.emergence, run),
    "gradient_features.parity_and_ticket": lambda run: _parity_and_ticket(run),
    "gradient_features.xor_mixture": lambda run: gf.xor_mixture(GF.xor, run),
    "gradient_features.uniform_sparse_parity": lambda run: gf.uniform_sparse_parity(GF.uniform, run),
    "gradient_features.multi_index": lambda run: gf.multi_index(GF.multi_index, run),
    "feature_emergence.parity_program": lambda run: fe.parity_program(fe.parity_groups(FE)[:2], FE.parity, run),
    "feature_emergence.interval_experiment": lambda run: fe.interval_experiment(
        fe.IntervalSizes(D=20, k=6, low=4, m=5, n=400, n_test=200, n_probe=300), run),
    "feature_contamination.relu_vs_linear": lambda run: fc.relu_vs_linear(FC, run),
    "feature_contamination.regression": lambda run: fc.regression(FC, run),
    "label_granularity.train_run": lambda run: lg.train_run(LG, 2, lg.LABELS[0], 30, 2, run, n_log=5, early=2),
    "contrastive.allocation_and_pretrain": lambda run: (ct.allocation(CT, run), ct.pretrain(CT, run)),
    "contrastive.tradeoff_finetune_regularisation": lambda run: (
        ct.tradeoff(CT_LATER, run, ct.pretrain(CT_LATER, run)), _finetune_readouts(ct.finetune(CT_LATER, run)),
        ct.regularisation_table(CT_LATER, run)),
    "fourier_circuits.grokking_sweep": lambda run: fo.grokking_sweep(
        fo.GrokSizes(pairs=((2, 5),), steps=4, seeds=(2,), width=8, heads=2, attention_k=3), run),
    "icl_model_scale.transformer_scale_sweep": lambda run: icl.transformer_scale_sweep(ICL, run),
}


def _leaves(value, path="result"):
    """The tensors and numbers inside a result (dataclasses, dicts, sequences, networks), by path."""
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, torch.nn.Module):
        yield from _leaves(value.state_dict(), path)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            if "seconds" in field.name:  # wall-clock times differ between any two runs
                continue
            yield from _leaves(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, torch.tensor(value, dtype=torch.float64)


def _on_both(case):
    torch.manual_seed(0)
    on_cpu = case(Run("ci", 0, torch.device("cpu")))
    torch.manual_seed(0)
    with pretend_accelerator() as marks:
        on_device = case(Run("ci", 0, ACCELERATOR))
        used = len(marks.refs)
    return on_cpu, on_device, used


@pytest.mark.parametrize("name", sorted(CASES))
def test_experiment_runs_on_a_second_device_with_the_cpus_numbers(name):
    on_cpu, on_device, used = _on_both(CASES[name])
    assert used > 0, f"{name} put no tensor on the run's device"
    cpu, dev = dict(_leaves(on_cpu)), dict(_leaves(on_device))
    assert cpu.keys() == dev.keys()
    for path, value in cpu.items():
        torch.testing.assert_close(dev[path], value, rtol=0, atol=0, equal_nan=True, check_device=False,
                                   msg=lambda m, p=path: f"{name}: {p}: {m}")


def test_the_two_layer_trainer_keeps_cpu_history_and_catches_a_network_left_on_the_cpu():
    """The chapter's full-batch trainer (through the shared ``train()``) runs on the device and keeps its history on
    the CPU; continuing from that history without moving it to the device is the simplicity-bias chapter's error."""
    X = torch.randn(16, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = torch.sign(X[:, 0] * X[:, 1])
    W = 0.1 * torch.randn(2, 4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    a = 0.1 * torch.randn(2, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with pretend_accelerator() as marks:
        net = TwoLayerNet(W=W.clone(), a=a.clone(), activation="relu", trained=("W", "a")).to(device=ACCELERATOR)
        Xd, yd = X.to(ACCELERATOR), y.to(ACCELERATOR)
        hist = sb.logistic_gd(net, Xd, yd, steps=5, lr=0.5, log_at=[0, 5])
        assert not marks.has(hist["W"]) and hist["W"].device.type == "cpu"
        assert net.W.device == ACCELERATOR
        left_behind = TwoLayerNet(W=hist["W"][-1].clone(), a=hist["a"][-1].clone(), activation="relu",
                                  trained=("W", "a"))
        with pytest.raises(DeviceMismatch, match="same device"):
            sb.logistic_gd(left_behind, Xd, yd, steps=1, lr=0.5)
        with pytest.raises(DeviceMismatch, match="numpy"):
            Xd.numpy()


def test_pretend_accelerator_moves_copy_and_track():
    with pretend_accelerator() as marks:
        x = torch.arange(6.0).reshape(2, 3)
        on = x.to(ACCELERATOR)
        assert marks.has(on) and not marks.has(x) and on.device == ACCELERATOR
        assert marks.has(on.T) and marks.has(on * 2) and marks.has(torch.zeros(3, device=on.device))
        back = on.cpu()
        assert not marks.has(back) and back.device.type == "cpu" and torch.equal(back, x)
        assert marks.has(on + torch.tensor(1.0))  # a 0-dim CPU tensor mixes, as on CUDA
        assert torch.equal(on[torch.tensor([1, 0])].cpu(), x[[1, 0]])  # CPU indices into a device tensor
        with pytest.raises(DeviceMismatch):
            on + x


def test_gradient_features_parity_accuracies_come_back_on_the_cpu():
    """The chapter turns the structured-parity accuracies into NumPy arrays (``par_run.accuracy[0, 0].numpy()``);
    on CUDA that raised at every profile (the first CUDA smoke, 2026-11-27) because the run left them on the device."""
    torch.manual_seed(0)
    with pretend_accelerator():
        parity = gf.parity_comparison(GF.parity, Run("ci", 0, ACCELERATOR))
        assert parity.accuracy.device == torch.device("cpu")
        assert parity.rf_optimum.device == torch.device("cpu")
        parity.accuracy[0, 0].numpy()

"""Per-neuron Fourier structure of a trained k-th power network (Theorem 4.9's three properties)."""

from __future__ import annotations

import dataclasses

import torch

from feature_learning.measure.fourier import dominant_frequency, max_normalized_power, phase_at, wrap_angle
from feature_learning.models.poly_net import PolyNet


@dataclasses.dataclass
class NeuronFourierSummary:
    """For each neuron of one replica: its parts' spectra statistics and the phase law sum_j theta_uj = theta_w."""

    max_power: torch.Tensor  # (m, k+1): one-sided max normalised power of u_1..u_k, w
    frequency: torch.Tensor  # (m,): dominant frequency of the neuron's largest part
    same_frequency: torch.Tensor  # (m,) bool: all k+1 parts share that dominant frequency
    phase_residual: torch.Tensor  # (m,): wrap(sum_j theta_uj - theta_w)  (0 for a max-margin neuron)
    part_norms: torch.Tensor  # (m, k+1): ||u_1||, ..., ||u_k||, ||w||
    neuron_norm: torch.Tensor  # (m,)

    def active(self, fraction: float = 0.1) -> torch.Tensor:
        """Neurons whose norm is at least ``fraction`` of the largest (dead neurons carry no circuit)."""
        return self.neuron_norm >= fraction * self.neuron_norm.max()

    def frequency_counts(self, p: int, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Number of neurons per dominant frequency 0..(p-1)/2."""
        freq = self.frequency if mask is None else self.frequency[mask]
        return torch.bincount(freq, minlength=(p - 1) // 2 + 1)


def neuron_parts(net: PolyNet, r: int = 0) -> torch.Tensor:
    """The neurons of replica r as (m, k+1, p): u_{i,1}, ..., u_{i,k}, w_i."""
    u = net.U[r].detach().permute(2, 0, 1)  # (m, k, p)
    w = net.W[r].detach().unsqueeze(1)  # (m, 1, p)
    return torch.cat([u, w], dim=1).cpu()


def summarize_neurons(net: PolyNet, r: int = 0) -> NeuronFourierSummary:
    parts = neuron_parts(net, r)
    k = net.k
    max_power = max_normalized_power(parts)
    part_norms = parts.norm(dim=-1)
    freq_parts = dominant_frequency(parts)  # (m, k+1)
    frequency = freq_parts.gather(1, part_norms.argmax(dim=1, keepdim=True)).squeeze(1)
    same = (freq_parts == frequency.unsqueeze(1)).all(dim=1)
    phases = phase_at(parts, frequency.unsqueeze(1).expand(-1, k + 1))
    residual = wrap_angle(phases[:, :k].sum(dim=1) - phases[:, k])
    return NeuronFourierSummary(max_power, frequency, same, residual, part_norms, parts.pow(2).sum((1, 2)).sqrt())

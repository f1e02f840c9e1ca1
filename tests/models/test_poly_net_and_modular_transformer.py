"""models/poly_net.py and models/transformer.py on the modular-addition data (Fourier chapter)."""

import math

import pytest
import torch

from feature_learning.data.modular import all_tuples, modular_addition, modular_sum, token_sequences
from feature_learning.models.poly_net import init_poly_net
from feature_learning.models.transformer import TransformerConfig, init_transformer


def test_modular_data_and_split():
    a = all_tuples(3, 5)
    assert a.shape == (125, 3) and len({tuple(r) for r in a.tolist()}) == 125
    data = modular_addition(3, 5, 0.5, torch.Generator().manual_seed(0))
    assert torch.equal(data.labels, modular_sum(data.inputs, 5))
    both = torch.cat([data.train_idx, data.test_idx]).sort().values
    assert torch.equal(both, torch.arange(125)) and abs(len(data.train_idx) - 62.5) <= 1
    seq = token_sequences(torch.tensor([[1, 2, 3]]), 5)
    assert seq.tolist() == [[1, 5, 2, 5, 3, 6]]


def test_poly_net_matches_its_definition_and_is_homogeneous():
    g = torch.Generator().manual_seed(0)
    net = init_poly_net(3, 5, 7, replicas=2, generator=g)
    a = all_tuples(3, 5)
    logits = net(a)
    # eq. (4.2) written out neuron by neuron for replica 1
    r, x = 1, a[17]
    pre = sum(net.U[r, j, x[j], :] for j in range(3))
    assert torch.allclose(logits[r, 17], (pre**3) @ net.W[r])
    # (k+1)-homogeneity and the group norm's scaling
    scaled = init_poly_net(3, 5, 7, replicas=2, generator=torch.Generator().manual_seed(0))
    scaled.U.data *= 2.0
    scaled.W.data *= 2.0
    assert torch.allclose(scaled(a), 2.0**4 * logits)
    assert torch.allclose(scaled.group_norm(), 2.0 * net.group_norm())
    # group norm by its definition
    norms = torch.sqrt((net.U[0] ** 2).sum((0, 1)) + (net.W[0] ** 2).sum(1))
    assert torch.allclose(net.group_norm()[0], norms.pow(4).sum().pow(0.25))


def test_transformer_last_position_shortcut_equals_full_computation():
    cfg = TransformerConfig(vocab=7, seq_len=6, n_out=5, d_model=16, n_heads=2, d_head=8, d_mlp=32, n_blocks=2)
    model = init_transformer(cfg, replicas=2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    tokens = token_sequences(all_tuples(3, 5)[:10], 5)
    out = model(tokens)
    assert out.shape == (2, 10, 5)
    # reference: every position through every block, then read the last one
    P = model.params
    x = P["embed"][:, tokens] + P["pos"][:, None, :6]
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    for b in range(2):
        q = torch.einsum("rntd,rhde->rnhte", x, P["W_Q"][:, b])
        k = torch.einsum("rntd,rhde->rnhte", x, P["W_K"][:, b])
        v = torch.einsum("rntd,rhde->rnhte", x, P["W_V"][:, b])
        att = ((q @ k.transpose(-1, -2)) / math.sqrt(8)).masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + torch.einsum("rnhte,rhed->rntd", att @ v, P["W_O"][:, b])
        hid = torch.nn.functional.gelu(torch.einsum("rntd,rdf->rntf", x, P["W_in"][:, b]) + P["b_in"][:, b, None, None])
        x = x + torch.einsum("rntf,rfd->rntd", hid, P["W_out"][:, b]) + P["b_out"][:, b, None, None]
    ref = torch.einsum("rnd,rdo->rno", x[:, :, -1], P["unembed"])
    assert torch.allclose(out, ref, atol=1e-12)


def test_transformer_is_causal():
    """Changing the token at position j changes no output at a position before j, and changes those from j on;
    the last position of the all-positions read-out is the fast path's output."""
    cfg = TransformerConfig(vocab=7, seq_len=6, n_out=5, d_model=16, n_heads=2, d_head=8, d_mlp=32, n_blocks=2)
    model = init_transformer(cfg, replicas=2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    tokens = token_sequences(all_tuples(3, 5)[:4], 5)
    every = model(tokens, all_positions=True)
    assert every.shape == (2, 4, 6, 5)
    assert torch.allclose(every[:, :, -1], model(tokens), atol=1e-12)
    for j in range(tokens.shape[1]):
        changed = tokens.clone()
        changed[:, j] = (changed[:, j] + 1) % 7
        out = model(changed, all_positions=True)
        assert torch.equal(out[:, :, :j], every[:, :, :j])
        assert (out[:, :, j:] - every[:, :, j:]).abs().amax(dim=(0, 1, 3)).min() > 1e-6


def test_attention_matrix_definition():
    cfg = TransformerConfig(vocab=7, seq_len=6, n_out=5, d_model=16, n_heads=2, d_head=8, d_mlp=32)
    model = init_transformer(cfg, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    A = model.attention_matrix(torch.arange(5))
    E = model.params["embed"][0, :5]
    expected = E @ model.params["W_Q"][0, 0, 1] @ model.params["W_K"][0, 0, 1].T @ E.T
    assert A.shape == (1, 2, 5, 5) and torch.allclose(A[0, 1], expected)


@pytest.mark.parametrize("replicas", [1, 3])
def test_replicas_train_independently(replicas):
    """Summing the replicas' losses gives each replica the gradient of its own loss."""
    g = torch.Generator().manual_seed(0)
    net = init_poly_net(2, 5, 4, replicas=replicas, generator=g)
    a = all_tuples(2, 5)
    y = modular_sum(a, 5)
    loss = torch.nn.functional.cross_entropy(net(a).flatten(0, 1), y.repeat(replicas), reduction="sum")
    loss.backward()
    single = init_poly_net(2, 5, 4, replicas=1, generator=torch.Generator().manual_seed(0))
    single.U.data.copy_(net.U.data[:1])
    single.W.data.copy_(net.W.data[:1])
    torch.nn.functional.cross_entropy(single(a)[0], y, reduction="sum").backward()
    assert torch.allclose(net.U.grad[:1], single.U.grad)

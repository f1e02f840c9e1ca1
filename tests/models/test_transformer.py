"""The softmax transformer read on real-valued tokens (the in-context-learning analogue of dissertation ch. 5)."""

import torch

from feature_learning.models.transformer import TransformerConfig, init_transformer


def test_continuous_transformer_matches_token_lookup_on_one_hot_inputs():
    cfg = TransformerConfig(vocab=5, seq_len=6, n_out=2, d_model=8, n_heads=2, d_head=4, d_mlp=16, n_blocks=2)
    model = init_transformer(cfg, replicas=2, generator=torch.Generator().manual_seed(0))
    tokens = torch.randint(0, 5, (3, 6), generator=torch.Generator().manual_seed(1))
    one_hot = torch.nn.functional.one_hot(tokens, 5).float()
    assert torch.allclose(model(tokens), model.forward_continuous(one_hot), atol=1e-5)


def test_continuous_inputs_per_replica_equal_each_replica_on_its_own_batch():
    cfg = TransformerConfig(vocab=3, seq_len=5, n_out=1, d_model=8, n_heads=2, d_head=4, d_mlp=16, n_blocks=2)
    model = init_transformer(cfg, replicas=3, generator=torch.Generator().manual_seed(0))
    inputs = torch.randn(3, 4, 5, 3, generator=torch.Generator().manual_seed(1))
    per_replica = model.forward_continuous(inputs)
    for r in range(3):
        assert torch.allclose(per_replica[r], model.forward_continuous(inputs[r])[r], atol=1e-6)

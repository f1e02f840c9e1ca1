"""A small decoder-only transformer, batched over independent replicas (seeds) R.

Pre-activation residual blocks of multi-head causal self-attention and a GELU MLP, learned token and position
embeddings, no LayerNorm (as in the one-layer grokking transformer of Nanda et al. 2023), and a linear read-out
of the last position. Shapes: R replicas, N sequences, T positions, d model width, H heads of width e.

The attention score of head h between a query token x and a key token y is x W^Q_h (W^K_h)^T y^T / sqrt(e):
:meth:`Transformer.attention_matrix` returns it over the number tokens, the p x p matrix E W^Q_h W^K_h^T E^T that
the source calls the attention matrix W^{KQ} (dissertation ch. 4, section 4.5).
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    vocab: int
    seq_len: int
    n_out: int
    d_model: int = 128
    n_heads: int = 4
    d_head: int = 32
    d_mlp: int = 512
    n_blocks: int = 1


@dataclasses.dataclass
class Transformer:
    config: TransformerConfig
    params: dict[str, torch.Tensor]

    @property
    def replicas(self) -> int:
        return self.params["embed"].shape[0]

    def parameters(self) -> list[torch.Tensor]:
        return list(self.params.values())

    def __call__(self, tokens: torch.Tensor, all_positions: bool = False) -> torch.Tensor:
        """Logits (R, N, n_out) read out at the last position of ``tokens`` (N, T); with ``all_positions``, at every
        position (R, N, T, n_out)."""
        T = tokens.shape[1]
        x = self.params["embed"][:, tokens] + self.params["pos"][:, None, :T]
        return self.forward_embedded(x, all_positions=all_positions)

    def forward_continuous(self, inputs: torch.Tensor) -> torch.Tensor:
        """Logits (R, N, n_out) for real-valued tokens ``inputs`` (N, T, vocab), shared by the replicas, or
        (R, N, T, vocab), one batch per replica: ``embed`` acts as a linear map (vocab -> d_model) instead of a
        lookup table, as for in-context-learning prompts [x_i; y_i]."""
        T = inputs.shape[-2]
        pattern = "rntk,rkd->rntd" if inputs.ndim == 4 else "ntk,rkd->rntd"
        x = torch.einsum(pattern, inputs, self.params["embed"]) + self.params["pos"][:, None, :T]
        return self.forward_embedded(x)

    def forward_embedded(self, x: torch.Tensor, all_positions: bool = False) -> torch.Tensor:
        """The residual blocks and read-out on embedded tokens x (R, N, T, d): logits at the last position
        (R, N, n_out), or at every position (R, N, T, n_out) with ``all_positions``.

        Laid out for the CPU: every projection is one batched matrix product over the replicas (R, N T, d) and the
        heads stay a trailing (H, e) axis, so no activation is permuted; the last block, when only the last position
        is read out, scores its one query by a product and a sum over e (a batch of N H products of a 1 x e by an
        e x T matrix is several times slower)."""
        P, c = self.params, self.config
        R, N, T, d = x.shape
        H, e = c.n_heads, c.d_head

        def rows_times(inp: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
            # (R, N, t, a) @ (R, a, b) -> (R, N, t, b)
            return (inp.reshape(R, -1, inp.shape[-1]) @ W).view(*inp.shape[:-1], W.shape[-1])

        def heads(inp: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
            # (R, N, t, d) and W (R, H, d, e) -> (R, N, t, H, e)
            return rows_times(inp, W.permute(0, 2, 1, 3).reshape(R, d, H * e)).view(*inp.shape[:-1], H, e)

        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        for b in range(c.n_blocks):
            # When only the last position is read out, the last block needs its query and MLP there alone.
            last_only = b == c.n_blocks - 1 and not all_positions
            rows = slice(T - 1, T) if last_only else slice(0, T)
            q, k, v = heads(x[:, :, rows], P["W_Q"][:, b]), heads(x, P["W_K"][:, b]), heads(x, P["W_V"][:, b])
            if last_only:  # the last query sees every key: no mask
                attn = ((q * k).sum(-1) / math.sqrt(e)).softmax(dim=2)  # (R, N, T, H)
                z = (attn.unsqueeze(-1) * v).sum(2, keepdim=True)  # (R, N, 1, H, e)
            else:
                scores = torch.einsum("rnqhe,rnkhe->rnhqk", q, k) / math.sqrt(e)
                attn = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
                z = torch.einsum("rnhqk,rnkhe->rnqhe", attn, v)
            x = x[:, :, rows] + rows_times(z.reshape(R, N, -1, H * e), P["W_O"][:, b].reshape(R, H * e, d))
            hidden = F.gelu(rows_times(x, P["W_in"][:, b]) + P["b_in"][:, b, None, None])
            x = x + rows_times(hidden, P["W_out"][:, b]) + P["b_out"][:, b, None, None]
        if all_positions:
            return rows_times(x, P["unembed"])
        return rows_times(x[:, :, -1:], P["unembed"])[:, :, 0]

    def attention_matrix(self, tokens: torch.Tensor, block: int = 0) -> torch.Tensor:
        """E W^Q_h (W^K_h)^T E^T over the given token ids: shape (R, H, len(tokens), len(tokens))."""
        with torch.no_grad():
            E = self.params["embed"][:, tokens]  # (R, P, d)
            q = torch.einsum("rpd,rhde->rhpe", E, self.params["W_Q"][:, block])
            k = torch.einsum("rpd,rhde->rhpe", E, self.params["W_K"][:, block])
            return q @ k.transpose(-1, -2)


def init_transformer(
    config: TransformerConfig,
    replicas: int = 1,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Transformer:
    """Gaussian init with std 1/sqrt(fan_in) for every matrix (embeddings std 1/sqrt(d)); biases 0.

    Drawn on the CPU from ``generator`` so that CPU and CUDA runs start from the same weights.
    """
    c, R, L, H = config, replicas, config.n_blocks, config.n_heads

    def normal(*shape, fan_in):
        return torch.randn(R, *shape, generator=generator, dtype=dtype) / math.sqrt(fan_in)

    params = {
        "embed": normal(c.vocab, c.d_model, fan_in=c.d_model),
        "pos": normal(c.seq_len, c.d_model, fan_in=c.d_model),
        "W_Q": normal(L, H, c.d_model, c.d_head, fan_in=c.d_model),
        "W_K": normal(L, H, c.d_model, c.d_head, fan_in=c.d_model),
        "W_V": normal(L, H, c.d_model, c.d_head, fan_in=c.d_model),
        "W_O": normal(L, H, c.d_head, c.d_model, fan_in=H * c.d_head),
        "W_in": normal(L, c.d_model, c.d_mlp, fan_in=c.d_model),
        "b_in": torch.zeros(R, L, c.d_mlp, dtype=dtype),
        "W_out": normal(L, c.d_mlp, c.d_model, fan_in=c.d_mlp),
        "b_out": torch.zeros(R, L, c.d_model, dtype=dtype),
        "unembed": normal(c.d_model, c.n_out, fan_in=c.d_model),
    }
    return Transformer(config, {name: t.to(device).requires_grad_() for name, t in params.items()})

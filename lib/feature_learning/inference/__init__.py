"""Inference with a causal transformer: greedy generation over a KV cache, and prompt compression by token
selection (GemFilter and the cache-eviction baselines of dissertation ch. 9)."""

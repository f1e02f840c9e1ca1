"""Sizes of the chapter "Model scale and in-context learning" (dissertation ch. 5, appendix D).

The source has no synthetic experiments for sections 5.4-5.5; the configuration (d = 8, N = 64, the spectrum below,
(nu1, nu2) = (1, 3), gamma = 0.2) is the one of the chapter notes and is stated in the chapter.
"""

from __future__ import annotations

import dataclasses

from feature_learning.book.profiles import by_profile


@dataclasses.dataclass(frozen=True)
class ICLSizes:
    d: int
    N: int  # pretraining context length
    spectrum: tuple[float, ...]  # eigenvalues of Lambda, descending and distinct
    ranks: tuple[int, ...]  # ranks trained by gradient descent
    train_steps: int
    eval_ranks: tuple[int, ...]
    sigmas: tuple[float, ...]
    Ms: tuple[int, ...]  # evaluation context lengths
    mc_prompts: int
    flips: tuple[float, ...]
    parity_nu1: int
    parity_nu2: int
    parity_gamma: float
    parity_Ms: tuple[int, ...]
    parity_prompts: int
    min_norm_steps: int
    # the LLM analogue (section 5.6): tiny softmax transformers (d_model, heads, blocks), smallest first
    tf_shapes: tuple[tuple[int, int, int], ...]
    tf_steps: int
    tf_batch: int
    tf_seeds: int  # replicas trained as one batched program
    tf_eval_prompts: int


SPECTRUM = (2.0, 1.5, 1.0, 0.5, 0.25, 0.15, 0.1, 0.05)

# The LLM analogue (not in the source): binary ICL with a prior direction, w = e_1 + TF_TAU g / sqrt(d), M = 16
# in-context examples as in section 5.6, and transformers whose width, heads and depth grow together.
TF_D, TF_M, TF_TAU, TF_LR = 8, 16, 1.0, 3e-3
TF_SHAPES = ((8, 1, 1), (16, 2, 2), (32, 4, 2))

SIZES = {
    "ci": ICLSizes(d=8, N=64, spectrum=SPECTRUM, ranks=(1, 2, 4, 8), train_steps=2000, eval_ranks=(1, 2, 4, 8),
                   sigmas=(0.0, 1.0, 2.0, 4.0), Ms=(16, 64), mc_prompts=20000, flips=(0.0, 0.25, 0.5, 0.75, 1.0),
                   parity_nu1=1, parity_nu2=3, parity_gamma=0.2, parity_Ms=(16, 64, 256, 1024), parity_prompts=4000,
                   min_norm_steps=1500, tf_shapes=TF_SHAPES, tf_steps=600, tf_batch=64, tf_seeds=3,
                   tf_eval_prompts=2000),
    "book": ICLSizes(d=8, N=64, spectrum=SPECTRUM, ranks=(1, 2, 3, 4, 5, 6, 7, 8), train_steps=3000,
                     eval_ranks=(1, 2, 3, 4, 5, 6, 7, 8), sigmas=(0.0, 0.5, 1.0, 2.0, 4.0), Ms=(16, 64),
                     mc_prompts=60000, flips=(0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0), parity_nu1=1, parity_nu2=3,
                     parity_gamma=0.2, parity_Ms=(16, 32, 64, 128, 256, 1024), parity_prompts=20000,
                     min_norm_steps=3000, tf_shapes=TF_SHAPES, tf_steps=1000, tf_batch=64, tf_seeds=4,
                     tf_eval_prompts=4000),
    "full": ICLSizes(d=8, N=64, spectrum=SPECTRUM, ranks=(1, 2, 3, 4, 5, 6, 7, 8), train_steps=20000,
                     eval_ranks=(1, 2, 3, 4, 5, 6, 7, 8), sigmas=(0.0, 0.5, 1.0, 2.0, 4.0), Ms=(16, 64),
                     mc_prompts=1000000, flips=(0.0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0), parity_nu1=1,
                     parity_nu2=3, parity_gamma=0.2, parity_Ms=(16, 32, 64, 128, 256, 1024), parity_prompts=100000,
                     min_norm_steps=10000, tf_shapes=TF_SHAPES + ((64, 8, 2),), tf_steps=5000, tf_batch=256,
                     tf_seeds=5, tf_eval_prompts=5000),
}


def sizes(profile: str) -> ICLSizes:
    return by_profile(profile, SIZES)


def tf_config(shape: tuple[int, int, int]):
    """TransformerConfig of the LLM analogue for shape (d_model, heads, blocks): head width d_model / heads, MLP
    ratio 4, tokens [x_i; y_i] of width d+1 and one logit read out at the query."""
    from feature_learning.models.transformer import TransformerConfig

    d_model, heads, blocks = shape
    return TransformerConfig(vocab=TF_D + 1, seq_len=TF_M + 1, n_out=1, d_model=d_model, n_heads=heads,
                             d_head=d_model // heads, d_mlp=4 * d_model, n_blocks=blocks)


def tf_prior():
    """The prior direction e_1 of the LLM analogue (the 'semantic prior' a pretrained model brings)."""
    import torch

    prior = torch.zeros(TF_D)
    prior[0] = 1.0
    return prior

"""Section 5.6 of the chapter: the LLM analogue, tiny softmax transformers of growing size on a synthetic binary
in-context task with a prior direction, scored as context labels are flipped."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from feature_learning.book.profiles import Run
from feature_learning.data.in_context import icl_classification_tokens
from feature_learning.experiments.icl_model_scale.sizes import BOOK, PRIOR_RULE, SIZE_BLIND, ICLSizes, TransformerSizes
from feature_learning.measure.in_context import icl_flip_accuracy
from feature_learning.measure.statistics import Estimate, Null, difference, mean_se, paired_difference
from feature_learning.models.transformer import TransformerConfig, init_transformer
from feature_learning.training.loop import OptimConfig, train


# -- the LLM analogue (section 5.6) ------------------------------------------------------------------------------------
def tf_config(shape: tuple[int, int, int], t: TransformerSizes = BOOK.transformer):
    """TransformerConfig of the LLM analogue for shape (d_model, heads, blocks): head width d_model / heads, MLP
    ratio 4, tokens [x_i; y_i] of width d+1 and one logit read out at the query."""
    d_model, heads, blocks = shape
    return TransformerConfig(vocab=t.d + 1, seq_len=t.M + 1, n_out=1, d_model=d_model, n_heads=heads,
                             d_head=d_model // heads, d_mlp=4 * d_model, n_blocks=blocks)


def tf_prior(d: int = BOOK.transformer.d) -> torch.Tensor:
    """The prior direction e_1 of the LLM analogue (the 'semantic prior' a pretrained model brings)."""
    prior = torch.zeros(d)
    prior[0] = 1.0
    return prior


def train_icl_transformer(config, prior: torch.Tensor, tau: float, M: int, steps: int, batch: int,
                          generator: torch.Generator, replicas: int = 1, lr: float = 1e-3, weight_decay: float = 1e-4,
                          device: torch.device | str = "cpu"):
    """Train small softmax transformers (:class:`~feature_learning.models.transformer.Transformer` on real-valued
    tokens) on the synthetic binary ICL task of :func:`feature_learning.data.in_context.icl_classification_tokens`
    with the logistic loss on fresh batches (AdamW). ``config.vocab`` must be d+1 and ``config.n_out`` 1. The
    ``replicas`` (seeds) are independent runs: their own initialisation and their own batches, so that their spread
    is the seed-to-seed spread. Weights
    and prompts are drawn on the CPU from ``generator`` and moved to ``device``, so CPU and CUDA runs see the same
    numbers. Returns (model, history)."""
    d = prior.shape[0]
    model = init_transformer(config, replicas=replicas, generator=generator, device=device)

    def replica_losses(step: int) -> torch.Tensor:
        tokens, yq = icl_classification_tokens(replicas * batch, M, d, prior, tau, generator)
        tokens, yq = tokens.view(replicas, batch, M + 1, d + 1).to(device), yq.view(replicas, batch).to(device)
        logit = model.forward_continuous(tokens)[..., 0]  # (R, B)
        return torch.nn.functional.softplus(-yq * logit).mean(-1)  # (R,)

    history = train(model.parameters(), lambda step: replica_losses(step).sum(),
                    OptimConfig(steps=steps, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.98), warmup=20,
                                schedule="cosine"),
                    log_every=max(1, steps // 10), log_fn=lambda s: {"loss": replica_losses(s).detach()})
    with torch.no_grad():
        history["final_loss"] = replica_losses(steps).cpu()  # each replica's loss on a fresh batch after training
    return model, history


# A replica has reached its training target when its logistic loss after training is at most this share of log 2,
# the loss of a model that never learned (logit 0 on every prompt). Fixed before any run was graded by it.
TRAINED_SHARE_OF_LOG2 = 0.9

# Why the clean-accuracy gain stays close to its bound at some seeds (measured at ci: seeds 0-5 with the test prompts
# cut in chunks of 2000; seed 4 with eight replicas per size scored on eight independent sets of 2000 test prompts).
CLEAN_GAIN_NEAR_BOUND = (
    "the gain itself is close to its bound, about 0.065 against 0.05, and what is left of its spread is between "
    "trained models: the test prompts' part (sd 0.006 at 2000 prompts, more than the standard error over replicas, "
    "which omits it) is cut to about 0.003 by the 8000 used here, while the standard error over the four replicas of "
    "each size stays 0.0025-0.004 from 2000 to 16,000 prompts (the smallest model's clean accuracy varies by sd "
    "0.008 between replicas); halving it would take four times the replicas and the training cost, and more replicas "
    "raise the odds that a smallest model misses its training target (one of eight did at seed 4)")

# Why the flatness claim stays close to its bound at some seeds (measured at ci, seed 4, eight replicas per size,
# each scored on eight independent sets of 2000 test prompts).
FLAT_NEAR_BOUND = (
    "its spread is between trained models, not test prompts: at one seed the smallest model's drop ranged from 0.005 "
    "to 0.107 over eight replicas (sd of the ratio 0.09 between replicas, 0.02 between sets of 2000 test prompts, "
    "so the 8000 used here cannot narrow it); eight replicas per size would reach about 3.5 sd at twice the training "
    r"cost, but with eight one smallest model at seed 4 ended at loss 0.625 after training, above the $0.9\log 2 = "
    "0.624$ target that every claim on the trained transformers requires (with four, that seed's worst is 0.619)")


@dataclasses.dataclass
class TransformerSweep:
    shapes: tuple[tuple[int, int, int], ...]
    flips: tuple[float, ...]
    accuracy: np.ndarray  # (size, flip, seed) against the clean query label
    reference: np.ndarray  # (flip, 2): the prior rule and the context rule on the same prompts
    params: list[int]
    final_loss: np.ndarray | None = None  # (size, seed): each replica's logistic loss after training

    def trained(self) -> tuple[int, int]:
        """(replicas that reached their training target, replicas): a logistic loss after training of at most
        ``TRAINED_SHARE_OF_LOG2`` log 2; a model that never learned has log 2. Every claim on the trained models
        carries it, so none passes on a model that never learned."""
        if self.final_loss is None:
            raise ValueError("the sweep has no losses after training: it cannot say whether its models learned")
        reached = self.final_loss <= TRAINED_SHARE_OF_LOG2 * np.log(2.0)
        return int(reached.sum()), int(reached.size)

    @property
    def seeds(self) -> int:
        return self.accuracy.shape[-1]

    @property
    def drop(self) -> np.ndarray:
        """Sensitivity per size and seed: accuracy with clean labels minus accuracy with every label flipped."""
        return self.accuracy[:, 0] - self.accuracy[:, -1]

    @property
    def drop_half(self) -> np.ndarray:
        return self.accuracy[:, 0] - self.accuracy[:, self.flips.index(0.5)]

    # -- the claims' measurements, each with its standard error over seeds and the trivial model's value ----------
    def clean_over_prior(self) -> Estimate:
        """The largest model's clean accuracy minus the prior rule's on the same prompts; null: the prior rule."""
        mean, se = mean_se(self.accuracy[-1, 0], axis=-1)
        return Estimate(float(mean - self.reference[0, 0]), float(se),
                        Null(0.0, PRIOR_RULE))

    def clean_gain_with_size(self) -> Estimate:
        """Clean accuracy of the largest model minus the smallest's (independent seeds); null: a size-blind model."""
        big, small = (Estimate(*map(float, mean_se(self.accuracy[k, 0], axis=-1))) for k in (-1, 0))
        return dataclasses.replace(difference(big, small), null=SIZE_BLIND)

    def sensitivity_gain_with_size(self) -> Estimate:
        """Drop (p = 0 -> 1) of the largest model minus the smallest's, paired by seed index (the same evaluation
        prompts); null: a size-blind model."""
        return paired_difference(self.drop[-1], self.drop[0], SIZE_BLIND)

    def smallest_lowest(self) -> Estimate:
        """The smallest model's lowest mean accuracy over the flip fractions; null: the context rule (no prior)."""
        mean, se = mean_se(self.accuracy[0], axis=-1)
        k = int(mean.argmin())
        return Estimate(float(mean[k]), float(se[k]),
                        Null(float(self.reference[:, 1].min()), "the context rule (no prior: learns only in context)"))

    def smallest_flatness(self) -> Estimate:
        """How flat the smallest model stays: its accuracy drop (p = 0 -> 1) over the largest model's, per seed index
        (the same evaluation prompts), mean and se over the seeds; null: the context rule (no prior), whose drop over
        the largest model's mean drop is the same ratio for a model that only learns in context."""
        ratios = self.drop[0] / self.drop[-1]
        context_drop = float(self.reference[0, 1] - self.reference[-1, 1])
        return Estimate.of(ratios, null=Null(context_drop / float(self.drop[-1].mean()),
                                             "the context rule (no prior: learns only in context)"))

    def largest_fully_flipped(self) -> Estimate:
        """The largest model's mean accuracy with every context label flipped; null: the prior rule."""
        mean, se = mean_se(self.accuracy[-1, -1], axis=-1)
        return Estimate(float(mean), float(se), Null(float(self.reference[-1, 0]), PRIOR_RULE))


def transformer_scale_sweep(size: ICLSizes, run: Run) -> TransformerSweep:
    """Train every transformer size (replicas = seeds) on the analogue task, then score each on the same evaluation
    prompts (common random numbers) for every flipped fraction of context labels."""
    t = size.transformer
    prior = tf_prior(t.d)
    acc, params, losses = [], [], []
    for shape in t.shapes:
        model, history = train_icl_transformer(tf_config(shape, t), prior, t.tau, t.M, t.steps, t.batch,
                                         run.generator("tf_train", shape), replicas=t.seeds, lr=t.lr,
                                         device=run.device)
        a, ref = icl_flip_accuracy(model, prior, t.tau, t.M, size.flips, t.eval_prompts, run.generator("tf_eval"),
                                   device=run.device)
        acc.append(a.numpy())
        losses.append(history["final_loss"].double().numpy())
        params.append(sum(p[0].numel() for p in model.parameters()))
    return TransformerSweep(t.shapes, tuple(size.flips), np.stack(acc), ref.numpy(), params, np.stack(losses))

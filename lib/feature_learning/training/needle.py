"""Training the rotary decoder on the synthetic needle-in-a-haystack task (analogue of dissertation ch. 9).

Each step draws one haystack length n ~ U{n_min..n_max} and one prompt layout for the whole batch, so a batch needs
no padding. Mixing the key-last layout (the question token last: one layer can match it against the needles) with
the ask-last layout (question first, a fixed cue last: the cue must fetch the key before it can match) is a
curriculum: on ask-last prompts alone the model sits on a plateau at about 1/4 (a random needle's value) for
thousands of steps, the classic plateau before attention layers compose. The loss is the cross-entropy of the
two answer tokens [VAL v*] [END] under teacher forcing: the prompt's last position must predict the value, the value
position must predict END. Only the answer is supervised, as in instruction tuning.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from feature_learning.data.needle_haystack import NeedleVocab, needle_prompts
from feature_learning.models.rope_decoder import RopeDecoder
from feature_learning.training.loop import OptimConfig, train


@dataclasses.dataclass(frozen=True)
class NeedleTraining:
    steps: int
    batch: int = 64
    n_min: int = 4
    n_max: int = 64
    n_needles: int = 4
    layouts: tuple[str, ...] = ("key_last", "ask_last")  # one drawn uniformly per step
    lr: float = 3e-3
    warmup: int = 50
    clip_norm: float = 1.0
    log_every: int = 25


def answer_loss(model: RopeDecoder, tokens: torch.Tensor, answer: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced cross-entropy of the answer tokens and the exact-match rate of the greedy answer."""
    inputs = torch.cat([tokens, answer[:, :-1]], dim=1)
    logits = model(inputs)[:, -answer.shape[1] :]  # positions that predict the answer tokens
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), answer.reshape(-1))
    exact = (logits.argmax(-1) == answer).all(dim=1).float().mean()
    return loss, exact


def train_needle_decoder(model: RopeDecoder, recipe: NeedleTraining, generator: torch.Generator,
                         device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Train ``model`` in place with AdamW (constant rate after a linear warm-up, gradient clipping).

    Returns the history of the training loss and exact-match rate of the current batch (logged every
    ``recipe.log_every`` steps; the value logged at step s is from the batch of step s - 1).
    """
    vocab: NeedleVocab = model.config.vocab
    last = {"loss": torch.tensor(float("nan")), "exact": torch.tensor(float("nan"))}

    def loss_fn(step: int) -> torch.Tensor:
        n = int(torch.randint(recipe.n_min, recipe.n_max + 1, (1,), generator=generator))
        layout = recipe.layouts[int(torch.randint(len(recipe.layouts), (1,), generator=generator))]
        batch = needle_prompts(vocab, recipe.batch, n, generator, n_needles=recipe.n_needles, layout=layout)
        loss, exact = answer_loss(model, batch.tokens.to(device), batch.answer.to(device))
        last["loss"], last["exact"] = loss.detach(), exact.detach()
        return loss

    model.train()
    config = OptimConfig(steps=recipe.steps, lr=recipe.lr, weight_decay=0.0, betas=(0.9, 0.999),
                         warmup=recipe.warmup, clip_norm=recipe.clip_norm)
    history = train(list(model.parameters()), loss_fn, config, log_every=recipe.log_every,
                    log_fn=lambda step: dict(last))
    model.eval()
    return history

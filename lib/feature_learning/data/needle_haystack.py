"""A synthetic needle-in-a-haystack task for a tokenizer-free decoder (analogue of dissertation ch. 9, section 9.4.1).

The source hides the sentence "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a
sunny day." in Paul Graham essays and asks "What is the best thing to do in San Francisco?". Here a prompt is

    [BOS] filler ... needle(a, b, v) ... needle(a, b', v') ... filler [QA a] [QB b]        (the main protocol)
    [BOS] filler ... needle(a, b, v) ... needle(a, b', v') ... filler [QA a] [QB b] [ANS]  (answer cue last)

with one target needle at a chosen depth and three distractor needles whose keys share one half with the target's.
The answer is the two tokens [VAL v] [END], generated greedily. A needle token carries its key and its value; the
model's embedding is
factorised accordingly (:class:`feature_learning.models.rope_decoder.RopeDecoder`), a structured stand-in for the
sub-word tokens of a real sentence.
"""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class NeedleVocab:
    """Token ids: PAD, BOS, ANS, END, filler words, the two question tokens, needles (a, b, v), answer values.

    A needle's key is a pair (a, b) and the question is two tokens [QA a] [QB b], so the last prompt token knows
    only half of the key: it must first gather the other half from its predecessor, as the last token of a real
    question ("...Answer:") must gather the question before it can look for the answer.
    """

    n_filler: int = 32
    n_a: int = 8
    n_b: int = 8
    n_values: int = 16

    PAD: int = 0
    BOS: int = 1
    ANS: int = 2
    END: int = 3

    @property
    def filler0(self) -> int:
        return 4

    @property
    def qa0(self) -> int:
        return self.filler0 + self.n_filler

    @property
    def qb0(self) -> int:
        return self.qa0 + self.n_a

    @property
    def needle0(self) -> int:
        return self.qb0 + self.n_b

    @property
    def value0(self) -> int:
        return self.needle0 + self.n_a * self.n_b * self.n_values

    @property
    def size(self) -> int:
        return self.value0 + self.n_values

    def needle(self, a: torch.Tensor, b: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self.needle0 + (a * self.n_b + b) * self.n_values + value

    def value(self, value: torch.Tensor) -> torch.Tensor:
        return self.value0 + value

    def is_needle(self, tokens: torch.Tensor) -> torch.Tensor:
        return (tokens >= self.needle0) & (tokens < self.value0)


@dataclasses.dataclass(frozen=True)
class NeedlePrompts:
    tokens: torch.Tensor  # (B, T) prompt ids: [BOS] + haystack of n + [QA a] [QB b] (+ [ANS])
    answer: torch.Tensor  # (B, 2) the expected generation [VAL v*, END]
    needle_pos: torch.Tensor  # (B,) position of the target needle in ``tokens``
    distractor_pos: torch.Tensor  # (B, 3) positions of the distractor needles


def needle_prompts(
    vocab: NeedleVocab,
    batch: int,
    n: int,
    generator: torch.Generator,
    *,
    depth: float | None = None,
    answer_cue: bool = False,
) -> NeedlePrompts:
    """``batch`` prompts with a haystack of ``n`` tokens holding the target needle (a, b, v) and three distractors
    with keys (a, b'), (a', b) and (a'', b''), b' != b and a' != a, so that neither half of the key alone finds
    the target.

    ``depth`` in [0, 1] puts the target at haystack position round(depth (n - 1)) as in the source's depth grid
    (0% = first token after BOS, 100% = just before the question); ``None`` draws it uniformly. The distractors take
    uniformly random other haystack positions. ``answer_cue`` appends [ANS] after the question, like the source's
    final "Answer:".
    """
    if n < 4:
        raise ValueError(f"a haystack of {n} tokens cannot hold 4 needles")
    if vocab.n_a < 2 or vocab.n_b < 2:
        raise ValueError("distractors need at least two values of each key half")
    B = batch

    def other(x: torch.Tensor, size: int) -> torch.Tensor:  # uniform over {0..size-1} minus x
        return (x + 1 + torch.randint(size - 1, x.shape, generator=generator)) % size

    filler = vocab.filler0 + torch.randint(vocab.n_filler, (B, n), generator=generator)
    a = torch.randint(vocab.n_a, (B,), generator=generator)
    b = torch.randint(vocab.n_b, (B,), generator=generator)
    keys_a = torch.stack([a, a, other(a, vocab.n_a), torch.randint(vocab.n_a, (B,), generator=generator)], dim=1)
    keys_b = torch.stack([b, other(b, vocab.n_b), b, other(b, vocab.n_b)], dim=1)
    values = torch.randint(vocab.n_values, (B, 4), generator=generator)
    if depth is None:
        target = torch.randint(n, (B,), generator=generator)
    else:
        if not 0.0 <= depth <= 1.0:
            raise ValueError(f"depth must lie in [0, 1], got {depth}")
        target = torch.full((B,), round(depth * (n - 1)), dtype=torch.long)
    # Distractors: a random order of the other positions, the first three of them.
    scores = torch.rand(B, n, generator=generator)
    scores[torch.arange(B), target] = 2.0  # the target sorts last, never a distractor
    others = scores.argsort(dim=1)[:, :3]
    positions = torch.cat([target[:, None], others], dim=1)
    haystack = filler.scatter(1, positions, vocab.needle(keys_a, keys_b, values))
    parts = [torch.full((B, 1), vocab.BOS), haystack, (vocab.qa0 + a)[:, None], (vocab.qb0 + b)[:, None]]
    if answer_cue:
        parts.append(torch.full((B, 1), vocab.ANS))
    tokens = torch.cat(parts, dim=1)
    answer = torch.cat([vocab.value(values[:, :1]), torch.full((B, 1), vocab.END)], dim=1)
    return NeedlePrompts(tokens=tokens, answer=answer, needle_pos=target + 1, distractor_pos=others + 1)

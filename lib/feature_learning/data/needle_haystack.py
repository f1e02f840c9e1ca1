"""A synthetic needle-in-a-haystack task for a tokenizer-free decoder (analogue of dissertation ch. 9, section 9.4.1).

The source hides the sentence "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a
sunny day." in Paul Graham essays and asks "What is the best thing to do in San Francisco?". Here a prompt is

    [BOS] [QKEY k] filler ... needle(k, v) ... needle(k', v') ... filler [ASK]   (the main layout)
    [BOS] filler ... needle(k, v) ... needle(k', v') ... filler [QKEY k]         (key last)

with one target needle at a chosen depth and a few distractor needles with other keys. The answer is the two tokens
[VAL v] [END], generated greedily. A needle token carries its key and its value; the model's embedding is
factorised accordingly (:class:`feature_learning.models.rope_decoder.RopeDecoder`), a structured stand-in for the
sub-word tokens of a real sentence.
"""

from __future__ import annotations

import dataclasses

import torch

LAYOUTS = ("ask_last", "key_last")


@dataclasses.dataclass(frozen=True)
class NeedleVocab:
    """Token ids: PAD, BOS, ASK, END, filler words, question keys, needles (key, value) and answer values."""

    n_filler: int = 32
    n_keys: int = 16
    n_values: int = 16

    PAD: int = 0
    BOS: int = 1
    ASK: int = 2
    END: int = 3

    @property
    def filler0(self) -> int:
        return 4

    @property
    def qkey0(self) -> int:
        return self.filler0 + self.n_filler

    @property
    def needle0(self) -> int:
        return self.qkey0 + self.n_keys

    @property
    def value0(self) -> int:
        return self.needle0 + self.n_keys * self.n_values

    @property
    def size(self) -> int:
        return self.value0 + self.n_values

    def needle(self, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self.needle0 + key * self.n_values + value

    def value(self, value: torch.Tensor) -> torch.Tensor:
        return self.value0 + value

    def is_needle(self, tokens: torch.Tensor) -> torch.Tensor:
        return (tokens >= self.needle0) & (tokens < self.value0)

    def name(self, token: int) -> str:
        """A readable name: <bos>, <ask>, <end>, "." for filler, KEY3, [3:7] for the needle (key 3, value 7), VAL7."""
        special = {self.PAD: "<pad>", self.BOS: "<bos>", self.ASK: "<ask>", self.END: "<end>"}
        if token in special:
            return special[token]
        if self.filler0 <= token < self.qkey0:
            return "."
        if self.qkey0 <= token < self.needle0:
            return f"KEY{token - self.qkey0}"
        if self.needle0 <= token < self.value0:
            key, value = divmod(token - self.needle0, self.n_values)
            return f"[{key}:{value}]"
        return f"VAL{token - self.value0}"

    def text(self, tokens) -> str:
        """The names of a sequence of token ids, separated by spaces."""
        return " ".join(self.name(int(t)) for t in tokens)


@dataclasses.dataclass(frozen=True)
class NeedlePrompts:
    tokens: torch.Tensor  # (B, T) prompt ids
    answer: torch.Tensor  # (B, 2) the expected generation [VAL v*, END]
    needle_pos: torch.Tensor  # (B,) position of the target needle in ``tokens``
    distractor_pos: torch.Tensor  # (B, P-1) positions of the distractor needles


def needle_prompts(
    vocab: NeedleVocab,
    batch: int,
    n: int,
    generator: torch.Generator,
    *,
    depth: float | None = None,
    n_needles: int = 4,
    layout: str = "ask_last",
) -> NeedlePrompts:
    """``batch`` prompts with a haystack of ``n`` tokens holding ``n_needles`` needles with distinct keys.

    ``layout="ask_last"``: [BOS] [QKEY k*] haystack [ASK], the question first and a fixed cue last, like the
    source's prompt, which ends in "Answer:" (the question stated before the haystack cannot see it: the last
    token must fetch the key, then find the needle). ``"key_last"``: [BOS] haystack [QKEY k*].
    ``depth`` in [0, 1] puts the target at haystack position round(depth (n - 1)) as in the source's depth grid
    (0% = first haystack token, 100% = last); ``None`` draws it uniformly. Distractors take uniformly random other
    haystack positions.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if n < n_needles:
        raise ValueError(f"a haystack of {n} tokens cannot hold {n_needles} needles")
    if n_needles > vocab.n_keys:
        raise ValueError(f"{n_needles} needles need distinct keys but the vocabulary has {vocab.n_keys}")
    B = batch
    filler = vocab.filler0 + torch.randint(vocab.n_filler, (B, n), generator=generator)
    keys = torch.rand(B, vocab.n_keys, generator=generator).argsort(dim=1)[:, :n_needles]
    values = torch.randint(vocab.n_values, (B, n_needles), generator=generator)
    if depth is None:
        target = torch.randint(n, (B,), generator=generator)
    else:
        if not 0.0 <= depth <= 1.0:
            raise ValueError(f"depth must lie in [0, 1], got {depth}")
        target = torch.full((B,), round(depth * (n - 1)), dtype=torch.long)
    # Distractors: a random order of the other positions, the first n_needles - 1 of them.
    scores = torch.rand(B, n, generator=generator)
    scores[torch.arange(B), target] = 2.0  # the target sorts last, never a distractor
    others = scores.argsort(dim=1)[:, : n_needles - 1]
    haystack = filler.scatter(1, torch.cat([target[:, None], others], dim=1), vocab.needle(keys, values))
    bos, question = torch.full((B, 1), vocab.BOS), vocab.qkey0 + keys[:, :1]
    if layout == "ask_last":
        tokens = torch.cat([bos, question, haystack, torch.full((B, 1), vocab.ASK)], dim=1)
        offset = 2
    else:
        tokens = torch.cat([bos, haystack, question], dim=1)
        offset = 1
    answer = torch.cat([vocab.value(values[:, :1]), torch.full((B, 1), vocab.END)], dim=1)
    return NeedlePrompts(tokens=tokens, answer=answer, needle_pos=target + offset, distractor_pos=others + offset)

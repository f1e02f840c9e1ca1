"""Run profiles: how big a chapter runs.

Every chapter notebook has a papermill ``parameters`` cell with ``profile``, ``seed`` and ``device``.
The profile picks the sizes (never hand edits):

* ``ci``   -- about two minutes on two CPU cores; what CI executes.
* ``book`` -- what the HTML book shows; minutes on a laptop CPU.
* ``full`` -- the source's scale where a CPU allows it, otherwise meant for a CUDA device.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
import torch

PROFILES = ("ci", "book", "full")
T = TypeVar("T")


class ParameterError(ValueError):
    """A notebook parameter has a value that makes no sense; the message names it and what is allowed."""


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ParameterError(f"parameter 'profile' is {profile!r}; allowed values: {', '.join(PROFILES)}")
    return profile


def check_int(name: str, value: Any, *, minimum: int, maximum: int | None = None) -> int:
    """Validate an integer notebook parameter, naming it in the error."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"parameter {name!r} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ParameterError(f"parameter {name!r} is {value}; it must be >= {minimum}{upper}")
    return int(value)


def check_choice(name: str, value: Any, allowed: tuple) -> Any:
    if value not in allowed:
        raise ParameterError(f"parameter {name!r} is {value!r}; allowed values: {', '.join(map(str, allowed))}")
    return value


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, else the CPU; ``cpu``/``cuda``/``cuda:N`` are taken as given."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" or device.startswith("cuda"):
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ParameterError(f"parameter 'device' is {device!r} but CUDA is not available; use 'auto' or 'cpu'")
        return torch.device(device)
    raise ParameterError(f"parameter 'device' is {device!r}; allowed values: auto, cpu, cuda, cuda:N")


def by_profile(profile: str, table: Mapping[str, T]) -> T:
    """Look up the sizes of ``profile`` in a ``{profile: sizes}`` table that must cover every profile."""
    check_profile(profile)
    missing = [p for p in PROFILES if p not in table]
    if missing:
        raise ParameterError(f"the size table has no entry for profile(s) {missing}")
    return table[profile]


@dataclasses.dataclass(frozen=True)
class Run:
    """The validated parameters of one chapter run."""

    profile: str
    seed: int
    device: torch.device

    def generator(self, offset: int = 0) -> torch.Generator:
        """A fresh CPU generator seeded from the run seed; ``offset`` separates independent streams."""
        return torch.Generator().manual_seed(self.seed * 1_000_003 + offset)


def start_run(profile: str, seed: int, device: str = "auto") -> Run:
    """Validate the ``parameters`` cell and seed every global generator (for code we do not control)."""
    check_profile(profile)
    seed = check_int("seed", seed, minimum=0, maximum=2**31 - 1)
    dev = resolve_device(device)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return Run(profile=profile, seed=seed, device=dev)

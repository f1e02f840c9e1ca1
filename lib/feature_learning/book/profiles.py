"""Run profiles: how big a chapter runs.

Every chapter notebook has a papermill ``parameters`` cell with ``profile``, ``seed`` and ``device``.
The profile picks the sizes (never hand edits):

* ``ci``   -- about two minutes on two CPU cores; what CI executes.
* ``book`` -- what the HTML book shows; minutes on a laptop CPU.
* ``full`` -- the source's scale where a CPU allows it, otherwise meant for a CUDA device.
"""

from __future__ import annotations

import dataclasses
import hashlib
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


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, else the CPU; ``cpu``/``cuda``/``cuda:N`` are taken as given."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" or device.startswith("cuda"):
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ParameterError(f"parameter 'device' is {device!r} but CUDA is not available; use 'auto' or 'cpu'")
        return torch.device(device)
    raise ParameterError(f"parameter 'device' is {device!r}; allowed values: auto, cpu, cuda, cuda:N")


def override(base: T, /, **changes: Any) -> T:
    """``dataclasses.replace`` that reaches into nested size dataclasses: a dict given for a field that holds a
    dataclass replaces fields inside it. Profiles are written as overrides of ``book``, each with its reason::

        CI = override(BOOK, steps=600,  # a third of the book's steps: CI time
                      mixture={"seeds": 2})  # two seeds instead of five
    """
    updates = {}
    for name, value in changes.items():
        current = getattr(base, name, None)
        if isinstance(value, Mapping) and dataclasses.is_dataclass(current):
            value = override(current, **value)
        updates[name] = value
    return dataclasses.replace(base, **updates)


def differences(table: Mapping[str, Any], reference: str = "book") -> list[tuple[str, dict[str, Any]]]:
    """The size fields (dotted paths into nested dataclasses) on which some profile differs from ``reference``, with
    every profile's value: ``[("mixture.seeds", {"ci": 2, "book": 5, "full": 10}), ...]``."""
    def flat(value, prefix=""):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out = {}
            for field in dataclasses.fields(value):
                out.update(flat(getattr(value, field.name), f"{prefix}{field.name}."))
            return out
        return {prefix[:-1]: value}

    flats = {profile: flat(sizes) for profile, sizes in table.items()}
    base = flats[reference]
    rows = []
    for path in base:
        values = {profile: f.get(path) for profile, f in flats.items()}
        if any(v != base[path] for v in values.values()):
            rows.append((path, values))
    return rows


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

    def stream_seed(self, name: str, *keys: Any) -> int:
        """The seed of the random stream ``name`` (with optional keys, e.g. ``("mixture", 3)``) of this run.

        Named streams document themselves and cannot collide, whatever a profile's sizes: the seed is a hash of
        (run seed, name, keys)."""
        if not isinstance(name, str):
            raise TypeError(f"stream name: {name!r}; a stream is named by a string, e.g. run.generator('init')")
        digest = hashlib.blake2b(repr((self.seed, name, *keys)).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") & (2**63 - 1)

    def generator(self, name: str, *keys: Any) -> torch.Generator:
        """A fresh CPU ``torch.Generator`` for the stream ``name`` (see :meth:`stream_seed`)."""
        return torch.Generator().manual_seed(self.stream_seed(name, *keys))

    def device_generator(self, name: str, *keys: Any) -> torch.Generator:
        """A fresh ``torch.Generator`` on the run's device for the stream ``name``: draws made with it (pass
        ``device=generator.device`` to the sampler) are made where they are used, not on the CPU and then copied.

        On the CPU it is exactly :meth:`generator` (same seed, same numbers); so is it on a device without
        generators of its own (``meta``, the pretend accelerator of :mod:`feature_learning.build.device_audit`).
        On CUDA the stream has the same seed but CUDA's generator, so the draws differ from the CPU's (same
        distribution): use it where a run's verdicts and bounds do not depend on the particular draws."""
        device = self.device if self.device.type not in ("cpu", "meta") else torch.device("cpu")
        return torch.Generator(device=device).manual_seed(self.stream_seed(name, *keys))

    def numpy_rng(self, name: str, *keys: Any) -> np.random.Generator:
        """A fresh NumPy generator for the stream ``name`` (see :meth:`stream_seed`)."""
        return np.random.default_rng(self.stream_seed(name, *keys))


def start_run(profile: str, seed: int, device: str = "auto") -> Run:
    """Validate the ``parameters`` cell and seed every global generator (for code we do not control)."""
    check_profile(profile)
    seed = check_int("seed", seed, minimum=0, maximum=2**31 - 1)
    dev = resolve_device(device)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return Run(profile=profile, seed=seed, device=dev)

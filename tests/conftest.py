"""Fixtures shared by every test folder."""

import pytest
import torch


@pytest.fixture
def gen():
    """A factory of seeded CPU generators: ``gen(seed=0) -> torch.Generator`` (a fresh one per call)."""

    def make(seed: int = 0) -> torch.Generator:
        return torch.Generator().manual_seed(seed)

    return make

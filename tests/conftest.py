"""Session fixtures; the shared helpers themselves are in ``tests/_support.py``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ._support import compiled, hf_tokenizer  # noqa: F401  (older test modules import them here)


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests never read or write the user's cache."""
    old = os.environ.get("GRAMASK_CACHE_DIR")
    os.environ["GRAMASK_CACHE_DIR"] = str(tmp_path_factory.mktemp("gramask-cache"))
    yield
    if old is None:
        os.environ.pop("GRAMASK_CACHE_DIR", None)
    else:
        os.environ["GRAMASK_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Two shared cores: torch's OpenMP threads spin against other processes and make a 1 s
    generate take 10 s. One thread is faster here and changes no result."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)

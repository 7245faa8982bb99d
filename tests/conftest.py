"""Session fixtures; the shared helpers themselves are in ``tests/_support.py``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from ._support import compiled, hf_tokenizer  # noqa: F401  (older test modules import them here)

# CI runs each property test on the same examples every time (a red CI is then a finding that
# reproduces, not a draw); a developer's runs keep drawing new ones
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests never read or write the user's cache. Parallel workers (pytest-xdist) share one
    cache directory: each grammar is compiled once per run, and the cache's atomic writes are
    exercised by concurrent processes as a server's workers would."""
    old = os.environ.get("GRAMASK_CACHE_DIR")
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's temp dir, above each worker's own
    cache = base / "gramask-cache"
    cache.mkdir(exist_ok=True)
    os.environ["GRAMASK_CACHE_DIR"] = str(cache)
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

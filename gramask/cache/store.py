"""The on-disk compile cache: one artifact per content hash of (grammar, vocabulary, versions).

Where: ``$GRAMASK_CACHE_DIR``, else the user cache directory of the platform (platformdirs:
``$XDG_CACHE_HOME/gramask`` or ``~/.cache/gramask`` on Linux), read when a cache is used,
never at import. An entry that fails to load (corrupt, truncated,
another format, or a header whose key does not match) is reported with a warning, removed and
rebuilt. Two processes building the same key both write atomically; the last rename wins and
both files are complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from pathlib import Path

from ..artifact import read_artifact
from ..errors import ArtifactError

__all__ = ["CacheWarning", "cache_key", "cached_path", "default_cache_dir"]


class CacheWarning(UserWarning):
    """A cache entry was unusable and is being rebuilt."""


def default_cache_dir() -> Path:
    env = os.environ.get("GRAMASK_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("gramask", appauthor=False))


def cache_key(*, grammar_hash: str, vocab_hash: str, format_version: int, version: str) -> str:
    body = json.dumps(
        {
            "grammar": grammar_hash,
            "vocab": vocab_hash,
            "format": format_version,
            "gramask": version,
        },
        sort_keys=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def cached_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"{key[:32]}.gmask"


def report_bad_entry(path: Path, err: ArtifactError | str) -> None:
    """Warn and remove the entry, unless another process has replaced it with a good one
    since it was read (concurrent compiles of one key: do not delete a fresh rebuild)."""
    warnings.warn(f"gramask cache entry {path} is unusable ({err}); rebuilding", CacheWarning,
                  stacklevel=3)
    try:
        read_artifact(path)
    except ArtifactError:
        with contextlib.suppress(OSError):
            path.unlink()

"""The ``.gmask`` artifact: named numpy arrays + one JSON header, in a zip, never pickled.

Layout: an ``.npz`` archive (``numpy.savez_compressed``) whose member ``__header__`` holds the
UTF-8 JSON header: format version, gramask version, hashes, build time, and a SHA-256 over
every other array's dtype, shape and bytes. Loading uses ``allow_pickle=False``, checks the
format version (:class:`ArtifactVersionError`) and the checksum (:class:`ArtifactError`), so a
truncated, corrupt or foreign file is reported, never trusted. Writes are atomic.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ArtifactError, ArtifactVersionError

__all__ = ["FORMAT_VERSION", "atomic_write_bytes", "read_artifact", "write_artifact"]

FORMAT_VERSION = 3  # 2: end classes carry follow-after-ignored terminals; 3: lexer mode, accepting sets
MAGIC = "gramask-artifact"


def _checksum(arrays: Mapping[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(str(a.dtype.str).encode())
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_artifact(
    path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray], header: Mapping[str, Any]
) -> int:
    """Write atomically; returns the number of bytes written."""
    for name, a in arrays.items():
        if np.asarray(a).dtype == object:
            raise TypeError(f"array {name!r} has dtype object; artifacts hold plain arrays only")
    head = dict(header)
    head["magic"] = MAGIC
    head["format_version"] = FORMAT_VERSION
    head["checksum"] = _checksum(arrays)
    buf = io.BytesIO()
    payload = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    payload["__header__"] = np.frombuffer(json.dumps(head, sort_keys=True).encode(), np.uint8)
    np.savez_compressed(buf, **payload)  # type: ignore[arg-type]  # numpy's stub
    data = buf.getvalue()
    atomic_write_bytes(path, data)
    return len(data)


def read_artifact(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read and verify an artifact.

    Raises
    ------
    ArtifactError
        Missing, truncated, corrupt (checksum) or not a gramask artifact.
    ArtifactVersionError
        Written by an incompatible artifact format version.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such artifact") from None
    except OSError as e:
        raise ArtifactError(f"{path}: cannot read: {e}") from None
    if not raw.startswith(b"PK"):
        raise ArtifactError(f"{path}: not a gramask artifact")
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            if "__header__" not in z.files:
                raise ArtifactError(f"{path}: not a gramask artifact (no header)")
            header = json.loads(bytes(z["__header__"]).decode())
            if not isinstance(header, dict) or header.get("magic") != MAGIC:
                raise ArtifactError(f"{path}: not a gramask artifact")
            version = header.get("format_version")
            if version != FORMAT_VERSION:
                raise ArtifactVersionError(
                    f"{path}: artifact format {version}, this gramask reads format "
                    f"{FORMAT_VERSION}; recompile it"
                )
            arrays = {k: z[k] for k in z.files if k != "__header__"}
    except (ArtifactError, ArtifactVersionError):
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{path}: corrupt or truncated artifact ({e})") from None
    if _checksum(arrays) != header.get("checksum"):
        raise ArtifactError(f"{path}: checksum mismatch; the artifact is corrupt")
    return arrays, header

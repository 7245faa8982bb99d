"""The ``.gmask`` artifact format: named numpy arrays + one JSON header, in a zip, never pickled.

Layout (format 3): a zip archive of ``.npy`` members (``numpy.savez_compressed``); the member
``__header__`` holds the UTF-8 JSON header: magic, format version, gramask version, hashes,
build time, and a SHA-256 over the header itself (minus the checksum field) and every other
array's name, dtype, shape and bytes.

Reading trusts nothing: member sizes declared in the zip directory are checked against a
budget before anything is decompressed (a zip bomb costs no memory), members are read with
``allow_pickle=False``, every decompression or zip error, wrong-typed header field, checksum
mismatch and out-of-range index in the arrays becomes :class:`~gramask.ArtifactError`, and a
format mismatch :class:`~gramask.ArtifactVersionError`. Indices are checked here, at load, so
that a hand-made artifact with a valid checksum cannot fail later inside ``mask``.

Writes go to regular files only, atomically (temporary file beside the target, fsync,
rename): a symlink is resolved and its target replaced; a FIFO, device or directory is
refused with :class:`~gramask.ArtifactError` (write :func:`encode_artifact`'s bytes yourself if
you mean it). New files get ``0o666`` minus the umask; a replaced file keeps its mode.
Temporary files left by killed writers are removed by the next write of the same target.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import os
import stat
import struct
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from .errors import ArtifactError, ArtifactVersionError

__all__ = [
    "FORMAT_VERSION",
    "MAX_EXPANSION",
    "MIN_DECOMPRESSED_BUDGET",
    "atomic_write_bytes",
    "decode_artifact",
    "encode_artifact",
    "read_artifact",
    "validate_contents",
    "write_artifact",
]

FORMAT_VERSION = 15  # 15: a Lark keyword beats its regex even where one rule derives both (x: NAME | "nil"), as lark's contextual unless does, outside the reserved-keywords mode, so a cached lexer of such a grammar may differ; 14: in lark's order, a string a regex renames without folding it ("sel"i beside /[a-z]+/) no longer lengthens the regex's lexeme past the cut (seL is se, L), so a cached basic lexer of such a grammar may differ; 13: a terminal with a lazy repeat is read leftmost-first, as re matches it (alternatives in their order, greedy and lazy repeats mixed, overlapping alternatives inside a lazy repeat), so a cached lexer of such a grammar may differ; 12: a lazy head before a tail that may match nothing ends at its first match (".*?"i?), and a string terminal an %ignore'd regex of its priority matches whole is dropped at load, as lark never lexes it; 11: a lazy terminal's alternatives that start alike (--\[\[.*?\]\]|--[^\n]*) each end at their first match (re's parser had merged them into one mixed, greedy alternative), and the contextual end classes count an ignored terminal's ends where it loses the whole lexer's tie (a cached split may differ); 10: the basic mode's end classes are split where a lexeme in progress may also end as an ignored one, and by one needs_end_search for compiler and runtime (a cached split of such a grammar may differ); Unicode-heavy terminals determinised over code points (the same automata, numbered differently); 9: case-insensitive characters fold as Python re folds them (/k/i matches the Kelvin sign; ASCII only under the a flag), so a cached lexer of an (?i) terminal may differ; 8: the lexer never re-enters its start state (a lexeme leading back to the start set gets its own state); 7: contextual end classes kept apart by what may follow their ignored lexemes; 6: contextual tables for indentation grammars (lex_nl); 5: newline heads count tabs and spaces apart; 4: lexer mode, accepting
# sets, contextual tables; 3: the checksum covers the header; 2: end classes past ignored terminals
MAGIC = "gramask-artifact"
HEADER = "__header__"

# Decompressed size budget: real artifacts expand 3-6x (lexer transition rows, mostly -1,
# compress best). A member set declaring more than this is refused before decompressing.
MAX_EXPANSION = 64
MIN_DECOMPRESSED_BUDGET = 256 << 20
MAX_MEMBERS = 64
STALE_TEMP_SECONDS = 3600.0


# ---------------------------------------------------------------------------------- checksum
def _checksum(arrays: Mapping[str, np.ndarray], header: Mapping[str, Any]) -> str:
    h = hashlib.sha256()
    head = {k: v for k, v in header.items() if k != "checksum"}
    h.update(json.dumps(head, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(b"\0" + name.encode() + b"\0")
        h.update(str(a.dtype.str).encode())
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


# ---------------------------------------------------------------------------------- writing
def _umask() -> int:
    mask = os.umask(0o022)  # the only portable way to read it is to set it
    os.umask(mask)
    return mask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_temps(target: Path) -> None:
    """Remove ``.{name}.{pid}.*.tmp`` files beside ``target`` whose writer is gone (its pid
    is not running, or the file is older than an hour; without a pid: only the age)."""
    now = time.time()
    for tmp in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        pid_text = tmp.name[len(target.name) + 2 :].split(".")[0]
        try:
            age = now - tmp.stat().st_mtime
        except OSError:
            continue
        dead = pid_text.isdigit() and not _pid_alive(int(pid_text))
        if dead or age > STALE_TEMP_SECONDS:
            with contextlib.suppress(OSError):
                tmp.unlink()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to the regular file at ``path`` atomically; returns the path written.

    A symlink is followed (its target is replaced, the link stays). Raises
    :class:`ArtifactError` if the target exists and is not a regular file (FIFO, device,
    directory, socket): renaming over it would destroy it, writing into it is not atomic.
    """
    path = Path(os.path.realpath(os.fspath(path)))
    mode: int | None = None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise ArtifactError(
                f"cannot write an artifact to {path}: not a regular file "
                "(gramask writes artifacts only to regular files)"
            )
        mode = stat.S_IMODE(st.st_mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode if mode is not None else 0o666 & ~_umask())
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def encode_artifact(arrays: Mapping[str, np.ndarray], header: Mapping[str, Any]) -> bytes:
    """The artifact's bytes (what :func:`write_artifact` writes)."""
    for name, a in arrays.items():
        if np.asarray(a).dtype == object:
            raise TypeError(f"array {name!r} has dtype object; artifacts hold plain arrays only")
        if name == HEADER:
            raise ValueError(f"{HEADER!r} is reserved")
    head = dict(header)
    head["magic"] = MAGIC
    head["format_version"] = FORMAT_VERSION
    head.pop("checksum", None)
    payload = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    head["checksum"] = _checksum(payload, head)
    payload[HEADER] = np.frombuffer(json.dumps(head, sort_keys=True).encode(), np.uint8)
    # np.savez_compressed's layout (one .npy member per array), at deflate level 1: 5x faster
    # than its default level for 2% more bytes (the python artifact: 0.5 s vs 2.7 s, 7.4 MB)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, a in payload.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)
    return buf.getvalue()


def write_artifact(
    path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray], header: Mapping[str, Any]
) -> int:
    """Write atomically (see :func:`atomic_write_bytes`); returns the number of bytes written."""
    data = encode_artifact(arrays, header)
    atomic_write_bytes(path, data)
    return len(data)


# ---------------------------------------------------------------------------------- reading
def _budget(compressed: int) -> int:
    return max(MIN_DECOMPRESSED_BUDGET, MAX_EXPANSION * compressed)


def _read_npy(f: IO[bytes], size: int, where: str) -> np.ndarray:
    """One ``.npy`` member; the shape its header declares must fit the member's size."""
    fmt = np.lib.format
    version = fmt.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = fmt.read_array_header_2_0(f)
    else:
        raise ArtifactError(f"{where}: unsupported .npy version {version}")
    if dtype.hasobject:
        raise ArtifactError(f"{where}: holds Python objects (pickle); refused")
    count = 1
    for d in shape:
        count *= int(d)
    nbytes = count * dtype.itemsize
    if nbytes > size:
        raise ArtifactError(f"{where}: declares {nbytes:,} bytes in a {size:,}-byte member")
    data = f.read(nbytes)
    if len(data) != nbytes:
        raise ArtifactError(f"{where}: truncated")
    a = np.frombuffer(data, dtype=dtype).copy()
    return a.reshape(shape, order="F" if fortran else "C")


def _members(where: str, raw: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Unzip and parse, with every size checked before anything is decompressed."""
    z = zipfile.ZipFile(io.BytesIO(raw))
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArtifactError(f"{where}: {len(infos)} members; not a gramask artifact")
    names = [i.filename for i in infos]
    if len(set(names)) != len(names) or not all(n.endswith(".npy") for n in names):
        raise ArtifactError(f"{where}: unexpected or repeated members; not a gramask artifact")
    declared = sum(i.file_size for i in infos)
    if declared > _budget(len(raw)):
        raise ArtifactError(
            f"{where}: members declare {declared:,} bytes uncompressed from a "
            f"{len(raw):,}-byte file (limit {_budget(len(raw)):,}); refusing to decompress"
        )
    for i in infos:
        if i.flag_bits & 0x1:
            raise ArtifactError(f"{where}: encrypted member {i.filename!r}")
        if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ArtifactError(f"{where}: member {i.filename!r} uses an unknown compression")
    if HEADER + ".npy" not in names:
        raise ArtifactError(f"{where}: not a gramask artifact (no header)")
    arrays: dict[str, np.ndarray] = {}
    for i in infos:
        with z.open(i) as f:
            a = _read_npy(f, i.file_size, f"{where}: member {i.filename!r}")
            if f.read(1):  # also makes zipfile check the member's CRC
                raise ArtifactError(f"{where}: member {i.filename!r} has trailing bytes")
        arrays[i.filename[: -len(".npy")]] = a
    head_arr = arrays.pop(HEADER)
    if head_arr.dtype != np.uint8 or head_arr.ndim != 1:
        raise ArtifactError(f"{where}: not a gramask artifact (header is not JSON bytes)")
    header = json.loads(head_arr.tobytes().decode())
    if not isinstance(header, dict) or header.get("magic") != MAGIC:
        raise ArtifactError(f"{where}: not a gramask artifact")
    return arrays, header


def read_artifact(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read and verify an artifact: sizes, checksum, header types, array indices.

    Raises
    ------
    ArtifactError
        Missing, truncated, corrupt, oversized, inconsistent or not a gramask artifact.
    ArtifactVersionError
        Written by an incompatible artifact format version.
    """
    path = Path(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ArtifactError(f"{path}: not a regular file")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such artifact") from None
    except OSError as e:
        raise ArtifactError(f"{path}: cannot read: {e}") from None
    return decode_artifact(raw, str(path))


def decode_artifact(
    raw: bytes, where: str = "<bytes>"
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """:func:`read_artifact` on bytes already in memory."""
    if not raw.startswith(b"PK"):
        raise ArtifactError(f"{where}: not a gramask artifact")
    try:
        arrays, header = _members(where, raw)
    except ArtifactError:
        raise
    except (zipfile.BadZipFile, zlib.error, struct.error, ValueError, OSError, EOFError,
            KeyError, UnicodeDecodeError, NotImplementedError, OverflowError,
            RecursionError) as e:
        raise ArtifactError(f"{where}: corrupt or truncated artifact ({e})") from None
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise ArtifactVersionError(
            f"{where}: artifact format {version}, this gramask reads format "
            f"{FORMAT_VERSION}; recompile it"
        )
    if _checksum(arrays, header) != header.get("checksum"):
        raise ArtifactError(f"{where}: checksum mismatch; the artifact is corrupt")
    try:
        validate_contents(arrays, header)
    except ArtifactError as e:
        raise ArtifactError(f"{where}: {e}") from None
    return arrays, header


# ---------------------------------------------------------------------------------- validation
def _typed(obj: Any, schema: Mapping[str, Callable[[Any], bool]], where: str) -> None:
    if not isinstance(obj, dict):
        raise ArtifactError(f"header field {where} is not an object")
    for key, ok in schema.items():
        if not ok(obj.get(key)):
            raise ArtifactError(f"header field {where}.{key} is missing or has the wrong type")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_str(x: Any) -> bool:
    return isinstance(x, str)


def _is_strs(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(s, str) for s in x)


def _opt(f: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: x is None or f(x)


_TERMINAL = {
    "name": _is_str,
    "pattern": _is_str,
    "is_string": lambda x: isinstance(x, bool),
    "priority": _is_int,
    "ignored": lambda x: isinstance(x, bool),
    "automaton": _opt(_is_str),  # JSON string terminals only (grammar.TerminalSpec)
    "first_match": _opt(lambda x: isinstance(x, bool)),  # Lark terminals read as re reads them
    "unicode_categories": _opt(lambda x: isinstance(x, bool)),  # re's \d, \w, \s
}
_INDENT = {
    "newline": _is_str, "indent": _is_str, "dedent": _is_str, "open_brackets": _is_strs,
    "close_brackets": _is_strs, "tab_len": _is_int, "continuation": _is_str,
    "cpython_ends": _opt(lambda x: isinstance(x, bool)),  # written only when off (lark's reading)
}


def _check_header(h: Mapping[str, Any]) -> None:
    _typed(h, {
        "checksum": _is_str, "gramask_version": _is_str, "grammar_hash": _is_str,
        "vocab_hash": _is_str, "grammar": lambda x: isinstance(x, dict),
        "vocab": lambda x: isinstance(x, dict), "parse_tables": lambda x: isinstance(x, dict),
    }, "header")
    if not isinstance(h.get("info", {}), dict):
        raise ArtifactError("header field header.info has the wrong type")
    g = h["grammar"]
    _typed(g, {
        "terminals": lambda x: isinstance(x, list), "start": _is_str,
        "rules": lambda x: isinstance(x, list), "declared": _opt(_is_strs),
        "indentation": _opt(lambda x: isinstance(x, dict)), "source": _opt(_is_str),
        "reserved_keywords": _opt(lambda x: isinstance(x, bool)),
        "keywords_win": _opt(lambda x: isinstance(x, bool)),
        "lark_order": _opt(lambda x: isinstance(x, list) and all(
            isinstance(e, list) and e and _is_strs(e) for e in x)),
    }, "grammar")
    for i, t in enumerate(g["terminals"]):
        _typed(t, _TERMINAL, f"grammar.terminals[{i}]")
        if set(t) - set(_TERMINAL):
            raise ArtifactError(f"header field grammar.terminals[{i}] has unknown keys")
    for i, r in enumerate(g["rules"]):
        if not (isinstance(r, list) and len(r) == 2 and _is_str(r[0]) and _is_strs(r[1])):
            raise ArtifactError(f"header field grammar.rules[{i}] is not [lhs, [symbols]]")
    if g.get("indentation") is not None:
        _typed(g["indentation"], _INDENT, "grammar.indentation")
        if set(g["indentation"]) - set(_INDENT):
            raise ArtifactError("header field grammar.indentation has unknown keys")
    _typed(h["vocab"], {"name": _opt(_is_str), "eos_token_id": _opt(_is_int), "size": _is_int},
           "vocab")
    _typed(h["parse_tables"], {"symbols": _is_strs, "num_terminals": _is_int,
                               "start_state": _is_int}, "parse_tables")


def _arr(arrays: Mapping[str, np.ndarray], name: str, shape: tuple[int | None, ...],
         kind: str) -> np.ndarray:
    a = arrays.get(name)
    if a is None:
        raise ArtifactError(f"array {name!r} is missing")
    if a.dtype.kind not in kind or a.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(a.shape, shape, strict=True)
    ):
        raise ArtifactError(f"array {name!r} has dtype {a.dtype} and shape {a.shape}, expected "
                            f"kind {kind!r} and shape {shape}")
    return a


def _in_range(name: str, a: np.ndarray, lo: int, hi: int) -> None:
    """Every value in [lo, hi)."""
    if a.size and (int(a.min()) < lo or int(a.max()) >= hi):
        raise ArtifactError(f"array {name!r} holds values outside [{lo}, {hi})")


def _csr(name: str, indptr: np.ndarray, n_rows: int, nnz: int) -> None:
    if indptr.shape != (n_rows + 1,) or (indptr.size and (
            int(indptr[0]) != 0 or int(indptr[-1]) != nnz or bool(np.any(np.diff(indptr) < 0)))):
        raise ArtifactError(f"array {name!r} is not a non-decreasing 0..{nnz} index")


def validate_contents(arrays: Mapping[str, np.ndarray], header: Mapping[str, Any]) -> None:
    """Check that the arrays are what a compiled grammar's runtime indexes without bounds
    checks: shapes agree and every index points inside its target.

    Raises
    ------
    ArtifactError
        The first inconsistency found.
    """
    _check_header(header)
    g, meta = header["grammar"], header["parse_tables"]
    names = [t["name"] for t in g["terminals"]]
    t_count = len(names)
    # vocabulary
    offsets = _arr(arrays, "vocab_offsets", (None,), "iu")
    v = offsets.size - 1
    if v < 1 or header["vocab"]["size"] != v:
        raise ArtifactError("vocabulary size disagrees with its arrays")
    eos = header["vocab"]["eos_token_id"]
    if eos is not None and not 0 <= eos < v:
        raise ArtifactError(f"eos_token_id {eos} is outside the vocabulary")
    # lexer
    trans = _arr(arrays, "lex_trans", (None, 256), "i")
    s = trans.shape[0]
    if s < 1:
        raise ArtifactError("the lexer has no states")
    _in_range("lex_trans", trans, -1, s)
    _in_range("lex_accept", _arr(arrays, "lex_accept", (s,), "i"), -1, t_count)
    tb = (t_count + 7) // 8
    _arr(arrays, "lex_live", (s, tb), "u")
    _arr(arrays, "lex_winnable", (s, tb), "u")
    _arr(arrays, "lex_accepting", (s, tb), "u")
    _arr(arrays, "lex_ignored", (t_count,), "b")
    # token tables
    cw = _arr(arrays, "class_winnable", (None, (t_count + 1 + 7) // 8), "u")
    c = cw.shape[0]
    head = _arr(arrays, "node_head", (None,), "i")
    n = head.shape[0]
    tail = _arr(arrays, "node_tail", (n,), "i")
    if n < c or (c and (bool(np.any(head[:c] != -1)) or bool(np.any(tail[:c] != np.arange(c))))):
        raise ArtifactError("the first node_head/node_tail entries are not the END classes")
    ind = g.get("indentation")
    if ind is not None and ind["newline"] not in names:
        raise ArtifactError(f"indentation newline {ind['newline']!r} is not a terminal")
    cons_head, cons_tail = head[c:], tail[c:]
    earlier = np.arange(c, n)
    tail_min = 0  # a CONS or LEX node always goes on
    if "node_alt" in arrays:  # contextual tables: BRANCH and LEX nodes (compiler/tables.py)
        alt = _arr(arrays, "node_alt", (n,), "i")
        k = _arr(arrays, "lex_sets", (None, tb), "u").shape[0]
        if ind is not None:  # each set's newline width (see TokenTables.lex_nl)
            if "lex_nl" not in arrays:
                raise ArtifactError("contextual tables of an indentation grammar lack 'lex_nl'")
            lex_nl = _arr(arrays, "lex_nl", (k,), "i")
            if bool(np.any((lex_nl != -1) & (lex_nl < t_count))):
                raise ArtifactError("array 'lex_nl' holds values that are not newline heads")
        branch = cons_head < 0
        bad_branch = (cons_head[branch] < -1 - c) | (cons_head[branch] > -2)
        if bool(np.any(bad_branch)) or bool(np.any(cons_head[~branch] >= k)):
            raise ArtifactError("array 'node_head' holds values outside the classes and sets")
        alt_c = alt[c:].astype(np.int64)
        if bool(np.any(alt_c[~branch] != -1)) or bool(np.any(
                (alt_c[branch] < -1) | (alt_c[branch] >= earlier[branch]))):
            raise ArtifactError("array 'node_alt' does not point to earlier nodes")
        # a BRANCH whose "lexeme continues" side kills the token has tail -1 (as alt may)
        if bool(np.any(cons_tail[~branch] < 0)):
            raise ArtifactError("array 'node_tail' does not point to earlier nodes")
        tail_min = -1
    elif cons_head.size and (int(cons_head.min()) < 0 or (
            ind is None and int(cons_head.max()) >= t_count)):
        raise ArtifactError("array 'node_head' holds values outside the terminals")
    if cons_tail.size and (int(cons_tail.min()) < tail_min or bool(np.any(
            cons_tail.astype(np.int64) >= earlier))):
        raise ArtifactError("array 'node_tail' does not point to earlier nodes")
    _in_range("state_class", _arr(arrays, "state_class", (s,), "i"), 0, max(c, 1))
    _in_range("first_byte", _arr(arrays, "first_byte", (v,), "i"), -1, 256)
    indptr = _arr(arrays, "rows_indptr", (s + 1,), "i")
    idx = _arr(arrays, "rows_indices", (None,), "i")
    dat = _arr(arrays, "rows_data", (idx.shape[0],), "i")
    _csr("rows_indptr", indptr, s, idx.shape[0])
    _in_range("rows_indices", idx, 0, v)
    _in_range("rows_data", dat, 0, n + 1)
    base = _arr(arrays, "row_base", (s,), "i")
    _in_range("row_base", base, -1, s)
    diffed = np.flatnonzero(base >= 0)
    if diffed.size and (bool(np.any(base[base[diffed]] >= 0)) or
                        bool(np.any(base[diffed] == diffed))):
        raise ArtifactError("array 'row_base' chains rows (a base row must be stored whole)")
    whole = np.repeat(base < 0, np.diff(indptr))
    if bool(np.any(dat[whole] == 0)):
        raise ArtifactError("a whole row holds an empty entry")
    # parse automaton
    symbols = meta["symbols"]
    nt = meta["num_terminals"]
    if symbols[:t_count] != names or not t_count <= nt < len(symbols):
        raise ArtifactError("parser symbols disagree with the grammar's terminals")
    if g["start"] not in symbols or (ind is not None and ind["newline"] not in symbols):
        raise ArtifactError("parser symbols lack the start rule or the newline terminal")
    nonkernel = _arr(arrays, "pt_nonkernel", (None,), "i")
    p = nonkernel.shape[0]
    if not 0 <= meta["start_state"] < p:
        raise ArtifactError("the parser's start state is out of range")
    _in_range("pt_nonkernel", nonkernel, -1, p)
    _arr(arrays, "pt_accepting", (p,), "b")
    gs = _arr(arrays, "pt_goto_symbol", (None,), "i")
    _csr("pt_goto_indptr", _arr(arrays, "pt_goto_indptr", (p + 1,), "i"), p, gs.shape[0])
    _in_range("pt_goto_symbol", gs, 0, len(symbols))
    _in_range("pt_goto_target", _arr(arrays, "pt_goto_target", gs.shape, "i"), 0, p)
    cl = _arr(arrays, "pt_completed_lhs", (None,), "i")
    _csr("pt_completed_indptr", _arr(arrays, "pt_completed_indptr", (p + 1,), "i"), p,
         cl.shape[0])
    _in_range("pt_completed_lhs", cl, nt, len(symbols))

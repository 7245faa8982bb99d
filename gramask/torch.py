"""Batched token masks as packed bitmasks on any torch device (XGrammar/vLLM layout).

Convention (the only one gramask uses)
--------------------------------------
A bitmask is a ``torch.int32`` tensor of shape ``(batch, ceil(V / 32))``. Bit ``j`` (counted
from the least significant bit) of word ``w`` is token ``32 * w + j``; a set bit means the token
is allowed. This is the layout of ``xgrammar.allocate_token_bitmask`` and of vLLM's structured
output bitmask, so tensors can be passed between the libraries unchanged.

* :func:`allocate_token_bitmask` makes one, every bit set (everything allowed).
* :func:`fill_next_token_bitmask` writes ``Constraint.allowed()`` for many constraints: the
  masks are packed on the CPU with numpy and reach the bitmask's device in one transfer.
* :func:`apply_token_bitmask_inplace` sets the logits of disallowed tokens to ``-inf`` with
  pure torch operations (the same code on CPU and CUDA, no host round trip).
* :func:`unpack_bitmask_numpy` / :func:`apply_token_bitmask_numpy` are slow, obviously-correct
  numpy references for the kernels above (the tests compare the two).

Differences from xgrammar: logits columns past ``32 * bitmask.shape[1]`` are *disallowed* here
(xgrammar leaves them untouched), so a model whose embedding is padded beyond the bitmask can
never sample a padding id.

This module imports torch; ``import gramask`` does not.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from .runtime.core.constraint import Constraint

try:
    import torch
except ImportError as exc:  # tests/test_torch_bitmask.py hides torch to check this message
    raise ImportError(
        "gramask.torch needs PyTorch, which is not installed: pip install 'gramask[torch]'"
    ) from exc

__all__ = [
    "SupportsAllowed",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "apply_token_bitmask_numpy",
    "fill_next_token_bitmask",
    "get_bitmask_shape",
    "pack_bitmask_numpy",
    "unpack_bitmask_numpy",
]

BITMASK_DTYPE = torch.int32
_LITTLE = sys.byteorder == "little"


class SupportsAllowed(Protocol):
    """What :func:`fill_next_token_bitmask` needs: a :class:`~gramask.Constraint`, or anything
    whose ``allowed()`` returns a numpy bool array of shape ``(V,)``."""

    def allowed(self) -> np.ndarray: ...


# ---------------------------------------------------------------------------------------- shape
def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """``(batch_size, ceil(vocab_size / 32))``: the shape of a bitmask for ``vocab_size`` tokens."""
    batch_size = _count(batch_size, "batch_size", minimum=0)
    vocab_size = _count(vocab_size, "vocab_size", minimum=1)
    return (batch_size, (vocab_size + 31) // 32)


def allocate_token_bitmask(
    batch_size: int, vocab_size: int, device: str | torch.device = "cpu"
) -> torch.Tensor:
    """A bitmask with every token allowed (all bits set, i.e. every word is ``-1``).

    Parameters
    ----------
    batch_size
        Number of rows (one per sequence).
    vocab_size
        Number of token ids the rows cover: ``len(vocab)``, or the model's (padded) logits width.
    device
        Where the bitmask lives. :func:`fill_next_token_bitmask` packs on the CPU and copies
        once per call, so a CUDA bitmask costs one host-to-device transfer per step.

    Raises
    ------
    ValueError
        ``batch_size`` is negative or ``vocab_size`` is not positive.
    """
    shape = get_bitmask_shape(batch_size, vocab_size)
    return torch.full(shape, -1, dtype=BITMASK_DTYPE, device=device)


# ----------------------------------------------------------------------------------------- fill
def fill_next_token_bitmask(
    constraints: Sequence[SupportsAllowed | None],
    bitmask: torch.Tensor,
    indices: Sequence[int] | None = None,
) -> None:
    """Write each constraint's ``allowed()`` mask into a row of ``bitmask``.

    Parameters
    ----------
    constraints
        One entry per row to fill: a :class:`~gramask.Constraint` (anything with ``allowed()``
        returning a bool array of shape ``(V,)``), or ``None`` for "no constraint" (every bit of
        the row is set).
    bitmask
        An int32 tensor of shape ``(batch, W)`` with ``W >= ceil(V / 32)``, on any device. Bits
        for ids ``>= V`` are cleared (a wider bitmask, e.g. allocated for a model's padded
        vocabulary, disallows the extra ids).
    indices
        The bitmask row for each constraint; default ``range(len(constraints))``. Rows not
        named are left as they are.

    Notes
    -----
    Masks are packed on the CPU (``np.packbits(..., bitorder="little")``). A CPU bitmask is
    written in place through its numpy view; any other device receives one host-to-device copy
    of the packed rows. ``allowed()`` is called once per constraint.

    Raises
    ------
    ValueError
        ``bitmask`` is not a 2-D int32 tensor, is too narrow for a mask, ``indices`` has the
        wrong length or an index is out of range, or a mask is not a 1-D bool array.
    """
    _check_bitmask(bitmask, "bitmask")
    batch, words = bitmask.shape
    n = len(constraints)
    rows = _rows(indices, n, batch, "constraints")
    if n == 0:
        return

    on_cpu = bitmask.device.type == "cpu" and bitmask.stride(-1) == 1 and _LITTLE
    if on_cpu:
        # Write straight into the tensor's memory: no staging buffer, no torch copy kernel
        # (torch's threaded copy_ costs milliseconds on a loaded CPU for ~1 MB).
        target = bitmask.detach().numpy()
        dest_rows = rows
    else:
        target = np.empty((n, words), dtype=np.int32)
        dest_rows = range(n)

    u8 = target.view(np.uint8) if _LITTLE else None
    for c, r in zip(constraints, dest_rows, strict=True):
        if c is None:
            target[r] = -1
            continue
        if u8 is not None and isinstance(c, Constraint) and 32 * words >= len(c.vocab):
            c.fill_bitmask(u8[r])  # packed by the constraint: cached with its mask
            continue
        m = c.allowed()
        packed = _pack_row(m, words)
        if u8 is not None:
            nb = packed.shape[0]
            u8[r, :nb] = packed
            u8[r, nb:] = 0
        else:  # big-endian host: assemble the words explicitly
            full = np.zeros(words * 4, dtype=np.uint8)
            full[: packed.shape[0]] = packed
            target[r] = full.view("<i4").astype(np.int32)

    if on_cpu:
        return
    src = torch.from_numpy(target).to(bitmask.device, non_blocking=False)
    if isinstance(rows, range):
        bitmask[:n].copy_(src)
    else:
        index = torch.tensor(list(rows), dtype=torch.long, device=bitmask.device)
        bitmask.index_copy_(0, index, src)


def _pack_row(m: Any, words: int) -> np.ndarray:
    """Little-endian packbits of one bool mask; checks its dtype and length."""
    if not isinstance(m, np.ndarray) or m.dtype != np.bool_ or m.ndim != 1:
        got = f"{type(m).__name__}" + (
            f" of dtype {m.dtype} and shape {m.shape}" if isinstance(m, np.ndarray) else ""
        )
        raise ValueError(f"allowed() must return a 1-D numpy bool array; got {got}")
    if m.shape[0] > 32 * words:
        raise ValueError(
            f"bitmask rows are too narrow: expected at least {(m.shape[0] + 31) // 32} int32 "
            f"words for a mask of {m.shape[0]} tokens, got {words}"
        )
    return np.packbits(m, bitorder="little")


# ---------------------------------------------------------------------------------------- apply
def apply_token_bitmask_inplace(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    indices: Sequence[int] | torch.Tensor | None = None,
) -> None:
    """Set ``logits`` to ``-inf`` wherever ``bitmask`` has a cleared bit.

    Parameters
    ----------
    logits
        Floating tensor ``(batch, V')`` (or ``(V',)`` with a ``(W,)`` or ``(1, W)`` bitmask),
        modified in place. ``V'`` may differ from ``32 * W``: only the first ``V'`` bits are
        read, and columns at or past ``32 * W`` are disallowed (models often pad the vocabulary).
    bitmask
        int32 ``(batch, W)`` on the same device as ``logits``.
    indices
        Rows to mask (of both ``logits`` and ``bitmask``, like xgrammar); default all rows, in
        which case the two batch sizes must be equal.

    Notes
    -----
    Pure torch, no custom kernel. On the CPU the words are unpacked with
    ``bitmask.unsqueeze(-1) << (31 - arange(32))`` into float32 ``+inf``/``-inf`` bit patterns
    and the logits become ``minimum(logits, that)``, a few rows at a time so the temporaries
    stay in cache (branch-free; a disallowed NaN stays NaN). On other devices each byte of the
    words is AND-ed with its eight bit values into a bool mask for ``masked_fill_(-inf)`` (two
    small kernels and the fill; a disallowed NaN becomes ``-inf``, as in XGrammar). Allowed
    logits are never changed.

    Raises
    ------
    ValueError
        Wrong dtypes, shapes or devices (the message says expected vs got), or an index out of
        range.
    """
    if not isinstance(logits, torch.Tensor):
        raise ValueError(f"logits: expected a torch.Tensor, got {type(logits).__name__}")
    _check_bitmask(bitmask, "bitmask", allow_1d=True)
    if not logits.is_floating_point():
        raise ValueError(f"logits: expected a floating point dtype, got {logits.dtype}")
    if logits.device != bitmask.device:
        raise ValueError(
            f"bitmask: expected device {logits.device} (the logits' device), got {bitmask.device}"
        )
    if logits.dim() == 1:
        bm = bitmask if bitmask.dim() == 2 else bitmask.unsqueeze(0)
        if bm.shape[0] != 1:
            raise ValueError(
                f"bitmask: expected 1 row for 1-D logits, got shape {tuple(bitmask.shape)}"
            )
        if indices is not None:
            raise ValueError("indices: expected None for 1-D logits")
        apply_token_bitmask_inplace(logits.unsqueeze(0), bm)
        return
    if logits.dim() != 2:
        raise ValueError(f"logits: expected shape (batch, vocab), got {tuple(logits.shape)}")
    if bitmask.dim() != 2:
        raise ValueError(f"bitmask: expected shape (batch, words), got {tuple(bitmask.shape)}")

    batch, width = logits.shape
    words = bitmask.shape[1]
    if indices is None:
        if bitmask.shape[0] != batch:
            raise ValueError(
                f"bitmask: expected {batch} rows (logits batch size), got shape "
                f"{tuple(bitmask.shape)}"
            )
        _mask_rows(logits, bitmask, width, words)
        return

    limit = min(batch, bitmask.shape[0])
    if isinstance(indices, torch.Tensor):
        # Not range-checked: that would synchronise with the device (torch raises on the CPU).
        idx = indices.to(device=logits.device, dtype=torch.long).flatten()
    else:
        ids = [int(i) for i in indices]
        bad = [i for i in ids if not 0 <= i < limit]
        if bad:
            raise ValueError(f"indices: expected values in [0, {limit}), got {bad[0]}")
        idx = torch.tensor(ids, dtype=torch.long, device=logits.device)
    n = idx.numel()
    step = _chunk_rows(logits.device, min(width, 32 * words), n)
    for i in range(0, n, step):
        part = idx[i : i + step]
        sub = logits.index_select(0, part)
        _mask_rows(sub, bitmask.index_select(0, part), width, words)
        logits.index_copy_(0, part, sub)


# Bit patterns of float32 +inf and -inf, as int32.
_POS_INF_BITS = 0x7F800000
_SIGN_BIT = -(1 << 31)
# On the CPU, rows are masked a few at a time so the (rows, 32 * words) temporaries stay in
# cache: about 4x faster than one pass at 64 x 151k. Elsewhere one pass (one set of kernels).
_CPU_CHUNK_TOKENS = 1 << 19


def _chunk_rows(device: torch.device, tokens_per_row: int, rows: int) -> int:
    if device.type != "cpu":
        return max(rows, 1)
    return max(1, _CPU_CHUNK_TOKENS // max(tokens_per_row, 1))


def _bias_shifts(bitmask: torch.Tensor, covered: int, dtype: torch.dtype) -> torch.Tensor:
    """``dtype`` (rows, covered): +inf where the bit is set, -inf where it is clear.

    Bit j of each word is shifted into the sign position, the other bits are dropped, and the
    result is OR-ed with the bits of +inf: sign clear gives +inf, sign set gives -inf. Working on
    the inverted words makes "allowed" the clear sign. All int32 ops, reinterpreted as float32.
    The CPU's way: no gather, and cache-sized chunks keep the five passes cheap.
    """
    words = (covered + 31) // 32
    shifts = 31 - torch.arange(32, dtype=torch.int32, device=bitmask.device)
    inv = torch.bitwise_not(bitmask[:, :words]).unsqueeze(-1)  # (rows, words, 1)
    bits = torch.bitwise_left_shift(inv, shifts)  # (rows, words, 32)
    bits.bitwise_and_(_SIGN_BIT).bitwise_or_(_POS_INF_BITS)
    bias = bits.view(bitmask.shape[0], 32 * words).view(torch.float32)[:, :covered]
    return bias if dtype == torch.float32 else bias.to(dtype)  # +-inf convert exactly


# device -> uint8 (8,): the value of bit j of a byte, 1 << j.
_BYTE_BITS: dict[torch.device, torch.Tensor] = {}


def _refused_bytes(bitmask: torch.Tensor, covered: int) -> torch.Tensor:
    """bool (rows, covered), True where the bit is clear: each byte of the words (little endian:
    byte k of word w holds tokens 32w + 8k ... 32w + 8k + 7) AND-ed with its eight bit values.
    Two small kernels at one byte per token, where the shifts write four."""
    bits = _BYTE_BITS.get(bitmask.device)
    if bits is None:  # a race only builds an equal tensor twice
        bits = _BYTE_BITS[bitmask.device] = torch.tensor(
            [1 << j for j in range(8)], dtype=torch.uint8, device=bitmask.device
        )
    words = (covered + 31) // 32
    rows = bitmask.shape[0]
    by = bitmask[:, :words].contiguous().view(torch.uint8).view(rows, 4 * words, 1)
    return (torch.bitwise_and(by, bits) == 0).view(rows, 32 * words)[:, :covered]


def _byte_masks(device: torch.device) -> bool:
    """Shifts and ``minimum`` on the CPU (cache-sized chunks; its ``masked_fill_`` is a
    data-dependent loop), a byte mask and ``masked_fill_`` elsewhere: a GPU apply is bound by
    kernel launches and memory passes (H200, 64 x 151,936: 0.14 ms with shifts, 0.06 ms this
    way, XGrammar's kernel 0.05 ms). The bytes are read in memory order: little-endian only."""
    return device.type != "cpu" and sys.byteorder == "little"


def _mask_rows(logits: torch.Tensor, bitmask: torch.Tensor, width: int, words: int) -> None:
    """Core kernel: ``logits`` and ``bitmask`` have the same number of rows.

    CPU: ``logits = minimum(logits, bias)`` with ``bias`` = +inf (allowed) or -inf
    (disallowed), branch-free, unlike ``masked_fill_``, whose CPU kernel is a data-dependent
    scalar loop. Elsewhere: ``masked_fill_`` with a byte-unpacked mask (see ``_byte_masks``).
    """
    covered = min(width, 32 * words)
    rows = logits.shape[0]
    if covered and _byte_masks(logits.device):
        logits[:, :covered].masked_fill_(_refused_bytes(bitmask, covered), float("-inf"))
    elif covered:
        step = _chunk_rows(logits.device, covered, rows)
        for i in range(0, rows, step):
            part = logits[i : i + step, :covered]
            torch.minimum(part, _bias_shifts(bitmask[i : i + step], covered, part.dtype), out=part)
    if width > covered:
        logits[:, covered:] = float("-inf")


# ------------------------------------------------------------------------------ numpy reference
def pack_bitmask_numpy(allowed: np.ndarray, num_words: int | None = None) -> np.ndarray:
    """Reference packer: bool ``(batch, V)`` → int32 ``(batch, num_words)``, bit per token.

    Written bit by bit (no ``packbits``), so it checks the fast path independently.
    """
    a = np.asarray(allowed, dtype=bool)
    if a.ndim != 2:
        raise ValueError(f"allowed: expected shape (batch, vocab), got {a.shape}")
    b, v = a.shape
    w = (v + 31) // 32 if num_words is None else num_words
    if 32 * w < v:
        raise ValueError(f"num_words: expected at least {(v + 31) // 32}, got {w}")
    padded = np.zeros((b, 32 * w), dtype=np.uint64)
    padded[:, :v] = a
    weights = np.uint64(1) << np.arange(32, dtype=np.uint64)
    words = (padded.reshape(b, w, 32) * weights).sum(axis=-1, dtype=np.uint64)
    out: np.ndarray = words.astype(np.uint32).view(np.int32)
    return out


def unpack_bitmask_numpy(bitmask: np.ndarray | torch.Tensor, vocab_size: int) -> np.ndarray:
    """Reference unpacker: int32 ``(batch, W)`` → bool ``(batch, vocab_size)``.

    Ids at or past ``32 * W`` come out False (disallowed), matching
    :func:`apply_token_bitmask_inplace`.
    """
    bm = bitmask.detach().cpu().numpy() if isinstance(bitmask, torch.Tensor) else bitmask
    bm = np.asarray(bm)
    if bm.dtype != np.int32 or bm.ndim != 2:
        raise ValueError(
            f"bitmask: expected a 2-D int32 array, got {bm.dtype} with shape {bm.shape}"
        )
    b, w = bm.shape
    u = bm.astype(np.int64) & 0xFFFFFFFF
    bits = ((u[:, :, None] >> np.arange(32, dtype=np.int64)) & 1).astype(bool).reshape(b, 32 * w)
    out = np.zeros((b, vocab_size), dtype=bool)
    n = min(vocab_size, 32 * w)
    out[:, :n] = bits[:, :n]
    return out


def apply_token_bitmask_numpy(
    logits: np.ndarray, bitmask: np.ndarray | torch.Tensor, indices: Sequence[int] | None = None
) -> np.ndarray:
    """Reference for :func:`apply_token_bitmask_inplace`: returns a masked copy of ``logits``."""
    out = np.array(logits, dtype=np.result_type(logits, np.float32), copy=True)
    if out.ndim != 2:
        raise ValueError(f"logits: expected shape (batch, vocab), got {out.shape}")
    allowed = unpack_bitmask_numpy(bitmask, out.shape[1])
    rows = range(out.shape[0]) if indices is None else [int(i) for i in indices]
    for r in rows:
        out[r, ~allowed[r]] = -np.inf
    return out


# -------------------------------------------------------------------------------------- checks
def _count(x: Any, what: str, *, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{what}: expected an int, got {type(x).__name__}")
    if x < minimum:
        raise ValueError(f"{what}: expected an int >= {minimum}, got {x}")
    return int(x)


def _check_bitmask(bitmask: Any, what: str, *, allow_1d: bool = False) -> None:
    if not isinstance(bitmask, torch.Tensor):
        raise ValueError(f"{what}: expected a torch.Tensor of int32, got {type(bitmask).__name__}")
    if bitmask.dtype != BITMASK_DTYPE:
        raise ValueError(f"{what}: expected dtype torch.int32, got {bitmask.dtype}")
    ok_dims = (1, 2) if allow_1d else (2,)
    if bitmask.dim() not in ok_dims or bitmask.shape[-1] == 0:
        raise ValueError(
            f"{what}: expected shape (batch, ceil(vocab_size / 32)), got {tuple(bitmask.shape)}"
        )


def _rows(indices: Sequence[int] | None, n: int, batch: int, what: str) -> Sequence[int]:
    if indices is None:
        if n > batch:
            raise ValueError(
                f"bitmask: expected at least {n} rows (one per entry of {what}), got {batch}"
            )
        return range(n)
    rows = [int(i) for i in indices]
    if len(rows) != n:
        raise ValueError(f"indices: expected {n} entries (one per {what[:-1]}), got {len(rows)}")
    for i in rows:
        if not 0 <= i < batch:
            raise ValueError(f"indices: expected values in [0, {batch}), got {i}")
    return rows

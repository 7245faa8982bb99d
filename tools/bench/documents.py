"""Benchmark documents: stdlib Python and real C files, real and generated JSON, generated SQLite
scripts (each checked by its own parser)."""

from __future__ import annotations

import ast
import json
import random
import re
import sqlite3
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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

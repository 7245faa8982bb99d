#!/usr/bin/env python
"""Digest of every runtime mask along a cold pass, to show that a runtime change leaves them.

For each (Lark grammar file, document) pair and lexer mode: compile (through the cache), force
the document's tokens (the real tokenizer of ``--vocab``) from a fresh constraint and hash every
``allowed()`` mask on the way, the last one after the whole document included. One line per
pair and mode: grammar file, document, mode, masks hashed, SHA-256 of them all. Run it on two
checkouts and ``diff`` the outputs (``tools/artifact_digests.py`` does the same for compiled
artifacts)::

    PYTHONPATH=/work/main python tools/mask_digests.py G.lark prog > before.txt
    PYTHONPATH=. python tools/mask_digests.py G.lark prog > after.txt && diff before.txt after.txt

Arguments are GRAMMAR DOCUMENT pairs. A document the grammar rejects stops its pass at the
rejected token (the line then says where): the digest still covers the masks before it.

``--schemas sample,schemastore`` does the same for JSON Schema requests: each schema of
``tools/json_schemas/<set>.json`` that gramask compiles (``cache=False``, its rows built
lazily as a request's are), each valid and invalid instance forced as compact ``json.dumps``
from a fresh constraint up to its end or its first refused token; one line per set.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def digest(grammar: Path, doc: Path, mode: str, vocab_name: str) -> str:
    """One line: the masks of forcing ``doc`` under ``grammar`` in lexer mode ``mode``."""
    import numpy as np
    from bench.real_tokenizer import RealTokenizer

    import gramask

    vocab = gramask.Vocabulary.bundled(vocab_name)
    g = gramask.Grammar.from_lark(grammar.read_text(), source=str(grammar), lexer=mode)
    cg = gramask.compile(g, vocab, progress=False)
    toks = RealTokenizer(vocab_name).encode(doc.read_text())
    c = cg.constraint()
    h = hashlib.sha256()
    n, stop = 0, ""
    for i in range(len(toks) + 1):
        m = c.allowed()
        h.update(np.packbits(m).tobytes())
        n += 1
        if i == len(toks):
            break
        if not m[toks[i]]:
            stop = f" (stopped: token {i} of {len(toks)} not allowed)"
            break
        c.advance(toks[i])
    return f"{grammar.name} {doc.name} {mode} {n} {h.hexdigest()[:24]}{stop}"


def schema_digest(set_name: str, vocab_name: str) -> str:
    """One line: the masks of forcing every instance of a JSON Schema set."""
    import json
    import warnings

    import numpy as np
    from bench.real_tokenizer import RealTokenizer

    import gramask

    vocab = gramask.Vocabulary.bundled(vocab_name)
    tok = RealTokenizer(vocab_name)
    cases = json.loads((Path(__file__).resolve().parent / "json_schemas" /
                        f"{set_name}.json").read_text())
    h = hashlib.sha256()
    n = schemas = 0
    for case in cases:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                g = gramask.Grammar.from_json_schema(case["schema"])
        except gramask.GrammarError:
            continue
        schemas += 1
        cg = gramask.compile(g, vocab, cache=False, progress=False)
        for inst in case["valid"] + case["invalid"]:
            c = cg.constraint()
            for t in [*tok.encode(json.dumps(inst, separators=(",", ":"),
                                             ensure_ascii=False)), None]:
                m = c.allowed()
                h.update(np.packbits(m).tobytes())
                n += 1
                if t is None or not m[t]:
                    break
                c.advance(t)
    return f"{set_name} {schemas} schemas {n} {h.hexdigest()[:24]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pairs", nargs="*", help="GRAMMAR.lark DOCUMENT [GRAMMAR DOCUMENT ...]")
    ap.add_argument("--schemas", default="",
                    help="JSON Schema sets of tools/json_schemas (comma-separated)")
    ap.add_argument("--modes", default="basic,contextual")
    ap.add_argument("--vocab", default="deepseek-v4")
    a = ap.parse_args(argv)
    if len(a.pairs) % 2:
        ap.error("give GRAMMAR DOCUMENT pairs")
    for set_name in filter(None, a.schemas.split(",")):
        print(schema_digest(set_name, a.vocab), flush=True)
    for g, d in zip(a.pairs[::2], a.pairs[1::2], strict=True):
        for mode in a.modes.split(","):
            print(digest(Path(g), Path(d), mode, a.vocab), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Artifacts and the compile cache: round trips, corruption, versions, races, no pickle."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import zipfile

import numpy as np
import pytest

import gramask
from gramask.artifact import FORMAT_VERSION, read_artifact
from gramask.cache.store import CacheWarning
from gramask.grammar import Grammar

from ._support import PARENS, PARENS_TOKENS


def _vocab():
    return gramask.Vocabulary.from_tokens([*PARENS_TOKENS, "</s>"], eos_token_id=len(PARENS_TOKENS))


def _grammar():
    return Grammar.from_lark(PARENS)


def _masks(cg, prefixes=("", "(", "(a", "((1 b)")):
    return [cg.constraint(p).allowed() for p in prefixes]


def test_save_load_round_trip(tmp_path):
    cg = gramask.compile(_grammar(), _vocab(), cache=False)
    path = tmp_path / "a.gmask"
    size = cg.save(path)
    assert size == path.stat().st_size
    back = gramask.CompiledGrammar.load(path)
    assert back.grammar == cg.grammar
    assert back.vocab.fingerprint() == cg.vocab.fingerprint()
    for a, b in zip(_masks(cg), _masks(back), strict=False):
        assert (a == b).all()
    st = back.stats()
    assert st["lexer_states"] == cg.dfa.num_states and st["nonzeros"] == cg.tables.nnz


def test_artifact_is_not_pickle_and_has_versioned_header(tmp_path):
    path = tmp_path / "a.gmask"
    gramask.compile(_grammar(), _vocab(), cache=False).save(path)
    with zipfile.ZipFile(path) as z:
        header = json.loads(np.load(io.BytesIO(z.read("__header__.npy")), allow_pickle=False)
                            .tobytes())
    assert header["format_version"] == FORMAT_VERSION
    assert {"grammar_hash", "vocab_hash", "gramask_version", "checksum"} <= set(header)
    arrays, _ = read_artifact(path)
    assert all(a.dtype != object for a in arrays.values())


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_corrupt_artifact_is_detected(tmp_path, damage):
    path = tmp_path / "a.gmask"
    gramask.compile(_grammar(), _vocab(), cache=False).save(path)
    raw = bytearray(path.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) // 2]
    elif damage == "flip":
        # change one byte of an array's stored data, keep the zip valid: rewrite a member
        with zipfile.ZipFile(path) as z:
            members = {n: z.read(n) for n in z.namelist()}
        name = "rows_data.npy"
        arr = np.load(io.BytesIO(members[name]))
        arr = arr.copy()
        arr[len(arr) // 2] += 1
        b = io.BytesIO()
        np.save(b, arr)
        members[name] = b.getvalue()
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for n, data in members.items():
                z.writestr(n, data)
        raw = bytearray(out.getvalue())
    elif damage == "empty":
        raw = bytearray()
    else:
        raw = bytearray(b"PK\x03\x04 not really a zip")
    path.write_bytes(bytes(raw))
    with pytest.raises(gramask.ArtifactError):
        gramask.CompiledGrammar.load(path)


def test_pickled_npz_is_refused(tmp_path):
    path = tmp_path / "evil.gmask"
    np.savez(path, __header__=np.array([{"x": 1}], dtype=object))
    os.replace(str(path) + ".npz" if not path.exists() else path, path)
    with pytest.raises(gramask.ArtifactError):
        gramask.CompiledGrammar.load(path)


def test_other_format_version_is_its_own_error(tmp_path, monkeypatch):
    import gramask.artifact as art

    path = tmp_path / "a.gmask"
    monkeypatch.setattr(art, "FORMAT_VERSION", FORMAT_VERSION + 1)
    gramask.compile(_grammar(), _vocab(), cache=False).save(path)
    monkeypatch.setattr(art, "FORMAT_VERSION", FORMAT_VERSION)
    with pytest.raises(gramask.ArtifactVersionError, match="recompile"):
        gramask.CompiledGrammar.load(path)


def test_cache_hit_and_key_depends_on_vocab_bytes_not_size(tmp_path):
    cg1 = gramask.compile(_grammar(), _vocab(), cache_dir=tmp_path)
    assert not cg1.info["from_cache"]
    cg2 = gramask.compile(_grammar(), _vocab(), cache_dir=tmp_path)
    assert cg2.info["from_cache"]
    toks = list(PARENS_TOKENS)
    toks[6] = "c"  # same size, one different token
    other = gramask.Vocabulary.from_tokens([*toks, "</s>"], eos_token_id=len(toks))
    cg3 = gramask.compile(_grammar(), other, cache_dir=tmp_path)
    assert not cg3.info["from_cache"]
    assert len(list(tmp_path.glob("*.gmask"))) == 2


def test_corrupt_cache_entry_is_reported_and_rebuilt(tmp_path):
    cg = gramask.compile(_grammar(), _vocab(), cache_dir=tmp_path)
    path = cg.info["cache_path"]
    with open(path, "r+b") as f:
        f.truncate(100)
    with pytest.warns(CacheWarning, match="rebuilding"):
        again = gramask.compile(_grammar(), _vocab(), cache_dir=tmp_path)
    assert not again.info["from_cache"]
    assert gramask.compile(_grammar(), _vocab(), cache_dir=tmp_path).info["from_cache"]


def _compile_in_child(cache_dir: str) -> str:
    cg = gramask.compile(_grammar(), _vocab(), cache_dir=cache_dir, progress=False)
    return cg.info["cache_path"]


def test_two_processes_compiling_the_same_key(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        paths = pool.map(_compile_in_child, [str(tmp_path)] * 2)
    assert paths[0] == paths[1]
    assert len(list(tmp_path.glob("*.gmask"))) == 1
    assert not list(tmp_path.glob(".*.tmp"))
    gramask.CompiledGrammar.load(paths[0])  # valid


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAMASK_CACHE_DIR", str(tmp_path / "env-cache"))
    cg = gramask.compile(_grammar(), _vocab())
    assert str(tmp_path / "env-cache") in cg.info["cache_path"]

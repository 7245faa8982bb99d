"""Arguments of the wrong type or encoding (issue 20): every path checks them the same way, and
each failure is a gramask error or a documented builtin one, never lark's or the codec's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gramask
from gramask.cli import main

from ._support import PARENS, PARENS_TOKENS


# ----------------------------------------------------------------------------- grammar text
@pytest.mark.parametrize("text", [b'start: "a"', bytearray(b'start: "a"'), None, 5,
                                  ['start: "a"']])
def test_grammar_text_must_be_str(text):
    with pytest.raises(TypeError, match="grammar text must be a str, not"):
        gramask.Grammar.from_lark(text)  # type: ignore[arg-type]


def test_bytes_grammar_says_how_to_decode():
    with pytest.raises(TypeError, match=r"decode it first"):
        gramask.Grammar.from_lark(b'start: "a"')  # type: ignore[arg-type]


def test_start_and_import_paths_types():
    with pytest.raises(TypeError, match="start must be a rule name"):
        gramask.Grammar.from_lark('start: "a"', start=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="import_paths"):
        gramask.Grammar.from_lark('start: "a"', import_paths="grammars")


@pytest.mark.parametrize(("text", "name", "line"), [
    ("start: x\n%import nosuch.module (x)\n", "nosuch.module", 2),
    ('start: x\n\nx: "a"\n%import nosuch.deeper.module.y\n', "nosuch.deeper.module.y", 4),
    ("start: NUMBER\n%import common.NUMBER\n%import elsewhere.WORD\n", "elsewhere.WORD", 3),
])
def test_missing_import_is_a_grammar_error_naming_it(text, name, line):
    with pytest.raises(gramask.GrammarError, match=f"%import {name}: no grammar file") as e:
        gramask.Grammar.from_lark(text)
    assert e.value.line == line and e.value.name == name


def test_import_from_an_import_path_still_works(tmp_path):
    (tmp_path / "mine.lark").write_text('WORD: /[a-z]+/\n')
    for path in (str(tmp_path), tmp_path):  # a str or a path
        g = gramask.Grammar.from_lark("start: WORD\n%import mine.WORD\n", import_paths=[path])
        assert "WORD" in g.terminal_names


# -------------------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def parens_artifact(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "parens.gmask"
    vocab = gramask.Vocabulary.from_tokens([*PARENS_TOKENS, "</s>"],
                                           eos_token_id=len(PARENS_TOKENS))
    gramask.compile(gramask.Grammar.from_lark(PARENS), vocab, cache=False).save(out)
    return out


@pytest.mark.parametrize(("args", "message"), [
    (["--max-tokens", "-5"], "gramask: error: --max-tokens: expected a number of tokens >= 0, "
                             "got -5"),
    (["--suffix", os.fsdecode(b"\xff)")], "gramask: error: --suffix: not UTF-8 text (byte "
                                          "b'\\xff' at character 0)"),
    (["--prefix", os.fsdecode(b"(a\xfe")], "gramask: error: --prefix: not UTF-8 text (byte "
                                           "b'\\xfe' at character 2)"),
])
def test_cli_bad_mask_arguments_are_one_line(parens_artifact, capsys, args, message):
    assert main(["mask", str(parens_artifact), *args]) == 1
    err = capsys.readouterr().err
    assert err == message + "\n"


def test_cli_non_utf8_argv_in_a_real_process(parens_artifact):
    """Through the shell's bytes (``$'\\xff]'``), as a user would type it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run([sys.executable, "-m", "gramask", "mask", str(parens_artifact),
                          "--suffix", b"\xff)"], capture_output=True, env=env, check=False)
    assert run.returncode == 1
    assert run.stderr.decode().count("\n") == 1 and b"not UTF-8 text" in run.stderr

"""The command line: compile, inspect, mask, demo; errors are one line on stderr."""

from __future__ import annotations

import json

import pytest

from gramask.cli import main


@pytest.fixture(scope="module")
def json_artifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "json.gpt2.gmask"
    assert main(["compile", "json", "--vocab", "gpt2", "-o", str(out), "-q"]) == 0
    return out


def test_compile_and_inspect_json(json_artifact, capsys):
    assert main(["inspect", str(json_artifact), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["vocab_size"] == 50257 and st["terminals"] >= 10
    assert st["nonzeros"] > 0 and 0 < st["density"] < 1
    assert {"lexer_states", "unique_rows", "bytes_on_disk", "build_seconds"} <= set(st)
    assert {t["name"] for t in st["per_terminal"]} >= {"STRING", "NUMBER"}
    assert main(["inspect", str(json_artifact), "--terminals"]) == 0
    assert "lexer states" in capsys.readouterr().out


def test_mask(json_artifact, tmp_path, capsys):
    prefix = tmp_path / "p.json"
    prefix.write_text('{"a": [1, 2')
    assert main(["mask", str(json_artifact), "--prefix-file", str(prefix), "--json",
                 "--top", "5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["allowed"] > 5 and not out["complete"]
    assert "NUMBER" in out["lexeme_could_be"]
    assert len(out["tokens"]) == 5


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["inspect", "/nonexistent.gmask"], "no such artifact"),
        (["compile", "nosuchgrammar", "--vocab", "gpt2"], "neither a bundled grammar"),
        (["compile", "json", "--vocab", "nosuchvocab"], "nosuchvocab"),
    ],
)
def test_errors_are_one_line(argv, words, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("gramask: error:") and words in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_prefix_and_suffix(json_artifact, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{]")
    assert main(["mask", str(json_artifact), "--prefix-file", str(bad)]) == 1
    assert "byte 1" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text("[")
    assert main(["mask", str(json_artifact), "--prefix-file", str(good), "--suffix-file",
                 str(good)]) == 1  # a program cannot end with "["
    assert "no middle connects" in capsys.readouterr().err
    end = tmp_path / "end.json"
    end.write_text("]")
    assert main(["mask", str(json_artifact), "--prefix-file", str(good), "--suffix-file",
                 str(end)]) == 0


def test_grammar_file_with_error(tmp_path, capsys):
    g = tmp_path / "bad.lark"
    g.write_text("start: A\nA: /x(?=y)/\n")
    assert main(["compile", str(g), "--vocab", "gpt2", "--no-cache", "-q", "-o",
                 str(tmp_path / "o.gmask")]) == 1
    err = capsys.readouterr().err
    assert "terminal A" in err and "lookahead" in err


def test_demo_runs(capsys):
    assert main(["demo", "--vocab", "gpt2", "--steps", "12"]) == 0
    out = capsys.readouterr().out
    assert "allowed" in out and "compiling the bundled Python grammar" in out
    fim = out[out.index("fill-in-the-middle"):]
    assert "(model wanted <EOS>: masked)" in fim  # "n -" cannot end before the suffix's ")"
    assert fim.count("ast.parse: OK") == 1

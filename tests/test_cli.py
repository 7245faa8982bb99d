"""The command line: compile, inspect, mask, demo; errors are one line on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gramask
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
    groups = out["groups"]
    assert len(groups) == 5 and [g["count"] for g in groups] == sorted(
        (g["count"] for g in groups), reverse=True)
    by_label = {g["lexes_to"]: g for g in groups}
    assert "NUMBER…" in by_label  # digits continue the number in progress
    assert by_label["NUMBER COMMA LSQB…"]["examples"][0]["token"] == ",["
    assert by_label["NUMBER WS…"]["count"] == 5


def test_mask_prefix_text_stdin_and_logits(json_artifact, tmp_path, capsys, monkeypatch):
    import io

    import numpy as np

    assert main(["mask", str(json_artifact), "--prefix", "[1, 2", "--json"]) == 0
    inline = json.loads(capsys.readouterr().out)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"[1, 2")))
    assert main(["mask", str(json_artifact), "--prefix-file", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["allowed"] == inline["allowed"]
    logits = np.zeros(50257)
    logits[[60, 11, 16, 2]] = [5.0, 4.0, 3.0, 9.0]  # ']', ',', '1', '#' (masked)
    path = tmp_path / "logits.npy"
    np.save(path, logits)
    assert main(["mask", str(json_artifact), "--prefix", "[1, 2", "--logits", str(path),
                 "--top", "3", "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)["tokens"]
    assert [t["token"] for t in ranked] == ["]", ",", "1"]
    assert main(["mask", str(json_artifact), "--prefix", "[1, 2", "--logits", str(path)]) == 0
    assert "most likely allowed tokens" in capsys.readouterr().out
    np.save(path, np.zeros(7))
    assert main(["mask", str(json_artifact), "--prefix", "[", "--logits", str(path)]) == 1
    assert "holds 7 values, the vocabulary has 50257" in capsys.readouterr().err
    path.write_text("0.5 1.5\n")  # a text file is not "pickled data", whatever numpy says
    assert main(["mask", str(json_artifact), "--prefix", "[", "--logits", str(path)]) == 1
    err = capsys.readouterr().err
    assert "is not a .npy array (save one with numpy.save)" in err and "pickle" not in err


def test_inspect_terminals_escapes_regexes(json_artifact, capsys):
    assert main(["inspect", str(json_artifact), "--terminals"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ws = next(line for line in lines if line.startswith("WS "))
    assert "[ \\t\\n\\r]+" in ws and "\t" not in ws


def test_global_options(capsys):
    assert main([]) == 0
    assert "compile" in capsys.readouterr().out  # bare gramask prints help
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("gramask ")
    for argv in (["-v", "inspect", "/nonexistent.gmask"], ["inspect", "/nonexistent.gmask", "-v"]):
        with pytest.raises(gramask.ArtifactError):  # -v: the traceback, before or after
            main(argv)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["inspect", "/nonexistent.gmask"], "no such artifact"),
        (["compile", "nosuchgrammar", "--vocab", "gpt2"], "neither a bundled grammar"),
        (["compile", "json", "--vocab", "nosuchvocab"], "nosuchvocab"),
        (["mask", "/nonexistent.gmask", "--prefix", "x"], "no such artifact"),
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


def test_missing_or_bad_prefix_file_is_one_line(json_artifact, tmp_path, capsys):
    assert main(["mask", str(json_artifact), "--prefix-file", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"gramask: error: prefix file {tmp_path / 'nope'}: no such file"
    latin = tmp_path / "latin1.json"
    latin.write_bytes(b'["\xe9')
    assert main(["mask", str(json_artifact), "--prefix-file", str(latin)]) == 1
    assert "not UTF-8 text" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "words"),
    [("start: A\nA: /a*/\n", "matches the empty string"), ("start: A\nA: /(/\n", "invalid regex")],
)
def test_bad_terminal_is_one_line(tmp_path, capsys, text, words):
    g = tmp_path / "bad.lark"
    g.write_text(text)
    assert main(["compile", str(g), "--vocab", "gpt2", "--no-cache", "-q"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gramask: error:") and words in err and "(line 2)" in err
    assert len(err.strip().splitlines()) == 1


def test_grammar_file_not_utf8_is_one_line(tmp_path, capsys):
    g = tmp_path / "latin1.lark"
    g.write_bytes(b'start: "\xe9"\n')
    assert main(["compile", str(g), "--vocab", "gpt2", "--no-cache", "-q"]) == 1
    err = capsys.readouterr().err
    assert "not UTF-8 text" in err and len(err.strip().splitlines()) == 1


def test_grammar_file_with_error(tmp_path, capsys):
    g = tmp_path / "bad.lark"
    g.write_text("start: A\nA: /x(?=y)/\n")
    assert main(["compile", str(g), "--vocab", "gpt2", "--no-cache", "-q", "-o",
                 str(tmp_path / "o.gmask")]) == 1
    err = capsys.readouterr().err
    assert "terminal A" in err and "lookahead" in err


def test_demo_fixes_the_bracket_and_finishes(capsys):
    assert main(["demo", "--vocab", "gpt2"]) == 0
    out = capsys.readouterr().out
    assert "(model wanted ']': masked)" in out  # the mask steered the toy model ...
    program = out.split("--- completed program")[1].split("--- ast.parse")[0]
    assert "return fibonacci(n - 1) + fibonacci(n - 2)\n" in program  # ... to ')'
    assert "→ <EOS>" in out
    fim = out[out.index("fill-in-the-middle"):]
    assert "(model wanted <EOS>: masked)" in fim  # "n -" cannot end before the suffix's ")"
    fim, budget = fim.split("a token budget")
    assert out.count("--- ast.parse: OK") == 3 and fim.count("--- ast.parse: OK") == 1
    assert "over budget)" in budget and "(complete: True)" in budget  # closed in time
    assert budget.count("--- ast.parse: OK") == 1


def test_demo_cut_short_does_not_claim_a_program(capsys):
    assert main(["demo", "--vocab", "gpt2", "--steps", "2"]) == 0
    out, budget = capsys.readouterr().out.split("a token budget")
    assert "completed" not in out and "ast.parse" not in out
    assert "program so far (cut after 2 steps, before EOS)" in out
    assert "so far (cut after 2 steps, before EOS): prefix + middle + suffix" in out
    assert out.count("\nstep ") == 4  # two in the prefix demo, two in the FIM demo
    assert budget.count(" left: ") == 2 and "cut by --steps 2" in budget  # --steps there too
    assert "ast.parse" not in budget


def test_compile_names_the_cache_and_the_canonical_vocabulary(tmp_path, capsys, monkeypatch):
    """An alias names the output by the canonical vocabulary; the cache hit says where the
    cache is and writes the same artifact (copied, not re-encoded)."""
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    assert main(["compile", "json", "--vocab", "gpt-2", "--cache-dir", str(cache), "-q"]) == 0
    first = capsys.readouterr().out
    assert first.startswith("json.gpt2.gmask: ") and " MiB, " in first
    assert "vocabulary 'gpt-2' is the bundled 'gpt2' (an alias)" in first
    assert "compiled in" in first and f"cache: {cache}" in first
    assert main(["compile", "json", "--vocab", "gpt2", "--cache-dir", str(cache),
                 "-o", "again.gmask"]) == 0
    second = capsys.readouterr().out
    assert "loaded from the cache in" in second and f"cache: {cache}" in second
    assert "s in all: grammar" in second  # where the time of a cache hit goes
    again = gramask.CompiledGrammar.load(tmp_path / "again.gmask")
    assert again.stats()["nonzeros"] == gramask.CompiledGrammar.load(
        tmp_path / "json.gpt2.gmask").stats()["nonzeros"]


def test_python_dash_m_gramask_is_the_command():
    """``python -m gramask`` works where the ``gramask`` script is not on PATH."""
    root = Path(gramask.__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "gramask", "--version"], capture_output=True,
                         text=True, cwd=root, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == f"gramask {gramask.__version__}"


def test_negative_top_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["mask", "x.gmask", "--prefix", "", "--top", "-3"])
    assert info.value.code == 2
    assert "expected a number ≥ 0, got -3" in capsys.readouterr().err


def test_mask_explain_names_each_cause(json_artifact, capsys):
    """--explain: allowed, refused by the parser (and what it takes instead), by the lexer,
    by the budget, EOS before the end; the JSON report carries the same verdicts."""
    args = ["mask", str(json_artifact), "--prefix", '{"a": [1, 2', "--top", "0"]
    assert main([*args, "--explain", "]", "--explain", "}", "--explain", "@",
                 "--explain", "EOS", "--explain", "\\n", "--json"]) == 0
    got = {e["token"]: e for e in json.loads(capsys.readouterr().out)["explain"]}
    assert got["']'"]["allowed"] and got["']'"]["reason"] == "allowed"
    assert got["'\\n'"]["allowed"]  # '\n' typed with a backslash is the newline token
    brace = got["'}'"]
    assert brace["reason"] == "parsing" and brace["lexes_to"] == "NUMBER RBRACE…"
    assert "after NUMBER the parser takes COMMA, RSQB, not RBRACE" in brace["message"]
    assert got["'@'"]["reason"] == "lexing" and "no terminal starts with byte b'@'" in \
        got["'@'"]["message"]
    assert got["<EOS>"]["reason"] == "eos" and not got["<EOS>"]["allowed"]
    assert main([*args, "--max-tokens", "2", "--explain", ","]) == 0
    out = capsys.readouterr().out
    assert "explain ',' (id 11): budget" in out
    assert "finishing after it needs 2 more tokens (1 would be left)" in out
    assert main([*args, "--explain", "no such token"]) == 1
    assert "no token of the vocabulary is exactly this text" in capsys.readouterr().err


def test_mask_explain_suffix(json_artifact, capsys):
    """A token the prefix alone allows but no middle connects to the suffix from."""
    assert main(["mask", str(json_artifact), "--prefix", "[1", "--suffix", "]",
                 "--top", "0", "--explain", "]", "--explain", ",", "--json"]) == 0
    got = {e["token"]: e for e in json.loads(capsys.readouterr().out)["explain"]}
    assert got["']'"]["reason"] == "suffix" and "code after the cursor" in got["']'"]["message"]
    assert got["','"]["allowed"]


def test_mask_save_mask_and_forbidden_logits(json_artifact, tmp_path, capsys):
    import numpy as np

    saved = tmp_path / "m.npy"
    logits = np.zeros(50257)
    logits[[60, 11, 2, 31]] = [5.0, 4.0, 9.0, 7.0]  # ']', ',' allowed; '#', '@' forbidden
    lp = tmp_path / "l.npy"
    np.save(lp, logits)
    assert main(["mask", str(json_artifact), "--prefix", "[1, 2", "--save-mask", str(saved),
                 "--logits", str(lp), "--top", "2", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    mask = np.load(saved, allow_pickle=False)
    assert mask.dtype == bool and mask.shape == (50257,) and mask.sum() == rep["allowed"]
    assert [t["token"] for t in rep["forbidden"]] == ["#", "@"]
    probs = np.exp(logits) / np.exp(logits).sum()
    assert rep["allowed_probability"] == pytest.approx(probs[mask].sum())
    assert rep["tokens"][0]["p_masked"] == pytest.approx(probs[60] / probs[mask].sum())
    assert main(["mask", str(json_artifact), "--prefix", "[1, 2", "--logits", str(lp),
                 "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "most likely forbidden tokens" in out and "'#'" in out


def test_mask_top_says_how_many_groups_are_left_out(json_artifact, capsys):
    assert main(["mask", str(json_artifact), "--prefix", "[1, 2", "--top", "2"]) == 0
    out = capsys.readouterr().out
    m = __import__("re").search(r"\(2 of (\d+) groups; --top \1 shows all\)", out)
    assert m and int(m.group(1)) > 2
    assert main(["mask", str(json_artifact), "--prefix", "[1, 2", "--top", "0"]) == 0
    assert f"(0 of {m.group(1)} groups" in capsys.readouterr().out


def test_group_labels_fold_runs_of_one_terminal():
    from gramask.mask_report import lex_pieces

    from ._support import compiled

    cg = compiled("python", "gpt2")
    dashes = cg.vocab.token_id("-" * 16)
    assert dashes is not None
    pieces, error = lex_pieces(cg, 0, cg.vocab.token_bytes(dashes))
    assert error is None and [label for _, label in pieces] == ["MINUS×16…"]
    pieces, _ = lex_pieces(cg, 0, b"a--b")
    assert [label for _, label in pieces] == ["NAME", "MINUS×2", "NAME…"]


def test_inspect_plot_writes_a_png(json_artifact, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "tables.png"
    assert main(["inspect", str(json_artifact), "--plot", str(out), "--plot-steps", "40"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert f"plot written to {out}" in capsys.readouterr().out


def test_inspect_plot_without_matplotlib_says_how_to_get_it(json_artifact, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert main(["inspect", str(json_artifact), "--plot", str(tmp_path / "x.png")]) == 1
    assert "pip install 'gramask[plot]'" in capsys.readouterr().err


def test_trace_writes_a_self_contained_page(json_artifact, tmp_path, capsys):
    """The toy model wants a single-quoted string, which JSON forbids: the page records the
    step where the mask overrode it, and the page loads nothing from outside."""
    out = tmp_path / "trace.html"
    assert main(["trace", str(json_artifact), "--prefix", '{"a": ', "--wants", "'x'}",
                 "-o", str(out)]) == 0
    said = capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "</table></body></html>" in page
    assert "http" not in page and "<script" not in page and "src=" not in page
    n = page.count("<tr><td class=n>")
    assert n >= 2 and f"{n} steps" in said and "complete: True" in said
    assert 'class="tok bad">&#x27;' in page  # the forbidden ' the model preferred, shown
    assert "the mask overrode the model at 0" not in said


def test_trace_completion_records_each_step():
    import numpy as np

    from gramask.trace import trace_completion

    from ._support import compiled

    cg = compiled("json", "gpt2")
    v = cg.vocab
    logits = np.full(len(v) + 7, -5.0)  # wider than the vocabulary, as padded models are
    logits[[v.token_id("x"), v.token_id("]"), v.eos_token_id]] = [9.0, 3.0, 1.0]
    c = cg.constraint(prefix="[1")
    steps = trace_completion(c, lambda ids: logits, max_new_tokens=5)
    assert [s.token for s in steps] == ["]", "<EOS>"] and c.is_finished
    p = np.exp(logits[: len(v)] - logits.max())
    p /= p.sum()
    m = cg.constraint(prefix="[1").allowed()
    assert steps[0].p_allowed == pytest.approx(p[m].sum())
    assert steps[0].allowed == int(m.sum())
    assert steps[0].forbidden_preferred[0] == ("x", pytest.approx(p[v.token_id("x")]))


def test_grammar_errors_keep_their_context_on_the_command_line(tmp_path, capsys):
    """A Lark syntax error shows the line and a caret; an undefined start rule is named as
    such, with the rules there are (not lark's NonTerminal('program'))."""
    bad = tmp_path / "bad.lark"
    bad.write_text('start: item+\nitem: "a" | "b" ) \n')
    assert main(["compile", str(bad), "--vocab", "gpt2", "-q"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("invalid Lark grammar syntax (line 2, column 17)")
    assert err[1].strip() == 'item: "a" | "b" )' and err[2].index("^") == err[1].index(")")
    ok = tmp_path / "ok.lark"
    ok.write_text('start: item+\nitem: "a" | "b"\n')
    assert main(["compile", str(ok), "--vocab", "gpt2", "-q", "--start", "program"]) == 1
    err_text = capsys.readouterr().err
    assert "the start rule 'program' is not defined" in err_text
    assert "rules: item, start" in err_text and "NonTerminal" not in err_text
    with pytest.raises(gramask.GrammarError, match="start rule 'program' is not defined"):
        gramask.Grammar.from_lark(ok.read_text(), start="program")

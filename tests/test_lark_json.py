"""llguidance's ``%json {schema}`` in Lark grammars (gramask/frontends/lark_json.py), with the
installed llguidance as the oracle (lark has no %json) and jsonschema for the JSON parts."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

import gramask
from gramask.errors import GrammarError
from tools.lark_dialect_check import gramask_verdict
from tools.lark_json_check import ESCAPE_DIFFERENCE, mutate, walk

from ._support import is_program

VOCAB = gramask.Vocabulary.from_tokens(
    [bytes([c]) for c in range(32, 127)] + [b"\n", b"\t", b'{"', b'":', b"</", b"</s>"],
    eos_token_id=100,
)

TOOL = {"type": "object", "properties": {
    "name": {"const": "get_weather"},
    "arguments": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 6},
        "unit": {"enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["city"], "additionalProperties": False}},
    "required": ["name", "arguments"], "additionalProperties": False}
ITEMS = {"type": "array", "items": {"type": ["integer", "boolean", "null"]}, "maxItems": 3}
WORD = {"type": "string", "pattern": "^[a-c]{1,3}$"}
COMPACT = {"x-guidance": {"whitespace_flexible": False}, "type": "object",
           "properties": {"k": {"type": "boolean"}, "n": {"type": "number"}},
           "additionalProperties": False}
COMPACT_ITEMS = {"x-guidance": {"whitespace_flexible": False}, "type": "array",
                 "items": {"type": "integer"}, "maxItems": 2}
# llguidance's separators (its own tests: test_json_x_guidance.rs), regexes
SPACED = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {
    "type": "array", "items": {"type": "integer"}}}, "required": ["a"],
    "additionalProperties": False, "x-guidance": {
    "item_separator": ", ", "key_separator": ": ", "whitespace_flexible": False}}
TABS = {**SPACED, "x-guidance": {"whitespace_pattern": "\t+", "whitespace_flexible": False}}
LOOSE = {**SPACED, "x-guidance": {"item_separator": r"\s{0,2},\s{0,2}",
                                  "key_separator": r"\s{0,2}:\s{0,2}",
                                  "whitespace_flexible": False}}

# (grammar, its JSON parts as regex groups over a text, the schema of each group)
CASES: list[tuple[str, str, list[Any]]] = [
    ('start: "<tool>" %json' + json.dumps(TOOL) + ' "</tool>"\n',
     r"<tool>(.*)</tool>", [TOOL]),
    # llguidance's docs example, the schema over several lines; a rule's whole body
    ("start: TEXT | fun_call\nTEXT: /[^{](.|\\n)*/\nfun_call: %json "
     + json.dumps(TOOL, indent=2) + "\n",
     r"(\{.*)", [TOOL]),
    ('start: item{1,3}\nitem: "A" %json' + json.dumps(ITEMS) + ' ";" | "B" %json '
     + json.dumps(WORD) + ' ";"\n',
     r"", [ITEMS, WORD]),
    ('start: "x=" %json\n    ' + json.dumps(COMPACT) + "\n", r"x=(.*)", [COMPACT]),
    # two compact parts with nothing between: no whitespace there either
    ("start: x{1,3}\nx: %json " + json.dumps(COMPACT_ITEMS) + "\n", r"", [COMPACT_ITEMS]),
    ('start: "<" %json ' + json.dumps(SPACED) + ' ">"\n', r"<(.*)>", [SPACED]),
    ('start: "<" %json ' + json.dumps(LOOSE) + ' ">"\n', r"<(.*)>", [LOOSE]),
    ('start: "<" %json ' + json.dumps(TABS) + ' ">"\n', r"<(.*)>", [TABS]),
]


@pytest.fixture(scope="module")
def llg() -> Any:
    pytest.importorskip("llguidance")
    try:
        from tools.lark_dialect_check import LLG

        return LLG()
    except Exception as e:  # no GPT-2 tokenizer offline
        pytest.skip(f"llguidance's tokenizer is not available: {e}")


_CG: dict[int, gramask.CompiledGrammar] = {}


def _compiled(i: int) -> gramask.CompiledGrammar:
    if i not in _CG:
        _CG[i] = gramask.compile(gramask.Grammar.from_lark(CASES[i][0]), VOCAB, cache=False,
                                 progress=False)
    return _CG[i]


def _json_parts(i: int, text: str) -> list[tuple[Any, Any]]:
    """(JSON value, schema) of each JSON part of ``text``."""
    pattern, schemas = CASES[i][1], CASES[i][2]
    if i == 2:  # items "A" array ";" / "B" string ";"
        out = []
        for m in re.finditer(r'([AB])(\[[^;]*\]|"[^"]*");', text):
            out.append((json.loads(m.group(2)), schemas[m.group(1) == "B"]))
        return out
    if i == 4:  # values one after the other
        out, at = [], 0
        while at < len(text):
            value, at = json.JSONDecoder().raw_decode(text, at)
            out.append((value, schemas[0]))
        return out
    m = re.fullmatch(pattern, text, re.S)
    if m is None or (i == 1 and not text.startswith("{")):
        return []
    return [(json.loads(m.group(1)), schemas[0])]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_walks_are_accepted_by_llguidance_and_jsonschema(i: int, llg: Any) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    cg = _compiled(i)
    rnd = random.Random(i)
    for _ in range(25):
        text = walk(cg, rnd, 60)
        assert is_program(cg, text), text
        if llg.verdict(CASES[i][0], text) != "accept":
            assert _ESCAPE_DIFFERENCE.search(text), text  # only what the docs say
        for value, schema in _json_parts(i, text):
            jsonschema.validate(value, {k: v for k, v in schema.items() if k != "x-guidance"})


# the one known difference (docs/dialects.md): gramask's JSON Schema frontend takes every JSON
# escape; llguidance by default no \/ and \u only for control characters
_ESCAPE_DIFFERENCE = ESCAPE_DIFFERENCE


def test_the_known_escape_difference(llg: Any) -> None:
    grammar = 'start: "<" %json {"type": "string"} ">"\n'
    cg = gramask.compile(gramask.Grammar.from_lark(grammar), VOCAB, cache=False, progress=False)
    for text in ['<"\\u00e9">', '<"\\/">']:
        assert _ESCAPE_DIFFERENCE.search(text)
        assert is_program(cg, text) and llg.verdict(grammar, text) == "reject"
    assert is_program(cg, '<"\\u001f">') and llg.verdict(grammar, '<"\\u001f">') == "accept"


SEEDS: dict[int, list[str]] = {
    0: ['<tool>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool>',
        '<tool>{ "name" : "get_weather" ,\n "arguments": {"city": "Rome", "days": 3} }</tool>',
        '<tool> {"name":"get_weather","arguments":{"city":"a"}}</tool>',
        '<tool>{"name":"get_weather","arguments":{"city":"a"}} </tool>'],
    1: ["hello {x", '{"name": "get_weather", "arguments": {"unit": "c", "city": ""}}'],
    2: ['A[1, true];B"ab";', 'A[];A [null];', 'B"abcd";', 'A[ ]\n;'],
    3: ['x={"k":true,"n":-1.5e3}', 'x={ "k":true}', "x={}"],
    4: ["[][1,2]", "[] []", "[1][2][3]", "[1, 2]"],
    5: ['<{"a": 1, "b": [1, 2]}>', '<{"a":1}>', '<{"a": 1,"b": []}>', '<{ "a": 1}>'],
    6: ['<{"a"  :  1 , "b":[1 ,  2]}>', '<{"a":1,   "b":[]}>', '<{"a":\n1}>', '<{"a": 1}>'],
    7: ['<{"a":\t1}>', '<{"a": 1}>', '<{\t"a":1\t,"b":[\t]}>', '<\t{"a":1}>'],
}


@pytest.mark.parametrize("i", range(len(CASES)))
def test_verdicts_agree_with_llguidance(i: int, llg: Any) -> None:
    """Whole texts (written, walked, and random edits of them): accepted, a prefix only, or
    rejected, as llguidance says."""
    cg = _compiled(i)
    rnd = random.Random(100 + i)
    texts = SEEDS[i] + [walk(cg, rnd, 40) for _ in range(6)]
    texts += [mutate(rnd.choice(texts), rnd) for _ in range(40)]
    bad = [(s, llg.verdict(CASES[i][0], s), gramask_verdict(cg, s)) for s in dict.fromkeys(texts)]
    assert [b for b in bad if b[1] != b[2]] == []


def test_whitespace_only_between_json_tokens() -> None:
    cg = _compiled(0)
    ok = '<tool>{"name":"get_weather","arguments":{"city":"x"}}</tool>'
    assert is_program(cg, ok)
    assert is_program(cg, ok.replace(",", " ,\t\n "))
    assert not is_program(cg, ok.replace("<tool>", "<tool> "))
    assert not is_program(cg, ok.replace("</tool>", " </tool>"))


ERRORS: list[tuple[str, str]] = [
    ('start: "a"\n\nx: "<" %json {"type": "strin"} ">"\n', r"%json at line 3.*strin.*line 3"),
    ('start: %json {"type": "object",\n "properties": }\n',
     r"%json: the schema is not valid JSON.*line 2"),
    ("start: %json [1]\n", r"%json must be followed by a JSON Schema.*line 1, column 8"),
    ("start: %json\n", r"%json: the schema is not valid JSON.*line 2"),
    ('start: "a" %json {}\n%ignore " "\n', r"%json at line 1 with %ignore"),
    ('start: A\nA: "a" %json {}\n', r"%json in terminal A.*line 2"),
    ('start: %json {"x-guidance": {"coerce_one_of": true}}\n',
     r"x-guidance option coerce_one_of=True is not supported"),
    ('start: %json {"x-guidance": {"whitespace_pattern": "[ ]*"}}\n',
     r"x-guidance whitespace_pattern '\[ \]\*' matches the empty string"),
    ('start: %json {"x-guidance": {"item_separator": " *"}}\n',
     r"x-guidance item_separator ' \*' matches the empty string"),
    # llguidance merges two JSON parts' lexeme classes and takes whitespace between them
    ('start: %json {"type": "integer"} x\nx: %json {"type": "integer"}\n',
     r"%json at line 2 can follow %json at line 1 with nothing between"),
    ('start: x+\nx: %json {"type": "array"}\n', r"%json at line 2 can follow %json at line 2"),
    ('start: a b\na: "x" %json {}?\nb: (c | %json {}) "y"\nc: "c"\n',
     r"%json at line 3 can follow %json at line 2"),
]


@pytest.mark.parametrize("text,what", ERRORS)
def test_refusals_name_the_json_line(text: str, what: str) -> None:
    with pytest.raises(GrammarError, match=what):
        gramask.Grammar.from_lark(text)


def test_basic_lexer_is_refused() -> None:
    with pytest.raises(GrammarError, match="needs lexer='contextual'"):
        gramask.Grammar.from_lark('start: "a" %json {}\n', lexer="basic")


def test_lines_after_the_schema_keep_their_numbers() -> None:
    text = 'start: x\nx: %json {\n  "type": "integer"\n}\ny: "a" undefined_rule\n'
    with pytest.raises(GrammarError) as e:
        gramask.Grammar.from_lark(text)
    assert e.value.line == 5, str(e.value)


def test_names_do_not_collide_with_the_host() -> None:
    text = 'start: json0__start_1 %json {"type": "boolean"}\njson0__start_1: JSON0_WS\nJSON0_WS: "w"\n'
    cg = gramask.compile(gramask.Grammar.from_lark(text), VOCAB, cache=False, progress=False)
    assert is_program(cg, "wtrue")
    assert not is_program(cg, "w true")



def test_a_boolean_schema() -> None:
    """``%json true`` (any JSON value; llguidance reads any JSON value after ``%json``)."""
    cg = gramask.compile(gramask.Grammar.from_lark('start: "<" %json true ">"\n'), VOCAB,
                         cache=False, progress=False)
    assert is_program(cg, '<[1, {"a": null}]>') and not is_program(cg, "<>")


def test_a_json_part_nothing_reaches_is_checked_not_spliced() -> None:
    g = gramask.Grammar.from_lark('start: "a"\nx: %json {"type": "array"}\n')
    assert not any(t.name.startswith("JSON0") for t in g.terminals)
    with pytest.raises(GrammarError, match="%json at line 2"):
        gramask.Grammar.from_lark('start: "a"\nx: %json {"type": "strin"}\n')

"""GramaskLogitsProcessor inside ``model.generate`` with a tiny random GPT-2 (nothing downloaded)."""

from __future__ import annotations

import codecs
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # never download: the model is built from a config below

import numpy as np
import pytest
import torch
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel, LogitsProcessorList
from transformers.generation import LogitsProcessor

import gramask
from gramask.integrations.transformers import GramaskLogitsProcessor

from ._support import compiled

NEW_TOKENS = 40

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def cg() -> gramask.CompiledGrammar:
    return compiled("json", "gpt2")


@pytest.fixture(scope="module")
def model(cg) -> GPT2LMHeadModel:
    torch.manual_seed(1234)
    eos = cg.vocab.eos_token_id
    config = GPT2Config(
        n_layer=1, n_head=2, n_embd=32, n_positions=128, vocab_size=len(cg.vocab),
        bos_token_id=eos, eos_token_id=eos,
    )
    return GPT2LMHeadModel(config).eval()


STRUCTURE = ["{", "}", "[", "]", ",", ":", '"', '{"', '":', '",', '"}', '["', '"]', ' "', " {",
             " [", "true", "false", "null", " true", " null", "},", "],", "]}", " "]


class Favour(LogitsProcessor):
    """Adds a bonus to some ids. A random model mostly spells long numbers and strings (most
    tokens are digits or string text); favouring JSON punctuation gives nested values, and
    favouring EOS makes complete rows stop, so both checks below have something to check."""

    def __init__(self, bonus: dict[int, float]) -> None:
        self.ids = torch.tensor(list(bonus))
        self.values = torch.tensor(list(bonus.values()))

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        scores[:, self.ids] += self.values
        return scores


def favour_json(cg: gramask.CompiledGrammar, structure: float = 7.0, eos: float = 5.0) -> Favour:
    bonus = {i: structure for i in map(cg.vocab.token_id, STRUCTURE) if i is not None}
    bonus[cg.vocab.eos_token_id] = eos
    return Favour(bonus)


class NaiveJSONProcessor(LogitsProcessor):
    """Reference: re-parses every row from scratch each step and masks with numpy."""

    def __init__(self, cg: gramask.CompiledGrammar, rows: int) -> None:
        self.cg, self.rows, self.prompt_len = cg, rows, None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        if self.prompt_len is None:
            self.prompt_len = input_ids.shape[1]
        eos = self.cg.vocab.eos_token_id
        for i in range(self.rows):
            c = self.cg.constraint()
            ended = False
            for tok in input_ids[i, self.prompt_len :].tolist():
                if tok == eos:
                    ended = True
                    break
                c.advance(tok)
            allowed = np.zeros(len(self.cg.vocab), dtype=bool)
            if ended:
                allowed[eos] = True
            else:
                allowed = c.allowed()
            scores[i, torch.from_numpy(~allowed)] = float("-inf")
        return scores


# ------------------------------------------------------------------------ JSON prefix oracle

_LITERALS = {"t": "true", "f": "false", "n": "null"}
_NUMBER = {  # state -> (transitions, may the number end here)
    "-": ({"0": "0", **dict.fromkeys("123456789", "int")}, False),
    "0": ({".": ".", "e": "e", "E": "e"}, True),
    "int": ({**dict.fromkeys("0123456789", "int"), ".": ".", "e": "e", "E": "e"}, True),
    ".": (dict.fromkeys("0123456789", "frac"), False),
    "frac": ({**dict.fromkeys("0123456789", "frac"), "e": "e", "E": "e"}, True),
    "e": ({"+": "sign", "-": "sign", **dict.fromkeys("0123456789", "exp")}, False),
    "sign": (dict.fromkeys("0123456789", "exp"), False),
    "exp": (dict.fromkeys("0123456789", "exp"), True),
}
_WS = " \t\n\r"


def json_prefix_status(text: str) -> str | None:
    """None if no JSON text (RFC 8259) starts with ``text``; "complete" if ``text`` is one;
    otherwise "prefix". Character by character, independent of gramask."""
    stack: list[str] = []
    mode = "value"  # value | value_or_close | key | key_or_close | colon | after
    sub: tuple = ()  # ("str", is_key) | ("esc", is_key) | ("hex", is_key, n) | ("num", state)
    #                  | ("lit", rest)
    i = 0
    while i < len(text):
        ch = text[i]
        if sub:
            kind = sub[0]
            if kind == "str":
                if ch == '"':
                    sub, mode = (), ("colon" if sub[1] else "after")
                elif ch == "\\":
                    sub = ("esc", sub[1])
                elif ord(ch) < 0x20:
                    return None
            elif kind == "esc":
                if ch in '"\\/bfnrt':
                    sub = ("str", sub[1])
                elif ch == "u":
                    sub = ("hex", sub[1], 4)
                else:
                    return None
            elif kind == "hex":
                if ch not in "0123456789abcdefABCDEF":
                    return None
                sub = ("str", sub[1]) if sub[2] == 1 else ("hex", sub[1], sub[2] - 1)
            elif kind == "lit":
                if ch != sub[1][0]:
                    return None
                sub = ("lit", sub[1][1:]) if len(sub[1]) > 1 else ()
                if not sub:
                    mode = "after"
            else:  # number
                moves, can_end = _NUMBER[sub[1]]
                if ch in moves:
                    sub = ("num", moves[ch])
                elif can_end:
                    sub, mode = (), "after"
                    continue  # this character belongs to what follows the number
                else:
                    return None
            i += 1
            continue
        i += 1
        if ch in _WS:
            continue
        if mode in ("value", "value_or_close"):
            if mode == "value_or_close" and ch == "]":
                stack.pop()
                mode = "after"
            elif ch in "{[":
                stack.append(ch)
                mode = "key_or_close" if ch == "{" else "value_or_close"
            elif ch == '"':
                sub = ("str", False)
            elif ch == "-" or (ch.isdigit() and ch.isascii()):
                sub = ("num", "-" if ch == "-" else "0" if ch == "0" else "int")
            elif ch in _LITERALS:
                sub = ("lit", _LITERALS[ch][1:])
            else:
                return None
        elif mode in ("key", "key_or_close"):
            if mode == "key_or_close" and ch == "}":
                stack.pop()
                mode = "after"
            elif ch == '"':
                sub = ("str", True)
            else:
                return None
        elif mode == "colon":
            if ch != ":":
                return None
            mode = "value"
        else:  # after a value
            if not stack:
                return None
            if ch == ",":
                mode = "key" if stack[-1] == "{" else "value"
            elif ch == ("}" if stack[-1] == "{" else "]"):
                stack.pop()
            else:
                return None
    number_ends = sub[:1] == ("num",) and _NUMBER[sub[1]][1]
    done = not stack and ((mode == "after" and not sub) or number_ends)
    return "complete" if done else "prefix"


@pytest.mark.parametrize(
    "text",
    ['{"a": [1, -2.5e+3, true, null, "x\\u00e9\\n"]}', "[]", "0", "-0.5E2", '"\\""',
     ' { "k" : { } } ', "[[[]],[{}]]", "false"],
)
def test_oracle_agrees_with_json_loads(text):
    assert json_prefix_status(text) == "complete"
    json.loads(text)
    for k in range(len(text)):
        status = json_prefix_status(text[:k])
        assert status is not None, text[:k]
        assert (status == "complete") == _loads_ok(text[:k]), text[:k]


@pytest.mark.parametrize(
    "text", ["01", "[1,]", "{1", '{"a" 1', "tru e", "1.e", '"\x01"', '"\\x"', "[1]]", "nul1",
             "-a", "{}{}", '"\\u12g"', "1 2"],
)
def test_oracle_rejects(text):
    assert json_prefix_status(text) is None


def _loads_ok(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------- helpers


def generated(row: torch.Tensor, prompt_len: int, eos: int) -> tuple[list[int], bool]:
    """The ids generated in ``row`` up to EOS (excluded), and whether EOS ended it."""
    ids = row[prompt_len:].tolist()
    if eos in ids:
        return ids[: ids.index(eos)], True
    return ids, False


def decode(vocab: gramask.Vocabulary, ids: list[int]) -> str:
    """UTF-8 text of the ids; an incomplete last character is dropped (it is still a prefix)."""
    data = b"".join(vocab.token_bytes(i) for i in ids)
    return codecs.getincrementaldecoder("utf-8")().decode(data, final=False)


def check_rows(cg, out, prompt_len, proc, prefixes=None) -> list[bool]:
    """Every row is a JSON prefix, complete if it ended with EOS; returns which rows ended."""
    eos = cg.vocab.eos_token_id
    proc.consume(out)  # generate never shows processors the last token it sampled
    ended = []
    for i, row in enumerate(out):
        ids, stopped = generated(row, prompt_len, eos)
        text = (prefixes[i] if prefixes else "") + decode(cg.vocab, ids)
        status = json_prefix_status(text)
        assert status is not None, f"row {i}: {text!r} is not a JSON prefix"
        if stopped:
            assert status == "complete", f"row {i}: {text!r} ended with EOS incomplete"
            json.loads(text)
        assert proc.constraints[i].data == b"".join(cg.vocab.token_bytes(t) for t in ids)
        assert proc.finished[i] == stopped
        ended.append(stopped)
    return ended


def gen_config(cg, **kw) -> GenerationConfig:
    """Every knob explicit, so generate neither guesses nor warns."""
    eos = cg.vocab.eos_token_id
    base = dict(max_new_tokens=NEW_TOKENS, eos_token_id=eos, pad_token_id=eos, bos_token_id=eos,
                do_sample=False)
    base.update(kw)
    return GenerationConfig(**base)


PROMPT = [0, 1, 2, 3, 11]  # '!"#$,' : not JSON, and not fed to the grammar


# ----------------------------------------------------------------------------------- tests


def test_sampling_num_return_sequences(cg, model):
    proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=4)
    prompt = torch.tensor([PROMPT])
    torch.manual_seed(0)
    out = model.generate(
        prompt, attention_mask=torch.ones_like(prompt),
        generation_config=gen_config(cg, do_sample=True, top_k=0, num_return_sequences=4),
        logits_processor=LogitsProcessorList([favour_json(cg), proc]),
    )
    assert out.shape[0] == 4
    ended = check_rows(cg, out, len(PROMPT), proc)
    assert any(ended), "no row ended: the EOS check above was vacuous"


def test_sampling_batch_with_prefixes_and_a_distinct_pad(cg, model):
    """Four prompts, each row its own prefix; pad ("!") differs from EOS and is also valid
    grammar text inside strings, so it must not be mistaken for an end of row."""
    eos = cg.vocab.eos_token_id
    prefixes = ["", '{"key": ', "[1, ", '"a string']
    proc = GramaskLogitsProcessor([cg.constraint(prefix=p) for p in prefixes], pad_token_id=0)
    prompts = torch.tensor([PROMPT, PROMPT[::-1], [5, 6, 7, 8, 9], [20, 21, 22, 23, 24]])
    torch.manual_seed(1)
    out = model.generate(
        prompts, attention_mask=torch.ones_like(prompts),
        generation_config=gen_config(cg, do_sample=True, top_k=0, pad_token_id=0),
        logits_processor=LogitsProcessorList([favour_json(cg), proc]),
    )
    ended = check_rows(cg, out, len(PROMPT), proc, prefixes)
    assert any(ended)
    for row, stopped in zip(out, ended, strict=True):
        if stopped:  # generate padded the finished rows with "!"; the processor ignored them
            tail = row[len(PROMPT) :].tolist()
            assert set(tail[tail.index(eos) + 1 :]) <= {0}


def test_greedy_matches_naive_reference(cg, model):
    prompt = torch.tensor([PROMPT, PROMPT])
    kwargs = dict(attention_mask=torch.ones_like(prompt), generation_config=gen_config(cg))
    proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=2)
    out = model.generate(prompt, logits_processor=LogitsProcessorList([proc]), **kwargs)
    ref = model.generate(prompt, logits_processor=LogitsProcessorList(
        [NaiveJSONProcessor(cg, 2)]), **kwargs)
    assert torch.equal(out, ref)
    check_rows(cg, out, len(PROMPT), proc)


def test_beam_search_matches_naive_reference(cg, model):
    """Beam search reorders rows between calls: the processor rolls back and re-advances."""
    prompt = torch.tensor([PROMPT])
    kwargs = dict(
        attention_mask=torch.ones_like(prompt),
        generation_config=gen_config(cg, num_beams=3, num_return_sequences=3, max_new_tokens=10),
    )
    proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=3)
    out = model.generate(prompt, logits_processor=LogitsProcessorList([proc]), **kwargs)
    ref = model.generate(prompt, logits_processor=LogitsProcessorList(
        [NaiveJSONProcessor(cg, 3)]), **kwargs)
    assert torch.equal(out, ref)
    eos = cg.vocab.eos_token_id
    for row in out:
        ids, stopped = generated(row, len(PROMPT), eos)
        status = json_prefix_status(decode(cg.vocab, ids))
        assert status is not None and (status == "complete" or not stopped)


# ------------------------------------------------------------------------ direct calls


def _ids(cg, *texts: str) -> list[int]:
    out = []
    for t in texts:
        i = cg.vocab.token_id(t)
        assert i is not None, t
        out.append(i)
    return out


def test_ended_rows_allow_only_eos_and_pad(cg):
    eos = cg.vocab.eos_token_id
    v = len(cg.vocab)
    proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=3, pad_token_id=0)
    prompt = [[7, 7], [7, 7], [7, 7]]
    one, open_, pad = _ids(cg, "1", "[", "!")
    steps = [  # the column appended at each call
        [one, open_, one],
        [eos, one, one],  # row 0 ends: its text "1" is complete
        [pad, eos, eos],  # row 1's EOS is masked out in practice; here it ends the row too
        [pad, pad, pad],
    ]
    ids = torch.tensor(prompt)
    for k in range(len(steps) + 1):
        scores = torch.zeros(3, v + 11)  # a padded model vocabulary
        proc(ids, scores)
        finite = torch.isfinite(scores)
        assert not finite[:, v:].any()
        for r in range(3):
            if proc.finished[r]:
                assert finite[r].nonzero().flatten().tolist() == sorted({0, eos})
            else:
                assert torch.equal(finite[r, :v], torch.from_numpy(proc.constraints[r].allowed()))
        if k < len(steps):
            ids = torch.cat([ids, torch.tensor(steps[k]).unsqueeze(1)], dim=1)
    assert proc.finished == [True, True, True]
    assert proc.constraints[0].is_finished and proc.constraints[0].text == "1"
    assert not proc.constraints[1].is_finished and proc.constraints[1].text == "[1"
    assert proc.constraints[2].is_finished and proc.constraints[2].text == "11"

    proc.reset()
    assert all(c.num_tokens == 0 and not c.is_finished for c in proc.constraints)
    assert proc.finished == [False, False, False]


def test_rejected_token_names_the_row(cg):
    proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=2)
    proc(torch.tensor([[5], [5]]), torch.zeros(2, len(cg.vocab)))
    bad = _ids(cg, "]")[0]
    with pytest.raises(gramask.TokenRejected, match=r"row 1, generated token 0"):
        proc(torch.tensor([[5, _ids(cg, "1")[0]], [5, bad]]), torch.zeros(2, len(cg.vocab)))


def test_shape_errors(cg):
    proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=2)
    with pytest.raises(ValueError, match=r"input_ids: expected shape \(2, length\) .* got \(3, 1\)"):
        proc(torch.zeros(3, 1, dtype=torch.long), torch.zeros(3, len(cg.vocab)))
    with pytest.raises(ValueError, match="batch_size: expected at least 1, got 0"):
        GramaskLogitsProcessor.from_compiled(cg, batch_size=0)
    with pytest.raises(ValueError, match="expected at least one Constraint"):
        GramaskLogitsProcessor([])


def test_fill_in_the_middle_rows(cg, model):
    """A suffix per row: rows that end are programs with their own prefix and suffix."""
    eos = cg.vocab.eos_token_id
    prefixes = ["[1, ", '{"a": ', "[1, ", '{"a": ']
    suffixes = ["]", ', "b": 2}', "]", None]
    proc = GramaskLogitsProcessor.from_compiled(cg, 4, prefix=prefixes, suffix=suffixes)
    assert proc.constraints[2] is not proc.constraints[0]  # same pair: a clone, not shared
    prompts = torch.tensor([PROMPT] * 4)
    torch.manual_seed(3)
    out = model.generate(
        prompts, attention_mask=torch.ones_like(prompts),
        generation_config=gen_config(cg, do_sample=True, top_k=0),
        logits_processor=LogitsProcessorList([favour_json(cg), proc]),
    )
    ended = 0
    for row, p, s in zip(out.tolist(), prefixes, suffixes, strict=True):
        gen = row[len(PROMPT):]
        if eos in gen:
            ended += 1
            body = b"".join(cg.vocab.token_bytes(t) for t in gen[: gen.index(eos)])
            json.loads(p.encode() + body + (s or "").encode())
    assert ended, "no row ended: the check above was vacuous"
    with pytest.raises(ValueError, match="suffix"):
        GramaskLogitsProcessor.from_compiled(cg, 2, suffix=["]"])


def test_budget_makes_generate_return_complete_programs(cg, model):
    """``max_tokens`` = ``max_new_tokens``: rows that reach the limit without EOS are complete
    JSON too (without the budget the random model leaves them open)."""
    prefixes = ["", '{"key": [', "[1, {", '"a string']
    for n in (3, 6, 12):
        proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=4, prefix=prefixes,
                                                    max_tokens=n)
        prompt = torch.tensor([PROMPT] * 4)
        torch.manual_seed(n)
        out = model.generate(
            prompt, attention_mask=torch.ones_like(prompt),
            generation_config=gen_config(cg, do_sample=True, top_k=0, max_new_tokens=n),
            logits_processor=LogitsProcessorList([favour_json(cg, eos=-5.0), proc]),
        )
        proc.consume(out)
        eos = cg.vocab.eos_token_id
        for i, row in enumerate(out):
            ids, _ = generated(row, len(PROMPT), eos)
            assert len(ids) <= n
            json.loads(prefixes[i] + decode(cg.vocab, ids))
    with pytest.raises(gramask.BudgetError):
        GramaskLogitsProcessor.from_compiled(cg, batch_size=1, prefix="[[[[[[", max_tokens=2)


def test_generate_helper_uses_max_new_tokens_as_the_budget(cg, model):
    """``gramask.integrations.transformers.generate``: the budget is ``max_new_tokens``."""
    from gramask.integrations.transformers import generate

    prompt = torch.tensor([PROMPT] * 2)
    torch.manual_seed(3)
    cfg = gen_config(cg, do_sample=True, top_k=0, max_new_tokens=None, num_return_sequences=2)
    out, proc = generate(model, cg, prompt, max_new_tokens=5, prefix='{"k": [[',
                         attention_mask=torch.ones_like(prompt), generation_config=cfg,
                         logits_processor=[favour_json(cg, eos=-5.0)])
    assert out.shape[0] == 4 and len(proc.constraints) == 4
    for row in out:
        ids, _ = generated(row, len(PROMPT), cg.vocab.eos_token_id)
        assert len(ids) <= 5
        json.loads('{"k": [[' + decode(cg.vocab, ids))


def test_budget_with_suffix_returns_complete_programs(cg, model):
    """Fill-in-the-middle under ``max_new_tokens``: every row, ended by EOS or by the limit,
    is a document with its own prefix and suffix (the processor and the ``generate``
    helper)."""
    from gramask.integrations.transformers import generate

    prefixes = ['{"a": [', "[1, ", '{"k": "v', "["]
    suffixes = ['], "b": 2}', "]", '"}', "]]"]
    eos = cg.vocab.eos_token_id
    for n in (2, 4, 9):
        proc = GramaskLogitsProcessor.from_compiled(cg, batch_size=4, prefix=prefixes,
                                                    suffix=suffixes, max_tokens=n)
        prompt = torch.tensor([PROMPT] * 4)
        torch.manual_seed(n)
        out = model.generate(
            prompt, attention_mask=torch.ones_like(prompt),
            generation_config=gen_config(cg, do_sample=True, top_k=0, max_new_tokens=n),
            logits_processor=LogitsProcessorList([favour_json(cg, eos=-5.0), proc]),
        )
        proc.consume(out)
        for i, row in enumerate(out):
            ids, _ = generated(row, len(PROMPT), eos)
            assert len(ids) <= n
            json.loads(prefixes[i] + decode(cg.vocab, ids) + suffixes[i])
    prompt = torch.tensor([PROMPT] * 2)
    torch.manual_seed(5)
    cfg = gen_config(cg, do_sample=True, top_k=0, max_new_tokens=None, num_return_sequences=2)
    out, proc = generate(model, cg, prompt, max_new_tokens=3, prefix="[[1, ", suffix="]]",
                         attention_mask=torch.ones_like(prompt), generation_config=cfg,
                         logits_processor=[favour_json(cg, eos=-5.0)])
    for row in out:
        ids, _ = generated(row, len(PROMPT), eos)
        assert len(ids) <= 3
        json.loads("[[1, " + decode(cg.vocab, ids) + "]]")
    with pytest.raises(gramask.BudgetError):
        GramaskLogitsProcessor.from_compiled(cg, batch_size=1, prefix="[", suffix="]]]]]]",
                                             max_tokens=2)

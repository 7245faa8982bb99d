"""A refused JSON Schema keyword is named once with its JSON pointer, and the message says
what in it is refused (the pattern's text, not the pointer again)."""

from __future__ import annotations

from typing import Any

import pytest

from gramask import Grammar
from gramask.errors import GrammarError


@pytest.mark.parametrize(("schema", "keyword", "ptr", "pattern"), [
    ({"properties": {"a": {"type": "string", "pattern": "(?=a)b"}}}, "pattern",
     "#/properties/a", "(?=a)b"),
    ({"items": {"patternProperties": {"(\\w)\\1": {}}}}, "patternProperties", "#/items",
     "(\\w)\\1"),
    ({"propertyNames": {"pattern": "(?i)x"}}, "propertyNames", "#", "(?i)x"),
])
def test_pattern_refusal_names_the_pointer_once(schema: Any, keyword: str, ptr: str,
                                                pattern: str) -> None:
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema(schema)
    msg = str(e.value)
    assert e.value.name == keyword
    assert msg.startswith(f"JSON Schema keyword {keyword!r} at {ptr}: pattern {pattern!r} ")
    assert msg.count("#") == 1, msg


def test_refusal_of_two_complements_names_the_users_keyword() -> None:
    """Two ``not multipleOf`` by different divisors cannot be merged: the refusal names
    ``not``, the user's keyword (it named the complement's internal keyword)."""
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema({"type": "number", "allOf": [{"not": {"multipleOf": 3}},
                                                              {"not": {"multipleOf": 5}}]})
    assert e.value.name == "not"
    assert "$gramask" not in str(e.value)

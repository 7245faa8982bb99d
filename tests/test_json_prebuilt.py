"""The automata shipped in gramask/frontends/json_automata.npz are exactly what building them
gives now (a change to a format's regex or to the construction must rewrite the file:
``python tools/build_json_automata.py``)."""

from __future__ import annotations

import json

import numpy as np

from gramask.frontends import json_prebuilt
from gramask.frontends.json_formats import FORMATS
from gramask.frontends.json_strings import build_source, spec_dfa


def test_every_prebuilt_automaton_is_what_building_it_gives() -> None:
    for source in json_prebuilt.sources():
        shipped = json_prebuilt.prebuilt(source)
        assert shipped is not None, f"{source[:60]} is not in json_automata.npz: rewrite it"
        built = build_source(source)
        assert np.array_equal(shipped.trans, built.trans), source[:60]
        assert np.array_equal(shipped.finals, built.finals), source[:60]


def test_formats_are_served_prebuilt() -> None:
    for body in FORMATS.values():
        spec = json.dumps({"regex": body}, sort_keys=True)
        assert spec_dfa(spec) is json_prebuilt.prebuilt("spec:" + spec)
    assert json_prebuilt.prebuilt("spec:" + json.dumps({"words": ["unlisted"]})) is None

"""Rewrite gramask/frontends/json_automata.npz, the automata the JSON Schema front end ships
prebuilt (formats, every string, JSON text's terminals): after changing a format's regex or
the string-automaton construction (``tests/test_json_prebuilt.py`` says when).

    PYTHONPATH=. python tools/build_json_automata.py
"""

from __future__ import annotations

from gramask.frontends.json_prebuilt import FILE, write
from gramask.frontends.json_strings import build_source

if __name__ == "__main__":
    write(build_source)
    print(f"wrote {FILE} ({FILE.stat().st_size:,} bytes)")

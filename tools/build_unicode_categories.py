"""Rewrite gramask/compiler/unicode_categories.json: Python ``re``'s Unicode ``\\d``, ``\\w``
and ``\\s`` as code-point ranges, scanned with this interpreter (its Unicode database is
recorded; another interpreter scans them itself on first use, ~0.1-1 s per category).

    PYTHONPATH=. python tools/build_unicode_categories.py
"""

from __future__ import annotations

from gramask.compiler.regex_nfa import _CATEGORIES_FILE, write_unicode_categories

if __name__ == "__main__":
    write_unicode_categories()
    print(f"wrote {_CATEGORIES_FILE} ({_CATEGORIES_FILE.stat().st_size:,} bytes)")

"""``python -m gramask``: the ``gramask`` command, for environments without the script."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())

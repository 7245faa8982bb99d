"""Does one run's every mask contain another's? ``tools/budget_force.py --masks FILE`` writes
a run's masks; a change allowed to widen masks (never to narrow them) is checked by

    python tools/mask_superset.py OLD.npz NEW.npz

which prints, per run, the steps compared, the steps where NEW forbids a token OLD allowed
(exits 1 if any) and the steps and tokens NEW allows beyond OLD. Steps are matched by
(request, k, step): a forced walk takes the same tokens in both runs, so the same step is the
same state; a step only one run has (the other's walk was blocked before it) is counted apart.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    a = ap.parse_args(argv)
    old, new = np.load(a.old), np.load(a.new)
    both = sorted(set(old.files) & set(new.files))
    narrowed = widened = extra = 0
    for key in both:
        o, n = old[key], new[key]
        lost = int(np.unpackbits(o & ~n).sum())
        gained = int(np.unpackbits(n & ~o).sum())
        if lost:
            narrowed += 1
            print(f"  {key}: {lost} tokens the old mask allowed are forbidden")
        widened += gained > 0
        extra += gained
    only = len(set(old.files) ^ set(new.files))
    print(f"{len(both)} steps compared ({only} in one run only); narrowed at {narrowed}; "
          f"widened at {widened} ({extra} tokens)")
    return 1 if narrowed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Is every mask of one run a superset of the same step's mask in another? Reads two
``.npz`` files written by ``tools/budget_force.py --masks`` (old first) and reports, per
step both runs reached, tokens the new mask drops (must be none where a change may only
admit more) and tokens it adds.

    python tools/budget_force.py --grammar python --fim --cases 8 --ks 0,4 --masks old.npz
    python tools/mask_superset.py old.npz new.npz
"""

from __future__ import annotations

import argparse

import numpy as np


def compare(old: dict[str, np.ndarray], new: dict[str, np.ndarray]
            ) -> tuple[int, int, int, int, list[str]]:
    """(steps both have, steps with a token added, tokens added, tokens dropped, keys of
    the steps that drop one)."""
    both = sorted(set(old) & set(new))
    grown = added = dropped = 0
    bad: list[str] = []
    for key in both:
        a, b = np.unpackbits(old[key]), np.unpackbits(new[key])
        lost = int((a & ~b).sum())
        more = int((b & ~a).sum())
        grown += more > 0
        added += more
        dropped += lost
        if lost:
            bad.append(key)
    return len(both), grown, added, dropped, bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    args = ap.parse_args(argv)
    with np.load(args.old, allow_pickle=False) as fo, np.load(args.new,
                                                               allow_pickle=False) as fn:
        old = {k: fo[k] for k in fo.files}
        new = {k: fn[k] for k in fn.files}
    n, grown, added, dropped, bad = compare(old, new)
    only = len(set(old) ^ set(new))
    print(f"{n} steps in both ({only} in one only); {grown} steps admit more "
          f"({added} tokens); {len(bad)} steps drop a token ({dropped} tokens)")
    for key in bad[:20]:
        print(f"  drops at request/k/step {key}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

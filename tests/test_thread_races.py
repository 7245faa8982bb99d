"""Races between threads sharing one compiled grammar, each pinned by making the threads meet
at the bad moment (an event or a barrier in a hooked call), not by timing.

The walks of ``tests/test_threads.py`` find such races by chance; these replay them: a
lazily built contextual table's node arrays reloaded by two threads, the older load landing
last (a third thread's rows then named nodes past the arrays: IndexError); two
fill-in-the-middle setups building the grammar's reversed automaton at once (a suffix parsed
by one, its quotient built against the other: InvalidSuffixError); two clones of one
fill-in-the-middle constraint numbering their boundary reach sets at once (one code for two
sets: a token checked against the wrong set); a runtime asked for with new limits while
another thread builds one for them (the old runtime came back); and two threads evicting
the same oldest entry of a module-level vocabulary cache (KeyError).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import numpy as np

import gramask.compiler.walk_inputs as walk_inputs
from gramask import RuntimeLimits
from gramask.runtime.fim import contextual as fim_contextual
from gramask.runtime.fim import quotient_base
from gramask.runtime.fim.boundary import BoundaryFilter

from ._support import PARENS, PARENS_TOKENS, run_threads, tiny


def test_an_older_node_load_never_replaces_a_newer_one() -> None:
    cg, _ = tiny(PARENS, PARENS_TOKENS, lexer="contextual")  # uncached: a lazily built table
    tables = cg.tables
    assert tables.walker is not None and tables.contextual
    cx = cg._runtime().contextual
    assert cx is not None
    q_name = int(cg.dfa.trans[0, ord("a")])  # inside NAME: its row adds a few nodes
    a_read, b_done = threading.Event(), threading.Event()
    nodes = tables.nodes
    slow: list[threading.Thread] = []

    def hooked() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        got = nodes()
        if threading.current_thread() in slow:  # thread A: overtaken right after reading
            slow.clear()
            a_read.set()
            # B loads meanwhile where nothing keeps it out; else (a lock held by A) B waits,
            # and so does A, for a moment, before it goes on
            b_done.wait(0.3)
        return got

    tables.nodes = hooked  # type: ignore[method-assign]
    b_nodes: list[np.ndarray] = []

    def a() -> None:
        slow.append(threading.current_thread())
        cx._row(q_name)

    def b() -> None:
        a_read.wait(10)
        b_nodes.append(cx._row(0)[0])  # row 0 adds the most nodes
        b_done.set()

    assert not run_threads(a, b)
    n = tables.num_nodes
    assert int(b_nodes[0].max()) < n
    # what B may go on to read for its row's nodes at once (its _row returned): all of them
    assert len(cx.head_l) == len(cx.tail_l) == len(cx.alt_l) == len(cx.head) == n
    cx._eval(cx.ctx.root, 0, b_nodes[0])  # IndexError when the older arrays came back


def test_fim_setups_on_two_threads_share_one_reversed_automaton(monkeypatch: Any) -> None:
    cg, _ = tiny(PARENS, PARENS_TOKENS, lexer="contextual")
    building, parsing = threading.Barrier(2), threading.Barrier(2)
    init, parse = quotient_base._Base.__init__, fim_contextual.parse_suffix_lattice

    def meeting_init(self: Any, grammar: Any) -> None:
        # both threads build a base where nothing keeps the second out (else the one that
        # builds waits a moment for a thread that never comes)
        with contextlib.suppress(threading.BrokenBarrierError):
            building.wait(0.3)
        init(self, grammar)

    def meeting_parse(*args: Any) -> Any:
        parsing.wait(10)  # each has its base (both stored, where both were built)
        return parse(*args)

    monkeypatch.setattr(quotient_base._Base, "__init__", meeting_init)
    monkeypatch.setattr(fim_contextual, "parse_suffix_lattice", meeting_parse)
    got: list[np.ndarray] = []
    errors = run_threads(*[lambda: got.append(cg.constraint("(a", "b)").allowed())] * 2)
    assert not errors, errors  # InvalidSuffixError for the thread whose base was replaced
    assert np.array_equal(got[0], got[1])


def test_new_limits_never_get_the_old_runtime() -> None:
    cg, _ = tiny(PARENS, PARENS_TOKENS)
    old = cg._runtime()
    new = RuntimeLimits(max_items_per_step=12_345)
    got: list[Any] = []
    with cg._lock:  # this thread builds the runtime for ``new``: it has set the limits and
        cg._limits = new  # not yet dropped the old runtime when another thread asks
        other = threading.Thread(target=lambda: got.append(cg._runtime(new)))
        other.start()
        other.join(0.3)  # it answers at once where it does not wait for the lock
        cg._builder = None
        cg._build_runtime(new)
    other.join()
    assert got[0] is not old and got[0].limits == new


class _MeetingList(list[np.ndarray]):
    """The first two ``append`` calls wait for each other (as long as nothing keeps the
    second caller out): both threads have numbered their set before either appends it."""

    def __init__(self) -> None:
        super().__init__()
        self.meet = threading.Barrier(2)

    def append(self, x: np.ndarray) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            self.meet.wait(0.3)
        super().append(x)


def test_boundary_codes_name_their_own_reach_sets() -> None:
    cg, _ = tiny(PARENS, PARENS_TOKENS)
    n = cg.dfa.num_states
    reach = {7: np.arange(n) % 2 == 0, 8: np.arange(n) % 2 == 1}  # markers 7, 8: two sets
    bf = BoundaryFilter(cg._runtime(), cg.vocab, [(7, 0), (8, 0)], reach,
                        cg.tables.state_class, True)
    bf.rsets = _MeetingList()
    assert not run_threads(lambda: bf.info((7,)), lambda: bf.info((8,)))
    for ms, (r, _, _, code) in bf._sets.items():
        assert np.array_equal(bf.rsets[code - 2], r), ms


class _MeetingDict(dict[Any, Any]):
    """Each of two threads' first ``pop`` waits for the other: both chose their key first."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.meet = threading.Barrier(2)
        self.met: set[int] = set()

    def pop(self, *args: Any) -> Any:
        if threading.get_ident() not in self.met:
            self.met.add(threading.get_ident())
            self.meet.wait(10)
        return super().pop(*args)


def test_two_threads_evicting_the_same_cache_entry(monkeypatch: Any) -> None:
    full = _MeetingDict({i: (np.zeros(1), ()) for i in range(4)})  # a full cache (4 kept)
    monkeypatch.setattr(walk_inputs, "_WIDE", full)
    firsts = [np.arange(-1, 9, dtype=np.int16) for _ in range(2)]  # two new vocabularies
    errors = run_threads(*(lambda fb=fb: walk_inputs.wide_first_bytes(fb) for fb in firsts))
    assert not errors, errors
    assert all(id(fb) in full for fb in firsts)

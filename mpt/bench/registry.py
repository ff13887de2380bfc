"""The benchmark case record, and a registry of cases by name with go-test-style pattern selection.

A :class:`Case` is run like this (see :mod:`mpt.bench.runner`)::

    case.check(case.setup())           # once: the result is right (root equals the reference root)
    state = case.setup()                # not timed; stateful cases get a fresh one per op
    case.op(state)                      # timed; performs case.ops_per_sample benchmark operations

``ops_per_sample`` is how many benchmark operations one ``op`` call performs, so time/op = time / ops_per_sample.
Cheap operations (Prove, VerifyProof) run a batch per call, cycling over the keys like geth's ``b.N`` loop.
``stateful`` cases change their state (``hash()`` caches hashes in the nodes, ``commit()`` cleans them), so every
``op`` call needs a state of its own from ``setup()``.

The cases themselves live in :mod:`mpt.bench.cases`, one module per tree family; this module imports none of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

__all__ = ["Case", "CheckFailed", "Registry", "expect", "cycled", "each_key", "split_pattern", "name_matcher"]


class CheckFailed(AssertionError):
    """A case computed a wrong result (a wrong root, a proof that does not verify, ...)."""


def expect(what: str, got: Any, want: Any) -> None:
    """Raise :class:`CheckFailed` naming ``what`` unless ``got == want`` (bytes shown as hex)."""
    if got != want:
        show = lambda v: v.hex() if isinstance(v, (bytes, bytearray)) else repr(v)  # noqa: E731
        raise CheckFailed("%s: got %s, want %s" % (what, show(got), show(want)))


def each_key(method: str) -> Callable[[Any], None]:
    """The op of a per-key tree case: for state ``(tree, keys)``, ``tree.<method>(key)`` for each key, the
    method looked up once per batch (so the loop times the method, not the attribute lookup)."""
    def op(state):
        tree, keys = state
        call = getattr(tree, method)
        for key in keys:
            call(key)
    return op


def cycled(seq: Sequence[Any], count: int) -> List[Any]:
    """``count`` items of ``seq``, starting over at its end (the batch of a cheap op, like geth's ``b.N`` loop)."""
    return [seq[i % len(seq)] for i in range(count)]


@dataclass(frozen=True)
class Case:
    """One benchmark: ``op(setup())`` is timed, ``check(setup())`` proves the result right."""

    name: str                                   # geth-style name, e.g. "HashFixedSize/10K"
    setup: Callable[[], Any]                    # builds the state (not timed)
    op: Callable[[Any], Any]                    # the timed operation(s)
    check: Callable[[Any], None]                # runs op on a fresh state and verifies the result
    group: str                                  # the name without the size, e.g. "HashFixedSize"
    size: int = 0                               # workload size in entries (for ordering and "smallest")
    stateful: bool = False                      # op changes the state: one setup() per op call
    ops_per_sample: int = 1                     # benchmark operations one op call performs
    small: bool = True                          # part of the default run (else only with -b or --all)
    keccak_blobs: Optional[Callable[[Any], List[bytes]]] = None  # the encodings op keccaks (given a fresh state)
    doc: str = ""
    sha256_messages: Optional[Callable[[Any], List[bytes]]] = None  # the preimages op SHA-256s (mpt.merkle)
    peak_rss: bool = False                      # also measure one op's peak RSS in a fresh interpreter (mpt.bench.rss)


def split_pattern(pattern: str) -> List[str]:
    """pattern split at each "/" outside brackets and parentheses (Go's testing.splitRegexp): one regular
    expression per level of a case name."""
    parts, depth_paren, in_class, cur, i = [], 0, False, "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            cur += pattern[i:i + 2]
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth_paren += 1
        elif ch == ")":
            depth_paren -= 1
        elif ch == "/" and depth_paren == 0:
            parts.append(cur)
            cur, i = "", i + 1
            continue
        cur += ch
        i += 1
    parts.append(cur)
    return parts


def name_matcher(pattern: str, search: bool = False) -> Callable[[str], bool]:
    """A predicate on case names for ``-b pattern``.

    By default the pattern is split at "/" like Go's ``-bench`` (one regular expression per level) and each
    part must match a *whole* level of the name: ``HashFixedSize`` selects HashFixedSize/10 ... /100K but not
    CommitAfterHashFixedSize, ``HashFixedSize/1K`` selects one case, ``Insert/`` (an empty part matches
    anything) every Insert/N. A name with more levels than the pattern matches at the levels given. Go matches
    each part unanchored; anchoring makes a plain name mean that case, and ``.*`` widens it on purpose
    (``VerifyRange.*``). A pattern that matches a whole name as it stands is taken too, so an alternation with
    "/" inside parentheses works: ``(HashFixedSize/10|Prove)``. ``search=True`` is plain ``re.search`` over the
    whole name (the old behaviour).
    Raises re.error for a bad expression.
    """
    if search:
        rx = re.compile(pattern)
        return lambda name: rx.search(name) is not None
    whole = re.compile(pattern)
    parts = [re.compile(p) if p else None for p in split_pattern(pattern)]

    def match(name: str) -> bool:
        if whole.fullmatch(name) is not None:
            return True
        levels = name.split("/")
        if len(levels) < len(parts):
            return False
        return all(rx is None or rx.fullmatch(level) is not None for rx, level in zip(parts, levels))

    return match


class Registry:
    """Cases by name, in the order given (the order of the benchmark page's table)."""

    def __init__(self, cases: Iterable[Case]):
        self.cases: Dict[str, Case] = {}
        for case in cases:
            if case.name in self.cases:
                raise ValueError("two benchmark cases are called %r" % case.name)
            self.cases[case.name] = case

    def get(self, name: str) -> Case:
        """The case called name (KeyError if there is none)."""
        return self.cases[name]

    def select(self, pattern: Optional[str] = None, everything: bool = False, search: bool = False) -> List[Case]:
        """Cases to run: those whose name matches pattern (see :func:`name_matcher`; any size), else every case
        with ``everything``, else the default small set."""
        if pattern is not None:
            matches = name_matcher(pattern, search)
            return [c for c in self.cases.values() if matches(c.name)]
        if everything:
            return list(self.cases.values())
        return [c for c in self.cases.values() if c.small]

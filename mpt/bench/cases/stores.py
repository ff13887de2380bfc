"""Node-store cases (LMDB, LevelDB: writing and reading the nodes of any family): none yet.

Add a case here as the other family modules do: a ``_name(...) -> Case`` factory per workload (its data in
:mod:`mpt.bench.workloads`), whose ``setup`` makes a fresh store in a temporary directory and whose ``check``
reads back what ``op`` wrote; list it in :func:`cases`. The registry (:mod:`mpt.bench.cases`) picks it up.
"""

from __future__ import annotations

from typing import List

from mpt.bench.registry import Case


def cases() -> List[Case]:
    """The store cases, in the order of the benchmark page."""
    return []

"""ICS23 proof cases (Cosmos commitment proofs over IAVL and the CometBFT simple tree): none yet.

Add a case here as the other family modules do: a ``_name(...) -> Case`` factory per workload (its data in
:mod:`mpt.bench.workloads`, naming where it comes from, e.g. cosmos/ics23's Go benchmarks), checked against a
known root or proof, and listed by :func:`cases`. The registry (:mod:`mpt.bench.cases`) picks it up from there.
"""

from __future__ import annotations

from typing import List

from mpt.bench.registry import Case


def cases() -> List[Case]:
    """The ICS23 cases, in the order of the benchmark page."""
    return []

"""The benchmark cases, one module per tree family, shared by ``python -m mpt.bench`` and the asv suite.

* :mod:`~mpt.bench.cases.ethereum` -- go-ethereum's trie benchmarks (HashFixedSize, Commit, DeriveSha, proofs, ...)
* :mod:`~mpt.bench.cases.merkle` -- the CometBFT simple Merkle tree (roots, proofs)
* :mod:`~mpt.bench.cases.iavl` -- Cosmos IAVL nodes (cosmos/iavl PR #673) and trees
* :mod:`~mpt.bench.cases.build_root` -- roots at scale (build_root, build_root_dask)
* :mod:`~mpt.bench.cases.ics23` -- ICS23 proofs
* :mod:`~mpt.bench.cases.stores` -- node stores
* :mod:`~mpt.bench.cases.execution_specs` -- execution-specs' state root with mpt.compat.execution_specs

A new case goes into its family's module (a new family gets a module of its own, added to :data:`FAMILIES`); its
data into :mod:`mpt.bench.workloads`. :data:`CASES` holds every case by name, in the order of the benchmark
page's table (docs/benchmarks.rst); :func:`get` and :func:`select` are the registry's (:mod:`mpt.bench.registry`).
The peers of ``--peers`` (:mod:`mpt.bench.peers`) are re-exported here for older callers.
"""

from __future__ import annotations

from typing import Dict

from mpt.bench.cases import build_root, ethereum, execution_specs, iavl, ics23, merkle, stores
from mpt.bench.peers import (
    MERKLE_PEER_NAMES,
    PEER_NAMES,
    PEERS_INSTALL_HINT,
    Peer,
    merkle_peer_case,
    merkle_peers,
    peer_case,
    peers,
)
from mpt.bench.registry import Case, CheckFailed, Registry, name_matcher, split_pattern
from mpt.bench.workloads import ACCOUNT_SIZES, MERKLE_SIZES

__all__ = [
    "Case",
    "CheckFailed",
    "CASES",
    "FAMILIES",
    "REGISTRY",
    "get",
    "select",
    "split_pattern",
    "name_matcher",
    "Peer",
    "PEER_NAMES",
    "PEERS_INSTALL_HINT",
    "peers",
    "peer_case",
    "ACCOUNT_SIZES",
    "MERKLE_SIZES",
    "MERKLE_PEER_NAMES",
    "merkle_peers",
    "merkle_peer_case",
]

FAMILIES = (ethereum, merkle, iavl, build_root, ics23, stores, execution_specs)
"""The case modules, in the order of the benchmark page: each has a ``cases()`` list."""

REGISTRY = Registry(case for family in FAMILIES for case in family.cases())

CASES: Dict[str, Case] = REGISTRY.cases
"""Every case by name, in the order of the benchmark page's table (docs/benchmarks.rst; Insert/N after Insert100K)."""

get = REGISTRY.get
select = REGISTRY.select

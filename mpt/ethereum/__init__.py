"""Ethereum's Merkle Patricia Trie family (``import mpt`` re-exports its main names).

Tries: :mod:`~mpt.ethereum.encoding` (nibble and compact keys), :mod:`~mpt.ethereum.node` (node types and the
strict decoder), :mod:`~mpt.ethereum.hasher` (the hashing pass), :mod:`~mpt.ethereum.committer`,
:mod:`~mpt.ethereum.trie` (``Trie``), :mod:`~mpt.ethereum.iterator`, :mod:`~mpt.ethereum.secure`
(``SecureTrie``), :mod:`~mpt.ethereum.stacktrie`, :mod:`~mpt.ethereum.derive` (``derive_sha``).
Proofs: :mod:`~mpt.ethereum.proof`, :mod:`~mpt.ethereum.rangeproof`, :mod:`~mpt.ethereum.eip1186`.
Chain data: :mod:`~mpt.ethereum.blocks` (JSON-RPC blocks, transactions, receipts to header roots),
:mod:`~mpt.ethereum.state` (state roots from accounts, genesis alloc and geth dumps).
Roots at scale: :mod:`~mpt.ethereum.parallel` (``build_root``), :mod:`~mpt.ethereum.shards`,
:mod:`~mpt.ethereum.dask`.
"""
# The modules that lend methods to the ones they cimport (Node.encoding is the hasher's; Trie.prove, Trie.items the
# proof and iterator modules'): loaded with the package, so that the methods work whichever module a user imports.
from mpt.ethereum import hasher, iterator, proof  # noqa: E402,F401

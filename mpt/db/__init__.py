"""Node databases: where committed trie nodes live, keyed by their keccak256 hash.

A node database is anything with ``get(hash) -> bytes | None``, ``put(hash, blob)``, a ``write_batch()``
context manager whose ``put`` calls become visible together when the block exits without an exception, and
``close()``. Built in: ``MemoryDB`` (a dict) and ``LMDBStore`` (persistent, one memory-mapped file). A plain
``MutableMapping[bytes, bytes]`` works too: it is written key by key.
"""
from mpt.db.memory import MemoryDB, NodeDatabase, check_database, write_nodes
from mpt.db.lmdb_store import LMDBStore     # imports the lmdb package only when a store is opened

__all__ = ["LMDBStore", "MemoryDB", "NodeDatabase", "check_database", "write_nodes"]

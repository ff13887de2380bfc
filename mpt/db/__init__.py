"""Node databases: where the trees of every family keep their committed nodes.

A node database maps byte-string keys to byte-string values. What the keys are is the tree family's business:
the Ethereum trie (``Trie``, ``StackTrie``) keys a node by the hash of its encoding, an IAVL tree
(``mpt.iavl.MutableTree``) uses Go iavl's layout (``s`` + version + nonce for nodes, ``f`` + key for fast nodes,
``m`` + name for metadata; see :mod:`mpt.iavl.nodedb`). The protocol, and which family needs which part:

* ``get(key) -> bytes | None``: read one value. Every family.
* ``put(key, value)``: write one value. Every family.
* ``write_batch()``: a context manager whose ``put`` (and ``delete``) calls land together when the block exits
  cleanly, and not at all if it raises. Every family (the Ethereum trie only puts; IAVL puts and deletes).
  Optional, for speed: a batch's ``put_many(mapping or pairs)`` (MemoryDB, LevelDB), and ``bytes_put`` and
  ``bytes_delete``, a put and a delete for bytes that a compiled writer calls per record with no Python frame in
  between (LevelDB: plyvel's own).
* ``delete(key)``: remove one key (nothing happens if it is absent). IAVL only.
* ``iterate(start=None, end=None, reverse=False)``: ``(key, value)`` pairs with start <= key < end (None:
  unbounded), in key order or in reverse; ``prefix_range(prefix)`` gives the bounds of a prefix scan. IAVL only.
* Optional, for compiled readers: ``unchecked_get``, the backend's own get (no Python frame of ours), whose
  exceptions the reader passes to the store's ``read_failure(exception)`` to get the mpt error to raise
  (LevelDB).
* Optional: ``shared_between_processes``, whether several processes may have the store open at once (LMDB: True;
  LevelDB: False, it is locked by one). An IAVL tree uses it to tell an import running elsewhere from one that a
  killed process left unfinished.
* ``close()``: release the files; afterwards every method of LMDBStore and LevelDBStore, and every tree method
  that may use the store, raises ``StoreClosedError`` (:mod:`mpt.db.store_base`). Every family.

IAVL needs the ordered scan where Go iavl does: the latest version is the version of the last ``s`` key (a
reverse scan), legacy versions are a scan of the ``r`` keys, and pruning and fast-storage upgrades delete.
``NodeDatabase`` and ``OrderedNodeDatabase`` are the two protocols as typing classes.

Built in: ``MemoryDB`` (a dict), ``LMDBStore`` (persistent, one memory-mapped file) and ``LevelDBStore``
(a LevelDB directory, such as a Cosmos node's ``application.db``; needs ``plyvel``). A plain
``MutableMapping[bytes, bytes]`` works for a Trie too: it is written key by key.
"""
from mpt.db.memory import MemoryDB, NodeDatabase, OrderedNodeDatabase, check_database, prefix_range, write_nodes
from mpt.db.lmdb_store import LMDBStore     # imports the lmdb package only when a store is opened
from mpt.db.leveldb_store import LevelDBStore   # imports plyvel only when a store is opened

__all__ = ["LMDBStore", "LevelDBStore", "MemoryDB", "NodeDatabase", "OrderedNodeDatabase", "check_database",
           "prefix_range", "write_nodes"]

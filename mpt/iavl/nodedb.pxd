# cython: language_level=3
"""The IAVL node database (nodedb.pyx): Go iavl's key layout over an mpt node store."""
from cpython.dict cimport PyDict_GetItemWithError
from cpython.object cimport PyObject
from libc.stdint cimport int64_t, uint32_t

from mpt.db.state cimport StoreState
from mpt.iavl.node cimport InnerNode, Node


cdef class _RecordWriter:
    cdef dict into                      # a MemoryDB's dict, or None
    cdef object put                     # else a write batch's put(key, value)

    @staticmethod
    cdef _RecordWriter new(dict into, object put)

    cdef inline int emit(self, bytes key, bytes value) except -1:
        if self.into is not None:
            self.into[key] = value
        else:
            self.put(key, value)
        return 0


cdef class NodeDB:
    cdef:
        readonly object db
        object _get                     # db.get (or the store's unchecked_get), bound once: read through _read_key
        object _read_failure            # the store's read_failure(exception) -> mpt error or None, or None
        dict _dict                      # a MemoryDB's dict, read directly (None for other stores)
        int64_t _latest                 # cached latest version (-1: not looked up yet)
        int64_t _legacy_latest          # cached latest legacy version (0: not looked up, -1: none)
        readonly str storage_version    # the `m storage_version` record ("1.0.0" when absent)
        dict _fast_cache                # key -> value of the latest version (Go's fastNodeCache)
        readonly Py_ssize_t fast_cache_size
        int64_t _cache_newest           # the newest versionLastUpdatedAt among the cached fast nodes
        StoreState _state               # a persistent store's open state (None for a store without one)
        bint _ours                      # check_ours passed: the store is empty or an IAVL tree's
        str _hidden_import              # why an unfinished import is hidden and writes refused (None: no such)
        # Pruning on a store other than MemoryDB: the records read so far (key -> data), in two generations
        # (of _prune_cache_limit records each), for the steps that read them again (None outside
        # delete_versions_to).
        dict _prune_records
        dict _prune_records_before
        Py_ssize_t _prune_cache_limit

    cdef inline int check_open(self) except -1:
        """StoreClosedError once the store is closed: every tree and NodeDB entry that may touch the store
        calls it first, so a closed store is refused the same way whether or not a cache could answer."""
        if self._state is not None:
            self._state.check_open()
        return 0

    cdef inline int64_t known_latest_version(self) noexcept:
        """The latest version as last looked up, without a store read (-1: not looked up yet)."""
        return self._latest

    cdef bint _holds_a_version(self) except -1
    cdef int _interrupted_import(self, bytes marker) except -1

    cdef Node get_node(self, bytes ref)
    cdef Node load_child(self, InnerNode inner, bint right)
    cdef Node load_root(self, int64_t version, bint *found)
    cdef int64_t c_latest_version(self) except -2
    cdef object _last_key(self, bytes lo, bytes hi, Py_ssize_t length)
    cdef tuple get_fast_node(self, bytes key)
    cdef bytes fast_value(self, bytes key, int64_t *version)
    cdef inline bytes cached_value(self, bytes key, int64_t at_version):
        """key's cached fast-node value for a tree at version ``at_version``, or None (not cached, or the cache
        may hold values newer than that version: the caller reads the store then, as Go checks each fast node's
        versionLastUpdatedAt). A hit is one dict probe with no allocation, inlined into MutableTree.get. The
        caller has checked that the store is open."""
        cdef PyObject *cached
        if at_version < self._cache_newest:
            return None
        cached = PyDict_GetItemWithError(self._fast_cache, key)
        return None if cached == NULL else <bytes>cached
    cdef int cache_fast_value(self, bytes key, bytes value, int64_t version) except -1
    cdef int _evict_oldest(self) except -1
    cdef object _read_key(self, bytes key)
    cdef int write_version(self, int64_t version, Node root, list new_nodes, bint legacy, dict fast_additions,
                           set fast_removals, bint fast_storage) except -1
    cdef int _write_records(self, _RecordWriter out, int64_t version, Node root, list new_nodes, bint legacy,
                            dict fast_additions, str storage_version) except -1
    cdef int _put_root_reference(self, _RecordWriter out, int64_t version, Node root) except -1
    cdef int _apply_prune(self, list dels, list moved) except -1
    cdef Py_ssize_t _collect_prune(self, list dels, list moved, int64_t legacy, int64_t first, int64_t to_version,
                                   object ref_of) except -1
    cdef bytes record(self, bytes key)
    cdef int _prune_scan(self, int64_t version) except -1
    cdef list _orphan_keys(self, int64_t prev_version, bytes prev_ref, bytes cur_ref)
    cdef bint _maybe_same(self, bytes a, bytes b) except -1
    cdef bint _same_by_hash(self, bytes a, bytes b) except -1


cdef int check_child(Node parent, Node child, bint right) except -1
cdef int check_children(Node parent, Node left, Node right) except -1
cdef str describe(Node node)
cdef str show_key(bytes key)
cpdef bint is_iavl_record(bytes key, bytes value)

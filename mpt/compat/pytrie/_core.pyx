# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled body of mpt.compat.pytrie.HexaryTrie: py-trie 4.0.0's hexary algorithm, step for step.

Every database read, write, delete and reference count change happens in the order py-trie's
``trie/hexary.py`` makes it (the same recursion, the same ``_persist_node`` / ``_prune_node`` calls), so a
database written here is the one py-trie writes, strays of an extension merge included. What changes is how:
nibble paths are ``bytes`` (one nibble a byte) instead of tuples; nodes are encoded straight into the bytes
stored and hashed by mpt's C Keccak (a proof's nodes together on the SIMD lanes), decoded by ``mpt.rlp``; a node
read from the database carries the hash it was read under, so pruning it does not encode and hash it again
(py-trie re-encodes it; for a database whose values are the canonical encodings of their keys' preimages, which
is what py-trie and this class write, the two keys are the same); the root node read or stored last is
copied instead of decoded again while the database returns that very bytes object; set, get and traversal walk
the canonical branches on a key's path as the stored bytes (set_raw, traverse_root: a set patches the one child
slot it changes instead of decoding and encoding the branch); and get_from_proof reads the proof's own node
lists instead of decoding what it stored (proven_value).
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

from mpt.core._keccak.keccak cimport mpt_keccak256, mpt_keccak256_many
from mpt.core.runtime cimport keccak_backend_number
from mpt.core.rlp cimport RLPItem, header_size, put_header, put_string, read_item_fast, string_size
from mpt.ethereum.encoding cimport compact_size_nibbles, write_compact_nibbles, write_nibbles
from mpt.ethereum.node_enc cimport write_hash_ref_header

from collections import defaultdict

from mpt.core.rlp import decode as _rlp_decode
from mpt.core.rlp import encode as _rlp_encode
from trie.utils.db import DELETED as _DELETED
from trie.validation import validate_is_node as _validate_is_node
from trie.exceptions import BadTrieProof, InvalidNode, MissingTraversalNode, MissingTrieNode, ValidationError

cdef bytes BLANK_NODE = b""
cdef bytes BLANK_NODE_HASH = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")

cdef enum:
    PROOF_BATCH = 16     # proof nodes hashed in one call on the SIMD lanes (a state proof has about 8)

cdef enum NodeKind:
    KIND_BLANK = 0
    KIND_LEAF = 1
    KIND_EXTENSION = 2
    KIND_BRANCH = 3

# One-byte strings and single-nibble paths, made once.
cdef list _NIBBLE = [bytes([i]) for i in range(16)]


cdef enum:
    # Embedded nodes (encodings under 32 bytes) nest a few levels at most; a node nested deeper than this (a
    # caller's proof, say) is left to py-trie's own validate_is_node, which raises RecursionError as py-trie does,
    # instead of recursing here on the C stack.
    MAX_EMBEDDING = 32


cdef bint shape_ok(object node, int depth=0) noexcept:
    """What py-trie's validate_is_node accepts, checked in C (no exception, no allocation)."""
    cdef Py_ssize_t i, n
    cdef object item
    if isinstance(node, bytes) and PyBytes_GET_SIZE(<bytes>node) == 0:
        return True
    if not isinstance(node, list) or depth > MAX_EMBEDDING:
        return False
    n = PyList_GET_SIZE(node)
    if n == 2:
        item = <object>PyList_GET_ITEM(node, 1)
        return isinstance(<object>PyList_GET_ITEM(node, 0), bytes) and (
            isinstance(item, bytes) or (isinstance(item, list) and shape_ok(item, depth + 1)))
    if n == 17:
        if not isinstance(<object>PyList_GET_ITEM(node, 16), bytes):
            return False
        for i in range(16):
            item = <object>PyList_GET_ITEM(node, i)
            if isinstance(item, bytes):
                if PyBytes_GET_SIZE(<bytes>item) != 0 and PyBytes_GET_SIZE(<bytes>item) != 32:
                    return False
            elif not (isinstance(item, list) and shape_ok(item, depth + 1)):
                return False
        return True
    return False


cdef inline int check_node(object node) except -1:
    """py-trie's validate_is_node: its own function raises its ValidationError for a node of the wrong shape."""
    if not shape_ok(node):
        _validate_is_node(node)
    return 0


cdef Py_ssize_t payload_size(list node) except -2:
    """Size of the RLP payload of a node list of bytes and embedded node lists; -1 for anything else."""
    cdef Py_ssize_t total = 0, n, inner
    cdef object item
    for item in node:
        if isinstance(item, bytes):
            n = PyBytes_GET_SIZE(<bytes>item)
            total += string_size(<const uint8_t*>PyBytes_AS_STRING(<bytes>item), n)
        elif isinstance(item, list):
            inner = payload_size(<list>item)
            if inner < 0:
                return -1
            total += header_size(inner) + inner
        else:
            return -1
    return total


cdef uint8_t* write_list(list node, Py_ssize_t payload, uint8_t* out) except NULL:
    cdef object item
    out += put_header(out, 0xc0, payload)
    for item in node:
        if isinstance(item, bytes):
            out += put_string(out, <const uint8_t*>PyBytes_AS_STRING(<bytes>item), PyBytes_GET_SIZE(<bytes>item))
        else:
            out = write_list(<list>item, payload_size(<list>item), out)
    return out


cdef bytes encode_node(object node):
    """py-trie's encode_raw of a node: written straight into the bytes it returns."""
    cdef Py_ssize_t payload
    if not isinstance(node, list):
        return _rlp_encode(node)
    payload = payload_size(<list>node)
    if payload < 0:
        return _rlp_encode(node)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, header_size(payload) + payload)
    write_list(<list>node, payload, <uint8_t*>PyBytes_AS_STRING(out))
    return out


cdef bytes keccak_of(bytes data):
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 32)
    mpt_keccak256(<const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), <uint8_t*>PyBytes_AS_STRING(out))
    return out


cdef list copy_node(list node):
    """A copy of a node list that shares no list with it (py-trie mutates the nodes it reads, embedded ones too)."""
    cdef Py_ssize_t i, n = PyList_GET_SIZE(node)
    cdef list out = PyList_New(n)
    cdef object item
    for i in range(n):
        item = <object>PyList_GET_ITEM(node, i)
        if type(item) is list:
            item = copy_node(<list>item)
        Py_INCREF(item)
        PyList_SET_ITEM(out, i, item)
    return out


cdef bint plain(list node) noexcept:
    """Only exact bytes and lists of them, as a decode gives (a bytes subclass value would come back as itself)."""
    cdef object item
    for item in node:
        if type(item) is list:
            if not plain(<list>item):
                return False
        elif type(item) is not bytes:
            return False
    return True


cdef object decode_stored(object encoded):
    """py-trie's decode_node of bytes read from the database."""
    try:
        return _rlp_decode(encoded)
    except Exception:
        # what py-trie raises for bytes that are no RLP item: pyrlp's own exception (DecodingError, ...)
        import rlp
        return rlp.decode(encoded)


cdef inline void _validate_is_bytes(object value) except *:
    if not isinstance(value, bytes):
        raise ValidationError(f"Value is not of type `bytes`: got {type(value)!r}")


cdef bytes key_to_nibbles(bytes key):
    """py-trie's bytes_to_nibbles, as one nibble a byte."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 2 * PyBytes_GET_SIZE(key))
    write_nibbles(<const uint8_t*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), <uint8_t*>PyBytes_AS_STRING(out))
    return out


cdef bytes hex_prefix(const unsigned char* nibbles, Py_ssize_t n, bint leaf):
    """py-trie's encode_nibbles of the path, with the terminator when leaf."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, compact_size_nibbles(n))
    write_compact_nibbles(nibbles, n, leaf, <uint8_t*>PyBytes_AS_STRING(out))
    return out


cdef inline bytes hex_prefix_of(bytes nibbles, bint leaf):
    return hex_prefix(<const unsigned char*>PyBytes_AS_STRING(nibbles), PyBytes_GET_SIZE(nibbles), leaf)


cdef bytes unpack_path(object encoded, bint* leaf):
    """py-trie's decode_nibbles without the terminator (leaf says whether it had one)."""
    if not isinstance(encoded, bytes):
        raise InvalidNode("Unable to determine node type")
    cdef bytes enc = <bytes>encoded
    cdef Py_ssize_t n = PyBytes_GET_SIZE(enc), i, skip
    if n == 0:
        raise IndexError("tuple index out of range")  # py-trie indexes the flag nibble of an empty path
    cdef const unsigned char* src = <const unsigned char*>PyBytes_AS_STRING(enc)
    cdef unsigned char flag = src[0] >> 4
    leaf[0] = flag == 2 or flag == 3
    skip = 1 if (flag == 1 or flag == 3) else 2
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 2 * n - skip)
    cdef unsigned char* dst = <unsigned char*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t k = 0
    for i in range(skip, 2 * n):
        dst[k] = (src[i >> 1] >> 4) if (i % 2 == 0) else (src[i >> 1] & 15)
        k += 1
    return out


cdef inline bint is_blank(object node):
    return isinstance(node, bytes) and PyBytes_GET_SIZE(<bytes>node) == 0


cdef int kind_of(object node) except -1:
    """py-trie's get_node_type."""
    cdef bint leaf
    cdef unsigned char flag
    cdef object path
    if is_blank(node):
        return KIND_BLANK
    if isinstance(node, list):
        if PyList_GET_SIZE(node) == 2:
            path = <object>PyList_GET_ITEM(node, 0)
            if isinstance(path, bytes) and PyBytes_GET_SIZE(<bytes>path):
                flag = (<const unsigned char*>PyBytes_AS_STRING(<bytes>path))[0] >> 4
                return KIND_LEAF if flag == 2 or flag == 3 else KIND_EXTENSION
            unpack_path(path, &leaf)  # raises what py-trie raises for this path
            return KIND_LEAF if leaf else KIND_EXTENSION
        if PyList_GET_SIZE(node) == 17:
            return KIND_BRANCH
    raise InvalidNode("Unable to determine node type")


cdef inline Py_ssize_t common_prefix_length(bytes a, bytes b):
    cdef Py_ssize_t n = min(PyBytes_GET_SIZE(a), PyBytes_GET_SIZE(b)), i
    cdef const char* pa = PyBytes_AS_STRING(a)
    cdef const char* pb = PyBytes_AS_STRING(b)
    for i in range(n):
        if pa[i] != pb[i]:
            return i
    return n


cdef inline bint starts_with(bytes full, bytes part):
    return PyBytes_GET_SIZE(full) >= PyBytes_GET_SIZE(part) and common_prefix_length(full, part) == PyBytes_GET_SIZE(part)


cdef inline int nibble_at(bytes path, Py_ssize_t i):
    return (<const unsigned char*>PyBytes_AS_STRING(path))[i]


cdef enum:
    FAST_DEPTH = 64      # branch levels set_raw walks as bytes (a 32-byte key has 64 nibbles); deeper: set_at

cdef bytes BLANK_SLOT = b"\x80"     # the RLP of a blank child in its parent


cdef bint branch_items(const uint8_t* p, Py_ssize_t n, Py_ssize_t* starts) noexcept:
    """Whether p[:n] is a canonical RLP branch (read_item_fast's rules) whose 16 children are blank or 32-byte
    references and whose value is a string; starts[i] is then where item i begins, starts[17] the end."""
    cdef RLPItem item
    cdef Py_ssize_t pos, i
    if not read_item_fast(p, 0, n, &item) or not item.is_list or item.end != n:
        return False
    pos = item.payload_offset
    for i in range(16):
        starts[i] = pos
        if pos >= n:
            return False
        if p[pos] == 0x80:          # blank
            pos += 1
        elif p[pos] == 0xa0:        # a 32-byte reference
            pos += 33
        else:
            return False
    starts[16] = pos
    if pos > n or not read_item_fast(p, pos, n, &item) or item.is_list:
        return False
    starts[17] = item.end
    return item.end == n


cdef list blank_branch():
    cdef list node = PyList_New(17)
    cdef Py_ssize_t i
    for i in range(17):
        Py_INCREF(BLANK_NODE)
        PyList_SET_ITEM(node, i, BLANK_NODE)
    return node


cdef class HexaryTrieCore:
    """State and algorithm of py-trie's HexaryTrie (its ``__slots__``: db, root_hash, is_pruning, _ref_count,
    _pending_prune_keys)."""

    cdef public object db
    cdef public object root_hash
    # is_pruning as given (py-trie keeps the object: repr shows it), and its truth for the hot paths
    cdef object _is_pruning
    cdef bint pruning
    # during change() of a pruning trie: _ref_count is a defaultdict(int), counted with the dict calls directly
    cdef bint int_counts
    cdef public object _ref_count
    cdef public object _pending_prune_keys
    # The hash the last node read by fetch() was stored under when it has to be pruned with it (its encoding is
    # 32 bytes or more), else None.
    cdef object _fetched_prune_key
    # The root this trie stored or read last: the bytes object the database holds for it and the node decoded
    # from it. A read that gets that very object back copies the node instead of decoding it again (every set
    # and get starts at the root); another object, as after a change to the database, is decoded.
    cdef object _root_encoded
    cdef list _root_node
    cdef object _stored_encoded     # the encoding store_raw() stored last
    cdef object _walked_root        # set_raw(): the old root's encoding when it walked the root as bytes
    # proven_value()'s trie only: the proof's own node lists by the hash they were stored under, which fetch()
    # returns instead of decoding what _store_proof() encoded (None in every other trie)
    cdef dict _proof_nodes

    def __init__(self, db, root_hash=BLANK_NODE_HASH, prune=False, ref_count=None):
        self.db = db
        _validate_is_bytes(root_hash)
        self.root_hash = root_hash
        self.is_pruning = prune
        if ref_count is None:
            self._ref_count = defaultdict(int) if prune else None
        elif prune:
            self._ref_count = ref_count
        else:
            raise ValueError("Cannot pass an existing reference count in to a non-pruning trie")
        self._pending_prune_keys = None

    @property
    def is_pruning(self):
        return self._is_pruning

    @is_pruning.setter
    def is_pruning(self, value):
        self._is_pruning = value
        self.pruning = bool(value)

    # --- node access ---------------------------------------------------------------------------------------

    cdef object fetch(self, object ref):
        """py-trie's get_node, remembering the prune key of what it read."""
        cdef object encoded
        cdef PyObject* found
        self._fetched_prune_key = None
        if isinstance(ref, bytes):
            if PyBytes_GET_SIZE(<bytes>ref) == 0 or ref == BLANK_NODE_HASH:
                return BLANK_NODE
            if PyBytes_GET_SIZE(<bytes>ref) < 32:
                encoded = ref
            else:
                if self._proof_nodes is not None:
                    found = PyDict_GetItem(self._proof_nodes, ref)
                    if found is not NULL:
                        return <object>found
                encoded = self.db[ref]
                if isinstance(encoded, bytes) and PyBytes_GET_SIZE(<bytes>encoded) >= 32:
                    self._fetched_prune_key = ref
                return self.decode_read(encoded, ref is self.root_hash)
        elif isinstance(ref, list):
            return ref
        else:
            if ref == BLANK_NODE or ref == BLANK_NODE_HASH:
                return BLANK_NODE
            encoded = ref if len(ref) < 32 else self.db[ref]
        return self.decode_read(encoded, False)

    cdef object decode_read(self, object encoded, bint at_root):
        """The node of what the database returned (or of a short reference): py-trie's decode_node, except that
        the root this trie stored or read last is copied, not decoded again, while the database returns that
        very object (at_root: it was read under self.root_hash, so it becomes that root)."""
        cdef object node
        if encoded is self._root_encoded and encoded is not None:
            if self._root_node is not None:
                return copy_node(self._root_node)
            # stored by the raw set walk (set_raw): decoded on its first read
            node = decode_stored(encoded)
            if type(node) is list and plain(<list>node):
                self._root_node = copy_node(<list>node)
            else:
                self._root_encoded = None
            return node
        if at_root and type(encoded) is bytes:
            node = decode_stored(encoded)
            if type(node) is list and plain(<list>node):
                self._root_encoded = encoded
                self._root_node = copy_node(<list>node)
            return node
        if is_blank(encoded):
            return BLANK_NODE
        if isinstance(encoded, list):
            return encoded
        return decode_stored(encoded)

    def get_node(self, node_hash):
        return self.fetch(node_hash)

    # --- reads ---------------------------------------------------------------------------------------------

    cdef tuple traverse_raw(self, object node, bytes trie_key, Py_ssize_t start=0):
        """py-trie's _traverse_from of trie_key[start:] (the nibbles before start were traversed already): (deepest
        node, unconsumed key); MissingTraversalNode on a missing node."""
        cdef bytes remaining = trie_key[start:] if start else trie_key
        cdef bytes path
        cdef bint leaf
        cdef Py_ssize_t common
        cdef int kind
        cdef object pointer
        while PyBytes_GET_SIZE(remaining):
            kind = kind_of(node)
            if kind == KIND_BLANK:
                return BLANK_NODE, b""
            elif kind == KIND_LEAF:
                path = unpack_path((<list>node)[0], &leaf)
                if starts_with(path, remaining):
                    return node, remaining
                return BLANK_NODE, b""
            elif kind == KIND_EXTENSION:
                path = unpack_path((<list>node)[0], &leaf)
                common = common_prefix_length(path, remaining)
                if common == PyBytes_GET_SIZE(path):
                    pointer = (<list>node)[1]
                    remaining = remaining[common:]
                elif common == PyBytes_GET_SIZE(remaining):
                    return node, remaining
                else:
                    pointer = BLANK_NODE
                    remaining = b""
            else:
                pointer = (<list>node)[nibble_at(remaining, 0)]
                remaining = remaining[1:]
            try:
                node = self.fetch(pointer)
            except KeyError as exc:
                used = trie_key[:PyBytes_GET_SIZE(trie_key) - PyBytes_GET_SIZE(remaining)]
                raise MissingTraversalNode(exc.args[0], tuple(used)) from exc
        return node, b""

    cdef tuple traverse_root(self, object root_hash, bytes trie_key):
        """py-trie's _traverse from root_hash. The branches on the key's path that are canonical with blank or
        hash children (branch_items) are walked as the bytes the database holds, undecoded, with the same reads;
        the first other node is decoded and traverse_raw goes on from it."""
        cdef Py_ssize_t starts[18]
        cdef Py_ssize_t pos = 0, keylen = PyBytes_GET_SIZE(trie_key), at
        cdef const uint8_t* p
        cdef object encoded, ref
        if (type(root_hash) is not bytes or PyBytes_GET_SIZE(<bytes>root_hash) != 32 or root_hash == BLANK_NODE_HASH
                or self._proof_nodes is not None):
            try:
                root_node = self.fetch(root_hash)
            except KeyError as exc:
                raise MissingTraversalNode(root_hash, ()) from exc
            return self.traverse_raw(root_node, trie_key)
        try:
            encoded = self.db[root_hash]
        except KeyError as exc:
            raise MissingTraversalNode(root_hash, ()) from exc
        while pos < keylen and type(encoded) is bytes:
            p = <const uint8_t*>PyBytes_AS_STRING(<bytes>encoded)
            if not branch_items(p, PyBytes_GET_SIZE(<bytes>encoded), starts):
                break
            at = starts[nibble_at(trie_key, pos)]
            pos += 1
            if p[at] == 0x80:
                return BLANK_NODE, b""      # a blank child: what traversing into it gives
            ref = PyBytes_FromStringAndSize(<const char*>p + at + 1, 32)
            if ref == BLANK_NODE_HASH:
                return BLANK_NODE, b""
            try:
                encoded = self.db[ref]
            except KeyError as exc:
                raise MissingTraversalNode(exc.args[0], tuple(trie_key[:pos])) from exc
        return self.traverse_raw(self.decode_read(encoded, pos == 0), trie_key, pos)

    def _traverse(self, root_hash, trie_key):
        node, remaining = self.traverse_root(root_hash, bytes(trie_key))
        return node, tuple(remaining)

    def _traverse_from(self, node, trie_key):
        node, remaining = self.traverse_raw(node, bytes(trie_key))
        return node, tuple(remaining)

    cdef object value_at(self, object root_hash, bytes trie_key):
        """py-trie's _get."""
        node, remaining = self.traverse_root(root_hash, trie_key)
        cdef bint leaf
        cdef int kind = kind_of(node)
        if kind == KIND_BLANK:
            return BLANK_NODE
        elif kind == KIND_LEAF:
            if remaining == unpack_path((<list>node)[0], &leaf):
                return (<list>node)[1]
            return BLANK_NODE
        elif kind == KIND_EXTENSION:
            if PyBytes_GET_SIZE(<bytes>remaining):
                raise ValidationError(
                    "Traverse should never return an extension node with remaining key, "
                    f"but returned node {node!r} with remaining key {tuple(remaining)}."
                )
            return BLANK_NODE
        else:
            if PyBytes_GET_SIZE(<bytes>remaining):
                raise ValidationError(
                    "Traverse should never return a non-empty branch node with remaining key, "
                    f"but returned node {node!r} with remaining key {tuple(remaining)}."
                )
            return (<list>node)[16]

    def get(self, key):
        return self.lookup(key)

    cdef object lookup(self, object key):
        """py-trie's get."""
        _validate_is_bytes(key)
        root_hash = self.root_hash
        try:
            return self.value_at(root_hash, key_to_nibbles(key))
        except MissingTraversalNode as traverse_exc:
            raise MissingTrieNode(
                traverse_exc.missing_node_hash, root_hash, key, traverse_exc.nibbles_traversed
            ) from traverse_exc

    def exists(self, key):
        _validate_is_bytes(key)
        return self.get(key) != BLANK_NODE

    def __getitem__(self, key):
        return self.get(key)

    def __contains__(self, key):
        return self.exists(key)

    def get_proof(self, key):
        _validate_is_bytes(key)
        cdef object node = self.fetch(self.root_hash)
        cdef bytes trie_key = key_to_nibbles(key)
        cdef list proof = []
        cdef Py_ssize_t proven = 0
        cdef bytes path
        cdef bint leaf
        cdef int kind
        while True:
            kind = kind_of(node)
            if kind == KIND_BLANK:
                return tuple(proof)
            proof.append(node)
            if kind == KIND_LEAF:
                return tuple(proof)
            elif kind == KIND_EXTENSION:
                path = unpack_path((<list>node)[0], &leaf)
                if not starts_with(trie_key[proven:], path):
                    return tuple(proof)
                node = self.fetch((<list>node)[1])
                proven += PyBytes_GET_SIZE(path)
            else:
                if proven >= PyBytes_GET_SIZE(trie_key):
                    return tuple(proof)
                node = self.fetch((<list>node)[nibble_at(trie_key, proven)])
                proven += 1

    # --- writes --------------------------------------------------------------------------------------------

    cdef inline void mark_prune(self, object prune_key) except *:
        """py-trie's _prune_node of a node whose prune key is known (None: nothing to prune)."""
        if self.pruning and prune_key is not None:
            pending = <dict>self._pending_prune_keys
            count = PyDict_GetItem(pending, prune_key)
            PyDict_SetItem(pending, prune_key, 1 if count is NULL else <object>count + 1)

    cdef inline void prune_node(self, object node, object prune_key) except *:
        """py-trie's _prune_node of a node read under prune_key (None: embedded, blank or short)."""
        if self.pruning:
            check_node(node)
            self.mark_prune(prune_key)

    cdef void mark_prune_node(self, list node) except *:
        """py-trie's _prune_node of a node built here (it was not read under a hash)."""
        if self.pruning:
            check_node(node)
            encoded = encode_node(node)
            if PyBytes_GET_SIZE(<bytes>encoded) >= 32:
                self.mark_prune(keccak_of(encoded))

    cdef inline void store(self, object key, object value) except *:
        """py-trie's _set_db_value."""
        cdef PyObject* count
        self.db[key] = value
        if self.pruning:
            if self.int_counts:
                # ref_count[key] += 1 of a defaultdict(int), without the __missing__ call
                count = PyDict_GetItem(<dict>self._ref_count, key)
                PyDict_SetItem(<dict>self._ref_count, key, 1 if count is NULL else <object>count + 1)
            else:
                ref_count = self._ref_count
                ref_count[key] += 1

    cdef object persist(self, object node):
        """py-trie's _persist_node: the reference a parent keeps (blank, the node itself, or its stored hash)."""
        check_node(node)
        if is_blank(node):
            return BLANK_NODE
        cdef bytes encoded = encode_node(node)
        if PyBytes_GET_SIZE(encoded) < 32:
            return node
        node_hash = keccak_of(encoded)
        self.store(node_hash, encoded)
        return node_hash

    def _set_raw_node(self, raw_node):
        """py-trie's _set_raw_node: store a node under its hash even when short (a root); the hash."""
        return self.store_raw(raw_node)

    cdef bytes store_raw(self, object raw_node):
        check_node(raw_node)
        self._stored_encoded = None
        if is_blank(raw_node):
            return BLANK_NODE_HASH
        cdef bytes encoded = encode_node(raw_node)
        cdef bytes node_hash = keccak_of(encoded)
        self.store(node_hash, encoded)
        self._stored_encoded = encoded
        return node_hash

    def _store_proof(self, proof):
        """py-trie's ``for node in proof: self._set_raw_node(node)`` (get_from_proof), the Keccaks of up to
        PROOF_BATCH nodes at a time on the SIMD lanes."""
        cdef list nodes = list(proof)
        cdef list encodings = []
        cdef const uint8_t* data[PROOF_BATCH]
        cdef size_t lengths[PROOF_BATCH]
        cdef uint8_t digests[PROOF_BATCH * 32]
        cdef Py_ssize_t i, n
        cdef bytes encoded
        cdef list stored = []           # the non-blank nodes, beside their encodings
        cdef dict proof_nodes = self._proof_nodes
        for node in nodes:
            check_node(node)
            if not is_blank(node):
                encodings.append(encode_node(node))
                stored.append(node)
        n = len(encodings)
        if n > PROOF_BATCH:
            for i in range(n):
                encoded = <bytes>encodings[i]
                self.keep_proof_node(keccak_of(encoded), encoded, stored[i], proof_nodes)
            return
        for i in range(n):
            encoded = <bytes>encodings[i]
            data[i] = <const uint8_t*>PyBytes_AS_STRING(encoded)
            lengths[i] = <size_t>PyBytes_GET_SIZE(encoded)
        mpt_keccak256_many(keccak_backend_number(), data, lengths, <size_t>n, digests)
        for i in range(n):
            self.keep_proof_node(PyBytes_FromStringAndSize(<char*>digests + 32 * i, 32), encodings[i], stored[i],
                                 proof_nodes)

    cdef inline void keep_proof_node(self, bytes node_hash, bytes encoded, object node, dict proof_nodes) except *:
        self.store(node_hash, encoded)
        # what a read of it would decode: the node itself when it holds nothing but exact bytes and lists
        if proof_nodes is not None and type(node) is list and plain(<list>node):
            proof_nodes[node_hash] = node

    cdef void prune_old_root(self, object walked) except *:
        """The first half of py-trie's _set_root_node when pruning: the old root is read again and marked when
        _node_to_db_mapping() stores nothing for it (blank or short). walked: the encoding set_raw() walked the
        old root from (a canonical branch, whose encoding is its re-encoding), or None."""
        cdef object encoded
        cdef bint short
        old_root_hash = self.root_hash
        if old_root_hash == BLANK_NODE_HASH:
            return
        if walked is not None:
            # set_raw() only walks a root whose hash is 32 bytes: fetch() reads it from the database
            try:
                encoded = self.db[old_root_hash]
            except KeyError:
                return
            if encoded is walked:
                short = PyBytes_GET_SIZE(<bytes>walked) < 32
            else:
                old_root_node = self.decode_read(encoded, True)
                check_node(old_root_node)
                short = is_blank(old_root_node) or PyBytes_GET_SIZE(<bytes>encode_node(old_root_node)) < 32
        else:
            try:
                old_root_node = self.fetch(old_root_hash)
            except KeyError:
                return
            check_node(old_root_node)
            short = is_blank(old_root_node) or PyBytes_GET_SIZE(<bytes>encode_node(old_root_node)) < 32
        if short and old_root_hash in self.db:
            self.mark_prune(old_root_hash)

    cdef void set_root_encoded(self, bytes encoded, object walked) except *:
        """py-trie's _set_root_node of the root set_raw() encoded (a canonical branch: it passes validate_is_node,
        and encode_raw of its decoding is encoded itself)."""
        if self.pruning:
            self.prune_old_root(walked)
        cdef bytes node_hash = keccak_of(encoded)
        self.store(node_hash, encoded)
        self._stored_encoded = encoded
        self.root_hash = node_hash
        # decoded when a read first needs it (decode_read)
        self._root_encoded = encoded
        self._root_node = None

    cdef void set_root_node(self, object root_node) except *:
        check_node(root_node)
        if self.pruning:
            self.prune_old_root(None)
        self.root_hash = self.store_raw(root_node)
        if self._stored_encoded is not None and type(root_node) is list and plain(<list>root_node):
            # root_node is this call's own list: nothing else holds it
            self._root_encoded = self._stored_encoded
            self._root_node = <list>root_node

    cdef void begin_change(self) except *:
        if self.pruning:
            if self._pending_prune_keys is None:
                self._pending_prune_keys = {}
            else:
                raise ValidationError("Cannot set/delete simultaneously, run them in serial")

    cdef void complete_pruning(self) except *:
        cdef PyObject* count
        ref_count = self._ref_count
        db = self.db
        for key, number_prunes in (<dict>self._pending_prune_keys).items():
            if self.int_counts:
                # ref_count[key] of a defaultdict(int): a missing key is inserted as 0, as __missing__ does
                count = PyDict_GetItem(<dict>ref_count, key)
                if count is NULL:
                    PyDict_SetItem(<dict>ref_count, key, 0)
                    new_count = 0 - number_prunes
                else:
                    new_count = <object>count - number_prunes
            else:
                new_count = ref_count[key] - number_prunes
            if new_count <= 0:
                try:
                    del db[key]
                except KeyError as exc:
                    raise ValidationError(f"Tried to prune key {key!r} that doesn't exist") from exc
                else:
                    new_count = 0
            if new_count == 0:
                del ref_count[key]
            else:
                ref_count[key] = new_count

    cdef void change(self, object key, object value, bint is_delete) except *:
        cdef object walked = None
        self.begin_change()
        try:
            if self.pruning:
                ref_count = self._ref_count
                self.int_counts = type(ref_count) is defaultdict and ref_count.default_factory is int
            _validate_is_bytes(key)
            if not is_delete:
                _validate_is_bytes(value)
            trie_key = key_to_nibbles(key)
            try:
                if is_delete or PyBytes_GET_SIZE(<bytes>value) == 0:
                    root_node = self.fetch(self.root_hash)
                    new_node = self.delete_at(root_node, self._fetched_prune_key, trie_key)
                else:
                    new_node = self.set_raw(trie_key, value)
                    walked = self._walked_root
                    self._walked_root = None
            except KeyError as exc:
                raise MissingTrieNode(exc.args[0], self.root_hash, key, prefix=None) from exc
            if walked is not None:
                self.set_root_encoded(<bytes>new_node, walked)
            else:
                self.set_root_node(new_node)
            if self.pruning:
                self.complete_pruning()
        finally:
            self._pending_prune_keys = None
            self.int_counts = False

    def set(self, key, value):
        self.change(key, value, False)

    def delete(self, key):
        self.change(key, None, True)

    def __setitem__(self, key, value):
        self.change(key, value, False)

    def __delitem__(self, key):
        self.change(key, None, True)

    cdef object set_raw(self, bytes trie_key, object value):
        """py-trie's ``self._set(self.get_node(self.root_hash), trie_key, value)``, walking the branches on the
        key's path as the bytes the database holds: each is checked to be a canonical branch whose children are
        blank or hash references (branch_items), its child read, and on the way back its encoding is the old one
        with the child's slot replaced, which is what encode_raw writes for the node py-trie changes, without
        decoding 17 items and encoding them again. The first node that is no such branch (a leaf, an extension,
        a blank slot, a branch with an embedded child, anything odd) and all below it go through set_at. The reads,
        the prune marks (going down) and the writes (coming back) are py-trie's, in its order.

        When the root was such a branch, returns the new root's encoding and sets self._walked_root to the old
        root's encoding (for set_root_encoded); else returns the new root node and leaves _walked_root None."""
        cdef Py_ssize_t slot_at[FAST_DEPTH]
        cdef Py_ssize_t slot_end[FAST_DEPTH]
        cdef Py_ssize_t body_at[FAST_DEPTH]
        cdef Py_ssize_t starts[18]
        cdef Py_ssize_t depth = 0, level, n, keylen = PyBytes_GET_SIZE(trie_key)
        cdef Py_ssize_t slot_len, payload
        cdef const uint8_t* p
        cdef const uint8_t* slot
        cdef uint8_t hash_slot[33]
        cdef int index
        cdef list path = []
        cdef object encoded, prune_key, ref, node, slot_owner
        cdef bytes out
        cdef uint8_t* q
        self._walked_root = None
        root_hash = self.root_hash
        if type(root_hash) is not bytes or PyBytes_GET_SIZE(<bytes>root_hash) != 32 or root_hash == BLANK_NODE_HASH:
            node = self.fetch(root_hash)
            return self.set_at(node, self._fetched_prune_key, trie_key, value)
        encoded = self.db[root_hash]
        ref = root_hash
        while True:
            if type(encoded) is bytes:
                prune_key = ref if PyBytes_GET_SIZE(<bytes>encoded) >= 32 else None
            else:
                prune_key = None
            if depth >= FAST_DEPTH or depth >= keylen or type(encoded) is not bytes:
                break
            p = <const uint8_t*>PyBytes_AS_STRING(<bytes>encoded)
            n = PyBytes_GET_SIZE(<bytes>encoded)
            if not branch_items(p, n, starts):
                break
            # py-trie's _prune_node of the branch (validate_is_node passes for this shape)
            self.mark_prune(prune_key)
            index = nibble_at(trie_key, depth)
            slot_at[depth] = starts[index]
            slot_end[depth] = starts[index + 1]
            body_at[depth] = starts[0]
            path.append(encoded)
            depth += 1
            if slot_end[depth - 1] - slot_at[depth - 1] == 1:
                encoded = BLANK_NODE            # a blank child: nothing is read
                ref = None
                break
            ref = PyBytes_FromStringAndSize(<const char*>p + slot_at[depth - 1] + 1, 32)
            if ref == BLANK_NODE_HASH:
                encoded = BLANK_NODE
                ref = None
                break
            encoded = self.db[ref]
        if depth == 0:
            node = self.decode_read(encoded, True)
        elif ref is None:
            node = BLANK_NODE
            prune_key = None
        else:
            node = self.decode_read(encoded, False)
        node = self.set_at(node, prune_key, trie_key[depth:], value)
        if depth == 0:
            return node
        # py-trie's _persist_node of the new node: its slot in the parent
        check_node(node)
        if is_blank(node):
            slot_owner = BLANK_SLOT
        else:
            slot_owner = encode_node(node)
            if PyBytes_GET_SIZE(<bytes>slot_owner) >= 32:
                slot_owner = self.store_hashed(<bytes>slot_owner, hash_slot)
        for level in range(depth - 1, -1, -1):
            if slot_owner is None:
                slot = hash_slot
                slot_len = 33
            else:
                slot = <const uint8_t*>PyBytes_AS_STRING(<bytes>slot_owner)
                slot_len = PyBytes_GET_SIZE(<bytes>slot_owner)
            encoded = <bytes>PyList_GET_ITEM(path, level)
            p = <const uint8_t*>PyBytes_AS_STRING(<bytes>encoded)
            n = PyBytes_GET_SIZE(<bytes>encoded)
            payload = n - body_at[level] - (slot_end[level] - slot_at[level]) + slot_len
            out = PyBytes_FromStringAndSize(NULL, header_size(payload) + payload)
            q = <uint8_t*>PyBytes_AS_STRING(out)
            q += put_header(q, 0xc0, payload)
            memcpy(q, p + body_at[level], slot_at[level] - body_at[level])
            q += slot_at[level] - body_at[level]
            memcpy(q, slot, slot_len)
            q += slot_len
            memcpy(q, p + slot_end[level], n - slot_end[level])
            if level == 0:
                self._walked_root = encoded
                return out
            # py-trie's _persist_node of the changed branch
            if PyBytes_GET_SIZE(out) >= 32:
                slot_owner = self.store_hashed(out, hash_slot)
            else:
                slot_owner = out

    cdef object store_hashed(self, bytes encoded, uint8_t* hash_slot):
        """Store encoded (32 bytes or more) under its Keccak, which goes to hash_slot[1:33] after the RLP header
        of a 32-byte string (hash_slot[0]); returns None (the caller's sign that its slot is hash_slot)."""
        write_hash_ref_header(hash_slot)
        mpt_keccak256(<const uint8_t*>PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded), hash_slot + 1)
        self.store(PyBytes_FromStringAndSize(<const char*>hash_slot + 1, 32), encoded)
        return None

    cdef object set_at(self, object node, object prune_key, bytes trie_key, object value):
        """py-trie's _set."""
        cdef int kind = kind_of(node)
        self.prune_node(node, prune_key)
        if kind == KIND_BLANK:
            return [hex_prefix_of(trie_key, True), value]
        elif kind == KIND_BRANCH:
            if PyBytes_GET_SIZE(trie_key):
                index = nibble_at(trie_key, 0)
                sub_node = self.fetch((<list>node)[index])
                new_node = self.set_at(sub_node, self._fetched_prune_key, trie_key[1:], value)
                (<list>node)[index] = self.persist(new_node)
            else:
                (<list>node)[16] = value
            return node
        return self.set_kv(<list>node, trie_key, value)

    cdef object set_kv(self, list node, bytes trie_key, object value):
        """py-trie's _set_kv_node."""
        cdef bint leaf
        cdef bytes current_key = unpack_path(node[0], &leaf)
        cdef bint is_extension = not leaf
        cdef Py_ssize_t common = common_prefix_length(current_key, trie_key)
        cdef bytes current_rest = current_key[common:]
        cdef bytes key_rest = trie_key[common:]
        cdef list new_node
        if not PyBytes_GET_SIZE(current_rest) and not PyBytes_GET_SIZE(key_rest):
            if leaf:
                return [node[0], value]
            sub_node = self.fetch(node[1])
            new_node_obj = self.set_at(sub_node, self._fetched_prune_key, key_rest, value)
        elif not PyBytes_GET_SIZE(current_rest):
            if is_extension:
                sub_node = self.fetch(node[1])
                new_node_obj = self.set_at(sub_node, self._fetched_prune_key, key_rest, value)
            else:
                new_node = blank_branch()
                new_node[16] = node[1]
                new_node[nibble_at(key_rest, 0)] = self.persist([hex_prefix_of(key_rest[1:], True), value])
                new_node_obj = new_node
        else:
            new_node = blank_branch()
            if PyBytes_GET_SIZE(current_rest) == 1 and is_extension:
                new_node[nibble_at(current_rest, 0)] = node[1]
            else:
                new_node[nibble_at(current_rest, 0)] = self.persist(
                    [hex_prefix_of(current_rest[1:], leaf), node[1]]
                )
            if PyBytes_GET_SIZE(key_rest):
                new_node[nibble_at(key_rest, 0)] = self.persist([hex_prefix_of(key_rest[1:], True), value])
            else:
                new_node[16] = value
            new_node_obj = new_node
        if common:
            return [hex_prefix(<const unsigned char*>PyBytes_AS_STRING(trie_key), common, False),
                    self.persist(new_node_obj)]
        return new_node_obj

    cdef object delete_at(self, object node, object prune_key, bytes trie_key):
        """py-trie's _delete."""
        cdef int kind = kind_of(node)
        self.prune_node(node, prune_key)
        if kind == KIND_BLANK:
            return BLANK_NODE
        elif kind == KIND_BRANCH:
            return self.delete_in_branch(<list>node, trie_key)
        return self.delete_kv(<list>node, trie_key)

    cdef object delete_in_branch(self, list node, bytes trie_key):
        """py-trie's _delete_branch_node."""
        if not PyBytes_GET_SIZE(trie_key):
            node[16] = BLANK_NODE
            return self.normalize_branch(node)
        index = nibble_at(trie_key, 0)
        node_to_delete = self.fetch(node[index])
        sub_node = self.delete_at(node_to_delete, self._fetched_prune_key, trie_key[1:])
        encoded_sub_node = self.persist(sub_node)
        if encoded_sub_node == node[index]:
            return node
        node[index] = encoded_sub_node
        if is_blank(encoded_sub_node):
            return self.normalize_branch(node)
        return node

    cdef object delete_kv(self, list node, bytes trie_key):
        """py-trie's _delete_kv_node."""
        cdef bint leaf, sub_leaf
        cdef bytes current_key = unpack_path(node[0], &leaf)
        if not starts_with(trie_key, current_key):
            return node
        if leaf:
            return BLANK_NODE if trie_key == current_key else node
        sub_node = self.fetch(node[1])
        new_sub_node = self.delete_at(sub_node, self._fetched_prune_key, trie_key[PyBytes_GET_SIZE(current_key):])
        encoded_new_sub_node = self.persist(new_sub_node)
        if encoded_new_sub_node == node[1]:
            return node
        if is_blank(new_sub_node):
            return BLANK_NODE
        cdef int kind = kind_of(new_sub_node)
        if kind == KIND_LEAF or kind == KIND_EXTENSION:
            self.mark_prune_node(<list>new_sub_node)
            sub_path = unpack_path((<list>new_sub_node)[0], &sub_leaf)
            return [hex_prefix_of(current_key + sub_path, sub_leaf), (<list>new_sub_node)[1]]
        if kind == KIND_BRANCH:
            return [hex_prefix_of(current_key, False), encoded_new_sub_node]
        raise Exception("Invariant, this code path should not be reachable")

    cdef object normalize_branch(self, list node):
        """py-trie's _normalize_branch_node: a branch left with one item becomes a leaf or extension."""
        cdef Py_ssize_t i, filled = 0
        for i in range(17):
            if node[i]:
                filled += 1
                if filled == 2:
                    return node
        if node[16]:
            return [b"\x20", node[16]]
        for i in range(16):
            if node[i]:
                break
        else:
            raise StopIteration
        sub_node_hash = node[i]
        sub_node = self.fetch(sub_node_hash)
        sub_prune_key = self._fetched_prune_key
        cdef bint sub_leaf
        cdef int kind = kind_of(sub_node)
        if kind == KIND_LEAF or kind == KIND_EXTENSION:
            self.prune_node(sub_node, sub_prune_key)
            sub_path = unpack_path((<list>sub_node)[0], &sub_leaf)
            return [hex_prefix_of(_NIBBLE[i] + sub_path, sub_leaf), (<list>sub_node)[1]]
        elif kind == KIND_BRANCH:
            return [hex_prefix_of(_NIBBLE[i], False), sub_node_hash]
        raise Exception("Invariant: this code block should be unreachable")


def store_proof(HexaryTrieCore trie, proof):
    """py-trie's ``for node in proof: trie._set_raw_node(node)`` of ``get_from_proof``, on a trie of any subclass
    (the route a subclass of HexaryTrie keeps): the Keccaks of up to PROOF_BATCH nodes at a time on the lanes."""
    trie._store_proof(proof)


def proven_value(root_hash, key, proof):
    """py-trie's ``HexaryTrie.get_from_proof(root_hash, key, proof)``: the proof's nodes stored in a fresh trie
    over a dict (``_set_raw_node`` each, their Keccaks on the SIMD lanes), then ``get(key)`` of a snapshot at
    root_hash; a missing node is py-trie's BadTrieProof. The snapshot's reads (of that private dict, which
    nothing else sees) return the proof's own node lists instead of decoding their encodings again: a read
    only traverses them, and for lists of exact bytes the decoding is equal to the list."""
    cdef HexaryTrieCore t = HexaryTrieCore.__new__(HexaryTrieCore)
    t.db = {}
    t.root_hash = BLANK_NODE_HASH
    t._is_pruning = False
    t._proof_nodes = {}
    t._store_proof(proof)
    _validate_is_bytes(root_hash)           # what the snapshot's constructor checks
    t.root_hash = root_hash
    try:
        return t.lookup(key)
    except MissingTrieNode as e:
        raise BadTrieProof(f"Missing proof node with hash {e.missing_node_hash!r}") from e


@cython.final
cdef class ScratchDB:
    """py-trie's ``trie.utils.db.ScratchDB``, compiled: writes and deletes stay in ``cache`` (a delete is py-trie's
    ``DELETED`` marker, and the wrapped database still answers reads of a deleted key) until ``batch_commit()``
    exits without an exception; then writes go to the wrapped database, and deletes too when ``do_deletes``."""

    cdef public object wrapped_db
    cdef public dict cache

    def __init__(self, wrapped_db):
        self.wrapped_db = wrapped_db
        self.cache = {}

    def __getitem__(self, key):
        cdef PyObject* val = PyDict_GetItem(self.cache, key)
        if val is not NULL and <object>val is not _DELETED:
            return <object>val
        return self.wrapped_db[key]

    def __setitem__(self, key, value):
        self.cache[key] = value

    def __delitem__(self, key):
        self.cache[key] = _DELETED

    def __contains__(self, key):
        cdef PyObject* val = PyDict_GetItem(self.cache, key)
        if val is not NULL and <object>val is not _DELETED:
            return True
        return key in self.wrapped_db

    def copy(self):
        combined = {}
        combined.update(self.wrapped_db)
        combined.update(self.cache)
        return {k: v for k, v in combined.items() if v is not _DELETED}

    def commit(self, bint do_deletes):
        """Write the cache into the wrapped database (what py-trie's batch_commit does on a clean exit)."""
        wrapped_db = self.wrapped_db
        for key, value in self.cache.items():
            if value is not _DELETED:
                wrapped_db[key] = value
            elif do_deletes:
                wrapped_db.pop(key, None)

    def batch_commit(self, *, do_deletes=False):
        return _BatchCommit(self, do_deletes)


@cython.final
cdef class _BatchCommit:
    """The context manager of ScratchDB.batch_commit()."""

    cdef ScratchDB scratch
    cdef bint do_deletes

    def __cinit__(self, ScratchDB scratch, bint do_deletes):
        self.scratch = scratch
        self.do_deletes = do_deletes

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.scratch.commit(self.do_deletes)
        finally:
            self.scratch.cache = {}
        return False


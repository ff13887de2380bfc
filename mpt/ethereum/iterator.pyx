# cython: language_level=3
"""Iteration over a trie (geth trie/iterator.go): key/value pairs in key order and nodes in pre-order.

Both walk an explicit stack (no recursion, whatever the depth) and load hash nodes from the trie's database as
they reach them, without caching them in the trie: iterating a large trie does not pull it into memory.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t

from mpt.ethereum.encoding cimport TERMINATOR, keybytes_to_hex_c
from mpt.ethereum.hasher cimport Hasher, HasherPool, default_pool
from mpt.ethereum.node cimport FullNode, HashNode, Node, ShortNode, ValueNode
from mpt.ethereum.trie cimport Trie

from mpt.ethereum.trie import register_walkers

cdef bytes _NIBBLES = bytes(range(17))


cdef bytes _hex_to_keybytes(bytes path):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(path), i
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(path)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n // 2)
    cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
    for i in range(n // 2):
        o[i] = (p[2 * i] << 4) | p[2 * i + 1]
    return out


cdef int _compare_prefix(bytes path, bytes start) noexcept:
    """Compare path with start's prefix of the same length: -1 before it, 0 equal, 1 after it."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(path), m = PyBytes_GET_SIZE(start), i
    cdef const uint8_t *a = <const uint8_t *>PyBytes_AS_STRING(path)
    cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(start)
    for i in range(n if n < m else m):
        if a[i] != b[i]:
            return -1 if a[i] < b[i] else 1
    return 0


cdef int _push(list stack, object child, bytes child_path, bint bounded, bytes start_hex) except -1:
    """Queue child unless its whole subtree lies before start; it stays bounded while on start's own path."""
    cdef int cmp
    if bounded:
        cmp = _compare_prefix(child_path, start_hex)
        if cmp < 0:
            return 0
        bounded = cmp == 0
    stack.append((child, child_path, bounded))
    return 0


def iter_items(Trie t not None, bytes start not None, int mode):
    """Yield (key, value) (mode 0), keys (1) or values (2) in ascending key order from start on."""
    cdef bytes start_hex = keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(start), PyBytes_GET_SIZE(start))
    start_hex = start_hex[:PyBytes_GET_SIZE(start_hex) - 1]
    # Each entry: (node, path so far as hex nibbles, whether the path still equals start's prefix).
    cdef list stack = [(t.nodes_root(), b"", PyBytes_GET_SIZE(start) > 0)]
    cdef Node n
    cdef bytes path, key
    cdef bint bounded
    cdef int i
    cdef object c
    while stack:
        n, path, bounded = stack.pop()
        if n is None:
            continue
        if type(n) is HashNode:
            n = t.resolve(<HashNode>n, path, PyBytes_GET_SIZE(path))
        if type(n) is ValueNode:
            if bounded and PyBytes_GET_SIZE(path) < PyBytes_GET_SIZE(start_hex):
                continue                    # a proper prefix of start: smaller than start
            if mode == 2:
                yield (<ValueNode>n).value
            else:
                key = _hex_to_keybytes(path)
                yield key if mode == 1 else (key, (<ValueNode>n).value)
        elif type(n) is ShortNode:
            key = (<ShortNode>n).key
            if PyBytes_GET_SIZE(key) and (<const uint8_t *>PyBytes_AS_STRING(key))[PyBytes_GET_SIZE(key) - 1] == TERMINATOR:
                key = key[:PyBytes_GET_SIZE(key) - 1]
            _push(stack, (<ShortNode>n).val, path + key, bounded, start_hex)
        elif type(n) is FullNode:
            # Push in reverse so that the value slot (the shortest key) comes out first, then 0..15.
            for i in range(15, -1, -1):
                c = (<FullNode>n).child(i)
                if c is not None:
                    _push(stack, c, path + _NIBBLES[i:i + 1], bounded, start_hex)
            c = (<FullNode>n).child(16)
            if c is not None:
                stack.append((c, path, bounded))


def iter_nodes(Trie t not None):
    """Yield (path, hash or None, blob) for every node in pre-order; the trie must be hashed."""
    cdef list stack = [(t.nodes_root(), b"")]
    cdef HasherPool pool = default_pool()
    cdef Hasher h = pool.acquire()
    cdef Node n
    cdef bytes path, node_hash, blob
    cdef int i
    cdef object c
    try:
        while stack:
            n, path = stack.pop()
            if n is None or type(n) is ValueNode:
                continue
            if type(n) is HashNode:
                n = t.resolve(<HashNode>n, path, PyBytes_GET_SIZE(path))
            h.buf.reset()
            n.encode(h.buf)
            blob = h.buf.to_bytes()
            node_hash = n.hash_bytes()
            if node_hash is None and PyBytes_GET_SIZE(path) == 0:
                node_hash = t.hash()            # the root is hashed whatever its size
            yield path, node_hash, blob
            if type(n) is FullNode:
                for i in range(15, -1, -1):
                    c = (<FullNode>n).child(i)
                    if c is not None:
                        stack.append((c, path + _NIBBLES[i:i + 1]))
            else:
                stack.append(((<ShortNode>n).val, path + (<ShortNode>n).key))
    finally:
        pool.release(h)


register_walkers(iter_items=iter_items, iter_nodes=iter_nodes)

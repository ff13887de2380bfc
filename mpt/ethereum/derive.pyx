# cython: language_level=3
"""List commitments: geth's DeriveSha (transactions, receipts, withdrawals roots) and klaytn's cheaper variants.

``impl="orig"``: the trie of rlp(index) -> item, as in every Ethereum block header. Keys are fed to a StackTrie
in the order 1..127, 0, 128.. which is ascending once RLP-encoded (rlp(0) is 0x80).
``impl="simple"``: a binary keccak Merkle tree over keccak(item) (klaytn DeriveShaSimple).
``impl="concat"``: keccak of the concatenation (klaytn DeriveShaConcat).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t

from mpt.core._keccak.keccak cimport mpt_keccak256
from mpt.core.bytes_like cimport as_bytes
from mpt.ethereum.stacktrie cimport StackTrie
from mpt.ethereum.trie cimport Trie

cdef bytes _KECCAK_EMPTY = bytes.fromhex("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")


cdef bytes rlp_index(Py_ssize_t i):
    """rlp(i) for a list index, without going through the generic encoder."""
    cdef uint8_t out[9]
    cdef int n = 0
    cdef Py_ssize_t v = i
    if i == 0:
        return b"\x80"
    if i < 0x80:
        out[0] = <uint8_t>i
        return PyBytes_FromStringAndSize(<char *>out, 1)
    while v:
        n += 1
        v >>= 8
    out[0] = <uint8_t>(0x80 + n)
    v = i
    for j in range(n):
        out[n - j] = <uint8_t>(v & 0xff)
        v >>= 8
    return PyBytes_FromStringAndSize(<char *>out, n + 1)


cdef bytes _keccak(const uint8_t *data, Py_ssize_t n):
    cdef uint8_t digest[32]
    mpt_keccak256(data, <size_t>n, digest)
    return PyBytes_FromStringAndSize(<char *>digest, 32)


cdef list _as_bytes_list(items, str func):
    cdef list out = []
    # A single encoding (bytes, str...) would iterate as ints or characters: name the argument instead.
    if isinstance(items, (str, bytes, bytearray, memoryview)) or not hasattr(items, "__iter__"):
        raise TypeError("%s() items must be an iterable of consensus encodings (bytes), not %s"
                        % (func, type(items).__name__))
    for i, item in enumerate(items):
        if type(item) is not bytes:
            item = as_bytes(item, "%s() items[%d]" % (func, i))
        out.append(item)
    return out


cdef bytes _derive_orig(list items, StackTrie st):
    cdef Py_ssize_t i, n = len(items)
    if st is None:
        st = StackTrie()
    else:
        st.reset()
    for i in range(1, n if n < 128 else 128):
        st.update(rlp_index(i), items[i])
    if n > 0:
        st.update(rlp_index(0), items[0])
    for i in range(128, n):
        st.update(rlp_index(i), items[i])
    return st.hash()


cdef bytes _derive_simple(list items):
    # klaytn DeriveShaSimple: leaves keccak(item); pairs keccak(left || right); an odd level repeats its last.
    cdef list level
    cdef Py_ssize_t i, n = len(items)
    cdef bytes item, pair
    if n == 0:
        return _KECCAK_EMPTY
    level = [_keccak(<const uint8_t *>PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item)) for item in items]
    while len(level) > 1:
        if len(level) & 1:
            level.append(level[len(level) - 1])
        nxt = []
        for i in range(0, len(level), 2):
            pair = level[i] + level[i + 1]
            nxt.append(_keccak(<const uint8_t *>PyBytes_AS_STRING(pair), 64))
        level = nxt
    return level[0]


cdef bytes _derive_concat(list items):
    cdef bytes joined = b"".join(items)
    return _keccak(<const uint8_t *>PyBytes_AS_STRING(joined), PyBytes_GET_SIZE(joined))


def derive_sha(items, impl="orig", StackTrie stack_trie=None):
    """Commitment to a list of consensus-encoded items (transactions, receipts, withdrawals).

    ``impl`` is "orig" (geth DeriveSha: the header's transactionsRoot etc.), "simple" or "concat" (klaytn).
    ``stack_trie`` lets a caller reuse one StackTrie across calls (it is reset first).
    """
    cdef list data = _as_bytes_list(items, "derive_sha")
    if impl == "orig":
        return _derive_orig(data, stack_trie)
    if impl == "simple":
        return _derive_simple(data)
    if impl == "concat":
        return _derive_concat(data)
    raise ValueError("unknown derive_sha impl %r (use 'orig', 'simple' or 'concat')" % (impl,))


def derive_sha_trie(items):
    """DeriveSha through a plain Trie (geth's ListHasher path); equals derive_sha(items, "orig")."""
    cdef list data = _as_bytes_list(items, "derive_sha_trie")
    cdef Trie t = Trie()
    cdef Py_ssize_t i
    for i in range(len(data)):
        t.update(rlp_index(i), data[i])
    return t.hash()


def rlp_encode_index(Py_ssize_t i):
    """rlp(i) for a list index (the DeriveSha key)."""
    if i < 0:
        raise ValueError("negative index")
    return rlp_index(i)

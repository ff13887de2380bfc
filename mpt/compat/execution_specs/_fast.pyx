# cython: language_level=3
"""The compiled half of mpt.compat.execution_specs: leaf encodings, change-tracking dicts and the root syncs.

A spec ``Trie`` keeps its content in ``_data``; the first root asked of it swaps that dict for a
:class:`TrackingDict` with the same items, which records every key written from then on. The root cache (a root,
and for larger tries an :class:`mpt.Trie` mirror) lives on the TrackingDict, so it goes when the trie goes. Any
path this module cannot take exactly raises :class:`NeedsSpec` and the caller runs the spec's own code instead.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_DelItem, PyDict_GetItem, PyDict_SetItem, PyDict_Size
from cpython.long cimport PyLong_AsUnsignedLongLong
from cpython.object cimport PyObject
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove

from mpt._keccak.keccak cimport mpt_keccak256
from mpt.rlp cimport put_header, uint_byte_length

import mpt

cdef object _Trie = mpt.Trie
cdef bytes EMPTY_ROOT = bytes(mpt.EMPTY_ROOT)

cdef enum:
    # Secured tries of up to SMALL_MAX entries (every storage trie of a typical state) are hashed here in one C
    # recursion, without a mirror: rebuilding them costs less than keeping an mpt.Trie per account.
    SMALL_MAX = 32
    SMALL_VALUE_MAX = 64
    # Largest node of the small path: a branch of 16 hash references and an empty value, plus headers.
    NODE_BUF = 16 * 33 + 1 + 2 * 9
    # A dict's change set beyond 2 * len + this many keys is dropped: a full rebuild is cheaper by then.
    CHANGED_SLACK = 1024


class NeedsSpec(Exception):
    """This input is not for the compiled path (the caller runs the spec's own code, which computes or raises)."""


# ---------------------------------------------------------------------------------------------- change tracking

@cython.final
cdef class DirtySet:
    """Addresses whose storage may have changed since an account mirror's last sync. ``alive`` goes False when the
    mirror is freed, so a storage dict still pointing here may be claimed by another mirror."""
    cdef set keys
    cdef bint alive

    def __cinit__(self):
        self.keys = set()
        self.alive = True


cdef object KEY_ITSELF = object()     # sink_key of a dict whose written keys are the addresses (_storage_tries)


cdef class TrackingDict(dict):
    """A dict that records the keys written to it, and holds the root cache of the spec trie that owns it.

    Every way Python code can change a dict goes through here (item assignment and deletion, update, |=, pop,
    popitem, setdefault, clear); only C code calling ``PyDict_SetItem`` on it directly, or ``dict.__setitem__(d,
    ...)``, would bypass it. A copy (``copy.copy``, which the spec's ``copy_trie`` uses) carries the cache along.
    """
    cdef object changed          # keys written since the cache was synced; None: unknown, rebuild
    cdef object root             # the root at the last sync (bytes), valid while changed is empty
    cdef object mirror           # mpt.Trie or AccountMirror at the last sync, or None
    cdef object codec            # the ForkCodec that built the cache
    cdef bint secured
    cdef DirtySet sink           # also told about every write (storage tries: their account's address)
    cdef object sink_key

    def __cinit__(self, *args, **kwargs):
        self.changed = None
        self.root = None
        self.mirror = None
        self.codec = None
        self.sink = None
        self.sink_key = None

    cdef inline int _touch(self, object key) except -1:
        cdef object changed = self.changed
        if changed is not None:
            (<set>changed).add(key)
            if len(<set>changed) > 2 * PyDict_Size(self) + CHANGED_SLACK:
                self.changed = None
        if self.sink is not None:
            if self.sink.alive:
                self.sink.keys.add(key if self.sink_key is KEY_ITSELF else self.sink_key)
            else:
                self.sink = None
        return 0

    cdef inline int _touch_all(self) except -1:
        # Cheaper than a key each: the cache is rebuilt, and the owner (if any) rechecks this trie.
        self.changed = None
        if self.sink is not None:
            if self.sink.alive and self.sink_key is not KEY_ITSELF:
                self.sink.keys.add(self.sink_key)
            elif self.sink.alive:
                self.sink.keys.update(self)
        return 0

    def __setitem__(self, key, value):
        PyDict_SetItem(self, key, value)
        self._touch(key)

    def __delitem__(self, key):
        PyDict_DelItem(self, key)
        self._touch(key)

    def pop(self, key, *default):
        value = dict.pop(self, key, *default)
        self._touch(key)
        return value

    def popitem(self):
        item = dict.popitem(self)
        self._touch(item[0])
        return item

    def setdefault(self, key, default=None):
        cdef PyObject *found = PyDict_GetItem(self, key)
        if found != NULL:
            return <object>found
        self[key] = default
        return default

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other):
        self.update(other)
        return self

    def clear(self):
        if self.sink is not None and self.sink.alive and self.sink_key is KEY_ITSELF:
            self.sink.keys.update(self)
        dict.clear(self)
        self._touch_all()

    def __copy__(self):
        cdef TrackingDict twin = TrackingDict(self)
        if self.changed is not None and self.codec is not None:
            twin.changed = set(self.changed)
            twin.root = self.root
            twin.codec = self.codec
            twin.secured = self.secured
            if self.mirror is not None:
                twin.mirror = self.mirror.copy()
        return twin

    def copy(self):
        return self.__copy__()

    def __reduce__(self):
        # Pickled (and deep-copied) as a plain dict: the cache is rebuilt from the content.
        return (dict, (dict(self),))


cdef TrackingDict _tracked(object owner, str attribute, object data):
    """owner.<attribute>, a dict, as a TrackingDict (swapped in on first use: one copy of the items)."""
    cdef TrackingDict td
    if type(data) is TrackingDict:
        return <TrackingDict>data
    if type(data) is not dict:
        raise NeedsSpec("%s is a %s, not a dict" % (attribute, type(data).__name__))
    td = TrackingDict(data)
    setattr(owner, attribute, td)
    return td


# ---------------------------------------------------------------------------------------------------- encodings

cdef inline Py_ssize_t _put_string(uint8_t *out, const uint8_t *data, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t h
    if n == 1 and data[0] < 0x80:
        out[0] = data[0]
        return 1
    h = put_header(out, 0x80, n)
    memcpy(out + h, data, <size_t>n)
    return h + n


cdef Py_ssize_t _put_uint(object number, uint8_t *out) except -1:
    """The RLP string of a non-negative int below 2**256 (big-endian, no leading zeros) at out (<= 33 bytes)."""
    cdef uint64_t x
    cdef int nbytes, i
    cdef bytes big
    if type(number) is not int or number < 0:
        raise NeedsSpec("not a non-negative int")
    if number < 0x10000000000000000:
        x = PyLong_AsUnsignedLongLong(number)
        if x == 0:
            out[0] = 0x80
            return 1
        if x < 0x80:
            out[0] = <uint8_t>x
            return 1
        nbytes = uint_byte_length(x)
        out[0] = <uint8_t>(0x80 + nbytes)
        for i in range(nbytes):
            out[nbytes - i] = <uint8_t>(x >> (8 * i))
        return 1 + nbytes
    if number.bit_length() > 256:
        raise NeedsSpec("an integer wider than 256 bits")
    big = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return _put_string(out, <const uint8_t *>PyBytes_AS_STRING(big), PyBytes_GET_SIZE(big))


@cython.final
cdef class ForkCodec:
    """One fork's leaf encodings: compiled for the types whose encoding was proven equal to the fork's
    ``encode_node`` when the fork was patched, the fork's own ``encode_node`` for every other type."""
    cdef readonly str name
    cdef readonly object trie_type          # the fork's Trie class
    cdef readonly object state_type         # the fork's State class (None until its state module is patched)
    cdef readonly object root_type          # the fork's Root (returned roots are of this type)
    cdef readonly object address_type       # the fork's Address (the spec makes one of each account key)
    cdef object account_type, uint_type, u256_type, encode_node
    cdef frozenset bytes_types
    cdef readonly bint fast_account, fast_u256
    cdef dict code_hashes
    cdef public object spec_root, spec_state_root   # the spec's own functions (copies of the originals)
    cdef public Py_ssize_t fallbacks, full_builds, syncs
    cdef public object state_hook           # patches the fork's state module once it is loaded (see root())

    def __init__(self, str name, trie_type, root_type, address_type, account_type, uint_type, u256_type,
                 encode_node, bytes_types, bint fast_account, bint fast_u256, spec_root):
        self.name = name
        self.trie_type = trie_type
        self.state_type = None
        self.root_type = root_type
        self.address_type = address_type
        self.account_type = account_type
        self.uint_type = uint_type
        self.u256_type = u256_type
        self.encode_node = encode_node
        self.bytes_types = frozenset(bytes_types)
        self.fast_account = fast_account
        self.fast_u256 = fast_u256
        self.code_hashes = {}
        self.spec_root = spec_root
        self.spec_state_root = None
        self.state_hook = None

    def set_state(self, state_type, spec_state_root):
        self.state_type = state_type
        self.spec_state_root = spec_state_root

    cdef object encode_value(self, object value):
        """What the fork's encode_node(value) gives, for any value but an Account."""
        cdef uint8_t buf[40]
        cdef object t = type(value)
        cdef Py_ssize_t n
        if t is self.u256_type and self.fast_u256:
            n = _put_uint(value._number, buf)
            return PyBytes_FromStringAndSize(<char *>buf, n)
        if t in self.bytes_types:
            return value
        encoded = self.encode_node(value)
        if not isinstance(encoded, bytes):
            raise NeedsSpec("encode_node gave a %s" % type(encoded).__name__)
        return encoded

    cdef bytes code_hash(self, object code):
        cdef object found = self.code_hashes.get(code)
        cdef uint8_t digest[32]
        if found is None:
            if not isinstance(code, bytes):
                raise NeedsSpec("account code is not bytes")
            mpt_keccak256(<const uint8_t *>PyBytes_AS_STRING(code), <size_t>PyBytes_GET_SIZE(code), digest)
            found = PyBytes_FromStringAndSize(<char *>digest, 32)
            if len(self.code_hashes) >= 4096:
                self.code_hashes.clear()
            self.code_hashes[code] = found
        return <bytes>found

    cdef bytes encode_account(self, object account, object storage_root):
        """encode_node(account, storage_root): RLP [nonce, balance, storage_root, keccak(code)]."""
        cdef uint8_t buf[9 + 33 + 33 + 33 + 33]
        cdef uint8_t *body = buf + 9
        cdef Py_ssize_t n, h
        cdef bytes code_hash
        if type(account) is not self.account_type or not self.fast_account:
            encoded = self.encode_node(account, storage_root)
            if not isinstance(encoded, bytes):
                raise NeedsSpec("encode_node gave a %s" % type(encoded).__name__)
            return bytes(encoded)
        if not isinstance(storage_root, bytes) or PyBytes_GET_SIZE(storage_root) != 32:
            raise NeedsSpec("a storage root that is not 32 bytes")
        nonce = account.nonce
        balance = account.balance
        if type(nonce) is not self.uint_type or type(balance) is not self.u256_type:
            raise NeedsSpec("an account field of an unexpected type")
        code_hash = self.code_hash(account.code)
        n = _put_uint(nonce._number, body)
        n += _put_uint(balance._number, body + n)
        body[n] = 0xa0
        memcpy(body + n + 1, PyBytes_AS_STRING(storage_root), 32)
        body[n + 33] = 0xa0
        memcpy(body + n + 34, PyBytes_AS_STRING(code_hash), 32)
        n += 66
        h = put_header(buf, 0xc0, n)
        memmove(buf + h, body, <size_t>n)
        return PyBytes_FromStringAndSize(<char *>buf, h + n)

    # --------------------------------------------------------------------------------- the patched functions

    def root(self, trie, get_storage_root=None):
        """The fork's ``root(trie, get_storage_root)``, computed by mpt (the spec's own code on any odd input)."""
        if self.state_hook is not None:
            # A state module loaded around the import system (the spec's Hardfork.module) is patched here.
            self.state_hook(self)
        try:
            if get_storage_root is None:
                result = trie_root(self, trie)
            else:
                result = account_trie_root(self, trie, get_storage_root)
        except Exception:
            self.fallbacks += 1
            forget(trie)
            return self.spec_root(trie, get_storage_root)
        return self.root_type(result)

    def state_root(self, state):
        """The fork's ``state_root(state)``, kept in step with the state's changes (see state_root_of)."""
        try:
            result = state_root_of(self, state)
        except Exception:
            self.fallbacks += 1
            try:
                forget(state._main_trie)
            except Exception:
                pass
            return self.spec_state_root(state)
        return self.root_type(result)


cpdef forget(object trie):
    """Drop the root cache of a spec trie (the next root is built from scratch)."""
    data = getattr(trie, "_data", None)
    if type(data) is TrackingDict:
        (<TrackingDict>data).changed = None
        (<TrackingDict>data).mirror = None
        (<TrackingDict>data).codec = None


# ------------------------------------------------------------------------------------------ the small-trie path

ctypedef struct SmallPair:
    uint8_t key[32]
    const uint8_t *value
    Py_ssize_t value_len


cdef inline uint8_t _nibble(const uint8_t *key, int i) noexcept nogil:
    if i & 1:
        return key[i >> 1] & 0x0f
    return key[i >> 1] >> 4


cdef Py_ssize_t _compact(const uint8_t *key, int start, int end, bint leaf, uint8_t *out) noexcept nogil:
    """Hex-prefix form of the nibbles key[start:end]."""
    cdef int i = start
    cdef Py_ssize_t o = 1
    cdef uint8_t flag = 2 if leaf else 0
    if (end - start) & 1:
        out[0] = <uint8_t>(((flag | 1) << 4) | _nibble(key, i))
        i += 1
    else:
        out[0] = <uint8_t>(flag << 4)
    while i < end:
        out[o] = <uint8_t>((_nibble(key, i) << 4) | _nibble(key, i + 1))
        i += 2
        o += 1
    return o


cdef Py_ssize_t _encode_node(SmallPair *p, Py_ssize_t lo, Py_ssize_t hi, int depth, uint8_t *out) noexcept nogil:
    """The RLP of the node holding p[lo:hi] (sorted, sharing their first depth nibbles) at out; its length."""
    cdef uint8_t payload[NODE_BUF]
    cdef uint8_t compact[34]
    cdef Py_ssize_t n = 0, j, start, c, h
    cdef int plen, k
    if hi - lo == 1:
        c = _compact(p[lo].key, depth, 64, True, compact)
        n = _put_string(payload, compact, c)
        n += _put_string(payload + n, p[lo].value, p[lo].value_len)
    else:
        plen = 0
        while _nibble(p[lo].key, depth + plen) == _nibble(p[hi - 1].key, depth + plen):
            plen += 1
        if plen > 0:
            c = _compact(p[lo].key, depth, depth + plen, False, compact)
            n = _put_string(payload, compact, c)
            n += _reference(p, lo, hi, depth + plen, payload + n)
        else:
            j = lo
            for k in range(16):
                start = j
                while j < hi and _nibble(p[j].key, depth) == k:
                    j += 1
                if j == start:
                    payload[n] = 0x80
                    n += 1
                else:
                    n += _reference(p, start, j, depth + 1, payload + n)
            payload[n] = 0x80
            n += 1
    h = put_header(out, 0xc0, n)
    memcpy(out + h, payload, <size_t>n)
    return h + n


cdef Py_ssize_t _reference(SmallPair *p, Py_ssize_t lo, Py_ssize_t hi, int depth, uint8_t *out) noexcept nogil:
    """How a parent refers to the node of p[lo:hi]: its RLP inline below 32 bytes, else the RLP of its hash."""
    cdef uint8_t node[NODE_BUF]
    cdef Py_ssize_t n = _encode_node(p, lo, hi, depth, node)
    if n < 32:
        memcpy(out, node, <size_t>n)
        return n
    out[0] = 0xa0
    mpt_keccak256(node, <size_t>n, out + 1)
    return 33


cdef object _small_secure_root(ForkCodec codec, dict data):
    """The root of a secured trie of at most SMALL_MAX entries, or None when a value is too long for this path."""
    cdef SmallPair pairs[SMALL_MAX]
    cdef SmallPair tmp
    cdef uint8_t values[SMALL_MAX][34]
    cdef uint8_t node[NODE_BUF]
    cdef uint8_t digest[32]
    cdef Py_ssize_t count = 0, i, j, n
    cdef list keep = []
    cdef object u256 = codec.u256_type
    cdef bint fast_u256 = codec.fast_u256
    for key, value in data.items():
        if not isinstance(key, bytes):
            raise NeedsSpec("a key that is not bytes")
        mpt_keccak256(<const uint8_t *>PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key), pairs[count].key)
        if type(value) is u256 and fast_u256:
            pairs[count].value_len = _put_uint(value._number, values[count])
            pairs[count].value = values[count]
        else:
            encoded = codec.encode_value(value)
            n = PyBytes_GET_SIZE(encoded)
            if n == 0:
                raise NeedsSpec("an empty leaf encoding")
            if n > SMALL_VALUE_MAX:
                return None
            keep.append(encoded)
            pairs[count].value = <const uint8_t *>PyBytes_AS_STRING(encoded)
            pairs[count].value_len = n
        count += 1
    if count == 0:
        return EMPTY_ROOT
    for i in range(1, count):       # insertion sort: at most SMALL_MAX keys
        tmp = pairs[i]
        j = i - 1
        while j >= 0 and memcmp(pairs[j].key, tmp.key, 32) > 0:
            pairs[j + 1] = pairs[j]
            j -= 1
        pairs[j + 1] = tmp
    for i in range(1, count):
        if memcmp(pairs[i - 1].key, pairs[i].key, 32) == 0:
            raise NeedsSpec("two keys with the same hash")
    n = _encode_node(pairs, 0, count, 0, node)
    mpt_keccak256(node, <size_t>n, digest)
    return PyBytes_FromStringAndSize(<char *>digest, 32)


# ---------------------------------------------------------------------------------------------- tries and roots

cdef inline bytes _keccak(object key):
    cdef uint8_t digest[32]
    if not isinstance(key, bytes):
        raise NeedsSpec("a key that is not bytes")
    mpt_keccak256(<const uint8_t *>PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key), digest)
    return PyBytes_FromStringAndSize(<char *>digest, 32)


cdef inline object _trie_key(object key, bint secured):
    if secured:
        return _keccak(key)
    if not isinstance(key, bytes):
        raise NeedsSpec("a key that is not bytes")
    return key


cdef object _leaf(ForkCodec codec, object value):
    encoded = codec.encode_value(value)
    if PyBytes_GET_SIZE(encoded) == 0:
        raise NeedsSpec("an empty leaf encoding")      # the spec asserts; mpt would take it as a deletion
    return encoded


cpdef bytes trie_root(ForkCodec codec, object trie):
    """The root of a spec trie holding no accounts; cached on its TrackingDict and brought up to date from the
    keys written since."""
    cdef TrackingDict td
    cdef PyObject *found
    cdef bint secured
    if type(trie) is not codec.trie_type:
        raise NeedsSpec("not the fork's Trie")
    secured = bool(trie.secured)
    td = _tracked(trie, "_data", trie._data)
    if td.codec is codec and td.secured == secured and td.changed is not None:
        if not td.changed:
            if td.root is not None:
                return <bytes>td.root
        elif td.mirror is not None and type(td.mirror) is _Trie:
            mirror = td.mirror
            for key in td.changed:
                found = PyDict_GetItem(td, key)
                if found == NULL:
                    mirror.delete(_trie_key(key, secured))
                else:
                    mirror.update(_trie_key(key, secured), _leaf(codec, <object>found))
            td.root = mirror.hash()
            (<set>td.changed).clear()
            codec.syncs += 1
            return <bytes>td.root
    codec.full_builds += 1
    root = None
    mirror = None
    if secured and PyDict_Size(td) <= SMALL_MAX:
        root = _small_secure_root(codec, td)
    if root is None:
        mirror = _Trie()
        for key, value in td.items():
            mirror.update(_trie_key(key, secured), _leaf(codec, value))
        root = mirror.hash()
    td.root = root
    td.mirror = mirror
    td.codec = codec
    td.secured = secured
    td.changed = set()
    return <bytes>root


cpdef bytes account_trie_root(ForkCodec codec, object trie, object get_storage_root):
    """root(trie, get_storage_root) of the spec: built in full (the storage roots come from an opaque callback)."""
    cdef bint secured
    if type(trie) is not codec.trie_type:
        raise NeedsSpec("not the fork's Trie")
    secured = bool(trie.secured)
    data = trie._data
    if not isinstance(data, dict):
        raise NeedsSpec("_data is not a dict")
    codec.full_builds += 1
    mirror = _Trie()
    address_type = codec.address_type
    account_type = codec.account_type
    for key, value in data.items():
        if isinstance(value, account_type):
            encoded = codec.encode_account(value, get_storage_root(address_type(key)))
        else:
            encoded = _leaf(codec, value)
        if PyBytes_GET_SIZE(encoded) == 0:
            raise NeedsSpec("an empty leaf encoding")
        mirror.update(_trie_key(key, secured), encoded)
    return mirror.hash()


@cython.final
cdef class AccountMirror:
    """The state trie of one spec State as an mpt.Trie, with the storage roots its accounts were encoded with."""
    cdef object trie                 # mpt.Trie: keccak(address) -> account RLP
    cdef dict storage_roots          # address -> storage root in that account's encoding
    cdef dict storage_seen           # address -> the storage TrackingDict the root came from
    cdef DirtySet dirty              # addresses whose storage was written since the last sync
    cdef set unbound                 # addresses whose storage dict reports elsewhere: rechecked every sync
    cdef object storage_map          # the _storage_tries TrackingDict synced against; None: reconcile first

    def __cinit__(self):
        self.trie = _Trie()
        self.storage_roots = {}
        self.storage_seen = {}
        self.dirty = DirtySet()
        self.unbound = set()
        self.storage_map = None

    def __dealloc__(self):
        if self.dirty is not None:
            self.dirty.alive = False

    def copy(self):
        cdef AccountMirror twin = AccountMirror.__new__(AccountMirror)
        twin.trie = self.trie.copy()
        twin.storage_roots = dict(self.storage_roots)
        twin.storage_seen = dict(self.storage_seen)
        twin.dirty.keys = set(self.dirty.keys)
        twin.unbound = set(self.unbound)
        twin.storage_map = None          # the storage dicts report to self, not twin: reconcile on first use
        return twin


cdef object _storage_root(ForkCodec codec, AccountMirror m, object storage_tries, object address):
    """The storage root of address for m, binding its storage dict to report writes to m."""
    cdef PyObject *found = PyDict_GetItem(storage_tries, address)
    cdef TrackingDict td
    if found == NULL:
        m.storage_seen.pop(address, None)
        return EMPTY_ROOT
    storage_trie = <object>found
    root = trie_root(codec, storage_trie)
    td = <TrackingDict>storage_trie._data
    m.storage_seen[address] = td
    if td.sink is m.dirty:
        if td.sink_key != address:       # one storage dict under two addresses: only one is told
            m.unbound.add(address)
    elif td.sink is None or not td.sink.alive:
        td.sink = m.dirty
        td.sink_key = address
    else:                                # another state's mirror is told of its writes
        m.unbound.add(address)
    return root


cdef int _sync_account(ForkCodec codec, AccountMirror m, TrackingDict accounts, object storage_tries,
                       object address, bint account_changed) except -1:
    cdef PyObject *found = PyDict_GetItem(accounts, address)
    if found == NULL:
        m.trie.delete(_keccak(address))
        m.storage_roots.pop(address, None)
        m.storage_seen.pop(address, None)
        return 0
    if not isinstance(address, bytes) or PyBytes_GET_SIZE(address) != 20:
        raise NeedsSpec("an address that is not 20 bytes")
    account = <object>found
    if type(account) is not codec.account_type:
        raise NeedsSpec("a state value that is not the fork's Account")
    root = _storage_root(codec, m, storage_tries, address)
    if account_changed or m.storage_roots.get(address) != root:
        m.trie.update(_keccak(address), codec.encode_account(account, root))
        m.storage_roots[address] = root
    return 0


cdef int _reconcile(AccountMirror m, TrackingDict storage_tries) except -1:
    """After _storage_tries was replaced (a rollback, a copied state): every address whose storage dict is not the
    one last synced is dirty. O(number of storage tries)."""
    cdef set dirty = m.dirty.keys
    cdef dict seen = m.storage_seen
    cdef PyObject *found
    for address, storage_trie in storage_tries.items():
        found = PyDict_GetItem(seen, address)
        if found == NULL or getattr(storage_trie, "_data", None) is not <object>found:
            dirty.add(address)
        else:
            td = <object>found
            if (<TrackingDict>td).sink is not m.dirty:
                dirty.add(address)
    for address in seen:
        if PyDict_GetItem(storage_tries, address) == NULL:
            dirty.add(address)
    return 0


cpdef bytes state_root_of(ForkCodec codec, object state):
    """state_root(state) of the spec, from the account mirror kept on the state trie's TrackingDict: accounts
    written since the last root, and accounts whose storage was written, are encoded again; nothing else is."""
    cdef TrackingDict accounts, storage_tries
    cdef AccountMirror m
    cdef set todo
    cdef object changed
    if type(state) is not codec.state_type:
        raise NeedsSpec("not the fork's State")
    if state._snapshots:
        raise NeedsSpec("a state inside a transaction")     # the spec asserts
    main = state._main_trie
    if type(main) is not codec.trie_type or main.secured is not True or main.default is not None:
        raise NeedsSpec("an unusual state trie")
    accounts = _tracked(main, "_data", main._data)
    storage_tries = _tracked(state, "_storage_tries", state._storage_tries)
    changed = accounts.changed
    if (accounts.codec is codec and changed is not None and type(accounts.mirror) is AccountMirror):
        m = <AccountMirror>accounts.mirror
        if m.storage_map is not storage_tries:
            _reconcile(m, storage_tries)
        todo = set(m.dirty.keys)
        todo.update(<set>changed)
        todo.update(m.unbound)
        if not todo and accounts.root is not None and m.storage_map is storage_tries:
            return <bytes>accounts.root
        m.unbound.clear()
        for address in todo:
            _sync_account(codec, m, accounts, storage_tries, address, address in <set>changed)
        codec.syncs += 1
    else:
        codec.full_builds += 1
        m = AccountMirror()
        for address in accounts:
            _sync_account(codec, m, accounts, storage_tries, address, True)
    _bind_storage_map(m, storage_tries)
    m.dirty.keys.clear()
    accounts.root = m.trie.hash()
    accounts.mirror = m
    accounts.codec = codec
    accounts.secured = True
    accounts.changed = set()
    return <bytes>accounts.root


cdef int _bind_storage_map(AccountMirror m, TrackingDict storage_tries) except -1:
    if storage_tries.sink is m.dirty and storage_tries.sink_key is KEY_ITSELF:
        m.storage_map = storage_tries
    elif storage_tries.sink is None or not storage_tries.sink.alive:
        storage_tries.sink = m.dirty
        storage_tries.sink_key = KEY_ITSELF
        m.storage_map = storage_tries
    else:
        m.storage_map = None            # another mirror is told of its writes: reconcile every time
    return 0


def leaf_encoding(ForkCodec codec, value):
    """The compiled encoding of a non-account leaf value (what the fork's encode_node(value) gives)."""
    return bytes(codec.encode_value(value))


def account_encoding(ForkCodec codec, account, storage_root):
    """The compiled encoding of an account leaf (what the fork's encode_node(account, storage_root) gives)."""
    return codec.encode_account(account, storage_root)


def secure_root(ForkCodec codec, dict data):
    """The root of a secured trie holding data, without a cache (the small path where it applies)."""
    root = _small_secure_root(codec, data) if PyDict_Size(data) <= SMALL_MAX else None
    if root is None:
        mirror = _Trie()
        for key, value in data.items():
            mirror.update(_keccak(key), _leaf(codec, value))
        root = mirror.hash()
    return root

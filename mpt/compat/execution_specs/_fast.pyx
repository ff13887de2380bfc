# cython: language_level=3
"""The compiled half of mpt.compat.execution_specs: leaf encodings, change-tracking dicts and the root syncs.

A spec ``Trie`` keeps its content in ``_data``; the first root asked of it swaps that dict for a
:class:`TrackingDict` with the same items, which records every key written from then on. The root cache (a root,
and for larger tries an :class:`mpt.Trie` mirror) lives on the TrackingDict, so it goes when the trie goes. A
state's first root is built in bulk (:class:`SmallTries`: every small storage trie, then the state trie, their keys
and nodes hashed together on the Keccak lanes); the state trie's nodes then back its mirror (:class:`NodeStore`).
Any path this module cannot take exactly raises :class:`NeedsSpec` and the caller runs the spec's own code instead.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_DelItem, PyDict_GetItem, PyDict_Next, PyDict_SetItem, PyDict_Size, PyDict_Update
from cpython.long cimport PyLong_AsUnsignedLongLong
from cpython.object cimport PyObject
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove, memset

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from mpt.core._keccak.keccak cimport (MPT_KECCAK_BACKENDS, mpt_keccak256, mpt_keccak256_many, mpt_keccak_backend_name,
                                 mpt_keccak_best_backend)
from mpt.core.rlp cimport put_header, put_string, string_size, uint_byte_length
from mpt.ethereum.encoding cimport compact_size_nibbles, keybytes_nibble, write_compact_keybytes
from mpt.ethereum.node_enc cimport (EMPTY_STRING, write_branch_head, write_branch_value, write_hash_ref,
                                    write_short_head)

import gc

import mpt
import mpt.core.runtime

cdef object _Trie = mpt.Trie
cdef bytes EMPTY_ROOT = bytes(mpt.EMPTY_ROOT)

cdef extern from *:
    """
    /* Bits of a non-negative int (-1 for a negative one), without a method call where the C API allows. */
    static Py_ssize_t mpt_spec_uint_bits(PyObject *number) {
    #if PY_VERSION_HEX < 0x030E0000
        if (_PyLong_Sign(number) < 0)
            return -1;
        return (Py_ssize_t)_PyLong_NumBits(number);
    #else
        PyObject *bits;
        Py_ssize_t n;
        int sign;
        if (PyLong_GetSign(number, &sign) < 0)
            return -2;
        if (sign < 0)
            return -1;
        bits = PyObject_CallMethod(number, "bit_length", NULL);
        if (bits == NULL)
            return -2;
        n = PyLong_AsSsize_t(bits);
        Py_DECREF(bits);
        return n;
    #endif
    }
    """
    Py_ssize_t mpt_spec_uint_bits(object number) except -2


cdef extern from *:
    """
    /* A non-negative int of at most n bytes, big-endian into out[0:n] (0, or -1 with an exception set). */
    static int mpt_spec_uint_to_bytes(PyObject *number, unsigned char *out, Py_ssize_t n) {
    #if PY_VERSION_HEX >= 0x030D0000
        Py_ssize_t needed = PyLong_AsNativeBytes(number, out, n,
                                                 Py_ASNATIVEBYTES_BIG_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER);
        if (needed < 0)
            return -1;
        if (needed > n) {
            PyErr_SetString(PyExc_OverflowError, "int too big to convert");
            return -1;
        }
        return 0;
    #else
        return _PyLong_AsByteArray((PyLongObject *)number, out, (size_t)n, 0, 0);
    #endif
    }
    """
    int mpt_spec_uint_to_bytes(object number, uint8_t *out, Py_ssize_t n) except -1


cdef extern from *:
    """
    #include "structmember.h"
    /* The offset of a __slots__ attribute (a member descriptor holding an object), or -1 for anything else. */
    static Py_ssize_t mpt_spec_slot_offset(PyObject *descr) {
        PyMemberDef *member;
        if (!PyObject_TypeCheck(descr, &PyMemberDescr_Type))
            return -1;
        member = ((PyMemberDescrObject *)descr)->d_member;
        if ((member->type != T_OBJECT_EX && member->type != T_OBJECT) || (member->flags & READONLY))
            return -1;
        return member->offset;
    }
    /* The object in that slot of obj (borrowed; NULL when unset). Only for obj of the type the offset came from. */
    static PyObject *mpt_spec_slot(PyObject *obj, Py_ssize_t offset) {
        return *(PyObject **)((char *)obj + offset);
    }
    """
    Py_ssize_t mpt_spec_slot_offset(object descr)
    PyObject *mpt_spec_slot(object obj, Py_ssize_t offset)


cdef Py_ssize_t _slot_offset(object cls, str name):
    """Where instances of cls keep the __slots__ attribute name, or -1 (then it is read as an attribute)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return mpt_spec_slot_offset(klass.__dict__[name])
    return -1


cdef inline object _slot(object obj, Py_ssize_t offset, str name):
    """obj.<name>, read straight from its slot when the offset is known (obj is of the type it came from)."""
    cdef PyObject *found
    if offset < 0:
        return getattr(obj, name)
    found = mpt_spec_slot(obj, offset)
    if found == NULL:
        raise NeedsSpec("%s is not set" % name)
    return <object>found


cdef enum:
    # Secured tries of up to SMALL_MAX entries (every storage trie of a typical state) are hashed by SmallTries,
    # without a mirror: rebuilding one costs less than keeping an mpt.Trie per account.
    SMALL_MAX = 32
    SMALL_VALUE_MAX = 64
    # A dict's change set beyond 2 * len + this many keys is dropped: a full rebuild is cheaper by then.
    CHANGED_SLACK = 1024
    # An account's RLP: a list header and four strings of at most 33 bytes each.
    ACCOUNT_MAX = 9 + 4 * 33


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
# TrackingDict.changed of a dict written to since its cache was synced; one shared empty value, not a set apiece
# (a state of 10,000 storage tries would otherwise add 10,000 sets for the cyclic collector to walk).
cdef object CLEAN = frozenset()


cdef class TrackingDict(dict):
    """A dict that records the keys written to it, and holds the root cache of the spec trie that owns it.

    Every way Python code can change a dict goes through here (item assignment and deletion, update, |=, pop,
    popitem, setdefault, clear); only C code calling ``PyDict_SetItem`` on it directly, or ``dict.__setitem__(d,
    ...)``, would bypass it. A copy (``copy.copy``, which the spec's ``copy_trie`` uses) carries the cache along.
    """
    cdef object changed          # keys written since the cache was synced (CLEAN: none); None: unknown, rebuild
    cdef object root             # the root at the last sync (bytes), valid while changed is empty
    cdef object mirror           # mpt.Trie or AccountMirror at the last sync, or None
    cdef object codec            # the ForkCodec that built the cache
    cdef bint secured
    cdef DirtySet sink           # also told about every write (storage tries: their account's address)
    cdef object sink_key

    # No __cinit__: Cython starts every object field at None, the empty cache (and the TrackingDict made per
    # storage trie on a state's first root parses no arguments).

    cdef inline int _touch(self, object key) except -1:
        cdef object changed = self.changed
        if changed is CLEAN:
            self.changed = {key}
        elif changed is not None:
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

    def pop(self, key, /, *default):
        value = dict.pop(self, key, *default)
        self._touch(key)
        return value

    def popitem(self):
        item = dict.popitem(self)
        self._touch(item[0])
        return item

    def setdefault(self, key, default=None, /):
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
            twin.changed = CLEAN if self.changed is CLEAN else set(self.changed)
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


cdef extern from *:
    """
    /* Move the items of the dict `from` into the empty dict `to` (a TrackingDict) in O(1): their key tables are
       swapped, `from` is left empty. Only where nothing else can see `from` (the caller holds its one reference)
       and the table is an ordinary combined one, on the CPython versions whose dict layout this was checked against
       (3.11 to 3.13); 0, nothing done, anywhere else (the caller copies instead). */
    static int mpt_spec_move_items(PyObject *to, PyObject *from) {
    #if defined(Py_LIMITED_API) || defined(Py_GIL_DISABLED) || PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
        (void)to; (void)from;
        return 0;
    #else
        PyDictObject *a = (PyDictObject *)to;
        PyDictObject *b = (PyDictObject *)from;
        PyDictKeysObject *keys;
        Py_ssize_t used;
        if (!PyDict_CheckExact(from) || !PyDict_Check(to) || Py_REFCNT(from) != 1 || b->ma_values != NULL
                || a->ma_values != NULL || a->ma_used != 0)
            return 0;
    #if PY_VERSION_HEX >= 0x030C0000
        _Py_COMP_DIAG_PUSH
        _Py_COMP_DIAG_IGNORE_DEPR_DECLS
        if (b->ma_version_tag & 0xff)           /* a watched dict: its watchers would not hear of the move */
            return 0;
        _Py_COMP_DIAG_POP
    #endif
        keys = a->ma_keys;
        a->ma_keys = b->ma_keys;
        b->ma_keys = keys;
        used = a->ma_used;
        a->ma_used = b->ma_used;
        b->ma_used = used;
        return 1;
    #endif
    }
    """
    int mpt_spec_move_items(object to, object source)


cdef TrackingDict _tracked(object owner, str attribute, object data):
    """owner.<attribute>, a dict, as a TrackingDict (swapped in on first use). The items move over without a copy
    when nothing but the caller holds the dict any more, else they are copied (the dict itself stays as it was)."""
    cdef TrackingDict td
    if type(data) is TrackingDict:
        return <TrackingDict>data
    if type(data) is not dict:
        raise NeedsSpec("%s is a %s, not a dict" % (attribute, type(data).__name__))
    td = TrackingDict.__new__(TrackingDict)
    setattr(owner, attribute, td)
    # Straight into the dict: nothing recorded for the items it starts with.
    if not mpt_spec_move_items(td, data):
        PyDict_Update(td, data)
    return td


# ---------------------------------------------------------------------------------------------------- encodings

cdef extern from *:
    """
    /* The value of an exact int as four 64-bit limbs, least significant first, read from its digits where the
       layout is known (CPython 3.11 to 3.14, not the limited API). 1 when done; 0 when it is negative or wider
       than 256 bits; -1 when this build does not read digits (the caller takes the generic path). */
    static int mpt_spec_uint_limbs(PyObject *number, uint64_t limbs[4]) {
    #if defined(Py_LIMITED_API) || PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
        (void)number; (void)limbs;
        return -1;
    #else
        const digit *digits;
        Py_ssize_t n, i;
        int bit, limb, shift;
    #if PY_VERSION_HEX >= 0x030C0000
        uintptr_t tag = ((PyLongObject *)number)->long_value.lv_tag;
        if ((tag & 3) == 2)                         /* negative */
            return 0;
        n = (Py_ssize_t)(tag >> 3);
        digits = ((PyLongObject *)number)->long_value.ob_digit;
    #else
        n = Py_SIZE(number);
        if (n < 0)
            return 0;
        digits = ((PyLongObject *)number)->ob_digit;
    #endif
        limbs[0] = limbs[1] = limbs[2] = limbs[3] = 0;
        for (i = 0; i < n; i++) {
            uint64_t d = (uint64_t)digits[i];
            if (d == 0)
                continue;
            bit = (int)(i * PyLong_SHIFT);
            if (bit >= 256)
                return 0;
            limb = bit >> 6;
            shift = bit & 63;
            limbs[limb] |= d << shift;
            if (shift + PyLong_SHIFT > 64 && (d >> (64 - shift)) != 0) {
                if (limb == 3)
                    return 0;                       /* bits above 2**256 */
                limbs[limb + 1] |= d >> (64 - shift);
            }
        }
        return 1;
    #endif
    }
    """
    int mpt_spec_uint_limbs(object number, uint64_t *limbs)


cdef inline Py_ssize_t _put_limbs(const uint64_t *limbs, uint8_t *out) noexcept nogil:
    """The RLP string of the 256-bit number limbs[3]..limbs[0] at out."""
    cdef int top = 3, nbytes, i, j, k
    cdef uint64_t x
    while top > 0 and limbs[top] == 0:
        top -= 1
    x = limbs[top]
    if top == 0:
        if x == 0:
            out[0] = 0x80
            return 1
        if x < 0x80:
            out[0] = <uint8_t>x
            return 1
    nbytes = uint_byte_length(x) + 8 * top
    out[0] = <uint8_t>(0x80 + nbytes)
    j = 1
    for i in range(top, -1, -1):
        x = limbs[i]
        for k in range(uint_byte_length(x) if i == top else 8, 0, -1):
            out[j] = <uint8_t>(x >> (8 * (k - 1)))
            j += 1
    return 1 + nbytes


cdef Py_ssize_t _put_uint(object number, uint8_t *out) except -1:
    """The RLP string of a non-negative int below 2**256 (big-endian, no leading zeros) at out (<= 33 bytes)."""
    cdef int nbytes
    cdef uint8_t big[32]
    cdef Py_ssize_t bits
    cdef uint64_t limbs[4]
    cdef int read
    if type(number) is not int:
        raise NeedsSpec("not an int")
    read = mpt_spec_uint_limbs(number, limbs)
    if read == 1:
        return _put_limbs(limbs, out)
    if read == 0:
        raise NeedsSpec("a negative int or one wider than 256 bits")
    bits = mpt_spec_uint_bits(number)
    if bits < 0:
        raise NeedsSpec("a negative int")
    if bits <= 64:
        limbs[0] = PyLong_AsUnsignedLongLong(number)
        limbs[1] = limbs[2] = limbs[3] = 0
        return _put_limbs(limbs, out)
    if bits > 256:
        raise NeedsSpec("an integer wider than 256 bits")
    nbytes = <int>((bits + 7) >> 3)
    mpt_spec_uint_to_bytes(number, big, nbytes)
    return put_string(out, big, nbytes)


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
    cdef Py_ssize_t nonce_at, balance_at, code_at, uint_number_at, u256_number_at    # slot offsets, -1: getattr
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
        self.nonce_at = _slot_offset(account_type, "nonce")
        self.balance_at = _slot_offset(account_type, "balance")
        self.code_at = _slot_offset(account_type, "code")
        self.uint_number_at = _slot_offset(uint_type, "_number")
        self.u256_number_at = _slot_offset(u256_type, "_number")
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
            n = _put_uint(_slot(value, self.u256_number_at, "_number"), buf)
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
        cdef uint8_t buf[ACCOUNT_MAX]
        cdef Py_ssize_t n
        if type(account) is not self.account_type or not self.fast_account:
            encoded = self.encode_node(account, storage_root)
            if not isinstance(encoded, bytes):
                raise NeedsSpec("encode_node gave a %s" % type(encoded).__name__)
            return bytes(encoded)
        if not isinstance(storage_root, bytes) or PyBytes_GET_SIZE(storage_root) != 32:
            raise NeedsSpec("a storage root that is not 32 bytes")
        n = self.put_account(account, <const uint8_t *>PyBytes_AS_STRING(storage_root), buf)
        return PyBytes_FromStringAndSize(<char *>buf, n)

    cdef Py_ssize_t put_account(self, object account, const uint8_t *storage_root, uint8_t *out) except -1:
        """The compiled encode_node(account, storage_root) at out (at most ACCOUNT_MAX bytes); only for the
        fork's Account when fast_account (NeedsSpec otherwise)."""
        cdef uint8_t *body = out + 9
        cdef Py_ssize_t n, h
        cdef bytes code_hash
        if type(account) is not self.account_type or not self.fast_account:
            raise NeedsSpec("not an account for the compiled encoding")
        nonce = _slot(account, self.nonce_at, "nonce")
        balance = _slot(account, self.balance_at, "balance")
        if type(nonce) is not self.uint_type or type(balance) is not self.u256_type:
            raise NeedsSpec("an account field of an unexpected type")
        code_hash = self.code_hash(_slot(account, self.code_at, "code"))
        n = _put_uint(_slot(nonce, self.uint_number_at, "_number"), body)
        n += _put_uint(_slot(balance, self.u256_number_at, "_number"), body + n)
        body[n] = 0xa0
        memcpy(body + n + 1, storage_root, 32)
        body[n + 33] = 0xa0
        memcpy(body + n + 34, PyBytes_AS_STRING(code_hash), 32)
        n += 66
        h = put_header(out, 0xc0, n)
        memmove(out + h, body, <size_t>n)
        return h + n

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
#
# Small secured tries (every storage trie of a typical state) are built here without a mirror, many at once: their
# keys are hashed together on the Keccak backend's SIMD lanes, their nodes laid out in one array, and the nodes of
# each height, across all the tries, hashed together too (a node's encoding needs its children's references only).

ctypedef struct SmallPair:
    const uint8_t *key              # 32 bytes: keccak of the caller's key
    const uint8_t *value
    Py_ssize_t value_len

ctypedef struct SmallNode:
    # 72 bytes (it was 176 with the 16 children inline): the node arrays of a 10,000-account state are read and
    # written a few times each, so their size shows.
    uint8_t kind                    # LEAF, EXTENSION or BRANCH
    uint8_t depth                   # nibbles of the path above this node (<= 64)
    uint8_t prefix                  # an extension's nibbles
    uint8_t height                  # 0 for leaves, 1 + the highest child's otherwise (<= 64)
    uint8_t is_root
    uint8_t ref_len
    int child                       # an extension's child; a branch's 16 children at kids[16 * child]
    Py_ssize_t lo, hi               # the node's pairs
    Py_ssize_t encoding             # offset of the node's RLP in the arena
    Py_ssize_t encoding_len
    uint8_t ref[33]                 # how the parent refers to it: the RLP inline (< 32 bytes) or 0xa0 + hash

cdef enum:
    LEAF = 0
    EXTENSION = 1
    BRANCH = 2
    EXTENSION_MAX = 3 + 34 + 33
    BRANCH_MAX = 3 + 16 * 33 + 1
    # A pooled Scratch larger than this is freed after use instead of kept (it would pin its memory for good);
    # a 10,000-account state with 2 slots each takes about 10 MB.
    SCRATCH_KEEP_BYTES = 48 << 20
    # Likewise for the memory a dropped NodeStore leaves to the next one (a 10,000-account state's: about 3 MB).
    STORE_KEEP_BYTES = 32 << 20


@cython.final
cdef class Scratch:
    """The working memory of SmallTries builds, one buffer per ScratchSlot, pooled across calls (_take_scratch)."""

    def __cinit__(self):
        memset(self.buffers, 0, sizeof(self.buffers))
        memset(self.sizes, 0, sizeof(self.sizes))

    def __dealloc__(self):
        cdef int i
        for i in range(<int>SCRATCH_SLOTS):
            PyMem_Free(self.buffers[i])

    cdef void *need(self, int slot, size_t size, bint keep) except NULL:
        """Buffer slot with room for size bytes (its content kept when keep, else undefined)."""
        cdef void *p
        if size == 0:
            size = 1
        if self.sizes[slot] >= size:
            return self.buffers[slot]
        if keep:
            p = PyMem_Realloc(self.buffers[slot], size)
        else:
            PyMem_Free(self.buffers[slot])
            self.buffers[slot] = NULL
            self.sizes[slot] = 0
            p = PyMem_Malloc(size)
        if p == NULL:
            raise MemoryError()
        self.buffers[slot] = p
        self.sizes[slot] = size
        return p

    cdef size_t total(self) noexcept:
        cdef size_t n = 0
        cdef int i
        for i in range(<int>SCRATCH_SLOTS):
            n += self.sizes[i]
        return n


cdef Scratch _POOL = None


cdef Scratch _take_scratch():
    global _POOL
    cdef Scratch s = _POOL
    if s is None:
        return Scratch.__new__(Scratch)
    _POOL = None            # ours alone until given back
    return s


cdef void _give_scratch(Scratch s) noexcept:
    global _POOL
    if s is not None and _POOL is None and s.total() <= SCRATCH_KEEP_BYTES:
        _POOL = s


cdef int _bucket_sort(Scratch scratch, SmallPair *pairs, Py_ssize_t n) except -1:
    """Order pairs by the first 16 bits of their (Keccak-hashed, so uniform) keys; the insertion sort after it
    finishes the few pairs that share a bucket. O(n + 65536), against qsort's n log n calls of a comparator."""
    cdef Py_ssize_t *start = <Py_ssize_t *>scratch.need(S_SORT_START, 65537 * sizeof(Py_ssize_t), False)
    cdef SmallPair *sorted_pairs = <SmallPair *>scratch.need(S_SORT_PAIRS, n * sizeof(SmallPair), False)
    cdef Py_ssize_t i, bucket
    memset(start, 0, 65537 * sizeof(Py_ssize_t))
    for i in range(n):
        start[((pairs[i].key[0] << 8) | pairs[i].key[1]) + 1] += 1
    for i in range(65536):
        start[i + 1] += start[i]
    for i in range(n):
        bucket = (pairs[i].key[0] << 8) | pairs[i].key[1]
        sorted_pairs[start[bucket]] = pairs[i]
        start[bucket] += 1
    memcpy(pairs, sorted_pairs, n * sizeof(SmallPair))
    return 0


cdef inline int _count_empty(const int *children) noexcept nogil:
    cdef int k, n = 0
    for k in range(16):
        if children[k] < 0:
            n += 1
    return n


cdef inline Py_ssize_t _encoding_bound(const SmallNode *node, const SmallPair *pairs,
                                       const int *kids) noexcept nogil:
    """At least the length of the node's RLP (what _build added to arena_len for it)."""
    if node.kind == LEAF:
        return 3 + 34 + 3 + pairs[node.lo].value_len
    if node.kind == EXTENSION:
        return EXTENSION_MAX
    return 3 + 16 + 1 + 32 * (16 - _count_empty(kids + 16 * node.child))


cdef int _keccak_backend() except -1:
    """The backend mpt's batched hasher uses (mpt.core.runtime; the user may have chosen one)."""
    name = mpt.core.runtime.keccak_backend().encode()
    cdef int b
    for b in range(MPT_KECCAK_BACKENDS):
        if mpt_keccak_backend_name(b) == name:
            return b
    return mpt_keccak_best_backend()


cdef StoreMemory _spare_store         # the memory of the last NodeStore dropped, for the next one (zeroed: none)


cdef int _store_buffer(void **buffer, size_t *size, size_t needed) except -1:
    """buffer with room for needed bytes (its content undefined)."""
    cdef void *p
    if size[0] >= needed and buffer[0] != NULL:
        return 0
    PyMem_Free(buffer[0])
    buffer[0] = NULL
    size[0] = 0
    p = PyMem_Malloc(needed if needed else 1)
    if p == NULL:
        raise MemoryError()
    buffer[0] = p
    size[0] = needed
    return 0


cdef void _free_store_memory(StoreMemory *mem) noexcept:
    PyMem_Free(mem.arena)
    PyMem_Free(mem.hashes)
    PyMem_Free(mem.offsets)
    PyMem_Free(mem.lengths)
    PyMem_Free(mem.table)
    memset(mem, 0, sizeof(StoreMemory))


cdef inline size_t _store_memory_size(const StoreMemory *mem) noexcept:
    return mem.arena_size + mem.hashes_size + mem.offsets_size + mem.lengths_size + mem.table_size


@cython.final
cdef class NodeStore:
    """The hashed nodes of one SmallTries build, kept in its arena and read by an mpt.Trie as its node database:
    ``get(hash)`` makes the bytes of a node only when the trie reads it (a few per changed account), not for all.
    Its memory is handed to the next NodeStore when it is dropped (fresh memory costs a page fault a page: a
    tenth of a 10,000-account state root)."""

    def __cinit__(self, Py_ssize_t capacity, Py_ssize_t arena_size):
        cdef Py_ssize_t size = 16
        while size < 2 * capacity + 2:
            size <<= 1
        self.capacity = capacity
        self.mask = size - 1
        self.count = 0
        self.mem = _spare_store
        memset(&_spare_store, 0, sizeof(StoreMemory))
        _store_buffer(<void **>&self.mem.arena, &self.mem.arena_size, <size_t>(arena_size + 1))
        _store_buffer(<void **>&self.mem.hashes, &self.mem.hashes_size, <size_t>(capacity * 32 + 32))
        _store_buffer(<void **>&self.mem.offsets, &self.mem.offsets_size, (capacity + 1) * sizeof(Py_ssize_t))
        _store_buffer(<void **>&self.mem.lengths, &self.mem.lengths_size, (capacity + 1) * sizeof(Py_ssize_t))
        _store_buffer(<void **>&self.mem.table, &self.mem.table_size, size * sizeof(Py_ssize_t))
        self.arena = self.mem.arena
        self.hashes = self.mem.hashes
        self.offsets = self.mem.offsets
        self.lengths = self.mem.lengths
        self.table = self.mem.table
        memset(self.table, 0, size * sizeof(Py_ssize_t))

    def __dealloc__(self):
        if _store_memory_size(&self.mem) <= STORE_KEEP_BYTES and (
                _store_memory_size(&_spare_store) <= _store_memory_size(&self.mem)):
            _free_store_memory(&_spare_store)
            _spare_store = self.mem
        else:
            _free_store_memory(&self.mem)

    cdef Py_ssize_t _slot(self, const uint8_t *digest) noexcept nogil:
        cdef uint64_t h
        memcpy(&h, digest, 8)
        return <Py_ssize_t>(h & <uint64_t>self.mask)

    cdef void add(self, const uint8_t *digest, Py_ssize_t offset, Py_ssize_t length) noexcept nogil:
        cdef Py_ssize_t slot = self._slot(digest), i
        while self.table[slot]:
            i = self.table[slot] - 1
            if memcmp(self.hashes + 32 * i, digest, 32) == 0:
                return                   # the same node twice (identical subtrees): one copy serves
            slot = (slot + 1) & self.mask
        if self.count >= self.capacity:
            return
        memcpy(self.hashes + 32 * self.count, digest, 32)
        self.offsets[self.count] = offset
        self.lengths[self.count] = length
        self.count += 1
        self.table[slot] = self.count

    def get(self, key, default=None):
        """The RLP of the node whose hash is key, or default."""
        cdef Py_ssize_t slot, i
        if not isinstance(key, bytes) or PyBytes_GET_SIZE(key) != 32:
            return default
        slot = self._slot(<const uint8_t *>PyBytes_AS_STRING(key))
        while self.table[slot]:
            i = self.table[slot] - 1
            if memcmp(self.hashes + 32 * i, PyBytes_AS_STRING(key), 32) == 0:
                return PyBytes_FromStringAndSize(<char *>self.arena + self.offsets[i], self.lengths[i])
            slot = (slot + 1) & self.mask
        return default

    def __len__(self):
        return self.count


@cython.final
cdef class SmallTries:
    """Roots of many small secured tries computed together: add() each trie's items, then finish(). Its work
    arrays live in a pooled Scratch, given back at the end of finish() (or when the batch is dropped)."""
    cdef Scratch scratch
    cdef SmallPair *pairs
    cdef Py_ssize_t npairs, pairs_cap
    cdef const uint8_t **key_data        # the caller's keys, hashed in finish()
    cdef size_t *key_len
    cdef uint8_t *hashed_keys
    cdef uint8_t *u256_values            # 34 bytes a pair: U256 encodings written here
    cdef uint8_t *key_copies             # 32 bytes a pair: add()'s keys copied here
    cdef SmallNode *nodes
    cdef Py_ssize_t nnodes, nodes_cap
    cdef int *kids                       # 16 children (-1: none) per branch
    cdef Py_ssize_t nbranches, branches_cap
    cdef uint8_t *arena
    cdef Py_ssize_t arena_len
    cdef Py_ssize_t *trie_ends           # per trie: the end of its pairs (it starts where the previous ends)
    cdef Py_ssize_t ntries, tries_cap
    cdef list roots                      # per trie after finish(): the root
    cdef list keep                       # keys and value encodings the pointers point into
    cdef ForkCodec codec
    cdef NodeStore node_store            # with collect_nodes: every hashed node, for an mpt.Trie to read
    cdef bint collect_nodes

    def __cinit__(self, ForkCodec codec, Py_ssize_t capacity):
        self.codec = codec
        self.scratch = _take_scratch()
        self.hashed_keys = NULL
        self.nodes = NULL
        self.kids = NULL
        self.arena = NULL
        self.npairs = self.nnodes = self.nodes_cap = self.arena_len = self.nbranches = self.branches_cap = 0
        self.pairs_cap = 0
        self.trie_ends = NULL
        self.ntries = self.tries_cap = 0
        self.roots = []
        self.keep = []
        self.node_store = None
        self.collect_nodes = False
        self._grow(capacity if capacity > 0 else 1)

    def __dealloc__(self):
        # The arena is the pool's memory or the NodeStore's: not freed here.
        PyMem_Free(self.trie_ends)
        if self.scratch is not None:
            _give_scratch(self.scratch)
            self.scratch = None

    cdef Py_ssize_t add(self, object data) except -2:
        """Queue the secured trie holding data (a dict); its index, or -1 when it is not for this path."""
        cdef Py_ssize_t start = self.npairs, n, i = self.npairs
        cdef ForkCodec codec = self.codec
        cdef object u256 = codec.u256_type
        cdef bint fast_u256 = codec.fast_u256
        if PyDict_Size(data) > SMALL_MAX:
            return -1
        if i + PyDict_Size(data) > self.pairs_cap:
            self._grow(i + PyDict_Size(data))
        cdef Py_ssize_t position = 0
        cdef PyObject *key_ref
        cdef PyObject *value_ref
        while PyDict_Next(data, &position, &key_ref, &value_ref):
            key = <object>key_ref
            value = <object>value_ref
            if not isinstance(key, bytes):
                raise NeedsSpec("a key that is not bytes")
            self.key_len[i] = <size_t>PyBytes_GET_SIZE(key)
            if self.key_len[i] <= 32:
                # Copied (a slot's key is 32 bytes): no reference to hold, whatever the dict does meanwhile.
                memcpy(self.key_copies + 32 * i, PyBytes_AS_STRING(key), self.key_len[i])
                self.key_data[i] = NULL         # at key_copies + 32 * i (set in finish: the arrays may grow)
            else:
                self.key_data[i] = <const uint8_t *>PyBytes_AS_STRING(key)
                self.keep.append(key)
            if type(value) is u256 and fast_u256:
                self.pairs[i].value = NULL      # at u256_values + 34 * i (set in finish: the arrays may grow)
                self.pairs[i].value_len = _put_uint(_slot(value, codec.u256_number_at, "_number"),
                                                    self.u256_values + 34 * i)
            else:
                encoded = codec.encode_value(value)
                n = PyBytes_GET_SIZE(encoded)
                if n == 0:
                    raise NeedsSpec("an empty leaf encoding")
                if n > SMALL_VALUE_MAX:
                    return -1       # pairs past npairs are simply overwritten by the next trie
                self.keep.append(encoded)
                self.pairs[i].value = <const uint8_t *>PyBytes_AS_STRING(encoded)
                self.pairs[i].value_len = n
            i += 1
        self.npairs = i
        return self._end_trie(i)

    cdef Py_ssize_t add_encoded(self, list keys, list values) except -2:
        """Queue the secured trie of keys[i] -> values[i] (bytes, values already encoded), of any size; its index."""
        cdef Py_ssize_t start = self.npairs, n = len(keys), i
        if self.npairs + n > self.pairs_cap:
            self._grow(self.npairs + n)
        for i in range(n):
            key = keys[i]
            value = values[i]
            if type(key) is not bytes and not isinstance(key, bytes) or type(value) is not bytes:
                raise NeedsSpec("a key or an encoding that is not bytes")
            if PyBytes_GET_SIZE(value) == 0 or PyBytes_GET_SIZE(value) > BRANCH_MAX - 3 - 34 - 3:
                raise NeedsSpec("a leaf encoding of an unexpected length")
            self.key_data[start + i] = <const uint8_t *>PyBytes_AS_STRING(key)
            self.key_len[start + i] = <size_t>PyBytes_GET_SIZE(key)
            self.pairs[start + i].value = <const uint8_t *>PyBytes_AS_STRING(value)
            self.pairs[start + i].value_len = PyBytes_GET_SIZE(value)
        self.keep.append(keys)
        self.keep.append(values)
        self.npairs = start + n
        return self._end_trie(start + n)

    cdef uint8_t *value_slab(self, Py_ssize_t n, Py_ssize_t stride) except NULL:
        """Room for n values of at most stride bytes each, for add_slab (pool memory, valid until finish())."""
        if self.scratch is None:
            raise RuntimeError("SmallTries used after finish()")
        return <uint8_t *>self.scratch.need(S_VALUES, <size_t>(n * stride), False)

    cdef Py_ssize_t add_slab(self, list keys, const Py_ssize_t *lengths, Py_ssize_t stride) except -2:
        """Queue the secured trie of keys[i] -> the lengths[i] bytes at value_slab() + stride * i; its index."""
        cdef Py_ssize_t start = self.npairs, n = len(keys), i
        cdef const uint8_t *slab
        if self.scratch is None:
            raise RuntimeError("SmallTries used after finish()")
        slab = <const uint8_t *>self.scratch.buffers[<int>S_VALUES]
        if self.npairs + n > self.pairs_cap:
            self._grow(self.npairs + n)
        for i in range(n):
            key = keys[i]
            if not isinstance(key, bytes):
                raise NeedsSpec("a key that is not bytes")
            if lengths[i] <= 0 or lengths[i] > stride:
                raise NeedsSpec("a leaf encoding of an unexpected length")
            self.key_data[start + i] = <const uint8_t *>PyBytes_AS_STRING(key)
            self.key_len[start + i] = <size_t>PyBytes_GET_SIZE(key)
            self.pairs[start + i].value = slab + stride * i
            self.pairs[start + i].value_len = lengths[i]
        self.keep.append(keys)
        self.npairs = start + n
        return self._end_trie(start + n)

    cdef Py_ssize_t _end_trie(self, Py_ssize_t end) except -1:
        cdef Py_ssize_t *grown
        if self.ntries == self.tries_cap:
            self.tries_cap = 2 * self.tries_cap + 16
            grown = <Py_ssize_t *>PyMem_Realloc(self.trie_ends, self.tries_cap * sizeof(Py_ssize_t))
            if grown == NULL:
                raise MemoryError()
            self.trie_ends = grown
        self.trie_ends[self.ntries] = end
        self.ntries += 1
        return self.ntries - 1

    cdef int _grow(self, Py_ssize_t needed) except -1:
        cdef Py_ssize_t cap = max(2 * self.pairs_cap, needed)
        if self.scratch is None:
            raise RuntimeError("SmallTries used after finish()")
        self.pairs = <SmallPair *>self.scratch.need(S_PAIRS, cap * sizeof(SmallPair), True)
        self.key_data = <const uint8_t **>self.scratch.need(S_KEY_DATA, cap * sizeof(uint8_t *), True)
        self.key_len = <size_t *>self.scratch.need(S_KEY_LEN, cap * sizeof(size_t), True)
        self.u256_values = <uint8_t *>self.scratch.need(S_U256, cap * 34, True)
        self.key_copies = <uint8_t *>self.scratch.need(S_KEY_COPIES, cap * 32, True)
        self.pairs_cap = cap
        return 0

    cdef Py_ssize_t _new_node(self) except -1:
        if self.nnodes == self.nodes_cap:
            self.nodes_cap = 2 * self.nodes_cap + 64
            self.nodes = <SmallNode *>self.scratch.need(S_NODES, self.nodes_cap * sizeof(SmallNode), True)
        self.nnodes += 1
        return self.nnodes - 1

    cdef int _new_branch(self) except -1:
        if self.nbranches == self.branches_cap:
            self.branches_cap = 2 * self.branches_cap + 64
            self.kids = <int *>self.scratch.need(S_KIDS, self.branches_cap * 16 * sizeof(int), True)
        self.nbranches += 1
        return <int>(self.nbranches - 1)

    cdef Py_ssize_t _build(self, Py_ssize_t lo, Py_ssize_t hi, int depth) except -1:
        """Lay out the node holding pairs[lo:hi] (sorted, sharing depth nibbles) after its children; its index."""
        cdef SmallPair *p = self.pairs
        cdef int prefix = 0, k, height = 0, branch
        cdef Py_ssize_t j, start, child, index
        cdef int children[16]
        if hi - lo == 1:
            index = self._new_node()
            self.nodes[index].kind = LEAF
            self.arena_len += 3 + 34 + 3 + p[lo].value_len
        else:
            while keybytes_nibble(p[lo].key, depth + prefix) == keybytes_nibble(p[hi - 1].key, depth + prefix):
                prefix += 1
            if prefix > 0:
                child = self._build(lo, hi, depth + prefix)
                height = self.nodes[child].height + 1
                index = self._new_node()
                self.nodes[index].kind = EXTENSION
                self.nodes[index].child = <int>child
                self.arena_len += EXTENSION_MAX
            else:
                j = lo
                for k in range(16):
                    start = j
                    while j < hi and keybytes_nibble(p[j].key, depth) == k:
                        j += 1
                    if j == start:
                        children[k] = -1
                    else:
                        children[k] = <int>self._build(start, j, depth + 1)
                        if self.nodes[children[k]].height >= height:
                            height = self.nodes[children[k]].height + 1
                branch = self._new_branch()
                memcpy(self.kids + 16 * branch, children, sizeof(children))
                index = self._new_node()
                self.nodes[index].kind = BRANCH
                self.nodes[index].child = branch
                self.arena_len += 3 + 16 + 1 + 32 * (16 - _count_empty(children))
        self.nodes[index].depth = <uint8_t>depth
        self.nodes[index].prefix = <uint8_t>prefix
        self.nodes[index].height = <uint8_t>height
        self.nodes[index].lo = lo
        self.nodes[index].hi = hi
        self.nodes[index].is_root = False
        return index

    cdef void _encode(self, SmallNode *node, uint8_t *out) noexcept nogil:
        """The node's RLP at out (its children's references are final); sets encoding_len."""
        cdef Py_ssize_t n = 0, size
        cdef int k
        cdef const int *children
        cdef SmallNode *child
        cdef SmallPair *pair
        if node.kind == LEAF:
            pair = &self.pairs[node.lo]
            n = write_short_head(out, compact_size_nibbles(64 - node.depth), string_size(pair.value, pair.value_len))
            n += write_compact_keybytes(pair.key, node.depth, 64, True, out + n)
            n += put_string(out + n, pair.value, pair.value_len)
        elif node.kind == EXTENSION:
            child = &self.nodes[node.child]
            n = write_short_head(out, compact_size_nibbles(node.prefix), child.ref_len)
            n += write_compact_keybytes(self.pairs[node.lo].key, node.depth, node.depth + node.prefix, False,
                                        out + n)
            memcpy(out + n, child.ref, <size_t>child.ref_len)
            n += child.ref_len
        else:
            children = self.kids + 16 * node.child
            size = 1
            for k in range(16):
                size += 1 if children[k] < 0 else self.nodes[children[k]].ref_len
            n = write_branch_head(out, size)
            for k in range(16):
                if children[k] < 0:
                    out[n] = EMPTY_STRING
                    n += 1
                else:
                    child = &self.nodes[children[k]]
                    memcpy(out + n, child.ref, <size_t>child.ref_len)
                    n += child.ref_len
            n += write_branch_value(out + n, NULL, 0)       # a trie of hashed keys has no values in branches
        node.encoding_len = n

    cdef int finish(self) except -1:
        """Hash every key, lay out and hash every node; roots(i) gives each trie's root."""
        cdef Py_ssize_t t, lo, hi, i, j, level_count, max_height = 0, offset = 0, nhash
        cdef SmallPair tmp
        cdef int backend = _keccak_backend()
        cdef list roots_at = []
        cdef Py_ssize_t *order
        cdef Py_ssize_t *count
        cdef const uint8_t **hash_data
        cdef size_t *hash_len
        cdef Py_ssize_t *hash_node
        cdef uint8_t *digests
        cdef SmallNode *node
        cdef Scratch scratch = self.scratch
        if scratch is None:
            raise RuntimeError("SmallTries.finish() called twice")
        self.hashed_keys = <uint8_t *>scratch.need(S_HASHED_KEYS, self.npairs * 32 + 32, False)
        for i in range(self.npairs):
            if self.key_data[i] == NULL:
                self.key_data[i] = self.key_copies + 32 * i
        mpt_keccak256_many(backend, self.key_data, self.key_len, <size_t>self.npairs, self.hashed_keys)
        for i in range(self.npairs):
            self.pairs[i].key = self.hashed_keys + 32 * i
            if self.pairs[i].value == NULL:
                self.pairs[i].value = self.u256_values + 34 * i
        if self.nodes_cap < 2 * self.npairs + 16:
            self.nodes_cap = 2 * self.npairs + 16        # a trie of n keys has at most 2n - 1 nodes
            self.nodes = <SmallNode *>scratch.need(S_NODES, self.nodes_cap * sizeof(SmallNode), False)
        if self.branches_cap < self.npairs + 16:
            self.branches_cap = self.npairs + 16         # and at most n - 1 branches
            self.kids = <int *>scratch.need(S_KIDS, self.branches_cap * 16 * sizeof(int), False)
        for t in range(self.ntries):
            lo = self.trie_ends[t - 1] if t else 0
            hi = self.trie_ends[t]
            if hi - lo > SMALL_MAX:
                _bucket_sort(scratch, self.pairs + lo, hi - lo)
            for i in range(lo + 1, hi):           # insertion sort: at most SMALL_MAX keys, or nearly sorted
                tmp = self.pairs[i]
                j = i - 1
                while j >= lo and memcmp(self.pairs[j].key, tmp.key, 32) > 0:
                    self.pairs[j + 1] = self.pairs[j]
                    j -= 1
                self.pairs[j + 1] = tmp
            for i in range(lo + 1, hi):
                if memcmp(self.pairs[i - 1].key, self.pairs[i].key, 32) == 0:
                    raise NeedsSpec("two keys with the same hash")
            if hi == lo:
                roots_at.append(-1)
            else:
                i = self._build(lo, hi, 0)
                self.nodes[i].is_root = True
                roots_at.append(i)
        for i in range(self.nnodes):
            if self.nodes[i].height > max_height:
                max_height = self.nodes[i].height
        # The nodes by height (a counting sort), each with its place in the arena.
        order = <Py_ssize_t *>scratch.need(S_ORDER, (self.nnodes + 1) * sizeof(Py_ssize_t), False)
        count = <Py_ssize_t *>scratch.need(S_COUNT, (max_height + 2) * sizeof(Py_ssize_t), False)
        hash_data = <const uint8_t **>scratch.need(S_HASH_DATA, (self.nnodes + 1) * sizeof(uint8_t *), False)
        hash_len = <size_t *>scratch.need(S_HASH_LEN, (self.nnodes + 1) * sizeof(size_t), False)
        hash_node = <Py_ssize_t *>scratch.need(S_HASH_NODE, (self.nnodes + 1) * sizeof(Py_ssize_t), False)
        digests = <uint8_t *>scratch.need(S_DIGESTS, (self.nnodes + 1) * 32, False)
        if self.collect_nodes:
            # This arena outlives the build (the NodeStore keeps it): its own memory, not the pool's.
            self.node_store = NodeStore(self.nnodes, self.arena_len)
            self.arena = self.node_store.arena
        else:
            self.arena = <uint8_t *>scratch.need(S_ARENA, self.arena_len + 1, False)
        memset(count, 0, (max_height + 2) * sizeof(Py_ssize_t))
        for i in range(self.nnodes):
            count[self.nodes[i].height + 1] += 1
        for i in range(max_height + 1):
            count[i + 1] += count[i]
        for i in range(self.nnodes):
            order[count[self.nodes[i].height]] = i
            count[self.nodes[i].height] += 1
            node = &self.nodes[i]
            node.encoding = offset
            offset += _encoding_bound(node, self.pairs, self.kids)
        i = 0
        while i < self.nnodes:
            level_count = 0
            nhash = 0
            j = i
            while j < self.nnodes and self.nodes[order[j]].height == self.nodes[order[i]].height:
                node = &self.nodes[order[j]]
                self._encode(node, self.arena + node.encoding)
                if node.encoding_len >= 32 or node.is_root:
                    hash_data[nhash] = self.arena + node.encoding
                    hash_len[nhash] = <size_t>node.encoding_len
                    hash_node[nhash] = order[j]
                    nhash += 1
                else:
                    memcpy(node.ref, self.arena + node.encoding, <size_t>node.encoding_len)
                    node.ref_len = <uint8_t>node.encoding_len
                j += 1
            mpt_keccak256_many(backend, hash_data, hash_len, <size_t>nhash, digests)
            for level_count in range(nhash):
                node = &self.nodes[hash_node[level_count]]
                node.ref_len = <uint8_t>write_hash_ref(node.ref, digests + 32 * level_count)
                if self.collect_nodes:
                    self.node_store.add(digests + 32 * level_count, node.encoding, node.encoding_len)
            i = j
        self.roots = [EMPTY_ROOT if r < 0 else
                      PyBytes_FromStringAndSize(<char *>self.nodes[<Py_ssize_t>r].ref + 1, 32)
                      for r in roots_at]
        # Done with the work arrays: the next build (the state trie after the storage tries) takes them.
        self.arena = NULL
        self.pairs = NULL
        self.nodes = NULL
        self.kids = NULL
        self.scratch = None
        _give_scratch(scratch)
        self.keep = None
        return 0


cdef object _small_secure_root(ForkCodec codec, object data):
    """The root of one secured trie of at most SMALL_MAX entries, or None when it is not for the small path."""
    cdef SmallTries batch = SmallTries(codec, PyDict_Size(data))
    if batch.add(data) < 0:
        return None
    batch.finish()
    return batch.roots[0]


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
            td.changed = CLEAN
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
    td.changed = CLEAN
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
    _bind_storage(m, <TrackingDict>storage_trie._data, address)
    return root


cdef int _bind_storage(AccountMirror m, TrackingDict td, object address) except -1:
    """Have td (address's storage dict) report its writes to m, or have m recheck address every sync."""
    m.storage_seen[address] = td
    if td.sink is m.dirty:
        if td.sink_key != address:       # one storage dict under two addresses: only one is told
            m.unbound.add(address)
    elif td.sink is None or not td.sink.alive:
        td.sink = m.dirty
        td.sink_key = address
    else:                                # another state's mirror is told of its writes
        m.unbound.add(address)
    return 0


cdef int _full_state_build(ForkCodec codec, AccountMirror m, TrackingDict accounts,
                           TrackingDict storage_tries) except -1:
    """Every account encoded with its storage root, the small storage tries hashed together (SmallTries)."""
    cdef Py_ssize_t n = PyDict_Size(accounts), i = 0, index
    cdef SmallTries batch = SmallTries(codec, 2 * n + 16)
    cdef SmallTries accounts_batch
    # Per account, in the order of the accounts dict (parallel lists: no tuple an account).
    cdef list addresses = [], account_list = [], storages = [], roots = [], encodings
    cdef Py_ssize_t *batch_index = NULL
    cdef Py_ssize_t *lengths
    cdef uint8_t *slab
    cdef TrackingDict td
    cdef PyObject *found
    cdef object trie_type = codec.trie_type, account_type = codec.account_type
    cdef dict storage_roots = m.storage_roots
    cdef Py_ssize_t position = 0
    cdef PyObject *key_ref
    cdef PyObject *value_ref
    batch_index = <Py_ssize_t *>PyMem_Malloc((n + 1) * sizeof(Py_ssize_t))
    if batch_index == NULL:
        raise MemoryError()
    try:
        while PyDict_Next(accounts, &position, &key_ref, &value_ref):
            address = <object>key_ref
            account = <object>value_ref
            if not isinstance(address, bytes) or PyBytes_GET_SIZE(address) != 20:
                raise NeedsSpec("an address that is not 20 bytes")
            if type(account) is not account_type:
                raise NeedsSpec("a state value that is not the fork's Account")
            if i >= n:
                raise NeedsSpec("the accounts changed while they were read")
            addresses.append(address)
            account_list.append(account)
            found = PyDict_GetItem(storage_tries, address)
            if found == NULL:
                storages.append(None)
                roots.append(EMPTY_ROOT)
                batch_index[i] = -1
                i += 1
                continue
            storage_trie = <object>found
            if type(storage_trie) is not trie_type:
                raise NeedsSpec("not the fork's Trie")
            td = _tracked(storage_trie, "_data", storage_trie._data)
            secured = storage_trie.secured
            index = -1
            root = None
            if (td.codec is codec and td.changed is not None and not td.changed and td.root is not None
                    and td.secured == bool(secured)):
                root = td.root
            elif secured is True:
                index = batch.add(td)
            if root is None and index < 0:
                root = trie_root(codec, storage_trie)
            storages.append(td)
            roots.append(root)
            batch_index[i] = index
            i += 1
        if i != n:
            raise NeedsSpec("the accounts changed while they were read")
        batch.finish()
        batch_roots = batch.roots
        for i in range(n):
            index = batch_index[i]
            storage = storages[i]
            if index >= 0:
                root = batch_roots[index]
                roots[i] = root
                td = <TrackingDict>storage
                td.root = root
                td.mirror = None
                td.codec = codec
                td.secured = True
                td.changed = CLEAN
            if storage is not None:
                _bind_storage(m, <TrackingDict>storage, addresses[i])
            storage_roots[addresses[i]] = roots[i]
        if not n:
            return 0
        # The state trie built here too, its nodes handed to an mpt.Trie as its node database: the mirror reads
        # the nodes it needs from there when accounts change, and the build costs no mpt.Trie insert.
        accounts_batch = SmallTries(codec, n)
        accounts_batch.collect_nodes = True
        if codec.fast_account:
            # Encoded straight into the batch's memory: no bytes object an account.
            slab = accounts_batch.value_slab(n, ACCOUNT_MAX)
            lengths = batch_index            # no longer needed: reused for the encodings' lengths
            for i in range(n):
                root = roots[i]
                if not isinstance(root, bytes) or PyBytes_GET_SIZE(root) != 32:
                    raise NeedsSpec("a storage root that is not 32 bytes")
                lengths[i] = codec.put_account(account_list[i], <const uint8_t *>PyBytes_AS_STRING(root),
                                               slab + ACCOUNT_MAX * i)
            accounts_batch.add_slab(addresses, lengths, ACCOUNT_MAX)
        else:
            encodings = [codec.encode_account(account_list[i], roots[i]) for i in range(n)]
            accounts_batch.add_encoded(addresses, encodings)
        accounts_batch.finish()
        m.trie = _Trie(accounts_batch.node_store, accounts_batch.roots[0])
    finally:
        PyMem_Free(batch_index)
    return 0


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
        todo.update(changed)
        todo.update(m.unbound)
        if not todo and accounts.root is not None and m.storage_map is storage_tries:
            return <bytes>accounts.root
        m.unbound.clear()
        for address in todo:
            _sync_account(codec, m, accounts, storage_tries, address, address in changed)
        codec.syncs += 1
    else:
        codec.full_builds += 1
        m = AccountMirror()
        # The build allocates a few containers per account and makes no cycles: without this, the cyclic
        # collector would walk the spec's whole state (millions of objects) several times over.
        collecting = gc.isenabled()
        gc.disable()
        try:
            _full_state_build(codec, m, accounts, storage_tries)
        finally:
            if collecting:
                gc.enable()
    _bind_storage_map(m, storage_tries)
    m.dirty.keys.clear()
    accounts.root = m.trie.hash()
    accounts.mirror = m
    accounts.codec = codec
    accounts.secured = True
    accounts.changed = CLEAN
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


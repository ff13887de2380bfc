# cython: language_level=3
"""RLP: the WriteBuffer every encoder writes into, and the strict item reader every decoder uses.

Layout lives here so that node.pyx, hasher.pyx and trie.pyx can cimport it and touch the buffer directly
(the asyncpg pgproto WriteBuffer pattern: an inline small buffer, PyMem growth, one memcpy path).
"""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy


cdef enum:
    # Large enough for a full branch (17 x 33 + header) plus a short value, so most hashers never grow.
    WRITE_BUFFER_INLINE_SIZE = 1024
    # A list or string header is at most 1 + 8 bytes.
    MAX_HEADER_SIZE = 9
    # Nesting deeper than this is refused by the decoder instead of recursing down the C stack.
    MAX_DECODE_DEPTH = 1024


@cython.final
cdef class WriteBuffer:
    cdef:
        uint8_t *_buf                                   # points at _inline or at PyMem memory
        Py_ssize_t _size                                # capacity of _buf
        Py_ssize_t _length                              # bytes written so far
        bint _on_heap                                   # _buf was allocated with PyMem
        uint8_t _inline[WRITE_BUFFER_INLINE_SIZE]       # small-buffer storage, no allocation until it overflows

    @staticmethod
    cdef WriteBuffer new()

    cdef int _grow(self, Py_ssize_t needed) except -1

    cdef inline int ensure(self, Py_ssize_t extra) except -1:
        if self._length + extra > self._size:
            self._grow(self._length + extra)
        return 0

    cdef inline void reset(self) noexcept:
        # Keeps the (possibly grown) memory: a pooled buffer stays large.
        self._length = 0

    # The window encoders in other modules write through (the fields above stay this module's): reserve with
    # ensure(n), write n bytes at tail(), advance(n); or note length(), encode, and take_from() what was written.
    cdef inline Py_ssize_t length(self) noexcept:
        return self._length

    cdef inline Py_ssize_t c_capacity(self) noexcept:
        return self._size

    cdef inline uint8_t *data(self) noexcept:
        # Valid until the next ensure() or write (growing moves the memory).
        return self._buf

    cdef inline uint8_t *tail(self) noexcept:
        # Where the next byte goes: room for what the last ensure() asked.
        return self._buf + self._length

    cdef inline void advance(self, Py_ssize_t n) noexcept:
        # n bytes were written at tail().
        self._length += n

    cdef inline void set_length(self, Py_ssize_t n) noexcept:
        # Cut back to n bytes, or take in bytes up to n written past the end within what ensure() reserved.
        self._length = n

    cdef inline bytes take_from(self, Py_ssize_t start):
        # The bytes written since length() was start, as bytes, and the buffer cut back to start.
        cdef bytes out = PyBytes_FromStringAndSize(<char *>self._buf + start, self._length - start)
        self._length = start
        return out

    cdef inline int write_byte(self, uint8_t b) except -1:
        self.ensure(1)
        self._buf[self._length] = b
        self._length += 1
        return 0

    cdef inline int write_raw(self, const uint8_t *data, Py_ssize_t n) except -1:
        # The one memcpy path every write funnels into.
        self.ensure(n)
        memcpy(self._buf + self._length, data, <size_t>n)
        self._length += n
        return 0

    cdef int write_string(self, const uint8_t *data, Py_ssize_t n) except -1
    cdef int write_list_header(self, Py_ssize_t payload_length) except -1
    cdef bytes to_bytes(self)


cdef inline int uint_byte_length(uint64_t v) noexcept nogil:
    """Bytes needed for v big-endian without leading zeros (0 for v == 0)."""
    cdef int n = 0
    while v:
        n += 1
        v >>= 8
    return n


cdef inline Py_ssize_t header_size(Py_ssize_t payload_length) noexcept nogil:
    """Size of the header in front of a string (of length >= 2 or > 0x7f) or list payload."""
    if payload_length < 56:
        return 1
    # A trie node's payload (a leaf about 110 bytes, a branch up to 532) takes one or two length bytes.
    if payload_length < 0x100:
        return 2
    if payload_length < 0x10000:
        return 3
    return 1 + uint_byte_length(<uint64_t>payload_length)


cdef inline Py_ssize_t string_size(const uint8_t *data, Py_ssize_t n) noexcept nogil:
    """Encoded size of the RLP string of data[:n]."""
    if n == 1 and data[0] < 0x80:
        return 1
    return header_size(n) + n


cdef inline Py_ssize_t put_header(uint8_t *out, uint8_t short_base, Py_ssize_t payload_length) noexcept nogil:
    """Write a header (short_base 0x80 for strings, 0xc0 for lists) at out; return its size."""
    cdef int i, nbytes
    if payload_length < 56:
        out[0] = <uint8_t>(short_base + payload_length)
        return 1
    # One or two length bytes (see header_size) without the general loops.
    if payload_length < 0x100:
        out[0] = <uint8_t>(short_base + 56)
        out[1] = <uint8_t>payload_length
        return 2
    if payload_length < 0x10000:
        out[0] = <uint8_t>(short_base + 57)
        out[1] = <uint8_t>(payload_length >> 8)
        out[2] = <uint8_t>payload_length
        return 3
    nbytes = uint_byte_length(<uint64_t>payload_length)
    out[0] = <uint8_t>(short_base + 55 + nbytes)
    for i in range(nbytes):
        out[nbytes - i] = <uint8_t>(payload_length >> (8 * i))
    return 1 + nbytes


cdef inline Py_ssize_t put_string(uint8_t *out, const uint8_t *data, Py_ssize_t n) noexcept nogil:
    """Write the RLP string of data[:n] at out (string_size(data, n) bytes); returns its size."""
    cdef Py_ssize_t h
    if n == 1 and data[0] < 0x80:
        out[0] = data[0]
        return 1
    h = put_header(out, 0x80, n)
    memcpy(out + h, data, <size_t>n)
    return h + n


cdef inline Py_ssize_t put_header_before(uint8_t *payload, uint8_t short_base,
                                         Py_ssize_t payload_length) noexcept nogil:
    """Write a header so that it ends right at payload (the caller left MAX_HEADER_SIZE bytes free before it), for
    writers that know a payload's size only once it is written; return the header's size."""
    cdef Py_ssize_t h = header_size(payload_length)
    put_header(payload - h, short_base, payload_length)
    return h


# A decoded item header: where the payload starts and how long it is. Kept as a C struct so node decoding
# walks encodings without creating Python objects.
ctypedef struct RLPItem:
    bint is_list
    Py_ssize_t payload_offset       # absolute offset of the payload in the input
    Py_ssize_t payload_length
    Py_ssize_t end                  # absolute offset just past the item


cdef int read_item(const uint8_t *data, Py_ssize_t pos, Py_ssize_t limit, RLPItem *item) except -1


cdef inline bint read_item_fast(const uint8_t *data, Py_ssize_t pos, Py_ssize_t limit, RLPItem *item) noexcept:
    """read_item as a yes/no answer, inline (the same rules: canonical headers only, inside limit). A caller
    that needs the reason calls read_item on the same bytes."""
    cdef uint8_t b
    cdef Py_ssize_t i, length_of_length
    cdef uint64_t length
    if pos >= limit:
        return False
    b = data[pos]
    if b == 0xa0 or b == 0x80:                      # a hash reference or an empty slot: most items of a branch
        item.is_list = False
        item.payload_offset = pos + 1
        item.payload_length = b - 0x80
        item.end = pos + 1 + item.payload_length
        return item.end <= limit
    if b < 0x80:
        item.is_list = False
        item.payload_offset = pos
        item.payload_length = 1
        item.end = pos + 1
        return True
    if b < 0xb8 or (0xc0 <= b < 0xf8):
        item.is_list = b >= 0xc0
        length = b - (0xc0 if item.is_list else 0x80)
        if <uint64_t>(limit - pos - 1) < length:
            return False
        if not item.is_list and length == 1 and data[pos + 1] < 0x80:
            return False
        item.payload_offset = pos + 1
    else:
        item.is_list = b >= 0xf8
        length_of_length = b - (0xf7 if item.is_list else 0xb7)
        if limit - pos - 1 < length_of_length:
            return False
        if data[pos + 1] == 0:
            return False
        length = 0
        for i in range(length_of_length):
            length = (length << 8) | data[pos + 1 + i]
        if length < 56:
            return False
        if <uint64_t>(limit - pos - 1 - length_of_length) < length:
            return False
        item.payload_offset = pos + 1 + length_of_length
    item.payload_length = <Py_ssize_t>length
    item.end = item.payload_offset + item.payload_length
    return True

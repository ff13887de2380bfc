# cython: language_level=3
"""Recursive Length Prefix encoding (Ethereum yellow paper, appendix B), strict and canonical.

`encode` and `decode` are the Python-facing API. The trie itself never goes through them: node encoders write
straight into a WriteBuffer and node decoding walks encodings with `read_item`.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy, memmove

from mpt.core.bytes_like cimport get_bytes_view

from mpt.errors import RLPDecodeError


@cython.final
cdef class WriteBuffer:
    """A growable byte buffer. Starts in an inline 1 KiB array; grows with PyMem; reset() keeps the memory."""

    def __cinit__(self):
        self._buf = self._inline
        self._size = WRITE_BUFFER_INLINE_SIZE
        self._length = 0
        self._on_heap = False

    def __dealloc__(self):
        if self._on_heap:
            PyMem_Free(self._buf)
            self._buf = NULL

    @staticmethod
    cdef WriteBuffer new():
        return WriteBuffer.__new__(WriteBuffer)

    cdef int _grow(self, Py_ssize_t needed) except -1:
        cdef Py_ssize_t new_size = self._size * 2
        cdef uint8_t *new_buf
        while new_size < needed:
            new_size *= 2
        if self._on_heap:
            new_buf = <uint8_t *>PyMem_Realloc(self._buf, <size_t>new_size)
            if new_buf == NULL:
                raise MemoryError()
        else:
            new_buf = <uint8_t *>PyMem_Malloc(<size_t>new_size)
            if new_buf == NULL:
                raise MemoryError()
            memcpy(new_buf, self._buf, <size_t>self._length)
            self._on_heap = True
        self._buf = new_buf
        self._size = new_size
        return 0

    cdef int write_string(self, const uint8_t *data, Py_ssize_t n) except -1:
        if n == 1 and data[0] < 0x80:
            return self.write_byte(data[0])
        self.ensure(MAX_HEADER_SIZE + n)
        self._length += put_header(self._buf + self._length, 0x80, n)
        memcpy(self._buf + self._length, data, <size_t>n)
        self._length += n
        return 0

    cdef int write_list_header(self, Py_ssize_t payload_length) except -1:
        self.ensure(MAX_HEADER_SIZE)
        self._length += put_header(self._buf + self._length, 0xc0, payload_length)
        return 0

    cdef bytes to_bytes(self):
        return PyBytes_FromStringAndSize(<char *>self._buf, self._length)

    # Python-level access, mostly for tests and for the hasher-pool checks.
    @property
    def capacity(self):
        """Bytes the buffer can hold before it has to grow again."""
        return self._size

    def __len__(self):
        return self._length

    def getvalue(self):
        """The bytes written since the last reset."""
        return self.to_bytes()

    def clear(self):
        """Forget the content, keep the memory."""
        self.reset()

    def write(self, data):
        """Append raw bytes (for tests and adapters)."""
        cdef const uint8_t[:] view = data
        if view.shape[0]:
            self.write_raw(&view[0], view.shape[0])


# ---------------------------------------------------------------------------------------------- decoding

cdef int _fail(str what, Py_ssize_t offset) except -1:
    raise RLPDecodeError("%s at offset %d" % (what, offset))


cdef int read_item(const uint8_t *data, Py_ssize_t pos, Py_ssize_t limit, RLPItem *item) except -1:
    """Read the header of the item at data[pos] that must end by limit; canonical form only."""
    cdef uint8_t b
    cdef Py_ssize_t i, length_of_length
    cdef uint64_t length
    if pos >= limit:
        return _fail("unexpected end of input", pos)
    b = data[pos]
    if b < 0x80:
        item.is_list = False
        item.payload_offset = pos
        item.payload_length = 1
        item.end = pos + 1
        return 0
    if b < 0xb8 or (0xc0 <= b < 0xf8):
        item.is_list = b >= 0xc0
        length = b - (0xc0 if item.is_list else 0x80)
        if <uint64_t>(limit - pos - 1) < length:
            return _fail("input too short for declared length %d" % length, pos)
        if not item.is_list and length == 1 and data[pos + 1] < 0x80:
            return _fail("non-canonical single byte string", pos)
        item.payload_offset = pos + 1
    else:
        item.is_list = b >= 0xf8
        length_of_length = b - (0xf7 if item.is_list else 0xb7)
        if limit - pos - 1 < length_of_length:
            return _fail("input too short for length of length %d" % length_of_length, pos)
        if data[pos + 1] == 0:
            return _fail("non-canonical size (leading zero)", pos)
        length = 0
        for i in range(length_of_length):
            length = (length << 8) | data[pos + 1 + i]
        if length < 56:
            return _fail("non-canonical size (%d fits a short header)" % length, pos)
        # Compare before using: a declared 2**64 length must neither overflow nor allocate.
        if <uint64_t>(limit - pos - 1 - length_of_length) < length:
            return _fail("input too short for declared length %d" % length, pos)
        item.payload_offset = pos + 1 + length_of_length
    item.payload_length = <Py_ssize_t>length
    item.end = item.payload_offset + item.payload_length
    return 0


cdef object _decode_item(const uint8_t *data, Py_ssize_t pos, Py_ssize_t limit, int depth, Py_ssize_t *end):
    cdef RLPItem item
    cdef list out
    cdef Py_ssize_t p, stop
    read_item(data, pos, limit, &item)
    end[0] = item.end
    if not item.is_list:
        return PyBytes_FromStringAndSize(<const char *>data + item.payload_offset, item.payload_length)
    if depth >= MAX_DECODE_DEPTH:
        _fail("lists nested deeper than %d" % MAX_DECODE_DEPTH, pos)
    out = []
    p = item.payload_offset
    stop = item.end
    while p < stop:
        out.append(_decode_item(data, p, stop, depth + 1, &p))
    return out


def decode(data):
    """Decode one RLP item that spans all of data: bytes for strings, lists for lists.

    Raises RLPDecodeError (naming the offset) for truncated input, trailing bytes, non-canonical sizes,
    leading zeros in lengths and single bytes below 0x80 wrapped as strings.
    """
    cdef Py_buffer view
    cdef Py_ssize_t end = 0
    get_bytes_view(data, &view, "data")
    try:
        if view.len == 0:
            raise RLPDecodeError("empty input at offset 0")
        result = _decode_item(<const uint8_t *>view.buf, 0, view.len, 0, &end)
        if end != view.len:
            raise RLPDecodeError("%d trailing bytes at offset %d" % (view.len - end, end))
        return result
    finally:
        PyBuffer_Release(&view)


# ---------------------------------------------------------------------------------------------- encoding

cdef int _encode_int(WriteBuffer w, object value) except -1:
    cdef uint64_t v
    cdef uint8_t tmp[8]
    cdef int n, i
    if value < 0:
        raise ValueError("RLP cannot encode negative integer %d" % value)
    if value < 0x8000000000000000:
        v = value
        n = uint_byte_length(v)
        for i in range(n):
            tmp[n - 1 - i] = <uint8_t>(v >> (8 * i))
        return w.write_string(tmp, n)
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return w.write_string(<const uint8_t *>PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))


cdef int _encode_obj(WriteBuffer w, object obj, int depth) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t start, payload_length, h
    cdef object item
    if type(obj) is bytes:
        return w.write_string(<const uint8_t *>PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj))
    if isinstance(obj, (list, tuple)):
        if depth >= MAX_DECODE_DEPTH:
            raise ValueError("RLP lists nested deeper than %d" % MAX_DECODE_DEPTH)
        # Leave room for the largest header, write the payload, then put the header right before it and
        # slide the item down once.
        w.ensure(MAX_HEADER_SIZE)
        start = w._length
        w._length += MAX_HEADER_SIZE
        for item in obj:
            _encode_obj(w, item, depth + 1)
        payload_length = w._length - start - MAX_HEADER_SIZE
        h = header_size(payload_length)
        put_header(w._buf + start, 0xc0, payload_length)
        memmove(w._buf + start + h, w._buf + start + MAX_HEADER_SIZE, <size_t>payload_length)
        w._length = start + h + payload_length
        return 0
    if isinstance(obj, bool):
        raise TypeError("RLP cannot encode bool; use 0 or 1")
    if isinstance(obj, int):
        return _encode_int(w, obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE)
        try:
            w.write_string(<const uint8_t *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
        return 0
    raise TypeError("RLP cannot encode %s; use bytes, non-negative int or a list" % type(obj).__name__)


def encode(obj):
    """Encode bytes-like, non-negative int and nested list/tuple values to canonical RLP bytes.

    Integers are big-endian without leading zeros (0 encodes as the empty string, 0x80).
    """
    cdef WriteBuffer w = WriteBuffer.new()
    _encode_obj(w, obj, 0)
    return w.to_bytes()

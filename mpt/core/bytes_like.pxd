# The one bytes-like policy of every tree family (cimported, inline; bytes_like.pyx gives it to Python code).
#
# As hashlib decides: bytes, bytearray, memoryview and any other C-contiguous buffer (array.array, numpy byte
# arrays, bytes subclasses) are taken; str, int, None and non-contiguous buffers are refused with
#     TypeError("<what> must be a bytes-like object, not <type>")
# where <what> names the argument. ``bytes(5)`` would be five zero bytes, so nothing is passed to bytes() unchecked.
# Hot paths pay one pointer comparison: ``type(x) is bytes`` comes first, and the message is only built on refusal.

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize


cdef inline TypeError not_bytes_like(str what, object value):
    """The TypeError for a value refused as bytes-like (raise it)."""
    if PyObject_CheckBuffer(value):
        return TypeError("%s must be a bytes-like object, not %s (not C-contiguous)" % (what, type(value).__name__))
    return TypeError("%s must be a bytes-like object, not %s" % (what, type(value).__name__))


cdef inline int get_bytes_view(object value, Py_buffer *view, str what) except -1:
    """Export value's bytes into view without a copy (PyBuffer_Release it after), or raise the TypeError."""
    if not PyObject_CheckBuffer(value):
        raise not_bytes_like(what, value)
    try:
        PyObject_GetBuffer(value, view, PyBUF_SIMPLE)       # C-contiguous or BufferError
    except BufferError:
        raise not_bytes_like(what, value) from None
    return 0


cdef inline bytes _copy_bytes_like(object value, str what):
    cdef Py_buffer view
    get_bytes_view(value, &view, what)
    try:
        return PyBytes_FromStringAndSize(<char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


cdef inline bytes as_bytes(object value, str what):
    """value as exact bytes (other bytes-likes are copied, so a caller reusing its buffer changes nothing), or the
    TypeError naming what."""
    if type(value) is bytes:
        return <bytes>value
    return _copy_bytes_like(value, what)


cdef inline object as_bytes_or_none(object value, str what):
    """as_bytes, with None passed through (for optional arguments)."""
    if value is None or type(value) is bytes:
        return value
    return _copy_bytes_like(value, what)

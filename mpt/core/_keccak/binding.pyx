# cython: language_level=3
"""Ethereum Keccak-256 (original Keccak padding, not SHA3-256), backed by keccak.c."""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memset

# The C functions are declared in keccak.pxd. This module is not named keccak because Cython would then
# write its generated C over our hand-written keccak.c.
from mpt.core._keccak.keccak cimport mpt_keccak256, mpt_keccak_f1600

# Below this size hashing takes well under a microsecond, less than what
# dropping and re-taking the GIL costs under contention.
cdef enum:
    _NOGIL_THRESHOLD = 4096


def keccak256(data):
    """Return the 32-byte Keccak-256 digest of a bytes-like object."""
    cdef uint8_t out[32]
    cdef const uint8_t* ptr
    cdef Py_ssize_t n
    cdef Py_buffer view

    if type(data) is bytes:
        # Exact bytes (the common case): no buffer export needed. bytes is
        # immutable and we hold a reference, so the GIL can go.
        ptr = <const uint8_t*>PyBytes_AS_STRING(data)
        n = PyBytes_GET_SIZE(data)
        if n > _NOGIL_THRESHOLD:
            with nogil:
                mpt_keccak256(ptr, <size_t>n, out)
        else:
            mpt_keccak256(ptr, <size_t>n, out)
        return (<char*>out)[:32]

    if not PyObject_CheckBuffer(data):
        if isinstance(data, str):
            raise TypeError("keccak256() needs bytes, not str; encode the string first")
        raise TypeError(f"keccak256() needs a bytes-like object, not {type(data).__name__}")

    # PyBUF_SIMPLE asks for a C-contiguous byte buffer; exporters that cannot
    # provide one raise BufferError. The export also pins a bytearray's size.
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        ptr = <const uint8_t*>view.buf
        n = view.len
        if n > _NOGIL_THRESHOLD:
            with nogil:
                mpt_keccak256(ptr, <size_t>n, out)
        else:
            mpt_keccak256(ptr, <size_t>n, out)
    finally:
        PyBuffer_Release(&view)
    return (<char*>out)[:32]


def _permutations(Py_ssize_t n):
    """Run n bare Keccak-f[1600] permutations on a scratch state (benchmark helper)."""
    cdef uint64_t state[25]
    cdef Py_ssize_t i
    memset(state, 0, sizeof(state))
    with nogil:
        for i in range(n):
            mpt_keccak_f1600(state)

# cython: language_level=3
"""SHA-256 backed by sha256.c (SHA-NI when the CPU has it, else AVX2 eight messages at a time for batches, else
portable C)."""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.pycapsule cimport PyCapsule_GetPointer

# Declared in sha256.pxd. This module is not named sha256 because Cython would then write its generated C over
# the hand-written sha256.c.
from mpt.core._sha256.sha256 cimport (
    mpt_sha256,
    mpt_sha256_backend,
    mpt_sha256_backend_supported,
    mpt_sha256_prefixed,
    mpt_sha256_set_backend,
)

# Below this size hashing takes about a microsecond, less than what dropping and re-taking the GIL costs under
# contention.
cdef enum:
    _NOGIL_THRESHOLD = 4096

BACKENDS = ("scalar", "avx2", "avx512", "shani")


cdef bytes _digest(data, int prefix):
    """sha256(data), or sha256(bytes([prefix]) + data) when prefix >= 0."""
    cdef unsigned char out[32]
    cdef const unsigned char* ptr
    cdef Py_ssize_t n
    cdef Py_buffer view
    cdef bint exported = False

    if type(data) is bytes:
        # Immutable and referenced by us: the GIL can go without a buffer export.
        ptr = <const unsigned char*>PyBytes_AS_STRING(data)
        n = PyBytes_GET_SIZE(data)
    else:
        if not PyObject_CheckBuffer(data):
            if isinstance(data, str):
                raise TypeError("sha256() needs bytes, not str; encode the string first")
            raise TypeError(f"sha256() needs a bytes-like object, not {type(data).__name__}")
        # PyBUF_SIMPLE: a C-contiguous byte buffer (else BufferError); the export pins a bytearray's size.
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        exported = True
        ptr = <const unsigned char*>view.buf
        n = view.len
    try:
        if n > _NOGIL_THRESHOLD:
            with nogil:
                if prefix >= 0:
                    mpt_sha256_prefixed(<unsigned char>prefix, ptr, <size_t>n, out)
                else:
                    mpt_sha256(ptr, <size_t>n, out)
        elif prefix >= 0:
            mpt_sha256_prefixed(<unsigned char>prefix, ptr, <size_t>n, out)
        else:
            mpt_sha256(ptr, <size_t>n, out)
    finally:
        if exported:
            PyBuffer_Release(&view)
    return (<char*>out)[:32]


def sha256(data):
    """Return the 32-byte SHA-256 digest of a bytes-like object (``str`` is refused)."""
    return _digest(data, -1)


def sha256_prefixed(int prefix, data):
    """Return SHA-256 of one prefix byte followed by data (RFC 6962: 0 for leaves, 1 for inner nodes)."""
    if not 0 <= prefix <= 255:
        raise ValueError(f"prefix must be a byte value (0..255), not {prefix}")
    return _digest(data, prefix)


def sha256_backend():
    """Name of the SHA-256 backend in use: "shani" (x86 SHA extensions), "avx512" (sixteen messages at a time in
    AVX-512 lanes for batches, SHA-NI for single messages where the CPU has it), "avx2" (eight messages at a time in
    AVX2 lanes for batches) or "scalar" (portable C)."""
    return mpt_sha256_backend().decode()


def sha256_backends():
    """Names of the backends this build and CPU can run, portable first."""
    return [name for name in BACKENDS if mpt_sha256_backend_supported(name.encode())]


ctypedef int (*_set_backend_fn)(const char*) noexcept nogil
ctypedef const char* (*_get_backend_fn)() noexcept nogil

# The other copies of the C library (one per extension module that links it): their set and get functions.
cdef list _COPIES = []


def adopt_library_copy(setter, getter):
    """Called by sha256.pxd's share_sha256_backend() when a module linking mpt_sha256 is imported: give that
    module's copy of the library our backend choice, and keep it in step from now on."""
    cdef _set_backend_fn set_fn = <_set_backend_fn>PyCapsule_GetPointer(setter, b"mpt_sha256_set_backend")
    PyCapsule_GetPointer(getter, b"mpt_sha256_backend")
    set_fn(mpt_sha256_backend())
    _COPIES.append((setter, getter))


def _copy_backends():
    """Backend in use by each other copy of the library (tests: they must all follow set_sha256_backend)."""
    cdef _get_backend_fn get_fn
    out = []
    for _, getter in _COPIES:
        get_fn = <_get_backend_fn>PyCapsule_GetPointer(getter, b"mpt_sha256_backend")
        out.append(get_fn().decode())
    return out


def set_sha256_backend(str name not None):
    """Use the named backend ("scalar", "avx2", "avx512", "shani", or "auto" for the fastest supported: SHA-NI or
    AVX-512, where the CPU has both, by timing a Merkle level on each) for every SHA-256 of mpt, process-wide. Returns the previous name. Digests never depend on the backend. MPT_SHA256_BACKEND sets the
    initial choice."""
    cdef _set_backend_fn set_fn
    old = sha256_backend()
    if mpt_sha256_set_backend(name.encode()) != 0:
        if name in BACKENDS:
            raise ValueError(f"SHA-256 backend {name!r} is not supported by this CPU or build "
                             f"(available: {', '.join(sha256_backends())})")
        raise ValueError(f"unknown SHA-256 backend {name!r} (known: auto, {', '.join(BACKENDS)})")
    for setter, _ in _COPIES:
        set_fn = <_set_backend_fn>PyCapsule_GetPointer(setter, b"mpt_sha256_set_backend")
        set_fn(mpt_sha256_backend())
    return old


# ---- Test hooks for the C entry points that Python code does not reach directly ----

from cpython.mem cimport PyMem_Free, PyMem_Malloc

from mpt.core._sha256.sha256 cimport (
    mpt_sha256_ctx,
    mpt_sha256_final,
    mpt_sha256_init,
    mpt_sha256_many,
    mpt_sha256_pairs,
    mpt_sha256_update,
)


def _sha256_streamed(chunks):
    """SHA-256 of the concatenated bytes chunks fed one by one through init/update/final (tests)."""
    cdef mpt_sha256_ctx ctx
    cdef unsigned char out[32]
    cdef bytes chunk
    mpt_sha256_init(&ctx)
    for chunk in chunks:
        mpt_sha256_update(&ctx, <const unsigned char*>PyBytes_AS_STRING(chunk), <size_t>PyBytes_GET_SIZE(chunk))
    mpt_sha256_final(&ctx, out)
    return (<char*>out)[:32]


cdef int _point_at(list messages, const unsigned char** data, size_t* lengths, str refusal) except -1:
    """Fill mpt_sha256_many's arrays: data[i], lengths[i] = the bytes of messages[i]; TypeError(refusal) for an
    item that is not bytes."""
    cdef Py_ssize_t i
    for i in range(len(messages)):
        if type(messages[i]) is not bytes:
            raise TypeError(refusal)
        data[i] = <const unsigned char*>PyBytes_AS_STRING(messages[i])
        lengths[i] = <size_t>PyBytes_GET_SIZE(messages[i])
    return 0


def _sha256_many(messages, prefix=None):
    """mpt_sha256_many over a list of bytes: one digest per message, prefixed by the byte `prefix` (tests)."""
    cdef list items = list(messages)
    cdef Py_ssize_t n = len(items), i
    cdef const unsigned char** data = <const unsigned char**>PyMem_Malloc(max(n, 1) * sizeof(void*))
    cdef size_t* lengths = <size_t*>PyMem_Malloc(max(n, 1) * sizeof(size_t))
    cdef bytearray out = bytearray(32 * n)
    try:
        if data == NULL or lengths == NULL:
            raise MemoryError()
        _point_at(items, data, lengths, "_sha256_many() needs bytes items")
        mpt_sha256_many(<unsigned char>(prefix or 0), 0 if prefix is None else 1, data, lengths, <size_t>n,
                        <unsigned char*>(<char*>out) if n else NULL)
    finally:
        PyMem_Free(data)
        PyMem_Free(lengths)
    return [bytes(out[32 * i:32 * i + 32]) for i in range(n)]


def _sha256_pairs(int prefix, bytes level, bint in_place=False):
    """mpt_sha256_pairs over a level of 32-byte hashes (even count), into a new buffer or in place (tests)."""
    if len(level) % 64:
        raise ValueError("level must hold an even number of 32-byte hashes")
    cdef size_t npairs = len(level) // 64
    cdef bytearray buf = bytearray(level)
    cdef bytearray out = buf if in_place else bytearray(32 * npairs)
    if npairs:
        mpt_sha256_pairs(<unsigned char>prefix, <const unsigned char*>(<char*>buf), npairs,
                         <unsigned char*>(<char*>out))
    return bytes(out[:32 * npairs])


def sha256_floor(list messages, Py_ssize_t repeat, bint batched=True):
    """Benchmark floor: hash every bytes object of messages, repeat times, in a C loop without the GIL.
    batched: through mpt_sha256_many (two messages at a time on SHA-NI); else one mpt_sha256 call per message.
    The cost SHA-256 alone sets for a workload (``python -m mpt.bench`` reports ``sha_ratio`` against it)."""
    cdef Py_ssize_t n = len(messages), i, r
    cdef const unsigned char** data = <const unsigned char**>PyMem_Malloc(max(n, 1) * sizeof(void*))
    cdef size_t* lengths = <size_t*>PyMem_Malloc(max(n, 1) * sizeof(size_t))
    cdef unsigned char* out = <unsigned char*>PyMem_Malloc(max(n, 1) * 32)
    try:
        if data == NULL or lengths == NULL or out == NULL:
            raise MemoryError()
        _point_at(messages, data, lengths, "sha256_floor() needs bytes messages")
        with nogil:
            for r in range(repeat):
                if batched:
                    mpt_sha256_many(0, 0, data, lengths, <size_t>n, out)
                else:
                    for i in range(n):
                        mpt_sha256(data[i], lengths[i], out + 32 * i)
    finally:
        PyMem_Free(data)
        PyMem_Free(lengths)
        PyMem_Free(out)

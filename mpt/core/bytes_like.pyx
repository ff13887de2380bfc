# cython: language_level=3
"""The one bytes-like policy (bytes_like.pxd) for the pure-Python entry points: the compiled modules cimport the
inline functions of the .pxd, the Python ones call these."""


def bytes_arg(value, str what="value"):
    """value as exact bytes (bytes, bytearray, memoryview, array.array, any C-contiguous buffer; others are
    copied), or ``TypeError("<what> must be a bytes-like object, not <type>")``."""
    return as_bytes(value, what)


def bytes_arg_or_none(value, str what="value"):
    """bytes_arg, with None passed through (optional arguments)."""
    return as_bytes_or_none(value, what)

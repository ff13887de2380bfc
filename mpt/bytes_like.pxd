# Deprecated path: the bytes-like policy moved to mpt/core/bytes_like.pxd (issue 31). This shim re-declares it for
# the modules not yet moved over; it goes once every cimport names mpt.core.bytes_like.
from mpt.core.bytes_like cimport as_bytes, as_bytes_or_none, get_bytes_view, not_bytes_like

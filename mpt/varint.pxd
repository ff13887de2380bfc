# Deprecated path: the varint helpers moved to mpt/core/varint.pxd (issue 31). This shim re-declares them for the
# modules not yet moved over; it goes once every cimport names mpt.core.varint.
from mpt.core.varint cimport (
    MAX_VARINT_LEN64, bitlen64, uvarint_size, zigzag, unzigzag, varint_size, put_uvarint, put_varint, read_uvarint,
    read_be64, read_be32, put_be64, put_be32,
)

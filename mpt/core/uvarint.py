"""Unsigned LEB128 varints in pure Python: the one encoder of the Python-level ICS23 code, the pure-Python
references and the tests (the compiled code has its own in mpt/varint.pxd).

Protobuf's varint and Go's ``binary.PutUvarint`` are this encoding. A negative protobuf int32 / enum is written
as its 64-bit two's complement, which the caller masks to first (``uvarint(value & 0xFFFFFFFFFFFFFFFF)``).
"""


def uvarint(n: int) -> bytes:
    """n (0 <= n < 2**64) as an unsigned varint: 7 bits a byte, least significant first, high bit = more."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)

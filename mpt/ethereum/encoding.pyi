"""Key encodings: keybytes, hex nibbles (16 terminates a leaf key) and compact (hex-prefix)."""

def keybytes_to_hex(key: bytes) -> bytes:
    """b'\\x12' -> b'\\x01\\x02\\x10' (nibbles plus the leaf terminator 16)."""

def hex_to_keybytes(hexkey: bytes) -> bytes:
    """Inverse of keybytes_to_hex; the nibble count (without terminator) must be even."""

def hex_to_compact(hexkey: bytes) -> bytes:
    """Hex nibbles (optionally terminated by 16) -> compact (hex-prefix) bytes."""

def compact_to_hex(compact: bytes) -> bytes:
    """Compact (hex-prefix) bytes -> hex nibbles, terminated by 16 for leaf keys."""

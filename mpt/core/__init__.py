"""The core every tree family shares: nothing in it knows a tree.

- :mod:`mpt.core.rlp` -- ``WriteBuffer`` (the one output buffer) and RLP encode/decode;
- ``mpt/core/varint.pxd`` -- varints and fixed-width integers, inline for the compiled codecs;
  :mod:`mpt.core.uvarint` -- the same varint in pure Python;
- ``mpt/core/bytes_like.pxd`` -- the one bytes-like policy of every entry point (``bytes``, ``bytearray``,
  ``memoryview``, any buffer; ``str`` refused with a TypeError naming the argument);
- :mod:`mpt.core.runtime` -- process-wide settings: hashing threads, Keccak and SHA-256 backends;
- :mod:`mpt.core.jsonrpc` -- the one strict reader of JSON-RPC quantity, data, decimal and base64 fields;
- :mod:`mpt.core._keccak`, :mod:`mpt.core._sha256` -- our C Keccak-256 and SHA-256 (SIMD lanes, CPUID dispatch).

The error classes are :mod:`mpt.errors`.
"""

"""A small, readable pure-Python Merkle Patricia Trie: the test oracle and executable spec.

Nothing here is fast or clever on purpose. The compiled engine must agree with these functions bit for bit, so
they follow the consensus rules (DESIGN.md section 2, Ethereum Yellow Paper appendix D) as literally as possible:

* A key is split into **nibbles** (4-bit halves, high half first).
* A **leaf** is the RLP list ``[hex_prefix(rest_of_path, leaf=True), value]``.
* An **extension** is ``[hex_prefix(shared_path, leaf=False), child_ref]``; it only exists above a branch.
* A **branch** is a 17-item RLP list: one child ref per nibble (``b""``, i.e. RLP ``0x80``, where there is no
  child) and a value slot for the key that ends exactly at the branch (``b""`` when there is none).
* A **child ref** embeds the child's RLP encoding verbatim when its encoding is shorter than 32 bytes, and
  otherwise is the 32-byte keccak256 of that encoding (an RLP string ``0xa0 || hash``).
* The **root is always hashed**, even when its encoding is shorter than 32 bytes. The empty trie's root is
  ``keccak256(rlp(b""))`` = :data:`EMPTY_ROOT`.
* **Empty values mean absent**: a key mapped to ``b""`` is simply not in the trie.
* A **secure trie** (account and storage tries) uses ``keccak256(key)`` in place of each key.

The trie is built directly from the whole key/value mapping (the classic recursive construction over sorted
keys), so there is no insert/delete logic to get wrong: the shape of a Patricia trie depends only on its key set.
"""

from __future__ import annotations

from itertools import groupby
from typing import Iterable, List, Mapping, NamedTuple, Tuple, Union

from Crypto.Hash import keccak as _pycryptodome_keccak

__all__ = [
    "keccak256",
    "rlp_encode",
    "EMPTY_ROOT",
    "EMPTY_CODE_HASH",
    "bytes_to_nibbles",
    "hex_prefix_encode",
    "trie_root",
    "secure_trie_root",
    "NodeEncoding",
    "node_encodings",
]

Items = Union[Mapping[bytes, bytes], Iterable[Tuple[bytes, bytes]]]


def keccak256(data: bytes) -> bytes:
    """Return the 32-byte Keccak-256 digest of ``data`` (original Keccak padding, not NIST SHA3-256)."""
    return _pycryptodome_keccak.new(digest_bits=256, data=bytes(data)).digest()


# ---------------------------------------------------------------------------------------------------------------
# RLP (only the encoder: the reference never needs to decode)
# ---------------------------------------------------------------------------------------------------------------

def _length_prefix(length: int, short_offset: int) -> bytes:
    """RLP header for a payload of ``length`` bytes: one byte up to 55, else a length-of-length form.

    ``short_offset`` is 0x80 for strings and 0xc0 for lists; the long forms use offset + 55 + len(length).
    """
    if length <= 55:
        return bytes([short_offset + length])
    length_bytes = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([short_offset + 55 + len(length_bytes)]) + length_bytes


def rlp_encode(obj: Union[bytes, bytearray, int, list, tuple]) -> bytes:
    """Canonical RLP encoding of bytes, non-negative ints and (nested) lists/tuples of those.

    * A single byte below 0x80 is its own encoding; other strings get a length header.
    * An int is encoded as the string of its minimal big-endian bytes, so 0 becomes ``b"\\x80"`` (empty string).
    * A list is the concatenation of its items' encodings under a list header.
    """
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        if len(data) == 1 and data[0] < 0x80:
            return data
        return _length_prefix(len(data), 0x80) + data
    if isinstance(obj, bool):
        # bool is an int subclass; accepting it would silently encode True as 0x01.
        raise TypeError("rlp_encode does not accept bool")
    if isinstance(obj, int):
        if obj < 0:
            raise ValueError("RLP cannot encode negative integers")
        return rlp_encode(obj.to_bytes((obj.bit_length() + 7) // 8, "big"))
    if isinstance(obj, (list, tuple)):
        payload = b"".join(rlp_encode(item) for item in obj)
        return _length_prefix(len(payload), 0xC0) + payload
    raise TypeError(f"rlp_encode cannot encode {type(obj).__name__}")


EMPTY_ROOT = keccak256(rlp_encode(b""))
"""Root of the empty trie: keccak256(0x80) = 56e81f17...63b421."""

EMPTY_CODE_HASH = keccak256(b"")
"""keccak256 of empty input (c5d24601...5d85a470): the code hash of accounts without code."""


# ---------------------------------------------------------------------------------------------------------------
# Key forms
# ---------------------------------------------------------------------------------------------------------------

# Maps the ASCII hex digits of bytes.hex() to nibble values, so a whole key converts in two C-level calls.
_HEX_DIGIT_TO_NIBBLE = bytes.maketrans(b"0123456789abcdef", bytes(range(16)))


def bytes_to_nibbles(key: bytes) -> bytes:
    """Split ``key`` into nibbles, high half of each byte first: ``b"\\x12\\xab"`` -> ``b"\\x01\\x02\\x0a\\x0b"``."""
    return key.hex().encode("ascii").translate(_HEX_DIGIT_TO_NIBBLE)


def hex_prefix_encode(nibbles: bytes, is_leaf: bool) -> bytes:
    """Compact (hex-prefix) encoding of a nibble path, as stored in leaves and extensions.

    The first nibble is a flag: 2 if the node is a leaf, plus 1 if the path has odd length. An odd path puts its
    first nibble in the low half of the first byte; an even path pads the first byte with a zero nibble.
    """
    flag = 2 if is_leaf else 0
    if len(nibbles) % 2 == 1:
        first_byte = ((flag + 1) << 4) | nibbles[0]
        rest = nibbles[1:]
    else:
        first_byte = flag << 4
        rest = nibbles
    return bytes([first_byte]) + bytes((rest[i] << 4) | rest[i + 1] for i in range(0, len(rest), 2))


# ---------------------------------------------------------------------------------------------------------------
# Trie construction
# ---------------------------------------------------------------------------------------------------------------

class NodeEncoding(NamedTuple):
    """One node of a trie as :func:`node_encodings` reports it."""

    path: bytes
    """Nibbles (values 0..15, no terminator) from the root to this node; ``b""`` for the root."""
    encoding: bytes
    """The node's RLP encoding."""
    hashed: bool
    """True when the node is referenced by hash (encoding >= 32 bytes, or the root), i.e. when a database
    commit stores it; False when it travels embedded in its parent."""


def _normalise(items: Items) -> List[Tuple[bytes, bytes]]:
    """Sorted (nibble_path, value) pairs, dropping empty values (an empty value means the key is absent)."""
    mapping = dict(items)  # a Mapping or an iterable of pairs; later pairs win, like repeated updates
    return sorted(
        (bytes_to_nibbles(bytes(key)), bytes(value)) for key, value in mapping.items() if len(value) > 0
    )


def _common_prefix_length(a: bytes, b: bytes) -> int:
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return length


def _rlp_list(encoded_items: List[bytes]) -> bytes:
    """RLP list whose items are already RLP-encoded (how a parent splices in an embedded child verbatim)."""
    payload = b"".join(encoded_items)
    return _length_prefix(len(payload), 0xC0) + payload


_EMPTY_CHILD_REF = rlp_encode(b"")  # 0x80: a branch slot without a child


def _child_ref(encoding: bytes, path: bytes, collected: list | None) -> bytes:
    """The RLP item by which a parent refers to the node ``encoding``.

    An encoding shorter than 32 bytes is embedded as it is; a longer one is replaced by its keccak256 hash,
    encoded as a 32-byte RLP string (0xa0 || hash).
    """
    is_hashed = len(encoding) >= 32
    if collected is not None:
        collected.append(NodeEncoding(path, encoding, is_hashed))
    return rlp_encode(keccak256(encoding)) if is_hashed else encoding


def _build(pairs: List[Tuple[bytes, bytes]], depth: int, collected: list | None) -> bytes:
    """RLP encoding of the node holding ``pairs`` (sorted, non-empty, all sharing their first ``depth`` nibbles).

    When ``collected`` is a list, every node below this one is appended to it (children before parents).
    """
    path_here = pairs[0][0][:depth]

    # One key left: a leaf holding the rest of its path (possibly empty).
    if len(pairs) == 1:
        nibbles, value = pairs[0]
        return rlp_encode([hex_prefix_encode(nibbles[depth:], is_leaf=True), value])

    # Keys are sorted, so the prefix shared by all of them is the one shared by the first and the last.
    shared = _common_prefix_length(pairs[0][0][depth:], pairs[-1][0][depth:])
    if shared > 0:
        branch_depth = depth + shared
        branch = _build(pairs, branch_depth, collected)
        ref = _child_ref(branch, pairs[0][0][:branch_depth], collected)
        return _rlp_list([rlp_encode(hex_prefix_encode(pairs[0][0][depth:branch_depth], is_leaf=False)), ref])

    # The keys diverge right here: a branch. A key that ends at this depth is a prefix of all the others,
    # so it sorts first; it goes in the value slot.
    branch_value = b""
    if len(pairs[0][0]) == depth:
        branch_value = pairs[0][1]
        pairs = pairs[1:]
    children = [_EMPTY_CHILD_REF] * 16
    for nibble, group in groupby(pairs, key=lambda pair: pair[0][depth]):
        child = _build(list(group), depth + 1, collected)
        children[nibble] = _child_ref(child, path_here + bytes([nibble]), collected)
    return _rlp_list(children + [rlp_encode(branch_value)])


def trie_root(items: Items) -> bytes:
    """Root hash of the trie holding ``items`` (a mapping, or an iterable of pairs where later pairs win).

    Keys with empty values are absent; no items at all gives :data:`EMPTY_ROOT`. The root is always hashed.
    """
    pairs = _normalise(items)
    if not pairs:
        return EMPTY_ROOT
    return keccak256(_build(pairs, 0, None))


def secure_trie_root(items: Items) -> bytes:
    """Root hash of the secure trie holding ``items``: the plain trie over ``keccak256(key) -> value``."""
    return trie_root({keccak256(key): value for key, value in dict(items).items()})


def node_encodings(items: Items) -> List[NodeEncoding]:
    """Every node of the trie holding ``items``, children before parents, the root last.

    Each entry is ``(path, encoding, hashed)`` (see :class:`NodeEncoding`); embedded nodes are included with
    ``hashed=False`` and the root always has ``hashed=True``. The hashed entries are exactly what a commit
    writes to a node database (as ``keccak256(encoding) -> encoding``) and what proofs are made of. An empty
    trie has no nodes and gives ``[]``.
    """
    pairs = _normalise(items)
    if not pairs:
        return []
    collected: List[NodeEncoding] = []
    collected.append(NodeEncoding(b"", _build(pairs, 0, collected), True))
    return collected

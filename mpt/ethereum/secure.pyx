# cython: language_level=3
"""SecureTrie (geth's StateTrie): keys are keccak256(key), plus account and storage helpers."""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t

from mpt.core._keccak.keccak cimport mpt_keccak256
from mpt.core.bytes_like cimport as_bytes
from mpt.ethereum.trie cimport Trie

from mpt.errors import RLPDecodeError
from mpt.core.rlp import decode as rlp_decode, encode as rlp_encode
from mpt.ethereum.trie import EMPTY_ROOT

# keccak256(b""): the code hash of an account without code.
EMPTY_CODE_HASH = bytes.fromhex("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")


cdef bytes _keccak(bytes data):
    cdef uint8_t digest[32]
    mpt_keccak256(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), digest)
    return PyBytes_FromStringAndSize(<char *>digest, 32)


cdef object _decode_uint(bytes raw, str what):
    if len(raw) > 1 and raw[0] == 0 or raw == b"\x00":
        raise RLPDecodeError("account %s has leading zero bytes" % what)
    return int.from_bytes(raw, "big")


cdef bytes _slot_key(object slot):
    if isinstance(slot, int) and not isinstance(slot, bool):
        if slot < 0 or slot >= 1 << 256:
            raise ValueError("storage slot %d out of range" % slot)
        return slot.to_bytes(32, "big")
    return as_bytes(slot, "slot")


cdef bytes _address(object address):
    address = as_bytes(address, "address")
    if PyBytes_GET_SIZE(address) != 20:
        raise ValueError("an account address is 20 bytes, got %d" % PyBytes_GET_SIZE(address))
    return address


cdef class SecureTrie(Trie):
    """A Trie whose keys are keccak256 of the caller's keys (the state and storage tries)."""

    cdef bytes trie_key(self, object key):
        return _keccak(as_bytes(key, "key"))

    # -------------------------------------------------------------------------------------- accounts

    def update_account(self, address, nonce, balance, storage_root=EMPTY_ROOT, code_hash=EMPTY_CODE_HASH):
        """Store the account RLP [nonce, balance, storage_root, code_hash] under keccak256(address).

        address is the 20-byte account address (ValueError for another length)."""
        address = _address(address)
        storage_root = as_bytes(storage_root, "storage_root")
        code_hash = as_bytes(code_hash, "code_hash")
        if len(storage_root) != 32 or len(code_hash) != 32:
            raise ValueError("storage_root and code_hash are 32-byte hashes")
        if nonce < 0 or nonce >= 1 << 64:
            raise ValueError("nonce %d out of range" % nonce)
        self.update(address, rlp_encode([nonce, balance, storage_root, code_hash]))

    def get_account(self, address):
        """(nonce, balance, storage_root, code_hash) for address, or None if absent."""
        address = _address(address)
        blob = self.get(address)
        if blob is None:
            return None
        fields = rlp_decode(blob)
        if not isinstance(fields, list) or len(fields) != 4 or any(isinstance(f, list) for f in fields):
            raise RLPDecodeError("account at %s is not an RLP list of four strings" % bytes(address).hex())
        nonce, balance, storage_root, code_hash = fields
        if len(storage_root) != 32 or len(code_hash) != 32:
            raise RLPDecodeError("account at %s has malformed hashes" % bytes(address).hex())
        return (_decode_uint(nonce, "nonce"), _decode_uint(balance, "balance"), storage_root, code_hash)

    def delete_account(self, address):
        """Remove the account at address (no error if absent)."""
        self.delete(_address(address))

    # -------------------------------------------------------------------------------------- storage

    def update_storage(self, slot, value):
        """Set a storage slot (32-byte key or int) to value (int or bytes of at most 32).

        Stored like geth: the RLP string of the value with leading zero bytes trimmed; zero deletes the slot.
        """
        cdef bytes key = _slot_key(slot)
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0 or value >= 1 << 256:
                raise ValueError("storage value %d out of range" % value)
            raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
        else:
            raw = as_bytes(value, "value")
            if len(raw) > 32:
                raise ValueError("storage values are at most 32 bytes, got %d" % len(raw))
            raw = raw.lstrip(b"\x00")
        if raw:
            self.update(key, rlp_encode(raw))
        else:
            self.delete(key)

    def get_storage(self, slot):
        """The value of a storage slot as an int (0 when absent)."""
        blob = self.get(_slot_key(slot))
        if blob is None:
            return 0
        raw = rlp_decode(blob)
        if isinstance(raw, list) or len(raw) > 32:
            raise RLPDecodeError("storage value is not an RLP string of at most 32 bytes")
        return _decode_uint(raw, "storage value")

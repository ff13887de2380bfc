"""mpt: a Cython-compiled Ethereum Merkle Patricia Trie engine."""
from mpt._keccak import keccak256
from mpt.errors import MissingNodeError, MptError, NodeDecodeError, ProofError, RLPDecodeError
from mpt.node import FullNode, HashNode, ShortNode, ValueNode, decode_node
from mpt.secure import EMPTY_CODE_HASH, SecureTrie
from mpt.stacktrie import StackTrie
from mpt.derive import derive_sha, derive_sha_trie
from mpt.proof import verify_proof, verify_range_proof
from mpt.trie import EMPTY_ROOT, Trie
from mpt import rlp

__version__ = "0.1.0"

__all__ = [
    "EMPTY_CODE_HASH",
    "EMPTY_ROOT",
    "FullNode",
    "HashNode",
    "MissingNodeError",
    "MptError",
    "NodeDecodeError",
    "ProofError",
    "RLPDecodeError",
    "SecureTrie",
    "StackTrie",
    "ShortNode",
    "Trie",
    "ValueNode",
    "decode_node",
    "derive_sha",
    "derive_sha_trie",
    "keccak256",
    "rlp",
    "verify_proof",
    "verify_range_proof",
]

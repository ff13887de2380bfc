"""mpt: a Cython-compiled Ethereum Merkle Patricia Trie engine."""
from mpt._keccak import keccak256
from mpt.errors import MissingNodeError, MptError, NodeDecodeError, ProofError, RLPDecodeError
from mpt.node import FullNode, HashNode, ShortNode, ValueNode, decode_node
from mpt.secure import EMPTY_CODE_HASH, SecureTrie
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
    "ShortNode",
    "Trie",
    "ValueNode",
    "decode_node",
    "keccak256",
    "rlp",
]

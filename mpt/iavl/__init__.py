"""IAVL (cosmos/iavl): node codecs in the legacy, v1 and stream-vbyte formats, and the versioned AVL+ tree.

See docs/iavl.rst. ``EMPTY_ROOT`` is the empty tree's root, sha256(b""). ``decode_node`` / ``LeafNode`` /
``InnerNode`` are the IAVL node codecs (mpt.iavl.node; ``mpt.decode_node`` is the Ethereum one);
``MutableTree`` is the tree (mpt.iavl.tree); its ``membership_proof`` / ``non_membership_proof`` make ICS23
proofs as Go iavl does (mpt.iavl.proof, imported on first use); ``ExportNode`` is one node of its export stream
(mpt.iavl.export).
"""
from mpt._deprecation import renamed_attributes as _renamed_attributes

from mpt.iavl.node import FORMATS, InnerNode, LeafNode, Node, decode_node, node_key
from mpt.iavl.tree import EMPTY_ROOT, MutableTree
from mpt.iavl.export import ExportNode

__all__ = [
    "EMPTY_ROOT", "ExportNode", "FORMATS", "InnerNode", "LeafNode", "MutableTree", "Node", "decode_node", "node_key",
]


# EMPTY_ROOT is every family's name for the empty tree's root; the old name stays for one release.
__getattr__ = _renamed_attributes(__name__, {
    "EMPTY_HASH": ("mpt.iavl.EMPTY_HASH is deprecated; use mpt.iavl.EMPTY_ROOT", lambda: EMPTY_ROOT),
})

"""IAVL (cosmos/iavl): node codecs in the legacy, v1 and stream-vbyte formats, and the versioned AVL+ tree.

See docs/iavl.rst. ``decode_node`` / ``LeafNode`` / ``InnerNode`` are the codecs (mpt.iavl.node);
``MutableTree`` is the tree (mpt.iavl.tree); its ``membership_proof`` / ``non_membership_proof`` make ICS23
proofs as Go iavl does (mpt.iavl.proof, imported on first use); ``ExportNode`` is one node of its export stream
(mpt.iavl.export).
"""
from mpt.iavl.node import FORMATS, InnerNode, LeafNode, Node, decode_node, node_key
from mpt.iavl.tree import EMPTY_HASH, MutableTree
from mpt.iavl.export import ExportNode

__all__ = [
    "EMPTY_HASH", "ExportNode", "FORMATS", "InnerNode", "LeafNode", "MutableTree", "Node", "decode_node", "node_key",
]

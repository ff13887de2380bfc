"""IAVL (cosmos/iavl): node codecs in the legacy, v1 and stream-vbyte formats, and the versioned AVL+ tree.

See docs/iavl.rst. ``decode_node`` / ``LeafNode`` / ``InnerNode`` are the codecs (mpt.iavl.node);
``MutableTree`` is the tree (mpt.iavl.tree).
"""
from mpt.iavl.node import FORMATS, InnerNode, LeafNode, Node, decode_node, node_key

__all__ = ["FORMATS", "InnerNode", "LeafNode", "Node", "decode_node", "node_key"]

# cython: language_level=3
"""IAVL export / import (export.pyx): the layout of the exported node and of the exporter."""
cimport cython
from libc.stdint cimport int64_t, uint8_t

from mpt.iavl.node cimport MAX_HEIGHT, InnerNode, Node
from mpt.iavl.nodedb cimport NodeDB


@cython.final
cdef class ExportNode:
    cdef:
        readonly bytes key
        readonly bytes value        # None for inner nodes
        readonly int64_t version    # the version in the node's node key: the version that wrote the node
        readonly int height         # 0 for leaves

    @staticmethod
    cdef ExportNode new(bytes key, bytes value, int64_t version, int height)


@cython.final
cdef class Exporter:
    cdef:
        NodeDB _ndb                 # the tree's node database: loads children not in memory yet, and each step
                                    # checks the store is still open
        list _path                  # the nodes from the root down to the one being visited
        uint8_t _state[MAX_HEIGHT + 2]  # per level of _path: 0 left child next, 1 right child next, 2 the node
        readonly int64_t version

    cdef Node _child(self, InnerNode node, bint right)


cdef Node import_tree(object tree, object nodes, object version, bint legacy)

"""Whole-trie tools over a node database: copy what a root reaches, and measure a trie's shape.

Both walk the stored nodes from a root with an explicit stack (no recursion, whatever the depth), decoding each
blob with ``decode_node`` and following the hash references. Nodes shorter than 32 bytes are embedded in their
parent's blob; they are walked but never looked up. Every blob read is checked against its hash unless
``verify=False``.
"""
from mpt.core._keccak import keccak256
from mpt.db.memory import write_nodes
from mpt.errors import MissingNodeError, NodeDecodeError
from mpt.ethereum.node import FullNode, HashNode, ShortNode, ValueNode, decode_node

EMPTY_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")
_NIBBLES = [bytes((i,)) for i in range(17)]
_PROGRESS_EVERY = 4096


def _root_bytes(root):
    if isinstance(root, str):
        root = bytes.fromhex(root[2:] if root.startswith(("0x", "0X")) else root)
    root = bytes(root)
    if len(root) != 32:
        raise ValueError("root must be a 32-byte hash, got %d bytes" % len(root))
    return root


def _load(db, node_hash, path, verify):
    blob = db.get(node_hash)
    if blob is None:
        raise MissingNodeError(node_hash, path)
    if type(blob) is not bytes:
        blob = bytes(blob)
    if verify and keccak256(blob) != node_hash:
        raise NodeDecodeError("node %s read from the database does not hash to its key" % node_hash.hex())
    return blob


def _refs(node, path):
    """(child, child path) of the nodes directly below node, value nodes excluded, in key order."""
    if type(node) is FullNode:
        children = node.children
        return [(children[i], path + _NIBBLES[i]) for i in range(16) if children[i] is not None]
    if type(node) is ShortNode and type(node.val) is not ValueNode:
        return [(node.val, path + node.key)]
    return []


def copy_reachable(src, dst, root, *, batch_size=10000, verify=True):
    """Copy into dst exactly the stored nodes reachable from root in src (root included).

    Returns ``(nodes, bytes)``: how many distinct nodes were copied and the total size of their blobs. Writes go
    through ``write_nodes`` in batches of ``batch_size`` nodes (one transaction each on an LMDBStore). A node
    reachable along several paths is copied once. Raises MissingNodeError (with the hash and the hex path) if
    src lacks a node, NodeDecodeError for a blob that does not decode or (with verify) does not hash to its key.
    The empty root copies nothing.

    Keeps the set of hashes already copied: about 100 bytes of memory per node.
    """
    root = _root_bytes(root)
    if root == EMPTY_ROOT:
        return 0, 0
    seen = {root}
    stack = [(root, b"")]
    pending = []
    count = size = 0
    while stack:
        node_hash, path = stack.pop()
        blob = _load(src, node_hash, path, verify)
        pending.append((node_hash, blob))
        count += 1
        size += len(blob)
        if len(pending) >= batch_size:
            write_nodes(dst, pending)
            pending = []
        # Embedded nodes are walked in place: they cannot hold hash references (a reference alone is 33 bytes),
        # but walking them generically costs nothing and assumes nothing.
        inline = [(decode_node(blob, node_hash), path)]
        while inline:
            node, npath = inline.pop()
            for child, cpath in _refs(node, npath):
                if type(child) is HashNode:
                    h = child.hash
                    if h not in seen:
                        seen.add(h)
                        stack.append((h, cpath))
                else:
                    inline.append((child, cpath))
    if pending:
        write_nodes(dst, pending)
    return count, size


_KINDS = ("branch", "extension", "leaf")


def _kind(node):
    if type(node) is FullNode:
        return "branch"
    return "leaf" if type(node.val) is ValueNode else "extension"


def inspect_trie(db, root, progress=None, *, verify=True):
    """Measure the trie under root: a dict of counts.

    Keys: ``root`` (hex), ``nodes`` / ``bytes`` (stored nodes and the bytes of their blobs), ``branch`` /
    ``extension`` / ``leaf`` (stored nodes by type), ``embedded`` and ``embedded_branch`` / ``_extension`` /
    ``_leaf`` (nodes living inside their parent's blob), ``values`` (keys in the trie), ``max_depth`` and
    ``depths``: a list indexed by depth (the root is at 0, each node, stored or embedded, adds one) of dicts
    ``{"branch", "extension", "leaf", "values"}``; a value counts at the depth of the leaf or branch holding it.

    The walk follows the trie, so a subtree reachable along two paths is counted twice (``copy_reachable``
    counts distinct nodes). ``progress``, if given, is called with the number of stored nodes read since its
    last call (``tqdm.update`` fits). Raises MissingNodeError / NodeDecodeError like the trie.
    """
    root = _root_bytes(root)
    stats = {"root": root.hex(), "nodes": 0, "bytes": 0, "values": 0, "embedded": 0, "max_depth": 0}
    for kind in _KINDS:
        stats[kind] = 0
        stats["embedded_" + kind] = 0
    depths = []
    stats["depths"] = depths
    if root == EMPTY_ROOT:
        return stats
    unreported = 0
    # Entries: (node, or the hash of a stored node still to load, hex path, depth).
    stack = [(root, b"", 0)]
    while stack:
        node, path, depth = stack.pop()
        if type(node) is HashNode:
            node = node.hash
        stored = type(node) is bytes
        if stored:
            blob = _load(db, node, path, verify)
            node = decode_node(blob, node)
        kind = _kind(node)
        if stored:
            stats["nodes"] += 1
            stats[kind] += 1
            stats["bytes"] += len(blob)
            unreported += 1
            if progress is not None and unreported >= _PROGRESS_EVERY:
                progress(unreported)
                unreported = 0
        else:
            stats["embedded"] += 1
            stats["embedded_" + kind] += 1
        while len(depths) <= depth:
            depths.append({"branch": 0, "extension": 0, "leaf": 0, "values": 0})
        row = depths[depth]
        row[kind] += 1
        if kind == "leaf" or (kind == "branch" and node.children[16] is not None):
            row["values"] += 1
            stats["values"] += 1
        # Push in reverse so that the walk is pre-order in key order (the order does not change the counts).
        refs = _refs(node, path)
        for child, cpath in reversed(refs):
            stack.append((child, cpath, depth + 1))
    stats["max_depth"] = len(depths) - 1
    if progress is not None and unreported:
        progress(unreported)
    return stats

"""py-trie's ``HexaryTrie`` on mpt: the API and the database records of py-trie 4.0.0, compiled.

``HexaryTrie`` here is a drop-in for ``trie.HexaryTrie`` (``pip install "mpt-engine[pytrie]"`` pulls py-trie for
its exception classes, node helpers and ``HexaryTrieNode``): the same constructor, methods, exceptions and
attributes, and after every public call the same records in the database that py-trie writes, so a database
written by either opens with the other. :func:`install` makes ``trie.HexaryTrie`` (and every module that imported
the name, py-evm's included) this class; :func:`uninstall` undoes it; :func:`installed` does both around a block::

    import mpt.compat.pytrie
    mpt.compat.pytrie.install()      # e.g. in a conftest.py: py-evm and eth-tester now run their tries on mpt

py-trie's ``BinaryTrie`` and ``SparseMerkleTree`` are not replaced.
"""

from __future__ import annotations

import contextlib
import sys
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from mpt.errors import MissingExtraError

try:
    import trie as _trie

    if _trie.__version__.split(".")[0] != "4":
        raise ImportError("py-trie %s is installed; mpt.compat.pytrie follows py-trie 4" % _trie.__version__,
                          name="trie")
    from trie.constants import BLANK_NODE, BLANK_NODE_HASH
    from trie.exceptions import (
        BadTrieProof,
        MissingTraversalNode,
        MissingTrieNode,
        TraversedPartialPath,
        ValidationError,
    )
    from trie.typing import HexaryTrieNode, Nibbles
    from trie.utils.nodes import annotate_node, get_node_type
except ImportError as _import_error:
    raise MissingExtraError("mpt.compat.pytrie needs py-trie 4 (pip install 'mpt-engine[pytrie]'): %s"
                            % _import_error, name="trie") from _import_error

from mpt.compat.pytrie._core import (  # noqa: E402 - after the check for py-trie
    HexaryTrieCore, ScratchDB, proven_value, store_proof,
)

__all__ = ["HexaryTrie", "install", "uninstall", "installed", "is_installed", "original_class"]

_NODE_TYPE_BLANK, _NODE_TYPE_EXTENSION, _NODE_TYPE_BRANCH = 0, 2, 3


class HexaryTrie(HexaryTrieCore):
    """py-trie 4.0.0's ``trie.HexaryTrie`` over any ``MutableMapping[bytes, bytes]``, compiled.

    ``HexaryTrie(db, root_hash=BLANK_NODE_HASH, prune=False)``; ``get``/``set``/``delete``/``exists`` and the
    mapping operators, ``root_hash`` (assignable), ``root_node``, ``squash_changes()``, ``at_root()``,
    ``get_proof()`` / ``get_from_proof()``, ``traverse()`` / ``traverse_from()``, ``ref_count`` /
    ``regenerate_ref_count()``, ``get_node()``, as py-trie documents them.
    """

    __slots__ = ()

    # Shortcuts (py-trie's)
    BLANK_NODE_HASH = BLANK_NODE_HASH
    BLANK_NODE = BLANK_NODE

    @property
    def ref_count(self):
        if self._ref_count is None:
            raise Exception("Trie does not track node usage unless pruning is enabled")
        return self._ref_count

    def traverse(self, trie_key_input) -> HexaryTrieNode:
        trie_key = Nibbles(trie_key_input)
        node, remaining_key = self._traverse(self.root_hash, trie_key)
        annotated_node = annotate_node(node)
        if remaining_key:
            path_to_node = trie_key[: len(trie_key) - len(remaining_key)]
            raise TraversedPartialPath(path_to_node, annotated_node, remaining_key)
        return annotated_node

    def traverse_from(self, parent_node: HexaryTrieNode, trie_key_input) -> HexaryTrieNode:
        trie_key = Nibbles(trie_key_input)
        node, remaining_key = self._traverse_from(parent_node.raw, trie_key)
        annotated_node = annotate_node(node)
        if remaining_key:
            path_to_node = trie_key[: len(trie_key) - len(remaining_key)]
            raise TraversedPartialPath(path_to_node, annotated_node, remaining_key)
        return annotated_node

    @property
    def root_node(self) -> HexaryTrieNode:
        try:
            raw_node = self.get_node(self.root_hash)
        except KeyError as exc:
            raise MissingTraversalNode(self.root_hash, nibbles_traversed=()) from exc
        return annotate_node(raw_node)

    def regenerate_ref_count(self):
        new_ref_count = defaultdict(int)
        keys_to_count = [self.root_hash]
        while keys_to_count:
            key = keys_to_count.pop()
            if key == b"" or isinstance(key, list) or key == BLANK_NODE_HASH:
                continue
            new_ref_count[key] += 1
            node = self.get_node(key)
            node_type = get_node_type(node)
            if node_type == _NODE_TYPE_BLANK:
                continue
            if node_type == _NODE_TYPE_BRANCH:
                keys_to_count.extend(node[:16])
            elif node_type == _NODE_TYPE_EXTENSION:
                keys_to_count.append(node[1])
        return new_ref_count

    @classmethod
    def get_from_proof(cls, root_hash, key, proof):
        if cls is HexaryTrie:
            return proven_value(root_hash, key, proof)
        trie = cls({})
        store_proof(trie, proof)  # for node in proof: trie._set_raw_node(node)
        # what trie.at_root(root_hash) yields (trie does not prune), without the generator's cost
        proven_snapshot = cls(trie.db, root_hash, prune=False)
        try:
            return proven_snapshot.get(key)
        except MissingTrieNode as e:
            raise BadTrieProof(f"Missing proof node with hash {e.missing_node_hash!r}") from e

    @contextlib.contextmanager
    def squash_changes(self):
        scratch_db = ScratchDB(self.db)
        with scratch_db.batch_commit(do_deletes=self.is_pruning):
            memory_trie = type(self)(scratch_db, self.root_hash, prune=True, ref_count=self._ref_count)
            yield memory_trie
        if self.root_hash != memory_trie.root_hash:
            try:
                raw_root_node = memory_trie.get_node(memory_trie.root_hash)
            except KeyError:
                # py-trie: a missing new root node is not an error here
                self.root_hash = memory_trie.root_hash
            else:
                self.root_hash = self._set_raw_node(raw_root_node)

    @contextlib.contextmanager
    def at_root(self, at_root_hash):
        if self.is_pruning:
            raise ValidationError("Cannot use trie snapshot while pruning")
        yield type(self)(self.db, at_root_hash, prune=False)

    def __repr__(self) -> str:
        return f"HexaryTrie({self.db!r}, root_hash={self.root_hash!r}, prune={self.is_pruning})"


# --- install / uninstall ---------------------------------------------------------------------------------------

# (module, attribute, the object it was bound to) for every binding install() replaced, in order.
_replaced: list[tuple[Any, str, Any]] = []


def original_class():
    """py-trie's own ``HexaryTrie`` class, also while :func:`install` is in effect (for comparisons)."""
    import trie.hexary

    if _replaced:
        return _replaced[0][2]
    return trie.hexary.HexaryTrie


def install() -> None:
    """Make py-trie's ``HexaryTrie`` mpt's, everywhere it is already bound and for later ``from trie import``.

    Rebinds ``trie.HexaryTrie``, ``trie.hexary.HexaryTrie`` and every attribute of an imported module that is
    bound to py-trie's class (py-trie's ``trie.tools.builder``, ``trie.tools.strategies``, ``trie.iter``;
    py-evm's ``eth.db.*`` and ``eth.*`` modules, ...). Modules imported later that do ``from trie import
    HexaryTrie`` get mpt's class. Calling it again is harmless (it also rebinds modules imported since).
    """
    import trie
    import trie.hexary
    import trie.iter  # noqa: F401 - imports py-trie's own users of the name so that they are rebound now
    import trie.tools.builder  # noqa: F401
    import trie.tools.strategies  # noqa: F401

    original = original_class()
    for module in list(sys.modules.values()):
        if module is None or module is sys.modules.get(__name__):
            continue
        try:
            names = [name for name, value in list(vars(module).items()) if value is original]
        except TypeError:
            continue
        for name in names:
            setattr(module, name, HexaryTrie)
            _replaced.append((module, name, original))


def uninstall() -> None:
    """Undo :func:`install`: every binding it replaced is py-trie's class again."""
    while _replaced:
        module, name, original = _replaced.pop()
        if getattr(module, name, None) is HexaryTrie:
            setattr(module, name, original)


def is_installed() -> bool:
    """Whether ``trie.hexary.HexaryTrie`` is mpt's class now."""
    import trie.hexary

    return trie.hexary.HexaryTrie is HexaryTrie


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """:func:`install` for the block; the bindings it replaced are restored when the block exits.

    When mpt's class was already installed before the block, it stays installed after it.
    """
    was_installed = is_installed()
    install()
    try:
        yield
    finally:
        if not was_installed:
            uninstall()

"""mpt: compiled Merkle trees for Python: Ethereum Merkle Patricia Tries, CometBFT simple Merkle trees and Cosmos
IAVL trees with ICS23 proofs.

``mpt.Trie``, ``SecureTrie``, ``StackTrie``, proofs and ``build_root`` for Ethereum; ``mpt.merkle`` for CometBFT's
RFC 6962 trees; ``mpt.iavl`` for the Cosmos SDK's IAVL trees; ``mpt.ics23`` for ICS23 proof verification. The
top-level names without a family prefix (``EMPTY_ROOT``, ``decode_node``, ``verify_proof``, ...) are Ethereum's;
each family module has its own ``EMPTY_ROOT`` (and ``mpt.iavl.decode_node`` decodes IAVL nodes).
"""
import os as _os
import typing as _typing

# `python -m mpt ...`: Ctrl-C while the modules below still load ends in one line and exit status 130, not a
# traceback (mpt/_startup.py; nothing happens when mpt is imported any other way).
from mpt._startup import install as _quiet_interrupts_while_starting
# The old module paths of the package layout (mpt.trie, mpt.eth, ...): served, with a warning, by one finder.
from mpt._deprecation import MOVED_MODULES as _MOVED_MODULES  # noqa: E402
from mpt._deprecation import install_moved_modules as _install_moved_modules  # noqa: E402

_quiet_interrupts_while_starting()
del _quiet_interrupts_while_starting
_install_moved_modules()

# The batched hasher's optional worker threads (MPT_HASH_THREADS) are OpenMP's, and libgomp's default is to
# spin while waiting for work: on a machine whose cores are busy with other processes, the spinning workers and
# the hashing thread take turns by whole scheduler time slices (an order of magnitude slower on a loaded
# machine; docs/contributing/performance_notes.md). Sleeping waiters cost microseconds per batch instead. libgomp
# reads this when it is loaded, so it is set before the first compiled module imports; a value the user set is
# kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from mpt.core._keccak import keccak256  # noqa: E402 - after the OpenMP setting above
from mpt.errors import MissingNodeError, MptError, NodeDecodeError, ProofError, RLPDecodeError  # noqa: E402
from mpt.ethereum.node import FullNode, HashNode, ShortNode, ValueNode, decode_node  # noqa: E402
from mpt.ethereum.secure import EMPTY_CODE_HASH, SecureTrie  # noqa: E402
from mpt.ethereum.stacktrie import StackTrie  # noqa: E402
from mpt.ethereum.derive import derive_sha, derive_sha_trie  # noqa: E402
from mpt.ethereum.proof import verify_proof  # noqa: E402
from mpt.ethereum.rangeproof import verify_range_proof  # noqa: E402
from mpt.ethereum.trie import EMPTY_ROOT, Trie  # noqa: E402
from mpt.core import rlp  # noqa: E402
from mpt import merkle  # noqa: E402 - CometBFT / RFC 6962 binary Merkle trees (SHA-256)
from mpt.ethereum.parallel import build_root  # noqa: E402

from mpt._version import __version__  # noqa: E402, F401 - the single source (mpt/_version.py)

# mpt.iavl and mpt.ics23 are reachable after `import mpt` like mpt.merkle, but imported on first use: together
# they would add their node database, store and protobuf-message modules to every `import mpt`.
_LAZY_SUBMODULES = ("iavl", "ics23")

if _typing.TYPE_CHECKING:
    from mpt import iavl, ics23  # noqa: F401 - what __getattr__ returns, for type checkers


# The old paths of modules that moved (issue 31): `mpt.trie` still works after `import mpt`, as before, through the
# finder above (which warns with a DeprecationWarning).
_MOVED_SUBMODULES = frozenset(name.split(".")[1] for name in _MOVED_MODULES if name.count(".") == 1)


def __getattr__(name):
    if name in _LAZY_SUBMODULES or name in _MOVED_SUBMODULES:
        import importlib

        return importlib.import_module("mpt." + name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))

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
    "build_root",
    "ShortNode",
    "Trie",
    "ValueNode",
    "decode_node",
    "derive_sha",
    "derive_sha_trie",
    "iavl",
    "ics23",
    "keccak256",
    "merkle",
    "rlp",
    "verify_proof",
    "verify_range_proof",
]

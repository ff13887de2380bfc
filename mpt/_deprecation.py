"""Old public names that keep working for one release, each access warning with a DeprecationWarning.

A module lists its old names once, ``__getattr__ = renamed_attributes(__name__, {...})``; Python calls a module's
``__getattr__`` (PEP 562) only for names the module does not have, so the current names cost nothing.

Old module paths (``mpt.trie`` before it moved to ``mpt.ethereum.trie``) are one table, ``MOVED_MODULES``, served
by a finder that ``import mpt`` installs: importing an old path gives the moved module itself (the same object, so
every name, ``isinstance`` and pickles naming the old path keep working) with a DeprecationWarning, and no file is
left at the old path.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import FrameType
from typing import Callable, Dict, Optional, Tuple

# Old module path -> where it lives now (issue 31's layout), kept for one release. A package's entry covers its
# submodules (mpt.shards.build is mpt.ethereum.shards.build).
MOVED_MODULES = {
    "mpt.rlp": "mpt.core.rlp",
    "mpt.runtime": "mpt.core.runtime",
    "mpt.jsonrpc": "mpt.core.jsonrpc",
    "mpt._varint": "mpt.core.uvarint",
    "mpt._keccak": "mpt.core._keccak",
    "mpt._sha256": "mpt.core._sha256",
    "mpt.encoding": "mpt.ethereum.encoding",
    "mpt.node": "mpt.ethereum.node",
    "mpt.hasher": "mpt.ethereum.hasher",
    "mpt.committer": "mpt.ethereum.committer",
    "mpt.trie": "mpt.ethereum.trie",
    "mpt.iterator": "mpt.ethereum.iterator",
    "mpt.secure": "mpt.ethereum.secure",
    "mpt.stacktrie": "mpt.ethereum.stacktrie",
    "mpt.derive": "mpt.ethereum.derive",
    "mpt.proof": "mpt.ethereum.proof",
    "mpt.rangeproof": "mpt.ethereum.rangeproof",
    "mpt.eip1186": "mpt.ethereum.eip1186",
    "mpt.eth": "mpt.ethereum.blocks",
    "mpt.ethstate": "mpt.ethereum.state",
    "mpt.parallel": "mpt.ethereum.parallel",
    "mpt.dask": "mpt.ethereum.dask",
    "mpt.shards": "mpt.ethereum.shards",
    "mpt._spill": "mpt.ethereum.shards.spill",
    "mpt._reference": "mpt.ethereum._reference",
    "mpt._merkle_reference": "mpt.merkle._reference",
    "mpt.db.tools": "mpt.ethereum.inspect",
    "mpt.rootcli": "mpt.cli.root",
    "mpt.inspectcli": "mpt.cli.inspect",
}


def renamed_attributes(module_name: str, old_names: Dict[str, Tuple[str, Callable[[], object]]]):
    """A module ``__getattr__`` serving each old name in old_names, which maps it to (the warning's text, a
    function giving the value); a function, so the value may live in a module imported only when asked for."""
    def __getattr__(name):
        try:
            message, value = old_names[name]
        except KeyError:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}") from None
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return value()
    return __getattr__


def _importer_stacklevel() -> int:
    """The stacklevel, for a warning raised in create_module, of the line that imported the old path: warnings
    skips the import machinery's frames itself; mpt.__getattr__ (``mpt.trie`` after ``import mpt``) is skipped
    here, so that the warning names the user's line."""
    package_init = __file__.rsplit("_deprecation.py", 1)[0] + "__init__.py"
    frame: Optional[FrameType] = sys._getframe(2)      # the caller of create_module
    level = 2
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:      # skipped by warnings itself
            frame = frame.f_back
            continue
        if name != package_init and not name.endswith("importlib/__init__.py"):
            return level
        level += 1
        frame = frame.f_back
    return 2


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the old paths of MOVED_MODULES: the moved module itself under the old name, with a warning."""

    def __init__(self, moved: Dict[str, str]) -> None:
        self.moved = moved

    def new_name(self, fullname: str) -> Optional[str]:
        for old, new in self.moved.items():
            if fullname == old or fullname.startswith(old + "."):
                return new + fullname[len(old):]
        return None

    def find_spec(self, fullname, path=None, target=None):
        if self.new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = self.new_name(spec.name)
        module = importlib.import_module(new)
        warnings.warn(f"{spec.name} moved to {new}; the old path will be removed in a future release",
                      DeprecationWarning, stacklevel=_importer_stacklevel())
        # The import system records the alias's spec on the module it returns: keep the real one for it to restore.
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module) -> None:
        real = module.__spec__.loader_state
        if real is not None:
            module.__spec__ = real


def install_moved_modules() -> None:
    """Put the finder of the old module paths first (before a stale compiled module left at an old path)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder(MOVED_MODULES))

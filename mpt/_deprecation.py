"""Old public names that keep working for one release, each access warning with a DeprecationWarning.

A module lists its old names once, ``__getattr__ = renamed_attributes(__name__, {...})``; Python calls a module's
``__getattr__`` (PEP 562) only for names the module does not have, so the current names cost nothing.

Old module paths (``mpt.trie`` before it moved to ``mpt.ethereum.trie``) are files of one line each,
``moved_module(__name__, "mpt.ethereum.trie")``.
"""
import importlib
import sys
import warnings
from typing import Callable, Dict, Tuple


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


def moved_module(old_name: str, new_name: str, submodules: Tuple[str, ...] = ()):
    """Make the module being imported as old_name the module new_name itself (sys.modules), with a
    DeprecationWarning: an old module path kept for one release. Being the same module object, everything keeps
    working through the old path: every name, ``isinstance``, and pickles that name the old module. submodules
    are registered under the old package path too, so ``import old.sub`` does not load a second copy."""
    module = importlib.import_module(new_name)
    warnings.warn(f"{old_name} moved to {new_name}; the old path will be removed in a future release",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old_name] = module
    for sub in submodules:
        sys.modules[f"{old_name}.{sub}"] = importlib.import_module(f"{new_name}.{sub}")
    return module

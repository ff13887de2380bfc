"""Old public names that keep working for one release, each access warning with a DeprecationWarning.

A module lists its old names once, ``__getattr__ = renamed_attributes(__name__, {...})``; Python calls a module's
``__getattr__`` (PEP 562) only for names the module does not have, so the current names cost nothing.
"""
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

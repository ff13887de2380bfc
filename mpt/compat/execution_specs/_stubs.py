"""The bodies that replace the spec's ``root`` and ``state_root``.

Their code objects are assigned to the spec's own function objects (``function.__code__``), so every module that
imported those functions by name (``from .trie import root``) runs these bodies, while the function objects, their
names, signatures and defaults stay the spec's. A body runs in the spec module's globals, where install() has put
the fork's codec under the name below.
"""

SPEC_GLOBAL = "__mpt_compat_execution_specs__"


def root(trie, get_storage_root=None):
    return __mpt_compat_execution_specs__.root(trie, get_storage_root)  # noqa: F821 - the spec module's global


def state_root(state):
    return __mpt_compat_execution_specs__.state_root(state)  # noqa: F821 - the spec module's global

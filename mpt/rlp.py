"""Deprecated: moved to mpt.core.rlp (this path is kept for one release)."""
from mpt._deprecation import moved_module

moved_module(__name__, "mpt.core.rlp")

"""Deprecated: moved to mpt.core._keccak (this path is kept for one release)."""
from mpt._deprecation import moved_module

moved_module(__name__, "mpt.core._keccak", ('binding',))

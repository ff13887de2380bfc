"""Deprecated: moved to mpt.ethereum.secure (this path is kept for one release)."""
from mpt._deprecation import moved_module

moved_module(__name__, "mpt.ethereum.secure")

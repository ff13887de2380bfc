"""Deprecated: moved to mpt.ethereum.inspect (this path is kept for one release)."""
from mpt._deprecation import moved_module

moved_module(__name__, "mpt.ethereum.inspect")

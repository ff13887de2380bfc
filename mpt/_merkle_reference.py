"""Deprecated: moved to mpt.merkle._reference (this path is kept for one release)."""
from mpt._deprecation import moved_module

moved_module(__name__, "mpt.merkle._reference")

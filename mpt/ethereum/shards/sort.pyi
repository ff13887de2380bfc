"""The sort of a shard's records by (key, input position), without the GIL: C functions only (cimport them)."""

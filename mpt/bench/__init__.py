"""Benchmarks that reproduce go-ethereum's trie benchmarks on the same data (see the "Benchmarks" page of the documentation, docs/benchmarks.rst)."""

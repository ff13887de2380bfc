"""Benchmarks that reproduce go-ethereum's trie benchmarks on the same data (see BENCHMARKS.md)."""

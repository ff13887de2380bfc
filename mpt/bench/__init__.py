"""Benchmarks that reproduce go-ethereum's, CometBFT's and iavl's benchmarks on the same data (see the "Benchmarks"
page of the documentation, docs/benchmarks.rst)."""

"""asv benchmarks of mpt: generated from the shared case registry (``mpt.bench.cases``); see ../README.md."""

# Documentation targets. The API pages import the compiled package: pip install -e ".[docs]" first.
PYTHON ?= python
SPHINXBUILD ?= sphinx-build
# The benchmark report the figures are drawn from; made by a benchmark run when missing (takes minutes).
BENCH_JSON ?= docs/_static/bench.json

.PHONY: docs docs-plots docs-clean

# Warnings are errors: a broken reference or docstring fails the build.
docs:
	$(SPHINXBUILD) -W -b html docs docs/_build/html

# Figures of docs/benchmarks.rst: run the benchmarks once (with the Python peers) unless BENCH_JSON exists,
# then plot. Delete BENCH_JSON (or pass BENCH_JSON=other.json) to plot another run.
docs-plots:
	@mkdir -p $(dir $(BENCH_JSON))
	@test -f $(BENCH_JSON) || $(PYTHON) -m mpt.bench --peers --format json -o $(BENCH_JSON)
	$(PYTHON) docs/plot_bench.py $(BENCH_JSON) --out docs/_static

docs-clean:
	rm -rf docs/_build

# asv: benchmark history of the last K commits (default 3) and an offline dashboard in asv_bench/html
# (pip install -e ".[bench]" first; asv_bench/README.md). asv-test: its tests (the dashboard one needs chromium).
.PHONY: asv asv-test
asv:
	K="$(K)" PYTHON="$(PYTHON)" bash asv_bench/run.sh

asv-test:
	$(PYTHON) -m pytest -q tests/test_asv_dashboard.py

# Fuzzing: every atheris target in fuzz/ for FUZZ_SECONDS each, one after another (pip install -e ".[fuzz]";
# fuzz/README.md). CI runs it with FUZZ_SECONDS=10.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz:
	$(PYTHON) fuzz/run.py --seconds $(FUZZ_SECONDS)

# Memory safety (docs/memory_safety.rst): the test suite against an ASan + UBSan build, or under valgrind
# memcheck, each in a copy of the checkout under build/ with a venv of its own. ASAN_ARGS / VALGRIND_ARGS are
# pytest arguments (default: the whole suite); ASAN_JOBS=2 spreads the ASan run over two processes.
ASAN_JOBS ?= 1
.PHONY: asan valgrind
asan:
	ASAN_JOBS=$(ASAN_JOBS) bash scripts/asan.sh $(ASAN_ARGS)

valgrind:
	bash scripts/valgrind.sh $(VALGRIND_ARGS)

# Release artifacts (scripts/dist.sh, README.md "Packaging and releases"): the sdist and a wheel built from it,
# repaired by auditwheel into a manylinux tag, twine- and content-checked, each installed into an empty venv
# outside the checkout and tested there. DIST_SMOKE=wheel skips the sdist's install, DIST_SMOKE=none both.
DIST_SMOKE ?= all
.PHONY: dist
## the sdist and a repaired manylinux wheel in dist/, both checked (twine, contents, installs; DIST_SMOKE)
dist:
	PYTHON="$(PYTHON)" DIST_SMOKE="$(DIST_SMOKE)" bash scripts/dist.sh

# `make` alone (or `make help`) lists the targets; the help target and .DEFAULT_GOAL are at the end of this file.
# A line "## text" just above a rule is that target's line in `make help`.

# Documentation targets. The API pages import the compiled package: pip install -e ".[docs]" first.
PYTHON ?= python
SPHINXBUILD ?= sphinx-build
# The benchmark report the figures are drawn from: a dated reference run kept in the repository, drawn by every
# docs build (docs/conf.py); `make docs-plots` replaces it with a fresh run on this machine.
BENCH_JSON ?= docs/bench_reference.json

.PHONY: docs docs-plots docs-clean

# Warnings are errors: a broken reference or docstring fails the build.
## the documentation site in docs/_build/html, figures drawn from BENCH_JSON (pip install -e ".[docs]")
docs:
	MPT_BENCH_REPORT="$(abspath $(BENCH_JSON))" $(SPHINXBUILD) -W -b html docs docs/_build/html

# Figures of docs/benchmarks.rst: run the benchmarks (default set, with the Python peers: a few minutes) into
# BENCH_JSON, replacing the reference run, then plot into docs/_static (git-ignored). Commit the new
# docs/bench_reference.json to make it the reference; BENCH_JSON=other.json keeps the reference untouched.
## re-run the benchmarks into BENCH_JSON (the reference run) and redraw the figures
docs-plots:
	@mkdir -p $(dir $(BENCH_JSON))
	$(PYTHON) -m mpt.bench --peers --format json -o $(BENCH_JSON)
	$(PYTHON) docs/plot_bench.py $(BENCH_JSON) --out docs/_static

## remove docs/_build and the drawn figures
docs-clean:
	rm -rf docs/_build docs/_static/bench_*.png docs/_static/.bench_figures

# asv: benchmark history of the last K commits (default 3) and an offline dashboard in asv_bench/html
# (pip install -e ".[bench]" first; asv_bench/README.md). asv-test: its tests (the dashboard one needs chromium).
.PHONY: asv asv-test
## benchmark the last K commits (default 3) with asv and publish the dashboard (pip install -e ".[bench]")
asv:
	K="$(K)" PYTHON="$(PYTHON)" bash asv_bench/run.sh

## the asv harness's tests (the dashboard one needs Chromium)
asv-test:
	$(PYTHON) -m pytest -q tests/test_asv_dashboard.py

# Fuzzing: every atheris target in fuzz/ for FUZZ_SECONDS each, one after another (pip install -e ".[fuzz]";
# fuzz/README.md). CI runs it with FUZZ_SECONDS=6.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
## every atheris fuzz target for FUZZ_SECONDS each (pip install -e ".[fuzz]")
fuzz:
	$(PYTHON) fuzz/run.py --seconds $(FUZZ_SECONDS)

# Memory safety (docs/memory_safety.rst): the test suite against an ASan + UBSan build, or under valgrind
# memcheck, each in a copy of the checkout under build/ with a venv of its own. ASAN_ARGS / VALGRIND_ARGS are
# pytest arguments (default: the whole suite); ASAN_JOBS=2 spreads the ASan run over two processes.
ASAN_JOBS ?= 1
.PHONY: asan valgrind
## the test suite against an ASan + UBSan build (ASAN_ARGS, ASAN_JOBS)
asan:
	ASAN_JOBS=$(ASAN_JOBS) bash scripts/asan.sh $(ASAN_ARGS)

## the test suite under valgrind memcheck (slow; VALGRIND_ARGS)
valgrind:
	bash scripts/valgrind.sh $(VALGRIND_ARGS)

# The checks besides the tests (CI runs them after the suite): ruff with pyproject.toml's [tool.ruff] rules, then
# mypy's stubtest, which compares every .pyi stub with the compiled module it describes (stubtest_allowlist.txt
# lists what cannot match, each with why; entries a given mypy no longer needs are not errors).
.PHONY: lint
## ruff and the .pyi stubs against the compiled modules (pip install -e ".[lint]")
lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy.stubtest mpt --mypy-config-file pyproject.toml --allowlist stubtest_allowlist.txt \
		--ignore-unused-allowlist

# Release artifacts (scripts/dist.sh, README.md "Packaging and releases"): the sdist and a wheel built from it,
# repaired by auditwheel into a manylinux tag, twine- and content-checked, each installed into an empty venv
# outside the checkout and tested there. DIST_SMOKE=wheel skips the sdist's install, DIST_SMOKE=none both.
DIST_SMOKE ?= all
.PHONY: dist
## the sdist and a repaired manylinux wheel in dist/, both checked (twine, contents, installs; DIST_SMOKE)
dist:
	PYTHON="$(PYTHON)" DIST_SMOKE="$(DIST_SMOKE)" bash scripts/dist.sh

# `make help`: every rule of this Makefile (and of any included one) with its "## " line; the default goal, so a
# bare `make` only prints this.
.PHONY: help
## list the targets (this text)
help:
	@echo "usage: make TARGET [VAR=value ...]"
	@echo "targets:"
	@awk '/^## /{desc = substr($$0, 4); next} /^[A-Za-z0-9_.-]+:([^=]|$$)/ && !/^\./ {sub(/:.*/, ""); printf "  %-14s %s\n", $$0, desc; desc = ""}' $(MAKEFILE_LIST)
	@echo "variables: PYTHON=$(PYTHON) BENCH_JSON=$(BENCH_JSON) FUZZ_SECONDS=$(FUZZ_SECONDS) ASAN_JOBS=$(ASAN_JOBS) K=3"

.DEFAULT_GOAL := help

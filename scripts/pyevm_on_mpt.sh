#!/usr/bin/env bash
# py-evm's own test suite with mpt.compat.pytrie installed (docs/pytrie.rst), and without it for comparison.
#
#   bash scripts/pyevm_on_mpt.sh [FOLDERS...]      default: tests/database
#   PYEVM_COMPARE=1 bash scripts/pyevm_on_mpt.sh tests/database tests/core/vm
#
# Downloads the py-evm sdist (PYEVM_VERSION, default 0.12.1b1: its tests are not in the wheel) into a scratch
# folder, installs py-evm and its test requirements into the active environment (which must have mpt installed
# with the `pytrie` extra), and runs the given folders of py-evm's tests unchanged with
# `pytest -p mpt.compat.pytrie.pytest_plugin` (the plugin calls mpt.compat.pytrie.install()). With
# PYEVM_COMPARE=1 the same folders run first without the plugin, and both runs' times and summaries are printed.
set -euo pipefail
PYEVM_VERSION="${PYEVM_VERSION:-0.12.1b1}"
FOLDERS=("$@")
if [[ ${#FOLDERS[@]} -eq 0 ]]; then FOLDERS=(tests/database); fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pyevm-on-mpt-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

python -m pip install -q "py-evm==$PYEVM_VERSION" "factory-boy>=3.0.0" "pytest-timeout>=2.0.0" "pytest-asyncio>=0.20.0"
python -m pip download -q --no-deps --no-binary :all: -d "$WORK" "py-evm==$PYEVM_VERSION"
tar -C "$WORK" -xzf "$WORK"/py_evm-"$PYEVM_VERSION".tar.gz
cd "$WORK/py_evm-$PYEVM_VERSION"
# py-evm's pytest options minus -v/--showlocals (its pyproject.toml's addopts), plus its 300 s timeout.
ARGS=(-q -p no:cacheprovider -o addopts= --timeout 300)

run() {
    local label="$1"; shift
    local start end
    start=$(date +%s%N)
    set +e
    python -m pytest "${ARGS[@]}" "$@" "${FOLDERS[@]}" 2>&1 | tail -3
    local rc=${PIPESTATUS[0]}
    set -e
    end=$(date +%s%N)
    printf 'py-evm %s %s: %d.%d s (exit %d)\n' "$PYEVM_VERSION" "$label" $(((end - start) / 1000000000)) \
        $(((end - start) / 100000000 % 10)) "$rc"
    return "$rc"
}

if [[ "${PYEVM_COMPARE:-}" == 1 ]]; then
    run "on py-trie (${FOLDERS[*]})"
fi
run "on mpt (${FOLDERS[*]})" -p mpt.compat.pytrie.pytest_plugin

#!/usr/bin/env bash
# `make valgrind`: the test suite under valgrind memcheck, against mpt built with the flags it ships with plus
# debug information (MPT_SANITIZE=valgrind: -g, which release builds drop), so that reports name source lines.
#
#   bash scripts/valgrind.sh                                  # the whole suite (slow: see docs/memory_safety.rst)
#   bash scripts/valgrind.sh tests/test_rlp.py -k decode      # any pytest arguments
#
# Like scripts/asan.sh it builds a copy of the checkout (build/valgrind/src, venv build/valgrind/venv; the
# checkout is not touched). pytest runs with PYTHONMALLOC=malloc so that memcheck sees every Python object as
# its own heap block. CPython's and other libraries' known false reports are suppressed
# (scripts/valgrind-python.supp, none of which names a frame of mpt); any other memcheck error fails the run
# (exit 1). Logs: build/valgrind/logs/. Subprocesses the tests start run natively, not under valgrind. Extra
# valgrind options go in VALGRIND_OPTS (e.g. --track-origins=yes to trace an uninitialised value). Needs valgrind.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/_sandbox.sh"
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

# CPython 3.11 itself trips memcheck's uninitialised-value check at every start (a zero int's unset digit read
# by longobject.c's small-int cache, fixed in 3.12), and the bad pointer it derives spreads reports all over.
# So the run takes a Python >= 3.12 when the machine has one (VALGRIND_PYTHON picks another); with an older
# one only addressability errors are checked (--undef-value-errors=no).
pick_python() {
    local c
    if [ -n "${VALGRIND_PYTHON:-}" ]; then
        echo "$VALGRIND_PYTHON"
        return
    fi
    for c in python3.12 python3.13 python3.14 \
             "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.1[2-9]*/bin/python3; do
        if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
            echo "$c"
            return
        fi
    done
    echo python3
}
PYTHON="$(pick_python)"
UNDEF=()
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    UNDEF=(--undef-value-errors=no)
    echo "valgrind.sh: $("$PYTHON" -V) is older than 3.12: uninitialised values are not checked" >&2
fi
echo "valgrind.sh: interpreter $PYTHON ($("$PYTHON" -V))"

OUT="${MPT_VALGRIND_DIR:-$ROOT/build/valgrind}"
sandbox_build "$OUT" MPT_SANITIZE=valgrind
LOGS="$(cd "$OUT" && pwd)/logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"

export PYTHONMALLOC=malloc
export MPT_SANITIZE=valgrind   # the build switch, also for the tests (scripts/sanitizer_profile.py skips a few)
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
[ "$#" -gt 0 ] || set -- -q
start=$(date +%s)
set +e
(cd "$SRC" && valgrind --tool=memcheck --error-exitcode=99 --suppressions="$HERE/valgrind-python.supp" \
    ${UNDEF[@]+"${UNDEF[@]}"} --num-callers=40 --leak-check=no --gen-suppressions=all --log-file="$LOGS/memcheck.%p.log" \
    "$VPY" -m pytest "${SANDBOX_PYTEST_ARGS[@]}" "$@")
status=$?
set -e
echo "valgrind.sh: tests took $(( $(date +%s) - start )) s (exit $status)"

# Every process's errors count (forked children too, each with its own log), not just the exit status of the
# main one: "==PID== ERROR SUMMARY: N errors from M contexts (suppressed: ...)".
failed=()
for log in "$LOGS"/memcheck.*.log; do
    [ -f "$log" ] || continue
    n=$(awk '/ERROR SUMMARY:/ {print $4; exit}' "$log")
    if [ -n "$n" ] && [ "$n" != 0 ]; then failed+=("$log"); fi
done
{ grep -h "ERROR SUMMARY" "$LOGS"/memcheck.*.log || true; } | sed 's/^==[0-9]*== //' | sort | uniq -c \
    | sed 's/^ */valgrind.sh: /'
if [ "${#failed[@]}" -gt 0 ] || [ "$status" -eq 99 ]; then
    # Each error with its stack, and the suppression that would silence it (for a false report only).
    for log in ${failed[@]+"${failed[@]}"}; do
        echo "===== $log"
        grep -v "^==[0-9]*== *$" "$log" | head -300
    done
    echo "valgrind.sh: FAILED: memcheck errors (logs in $LOGS; known false reports go in" \
         "scripts/valgrind-python.supp, never one with a frame in mpt)" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "valgrind.sh: FAILED: pytest exit $status" >&2
    exit "$status"
fi
echo "valgrind.sh: no memcheck error"

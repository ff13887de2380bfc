#!/usr/bin/env bash
# `make asan`: the test suite against an AddressSanitizer + UndefinedBehaviorSanitizer build of mpt.
#
#   bash scripts/asan.sh                      # the whole suite
#   bash scripts/asan.sh -m "not slow"        # any pytest arguments: a marker, files, -k, -x ...
#   bash scripts/asan.sh tests/test_rlp.py tests/test_hostile_input.py
#   ASAN_JOBS=2 bash scripts/asan.sh -q         # tests spread over 2 processes (pytest-xdist)
#
# The checkout is not touched: its files (tracked and untracked-but-not-ignored, as in the working tree) are
# copied to build/asan/src ($MPT_ASAN_DIR/src) and built there in a virtual environment of its own
# (build/asan/venv, kept between runs) with MPT_DEBUG=1 (-O0 -g) and MPT_SANITIZE=address,undefined (setup.py).
# pytest runs in the copy with the sanitizer runtimes preloaded into the (uninstrumented) interpreter and
# PYTHONMALLOC=malloc, so that every Python object's buffer is an ASan-checked heap block. Reports of every
# process, subprocesses the tests start included, go to build/asan/logs/; any report fails the run, whatever
# pytest said. Needs gcc and its sanitizer runtimes. docs/memory_safety.rst tells what it checks and found.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/_sandbox.sh"

OUT="${MPT_ASAN_DIR:-$ROOT/build/asan}"
SANITIZE="${MPT_SANITIZE:-address,undefined}"
sandbox_build "$OUT" MPT_DEBUG=1 MPT_SANITIZE="$SANITIZE"
LOGS="$(cd "$OUT" && pwd)/logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"

# The runtimes the build linked against, from the compiler CPython (and so setuptools) uses.
CC_FOR_RUNTIME="$("$VPY" -c 'import sysconfig; print((sysconfig.get_config_var("CC") or "gcc").split()[0])')"
PRELOAD=""
preload() {
    local path
    path="$("$CC_FOR_RUNTIME" -print-file-name="$1")"
    [ -f "$path" ] || { echo "asan.sh: $CC_FOR_RUNTIME has no $1 (install its sanitizer runtimes)" >&2; exit 2; }
    PRELOAD="${PRELOAD:+$PRELOAD:}$path"
}
case ",$SANITIZE," in *,address,*) preload libasan.so ;; esac
case ",$SANITIZE," in *,undefined,*) preload libubsan.so ;; esac

# detect_leaks=0: CPython does not free everything at exit. allocator_may_return_null=1: a huge allocation
# raises MemoryError as with the plain allocator instead of aborting. log_path: every process's report lands in
# $LOGS, also one from a subprocess whose stderr a test captures.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1:detect_stack_use_after_return=1:strict_string_checks=1:halt_on_error=1}:log_path=$LOGS/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:report_error_type=1}:log_path=$LOGS/ubsan"
export PYTHONMALLOC=malloc
export PYTHONFAULTHANDLER=1
export MPT_SANITIZE="$SANITIZE"   # the build switch, also for the tests (scripts/sanitizer_profile.py skips a few)
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"

[ "$#" -gt 0 ] || set -- -q
# ASAN_JOBS=N (N > 1) spreads the tests over N processes with pytest-xdist, installed into the sandbox's venv.
JOBS=()
if [ "${ASAN_JOBS:-1}" != 1 ]; then
    "$VPY" -m pip install -q pytest-xdist 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }
    JOBS=(-n "$ASAN_JOBS")
fi
start=$(date +%s)
set +e
(cd "$SRC" && LD_PRELOAD="$PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}" "$VPY" -m pytest "${SANDBOX_PYTEST_ARGS[@]}" ${JOBS[@]+"${JOBS[@]}"} "$@")
status=$?
set -e
echo "asan.sh: tests took $(( $(date +%s) - start )) s (pytest exit $status)"

reports=$(find "$LOGS" -type f | sort)
if [ -n "$reports" ]; then
    for f in $reports; do echo "===== $f"; cat "$f"; done
    echo "asan.sh: FAILED: sanitizer reports above (kept in $LOGS)" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "asan.sh: FAILED: pytest exit $status" >&2
    exit "$status"
fi
echo "asan.sh: no sanitizer report"

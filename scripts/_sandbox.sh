# Sourced by scripts/asan.sh and scripts/valgrind.sh: a private copy of the checkout, built in a virtual
# environment of its own, so that a checking build never touches the developer's tree or .venv.
#
#   sandbox_build OUT [VAR=value ...]   copy the checkout to OUT/src, build it there (pip install -e ".[test]"
#                                       in OUT/venv, kept between runs) with the given build variables
# Afterwards SRC is the copy and VPY its interpreter.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

sandbox_build() {
    local out="$1" start
    shift
    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    SRC="$out/src"
    rm -rf "$SRC"
    mkdir -p "$SRC"
    if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked and untracked-but-not-ignored files as they are in the working tree (deleted ones skipped).
        (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
            | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
            | tar --null -T - -cf -) | tar -C "$SRC" -xf -
    else
        (cd "$ROOT" && tar -cf - --exclude=./.git --exclude=./build --exclude=./dist --exclude='./.venv*' \
            --exclude='*.so' --exclude='*.o' --exclude=__pycache__ --exclude=.hypothesis --exclude=./docs/_build \
            --exclude=./asv_bench/.asv --exclude=./asv_bench/html --exclude=./asv_bench/results .) \
            | tar -C "$SRC" -xf -
    fi
    # Cython's generated C (a .c beside its .pyx) is made anew with this build's settings; built modules go.
    find "$SRC/mpt" -name '*.pyx' | while IFS= read -r pyx; do rm -f "${pyx%.pyx}.c"; done
    find "$SRC/mpt" \( -name '*.so' -o -name '*.pyd' \) -delete
    # tests/conftest.py looks for the project's shared vectors beside the checkout: the copy sees the same ones.
    if [ -d "$ROOT/../shared" ] && [ ! -e "$out/shared" ]; then
        ln -s "$(cd "$ROOT/../shared" && pwd)" "$out/shared"
    fi
    # The kept virtual environment is made anew when it was made with another interpreter.
    local want have
    want="$("$PYTHON" -c 'import sys; print(sys.version)')"
    have="$("$out/venv/bin/python" -c 'import sys; print(sys.version)' 2>/dev/null || true)"
    if [ "$want" != "$have" ]; then
        rm -rf "$out/venv"
        "$PYTHON" -m venv "$out/venv"
    fi
    VPY="$out/venv/bin/python"
    start=$(date +%s)
    echo "$(basename "$0"): building $SRC${*:+ with $*} ..."
    # (pip's "Location ... is ignored" lines are noise from a local-index configuration some machines have.)
    (cd "$SRC" && env "$@" "$VPY" -m pip install -q -e ".[test]" 2>&1) \
        | { grep -v "^WARNING: Location '.*' is ignored" || true; }
    echo "$(basename "$0"): built in $(( $(date +%s) - start )) s"
}

# sanitizer_profile (a pytest plugin beside this file) lifts Hypothesis' deadlines, which slow checked code would
# miss, and skips the few tests that measure the process rather than test mpt (its SKIP says which and why).
SANDBOX_PYTEST_ARGS=(-p no:cacheprovider -p sanitizer_profile)

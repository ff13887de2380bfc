#!/usr/bin/env bash
# Benchmark the last K commits with asv and publish an offline dashboard.
#
#   bash asv_bench/run.sh                      # K=3: HEAD and the two commits before it (first-parent)
#   K=10 bash asv_bench/run.sh                 # more history
#   COMMITS="abc123 def456" bash asv_bench/run.sh
#   bash asv_bench/run.sh -b 'HashFixedSize\.' # anything after the options goes to `asv run` (-b regex, --quick)
#
# How it works (offline, except the very first run on a machine, which fetches the dashboard's JS/CSS from the npm
# registry in step 4 and caches it outside the repository, ~/.cache/mpt-engine/asv-assets):
#   asv's own per-commit builds (a virtualenv per commit, Cython from PyPI) are not used. With
#   `asv run --python=same` asv benchmarks whatever `mpt` the benchmark processes import, and
#   `--set-commit-hash <sha>` files the results under that commit. So for each commit this script
#     1. exports the commit (`git archive`: read-only, no worktree, no checkout) to
#        asv_bench/.asv/builds/<python>/<sha> and builds its extensions in place
#        (`python setup.py build_ext --inplace`); the tree stays as a cache, so a later run only builds new commits;
#     2. replaces that tree's mpt/bench (the measuring harness: case registry, workloads, allocator hook) with
#        the current checkout's, whose allocator hook is compiled once on its own: every commit is timed on the
#        same workloads by the same code, and only the engine differs;
#     3. runs `asv run --python=same --set-commit-hash <sha>` with ASV_PYTHONPATH=<that tree>, from a copy of the
#        configuration whose "branches" is that commit, so that asv's log names the commit it measures ("For mpt
#        commit <sha>", not the checked-out HEAD, which is all asv knows otherwise); asv drops
#        PYTHONPATH from the benchmark processes' environment and puts ASV_PYTHONPATH there instead). The
#        benchmark module refuses to run unless mpt really comes from that tree (MPT_ASV_EXPECT_DIR).
#   4. `asv publish` writes the HTML; asv_bench/offline_assets.py then replaces the CDN <script>/<link> tags of
#      the published pages by local copies taken from npm packages, so the dashboard needs no internet.
#   View it with `python -m http.server -d asv_bench/html 8080 --bind 127.0.0.1` (or `asv preview`), not as a
#   file:// URL: the page loads its data with XHR.
#
# Environment: K (default 3), COMMITS (explicit list, oldest first; overrides K), PYTHON (default python3; needs
# asv, Cython and setuptools: pip install -e '.[bench]'), ASV_CONFIG (default asv_bench/asv.conf.json),
# MPT_ASV_BUILD_ROOT (default asv_bench/.asv/builds; one subdirectory per interpreter), JOBS (compile jobs,
# default nproc), MPT_ASV_ASSETS_CACHE (npm tarballs, default $XDG_CACHE_HOME/mpt-engine/asv-assets, i.e.
# ~/.cache/mpt-engine/asv-assets), MPT_ASV_MACHINE (the dashboard's machine name, default: the CPU model and
# core count, e.g. AMD-EPYC-2cores), MPT_ASV_PREBUILT (a folder holding an in-place build of HEAD's sources, e.g.
# the checkout after `pip install -e .`: HEAD's tree and the harness take their compiled modules from there
# instead of compiling them again; the test suite uses it so that it never compiles the package a second time).
# Exit status: non-zero when a step fails or HEAD's benchmarks fail; an older commit that does not build or whose
# benchmarks fail only gets a warning (its points are missing from the graphs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
K="${K:-3}"
PYTHON="${PYTHON:-python3}"
CONF_IN="${ASV_CONFIG:-$ROOT/asv_bench/asv.conf.json}"
CONF="$(cd "$(dirname "$CONF_IN")" && pwd)/$(basename "$CONF_IN")"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

say() { printf '\n=== %s\n' "$*" >&2; }
warn() { printf 'run.sh: warning: %s\n' "$*" >&2; }
asv() { "$PYTHON" -m asv "$@"; }

if ! "$PYTHON" -c 'import asv, Cython, setuptools' 2>/dev/null; then
    echo "run.sh: $PYTHON lacks asv, Cython or setuptools; install them with: $PYTHON -m pip install -e '.[bench]'" >&2
    exit 2
fi
cd "$ROOT"
# Compiled modules load only into the interpreter they were built for: one build cache per interpreter.
PYTAG="$("$PYTHON" -c 'import sys; print(sys.implementation.cache_tag)')"
BUILD_ROOT="${MPT_ASV_BUILD_ROOT:-$ROOT/asv_bench/.asv/builds}/$PYTAG"
mkdir -p "$BUILD_ROOT"

if [[ -n "${COMMITS:-}" ]]; then
    read -r -a SHAS <<<"$(for c in $COMMITS; do git rev-parse --verify "$c^{commit}"; done | tr '\n' ' ')"
else
    read -r -a SHAS <<<"$(git rev-list --first-parent -n "$K" HEAD | tac | tr '\n' ' ')"
fi
HEAD_SHA="$(git rev-parse HEAD)"

# The dashboard's machine selector shows this name. asv's default is the host name, which on a VM or container is
# a throwaway id (and the interpreter shows up as a path): name the machine by what it is instead, so results of
# every session on the same kind of machine line up, and a different CPU is a different line.
MACHINE="${MPT_ASV_MACHINE:-$("$PYTHON" - <<'PY'
import os, platform, re
model = platform.processor() or platform.machine()
try:
    with open("/proc/cpuinfo") as f:
        model = next(line.split(":", 1)[1] for line in f if line.lower().startswith("model name"))
except (OSError, StopIteration):
    pass
model = re.sub(r"\((R|TM)\)|\bCPU\b|\b\d+-Core Processor\b|\bProcessor\b", " ", model)
print(re.sub(r"[^A-Za-z0-9.]+", "-", "%s %dcores" % (model.strip(), os.cpu_count() or 1)).strip("-"))
PY
)}"
say "asv machine --machine $MACHINE"
asv machine --yes --machine "$MACHINE" --config "$CONF" >&2

# --- the harness: the current checkout's mpt/bench, its allocator hook compiled on its own --------------------------
# The hand-written Keccak (not binding.c, which Cython generates next to it in an in-place build).
KECCAK_FILES=(mpt/core/_keccak/keccak.c mpt/core/_keccak/keccak_lanes.c mpt/core/_keccak/*.h mpt/core/_keccak/*.inc
              mpt/core/_keccak/keccak.pxd)
HARNESS_FILES=(mpt/bench/*.py mpt/bench/cases/*.py mpt/bench/*.json mpt/bench/_alloc.pyx "${KECCAK_FILES[@]}")
HARNESS="$BUILD_ROOT/harness-$(cat "${HARNESS_FILES[@]}" | sha256sum | cut -c1-16)"
PREBUILT="${MPT_ASV_PREBUILT:-}"
if [[ -n "$PREBUILT" ]] && ! compgen -G "$PREBUILT/mpt/bench/_alloc*.so" >/dev/null; then
    echo "run.sh: MPT_ASV_PREBUILT=$PREBUILT holds no in-place build (no mpt/bench/_alloc*.so)" >&2
    exit 2
fi
if [[ ! -f "$HARNESS/.built" && -n "$PREBUILT" ]]; then
    say "the harness's allocator hook from $PREBUILT (not compiled)"
    rm -rf "$HARNESS" && mkdir -p "$HARNESS/mpt/bench/cases"
    cp mpt/bench/*.py mpt/bench/*.json "$PREBUILT"/mpt/bench/_alloc*.so "$HARNESS/mpt/bench/"
    cp mpt/bench/cases/*.py "$HARNESS/mpt/bench/cases/"
    touch "$HARNESS/mpt/__init__.py" "$HARNESS/.built"
elif [[ ! -f "$HARNESS/.built" ]]; then
    say "building the harness's allocator hook ($HARNESS)"
    rm -rf "$HARNESS" && mkdir -p "$HARNESS/mpt/bench/cases" "$HARNESS/mpt/core/_keccak"
    cp mpt/bench/*.py mpt/bench/*.json mpt/bench/_alloc.pyx "$HARNESS/mpt/bench/"
    cp mpt/bench/cases/*.py "$HARNESS/mpt/bench/cases/"
    cp "${KECCAK_FILES[@]}" "$HARNESS/mpt/core/_keccak/"
    touch "$HARNESS/mpt/__init__.py" "$HARNESS/mpt/core/__init__.py" "$HARNESS/mpt/core/_keccak/__init__.py"
    # setup.py's flags; the Keccak C sources are linked into the module, so the .so works in any commit's tree.
    cat >"$HARNESS/build_alloc.py" <<'PY'
from Cython.Build import cythonize
from setuptools import Extension, setup

ext = Extension("mpt.bench._alloc", ["mpt/bench/_alloc.pyx", "mpt/core/_keccak/keccak.c",
                                     "mpt/core/_keccak/keccak_lanes.c"],
                include_dirs=["mpt/core/_keccak"],
                extra_compile_args=["-O3", "-fno-strict-aliasing"])
setup(name="mpt-bench-harness", ext_modules=cythonize([ext], compiler_directives={"language_level": "3"}))
PY
    if ! (cd "$HARNESS" && "$PYTHON" build_alloc.py build_ext --inplace >"$HARNESS.log" 2>&1); then
        tail -n 30 "$HARNESS.log" >&2
        echo "run.sh: the allocator hook does not build (log: $HARNESS.log)" >&2
        exit 1
    fi
    rm -rf "$HARNESS/build" "$HARNESS/mpt/bench/_alloc.c"
    touch "$HARNESS/.built"
fi

# --- one asv run per commit, oldest first ---------------------------------------------------------------------------
status=0
for sha in "${SHAS[@]}"; do
    tree="$BUILD_ROOT/$sha"
    subject="$(git log -1 --format='%h %s' "$sha" | cut -c1-70)"
    if [[ ! -f "$tree/.built" && -n "$PREBUILT" && "$sha" == "$HEAD_SHA" ]]; then
        say "$subject: compiled modules from $PREBUILT (not compiled)"
        rm -rf "$tree" && mkdir -p "$tree"
        git archive "$sha" | tar -x -C "$tree"
        (cd "$PREBUILT" && find mpt -name '*.so' -print0) | (cd "$PREBUILT" && xargs -0 cp --parents -t "$tree")
        touch "$tree/.built"
    fi
    if [[ ! -f "$tree/.built" ]]; then
        say "building $subject"
        started=$SECONDS
        rm -rf "$tree" && mkdir -p "$tree"
        git archive "$sha" | tar -x -C "$tree"
        if ! (cd "$tree" && "$PYTHON" setup.py build_ext --inplace -j "$JOBS" >"$tree.log" 2>&1); then
            tail -n 30 "$tree.log" >&2
            if [[ "$sha" == "$HEAD_SHA" ]]; then echo "run.sh: HEAD does not build (log: $tree.log)" >&2; exit 1; fi
            warn "$subject does not build (log: $tree.log); skipped"
            rm -rf "$tree"
            continue
        fi
        rm -rf "$tree/build"
        touch "$tree/.built"
        say "$subject: built in $((SECONDS - started)) s"
    fi
    # The current checkout's measuring harness over the commit's own mpt/bench.
    rm -rf "$tree/mpt/bench"
    cp -r "$HARNESS/mpt/bench" "$tree/mpt/bench"

    say "asv run $subject"
    started=$SECONDS
    # asv's log names the commits of the configuration's "branches" (HEAD) whatever --set-commit-hash says: a copy
    # whose branch is this commit (paths made absolute, as the copy lives elsewhere) makes it name the right one.
    run_conf="$BUILD_ROOT/asv.conf.$sha.json"
    "$PYTHON" - "$CONF" "$sha" "$run_conf" <<'PY'
import json, os, sys
from asv import util
conf_path, sha, out = sys.argv[1:]
conf = util.load_json(conf_path, js_comments=True)
base = os.path.dirname(os.path.abspath(conf_path))
defaults = {"repo": ".", "benchmark_dir": "benchmarks", "env_dir": "env", "results_dir": "results", "html_dir": "html"}
for key, default in defaults.items():
    conf[key] = os.path.normpath(os.path.join(base, conf.get(key, default)))
conf["branches"] = [sha]
with open(out, "w") as f:
    json.dump(conf, f, indent=1)
PY
    rc=0
    ASV_PYTHONPATH="$tree" MPT_ASV_EXPECT_DIR="$tree/mpt" \
        asv run --python=same --machine "$MACHINE" --set-commit-hash "$sha" --config "$run_conf" --show-stderr \
        "$@" >&2 || rc=$?
    say "$subject: benchmarked in $((SECONDS - started)) s"
    if [[ $rc -ne 0 ]]; then
        if [[ "$sha" == "$HEAD_SHA" ]]; then
            warn "asv run failed for HEAD ($subject, exit $rc)"
            status=1
        else
            warn "asv run failed for $subject (exit $rc)"
        fi
    fi
done

# `asv run --python=same` records the interpreter's *path* as the "python" parameter, and the dashboard then
# labels every graph with it (python-_tmp_..._bin_python3): a different path for every clone or venv, each its
# own line. Record the version instead, as asv's own virtualenv builds do ("3.11"), so the dashboard's selectors
# are the machine and the Python version.
RESULTS_DIR="$("$PYTHON" -c 'import os, sys
from asv.config import Config
print(os.path.join(os.path.dirname(sys.argv[1]), Config.load(sys.argv[1]).results_dir))' "$CONF")"
"$PYTHON" - "$RESULTS_DIR/$MACHINE" <<'PY'
import glob, json, os, sys
version = "%d.%d" % sys.version_info[:2]
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    if os.path.basename(path) == "machine.json":
        continue
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("params", {}).get("python") in (None, version):
        continue
    doc["params"]["python"] = doc["python"] = version
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)
PY

say "asv publish"
asv publish --config "$CONF" >&2
HTML_DIR="$("$PYTHON" -c 'import os, sys
from asv.config import Config
print(os.path.join(os.path.dirname(sys.argv[1]), Config.load(sys.argv[1]).html_dir))' "$CONF")"

say "offline dashboard"
"$PYTHON" "$ROOT/asv_bench/offline_assets.py" "$HTML_DIR" >&2     # MPT_ASV_ASSETS_CACHE is read there
"$PYTHON" "$ROOT/asv_bench/dashboard_defaults.py" "$HTML_DIR" >&2  # log y axis for parameterized graphs

echo "dashboard: $HTML_DIR (view: $PYTHON -m http.server -d $HTML_DIR 8080 --bind 127.0.0.1)" >&2
exit $status

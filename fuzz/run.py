"""Run the atheris fuzz targets one after another, each for a fixed time.

    python fuzz/run.py                         # every target, 60 s each
    python fuzz/run.py --seconds 600 proof     # one target for ten minutes
    python fuzz/run.py --seconds 10            # the CI smoke run (about 75 s in all)

Each target reads its committed seeds in fuzz/corpus/<target>/ but writes what it discovers to a scratch
corpus (a temporary directory, or --work-dir to keep it between runs), so the committed corpus only changes
when someone regenerates it on purpose. A failing input is written to ./fuzz-artifacts/ (--artifacts) and the
run ends with exit status 1; fuzz/README.md says how to turn it into a regression test. Extra arguments after ``--``
go to libFuzzer unchanged (e.g. ``-- -jobs=2``).
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(FUZZ_DIR))
from fuzz_support import TARGETS  # noqa: E402  (the one list of harnesses; importing it needs no atheris)
# One input taking longer than this is a failure: the contract promises time linear in the input, and no
# input within the targets' max_len comes anywhere near it.
INPUT_TIMEOUT_SECONDS = 10
# A declared 2**64 length must not allocate: a run whose memory grows past this fails.
RSS_LIMIT_MB = 2048


def run_target(target: str, seconds: int, scratch: Path, artifacts: Path, extra: list) -> int:
    scratch.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, str(FUZZ_DIR / ("fuzz_%s.py" % target)),
        # libFuzzer writes new inputs to the first corpus directory only; the seeds are read, never written.
        str(scratch), str(FUZZ_DIR / "corpus" / target),
        "-max_total_time=%d" % seconds,
        "-timeout=%d" % INPUT_TIMEOUT_SECONDS,
        "-rss_limit_mb=%d" % RSS_LIMIT_MB,
        "-artifact_prefix=%s/%s-" % (artifacts, target),
        "-print_final_stats=1",
    ] + extra
    print("== %s: %d s" % (target, seconds), flush=True)
    started = time.monotonic()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    elapsed = time.monotonic() - started
    if result.returncode == 0:
        stats = dict(line[len("stat::"):].split(":", 1) for line in result.stdout.splitlines()
                     if line.startswith("stat::"))
        print("   ok in %.0f s: %s inputs, %s new corpus entries" % (
            elapsed, stats.get("number_of_executed_units", "?").strip(), stats.get("new_units_added", "?").strip()),
            flush=True)
    else:
        # The whole log: the traceback and the reproducer's path are in it.
        print(result.stdout, flush=True)
        print("   FAILED (exit %d) after %.0f s; reproducer in %s" % (result.returncode, elapsed, artifacts))
    return result.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", metavar="target",
                        help="targets to run (default all): %s" % ", ".join(TARGETS))
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", 60)),
                        help="fuzzing time per target (default $FUZZ_SECONDS or 60)")
    parser.add_argument("--work-dir", type=Path,
                        help="keep the scratch corpus here between runs (default: a temporary directory)")
    parser.add_argument("--artifacts", type=Path, default=Path("fuzz-artifacts"),
                        help="where failing inputs go (default ./fuzz-artifacts, removed again if empty)")
    parser.add_argument("--keep-going", action="store_true", help="run the remaining targets after a failure")
    args, extra = parser.parse_known_args()
    extra = [arg for arg in extra if arg != "--"]
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error("unknown target %s (choose from %s)" % (", ".join(unknown), ", ".join(TARGETS)))
    if importlib.util.find_spec("atheris") is None:
        print('atheris is not installed: pip install -e ".[fuzz]"', file=sys.stderr)
        return 2
    artifacts = args.artifacts.resolve()
    artifacts.mkdir(parents=True, exist_ok=True)
    failed = []
    with tempfile.TemporaryDirectory(prefix="mpt-fuzz-") as temporary:
        work_dir = args.work_dir or Path(temporary)
        for target in args.targets or TARGETS:
            if run_target(target, args.seconds, work_dir / "corpus" / target, artifacts, extra) != 0:
                failed.append(target)
                if not args.keep_going:
                    break
    if not any(artifacts.iterdir()):
        artifacts.rmdir()
    if failed:
        print("failed: %s" % ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

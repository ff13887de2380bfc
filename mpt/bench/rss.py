"""Peak memory of one benchmark op, measured in a fresh interpreter (``python -m mpt.bench.rss CASE``).

A process's peak resident set (``ru_maxrss``) only ever grows, so it is measured in a child that runs the case's
setup, notes its resident set (the input it holds), runs ``op`` once and reports the peak. Linux and macOS.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from typing import Dict


def _rss_now() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _peak() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024      # bytes on macOS, KiB on Linux


def measure(name: str) -> Dict[str, int]:
    """In this process: setup of case ``name``, then one op; the RSS before it and the peak."""
    from mpt.bench.cases import get

    case = get(name)
    state = case.setup()
    before = _rss_now()
    case.op(state)
    return {"rss_before_op": before, "peak_rss": _peak()}


def measure_in_subprocess(name: str, timeout: float = 1800.0) -> Dict[str, int]:
    out = subprocess.run([sys.executable, "-m", "mpt.bench.rss", name], capture_output=True, text=True,
                         timeout=timeout, env=dict(os.environ))
    if out.returncode != 0:
        raise RuntimeError("measuring the peak RSS of %s failed: %s" % (name, out.stderr.strip()[-2000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1])))

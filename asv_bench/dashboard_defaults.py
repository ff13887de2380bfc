#!/usr/bin/env python3
"""Defaults of the published asv dashboard that asv has no setting for.

A parameterized benchmark (HashFixedSize over 10 ... 100K accounts, one line per size) opens with a logarithmic
y axis: on asv's linear default the sizes 10, 100 and 1K lie flat on zero beneath 100K. asv keeps the axis choice
in the page's URL (``y-axis-scale=log``) but has no per-benchmark default, so this script patches the published
copy of asv's ``graphdisplay.js`` (never asv itself): when the URL names no scale and the benchmark has
parameters, the log scale is chosen; switching it off in the page records ``y-axis-scale=linear`` in the URL
instead of nothing, so that the choice sticks. Run after ``asv publish`` (asv_bench/run.sh does).

Usage: ``python asv_bench/dashboard_defaults.py HTML_DIR``. Python standard library only. A dashboard of an asv
whose script no longer has the lines patched here fails with a message naming the line.
"""

from __future__ import annotations

import os
import sys
from typing import List, Tuple

MARKER = "/* mpt: log y axis for parameterized benchmarks */"

# (asv's line, what replaces it); each must occur exactly once in graphdisplay.js (asv 0.6).
PATCHES: List[Tuple[str, str]] = [
    (
        "        if (params['y-axis-scale']) {\n            if (params['y-axis-scale'][0] === 'log') {",
        "        " + MARKER + "\n"
        "        var mpt_benchmark = $.asv.main_json.benchmarks[benchmark];\n"
        "        if (!params['y-axis-scale'] && mpt_benchmark && mpt_benchmark.params && mpt_benchmark.params.length > 0) {\n"
        "            params['y-axis-scale'] = ['log'];\n"
        "        }\n"
        "        if (params['y-axis-scale'] && params['y-axis-scale'][0] === 'linear') {\n"
        "            log_scale = false;\n"
        "            $('#log-scale').removeClass('active');\n"
        "        }\n"
        "        if (params['y-axis-scale']) {\n            if (params['y-axis-scale'][0] === 'log') {",
    ),
    (
        "update_state_url({'y-axis-scale': log_scale ? ['log']: []});",
        "update_state_url({'y-axis-scale': log_scale ? ['log']: ['linear']});",
    ),
]


class PatchError(RuntimeError):
    pass


def patch_source(text: str) -> str:
    """graphdisplay.js with the patches applied (unchanged when they already are)."""
    if MARKER in text:
        return text
    for old, new in PATCHES:
        if text.count(old) != 1:
            raise PatchError("graphdisplay.js: expected this line once, found it %d times: %r"
                             % (text.count(old), old.strip().splitlines()[0]))
        text = text.replace(old, new)
    return text


def patch_dashboard(html_dir: str) -> str:
    path = os.path.join(html_dir, "graphdisplay.js")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(patch_source(text))
    os.replace(path + ".tmp", path)
    return path


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python asv_bench/dashboard_defaults.py HTML_DIR", file=sys.stderr)
        return 2
    try:
        path = patch_dashboard(args[0])
    except (OSError, PatchError) as e:
        print("dashboard_defaults: error: %s" % e, file=sys.stderr)
        return 1
    print("dashboard_defaults: parameterized graphs open on a log y axis (%s)" % path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

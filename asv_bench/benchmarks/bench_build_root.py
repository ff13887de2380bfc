"""Peak memory of the BuildRoot cases (their times come from bench_trie's generated BuildRoot class).

``track_peak_rss`` runs one op of the registry case in a fresh interpreter (:mod:`mpt.bench.rss`) and records its
peak resident set in MiB; ``track_rss_before_op`` is what the input alone held there. Older commits without
``build_root`` are skipped.
"""
from mpt.bench import cases as _cases
from mpt.bench.rss import measure_in_subprocess


def _rss_cases():
    return [c.name for c in _cases.CASES.values() if c.peak_rss]


class BuildRootMemory:
    params = _rss_cases() or ["none"]
    param_names = ["case"]
    timeout = 1800.0
    number = 1
    repeat = 1
    unit = "MiB"

    def setup(self, name):
        if name == "none":
            raise NotImplementedError("no BuildRoot case in this registry")
        try:
            from mpt import build_root  # noqa: F401 - the public name, before and after the package layout
        except ImportError as e:
            raise NotImplementedError(str(e)) from None
        self._measured = measure_in_subprocess(name)

    def track_peak_rss(self, name):
        return self._measured["peak_rss"] / (1 << 20)

    track_peak_rss.unit = "MiB"

    def track_rss_before_op(self, name):
        return self._measured["rss_before_op"] / (1 << 20)

    track_rss_before_op.unit = "MiB"

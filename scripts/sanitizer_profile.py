"""pytest plugin for the checked runs: scripts/asan.sh and scripts/valgrind.sh load it (``-p sanitizer_profile``).

Code under AddressSanitizer or valgrind runs 5 to 50 times slower and its process looks nothing like a normal
one (shadow memory, quarantined frees, red zones), so:

- Hypothesis' per-example deadline and its too-slow health checks are lifted (tests that set these themselves
  keep their own settings; the number of examples is unchanged);
- the tests in SKIP, which measure the process rather than check mpt's memory accesses, are skipped with their
  reason (a test that has gone or been renamed is simply not matched).
"""
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("sanitizer", deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile("sanitizer")

_RSS = "measures the resident set, which ASan's shadow memory and quarantine or valgrind's own heap dominate"

SKIP = {
    # Builds the checkout's git HEAD without checking flags, and drives Chromium: nothing checked is tested.
    "tests/test_asv_dashboard.py::test_offline_dashboard_renders_hash_graph":
        "builds git HEAD without the checking flags (and the copy has no .git)",
    "tests/test_leaks.py::test_a_million_mixed_operations_keep_rss_flat": _RSS,
    "tests/test_leaks.py::test_a_hasher_grown_by_a_huge_node_gives_the_memory_back": _RSS,
    # Hundreds of forks and kills against a time budget: it measures LMDB's durability, not memory safety, and
    # a checked build forks and starts too slowly for the budget.
    "tests/test_crash.py::test_sigkill_during_commits_keeps_the_head_readable":
        "times hundreds of fork/kill cycles (durability, not memory safety)",
}


def pytest_collection_modifyitems(config, items):
    tool = os.environ.get("MPT_SANITIZE", "a checked build")
    for item in items:
        reason = SKIP.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason="under %s: %s" % (tool, reason)))

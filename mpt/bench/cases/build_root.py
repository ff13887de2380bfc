"""Roots at scale (mpt.build_root, mpt.dask): make_accounts pairs in a shuffled order, on threads or a cluster.

The BuildRoot cases also report the peak resident set of one op, measured in a fresh interpreter
(:mod:`mpt.bench.rss`), since bounded memory is half of what build_root promises.
"""

from __future__ import annotations

from functools import lru_cache
from typing import List

from mpt.bench.registry import Case, expect
from mpt.bench.workloads import ACCOUNT_ROOTS, shuffled_account_pairs


def _build_root(label: str, n: int, workers: int) -> Case:
    name = "BuildRoot/%s/workers=%d" % (label, workers)

    def setup():
        return shuffled_account_pairs(n)

    def op(pairs):
        from mpt import build_root

        return build_root(pairs, workers=workers)

    def check(pairs):
        expect(name + " root", op(pairs), ACCOUNT_ROOTS[n])

    return Case(
        name=name, group="BuildRoot", size=n, setup=setup, op=op, check=check, small=False, peak_rss=True,
        doc="build_root of make_accounts(%d) pairs in shuffled order on %d thread(s)" % (n, workers),
    )


@lru_cache(maxsize=None)
def _dask_client():
    # One 2-process LocalCluster per benchmark process, kept until it exits.
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=40)
    return Client(cluster)


def _build_root_dask(label: str, n: int) -> Case:
    name = "BuildRootDask/%s" % label

    def setup():
        import dask.bag as db
        from dask.delayed import delayed

        # The partitions live on the workers already, as they would when read from Parquet there: a bag made with
        # from_sequence would embed 1M pairs in the graph, and dask's graph conversion of them alone takes seconds.
        # They travel pickled (distributed serializes a list of tuples item by item: minutes) and are unpickled
        # and kept in the workers' memory by persist().
        import pickle

        client = _dask_client()
        pairs = shuffled_account_pairs(n)
        step = -(-n // 8)
        blobs = client.scatter([pickle.dumps(list(pairs[i:i + step]), protocol=5) for i in range(0, n, step)],
                               hash=False)
        bag = db.from_delayed([delayed(pickle.loads)(blob) for blob in blobs]).persist()
        return bag, client

    def op(state):
        try:
            from mpt.ethereum.dask import build_root_dask
        except ImportError:         # a commit before the package layout (asv history)
            from mpt.dask import build_root_dask

        bag, client = state
        return build_root_dask(bag, client=client)

    def check(state):
        expect(name + " root", op(state), ACCOUNT_ROOTS[n])

    return Case(
        name=name, group="BuildRootDask", size=n, setup=setup, op=op, check=check, small=False,
        doc="build_root_dask of make_accounts(%d) pairs (a bag of 8 partitions scattered to the workers) on a "
            "2-worker LocalCluster" % n,
    )


def cases() -> List[Case]:
    """build_root on 1 and 2 threads at 100K and 1M accounts, then build_root_dask at 1M."""
    out = [_build_root(label, n, w) for label, n in (("100K", 100000), ("1M", 1000000)) for w in (1, 2)]
    out.append(_build_root_dask("1M", 1000000))
    return out

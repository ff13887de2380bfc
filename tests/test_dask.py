"""mpt.dask on a real 2-process LocalCluster: bag, dataframe (Parquet) and build_root(executor=client)."""
import random

import pytest

from mpt import build_root, keccak256

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
pytest.importorskip("pandas")

from mpt.ethereum.dask import build_root_dask  # noqa: E402

from conftest import root_of  # noqa: E402


@pytest.fixture(scope="module")
def client():
    # Started inside the test, torn down at the end: two worker processes, one thread each.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _pairs(n, seed):
    rng = random.Random(seed)
    pairs = [(keccak256(rng.randbytes(8)), rng.randbytes(rng.choice([1, 20, 80]))) for _ in range(n)]
    pairs += [(pairs[5][0], b"updated"), (pairs[9][0], b""), (b"\x01", b"short key")]     # dup, delete, short
    return pairs


@pytest.mark.slow
def test_bag_dataframe_and_executor_give_trie_root(client, tmp_path):
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd

    pairs = _pairs(3000, 1)
    want = root_of(pairs)
    bag = db.from_sequence(pairs, npartitions=5)
    assert build_root_dask(bag, client=client) == want
    assert build_root_dask(bag, client=client, shard_nibbles=1, groups=3) == want
    assert build_root_dask(bag, shard_nibbles=0) == want           # the client is the default scheduler too

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "pairs.parquet"
    folder.mkdir()
    for i in range(4):                          # four files, read back as four partitions in name order
        chunk = pairs[i * 800:(i + 1) * 800]
        pq.write_table(pa.table({"key": [k for k, _ in chunk], "value": [v for _, v in chunk]}),
                       folder / ("part.%d.parquet" % i))
    assert build_root_dask(dd.read_parquet(str(folder)), client=client) == want
    hexframe = pd.DataFrame({"k": ["0x" + k.hex() for k, _ in pairs], "v": [v.hex() for _, v in pairs]})
    assert build_root_dask(dd.from_pandas(hexframe, npartitions=3, sort=False), key="k", value="v",
                           client=client) == want

    assert build_root(pairs, executor=client, shard_nibbles=2) == want
    assert build_root(iter(pairs), executor=client, spill_dir=str(tmp_path), memory_limit=10000) == want


@pytest.mark.slow
def test_bad_input(client):
    import dask.bag as db
    import pandas as pd
    import dask.dataframe as dd

    from mpt.errors import InputFormatError

    with pytest.raises(TypeError, match="dask.bag"):
        build_root_dask([(b"a", b"b")])
    with pytest.raises(TypeError, match="key must be a bytes-like object"):
        build_root_dask(db.from_sequence([("a", b"b")], npartitions=1), client=client)
    frame = dd.from_pandas(pd.DataFrame({"key": ["zz"], "value": ["00"]}), npartitions=1)
    with pytest.raises(InputFormatError, match="column key, row 0"):
        build_root_dask(frame, client=client)
    with pytest.raises(InputFormatError, match="no column 'missing'"):
        build_root_dask(frame, value="missing", client=client)

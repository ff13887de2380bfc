"""The compiled steps of :func:`mpt.build_root`, which :mod:`mpt.parallel` runs (its API is mpt.parallel's).

- :mod:`mpt.shards.records` (a ``.pxd``): the record layout of a shard and the arenas that hold records;
- :mod:`mpt.shards.read`: the input readers, which copy pairs into the shard arenas on several threads, in order;
- :mod:`mpt.shards.partition`: the arenas of every shard, the keys shorter than the shard prefix, and the spill
  file they go to past the memory limit;
- :mod:`mpt.shards.sort`: the order of a shard's records (key, then input position);
- :mod:`mpt.shards.build`: each shard's subtrie without the GIL, and the root over the shard results.
"""

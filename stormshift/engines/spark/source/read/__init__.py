"""engines/spark/source/read: an executor's read of one input partition of a spout source.

Runs in: a Spark Python worker on an executor, on a pickled copy of the stream
reader (``../source.py`` ``SpoutReader.read``), once per input partition:

- ``partition.py``: the partition's range (``protocol/spoutrange.py``) sent as
  rows, or as ``READ`` rows for heads that read it themselves;
- ``chunk_read.py``: an executor-side spout's chunk, emitted by the task's live
  instance (``../live_spout.py``) and logged by the first read of it, re-read by
  every later one;
- ``host_client.py``: the worker's side of the spout host's socket
  (``../spouthost/``, which keeps the live instance for every worker of the
  executor): find or start the host, ask it for a chunk or its acks.

Crosses the boundary: IN the options string and an input partition
(``../options.py``); OUT Arrow rows (``protocol/rows.py``); Redis: the write-ahead
log and chunk log (``records/``), dead letters; msgpack frames to a spout host.
"""

"""engines/spark/source/read: an executor's read of one input partition of a spout source.

Runs in: a Spark Python worker on an executor, on a pickled copy of the stream
reader (``../source.py`` ``SpoutReader.read``), once per input partition:

- ``partition.py``: the partition's range (``protocol/spoutrange.py``) sent as
  rows, or as ``READ`` rows for heads that read it themselves;
- ``live_spout.py``: an executor-side spout's chunk run and logged by the first
  read of it (the task's live instance, its catch-up, acks);
- ``host_client.py``: the worker's side of the spout host's socket
  (``../spouthost/``), which keeps the live instance for every worker of the
  executor.

Crosses the boundary: IN the options string and an input partition
(``../options.py``); OUT Arrow rows (``protocol/rows.py``); Redis: the write-ahead
log and chunk log (``records/``), dead letters; msgpack frames to a spout host.
"""

"""engines/spark/records: the Spark engine's own records in Redis, both halves of each.

Not state (``stormshift/state`` owns that and knows nothing of Spark): what the
engine's processes leave for each other beside the state. Each module holds the
writer's and the reader's side of one record; the records' key names are
``keys.py`` here, built on the state's key layout (``state/keys.py``: prefix, hash tags,
key groups), their fenced scripts in ``state/lua.py``.

- ``wal.py``: the write-ahead log of a generic spout (written by the planner,
  read by the executors' reads and stage heads);
- ``chunks.py``: an executor-side spout's chunk log (written by the first read
  of a chunk, counted by the planner);
- ``starts.py``: where a replayable spout's query started, once per checkpoint
  (the planner);
- ``runrecords.py``: the stop flag, the ticks record, the spout planners' reports
  and a replayable source's lag (planner <-> driver);
- ``watermarks.py``: each batch's time record and the windowed bolts' trackers
  (the driver);
- ``keys.py``: every record's key name;
- ``batchstats.py``: the tasks' counters records (written in each task's
  ``TaskTxn``) and attempt counts, read by the driver.

Runs in: whichever process writes or reads the record (said per module).
Crosses the boundary: Redis only (msgpack / JSON values, never a pickle).
"""

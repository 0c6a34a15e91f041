"""engines/spark/source/planner: the planning process of a spout source.

Runs in: ONE long-lived Python process per source (pyspark's
``python_streaming_source_runner``), which calls the stream reader's
``initialOffset`` / ``latestOffset`` / ``partitions`` / ``commit`` / ``stop``
across batches (``../source.py``). ``planner.py`` picks one planner per source:

- ``wal_planner.py``: a generic spout's tasks live here; their emits go to the
  write-ahead log before an offset leaves (``pump.py``: a thread that keeps
  them emitting while Spark runs a batch); committed batches are acked;
- ``planner.ReplayPlanner``: asks a replayable spout for its offsets;
- ``chunk_planner.py``: an executor-side spout's chunks, numbered here, run in
  the reads (``../read/``);
- ``offsets.py``: the offset format all three return, as pure functions.

Crosses the boundary: OUT offsets as JSON (Spark's offset log, format in
``../source.py``) and input partitions pickled to the executors
(``../options.py``); Redis: the write-ahead log and chunk counts
(``records/``), the spout's report to the driver (``../spout_report.py``).
"""

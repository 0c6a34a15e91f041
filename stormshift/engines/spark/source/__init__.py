"""engines/spark/source: each spout as a PySpark Python streaming data source.

Runs in three kinds of process (pyspark 4.3, ``python_streaming_source_runner``),
one sub-folder each:

- ``planner/``: ONE long-lived planning Python process per source runs the
  stream reader's ``latestOffset`` / ``partitions`` / ``commit``: generic
  spouts' instances live there and their emits go to the write-ahead log before
  an offset is returned; an executor-side spout's chunks are numbered there;
- ``read/``: executors run ``read`` on a pickled copy of the reader, which reads
  its partition's range (``protocol/spoutrange.py``) and, for an executor-side
  spout (``stormshift.spout.executor``), runs the spout and logs its chunk;
- ``spouthost/``: the spout host, a process per spout task and executor that
  keeps the task's live instance for every Python worker of the executor.

What they share, at this level: ``source.py`` (the ``DataSource`` and its
stream reader: the driver creates it from string options, the planner and the
reads call its methods; it imports ``planner/`` and ``read/`` lazily, in the
process that runs them), ``options.py`` (those options parsed, the input
partitions the planner returns and ``read`` gets, the planning clock),
``live_registry.py`` and ``live_spout.py`` (an executor-side spout task's live
instances, their key, and how one is caught up and emits a chunk: run by the
read's worker or by the spout host), ``host_wire.py`` (the frames both ends of a
spout host's socket speak), ``spout_report.py`` (what a spout's process tells the
driver: written by the planner, a read or a host, read and cleared by the driver).

Crosses the boundary: offsets as JSON (Spark's offset log: ``t`` / ``p``,
``done``, ``fin``, ``k``, ``n``, ``capped``; see ``source.py``), input partitions
pickled to the executors (``options.WalPartition`` / ``ReplayPartition`` /
``ChunkPartition``), Arrow rows out of ``read`` (``protocol/rows.py``: ``BEACON``,
``TUPLE`` and ``READ`` rows), and Redis: the write-ahead log and chunk log
(``records/``), dead letters (``state/``), the spout reports
(``records/keys.py`` ``spout_report_key``).
"""

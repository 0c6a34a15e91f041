"""engines/spark/source: each spout as a PySpark Python streaming data source.

Runs in three places (pyspark 4.3, ``python_streaming_source_runner``):

- the driver creates ``source.SpoutSource`` from string options (``options.py``);
- ONE long-lived planning Python process per source runs the stream reader's
  ``latestOffset`` / ``partitions`` / ``commit`` (``planner.py``): the spout
  instances live there, generic spouts' emits go to the write-ahead log before
  an offset is returned, committed batches are acked; problems, warnings and
  log lines go to the driver through ``spout_report.py``;
- with ``stormshift.spout.executor`` a generic spout's planner (``chunk_planner.py``)
  hosts no instance: it numbers chunks, and the executors' reads run the spout
  (``live_spout.py``), the task's live instance kept in a spout host process
  (``spout_host.py``) that every Python worker of the executor asks through
  ``host_client.py``, or with ``stormshift.spout.host`` false in each Python
  worker; both find instances in ``live_registry.py``;
- executors run ``read`` on a pickled copy of the reader, which reads its
  partition's range through ``../spoutrange.py`` (a stage head that reads its
  spout's ranges itself uses the same reader inside its task).

Crosses the boundary: offsets as JSON (Spark's offset log: ``t`` / ``p``,
``done``, ``fin``, ``k``, ``n``, ``capped``; see ``source.py``), input partitions
pickled to the executors (``options.WalPartition`` / ``ReplayPartition`` /
``ChunkPartition``),
Arrow rows out of ``read`` (``rows.py``: ``BEACON``, ``TUPLE`` and ``READ`` rows), and Redis:
the write-ahead log and dead letters (``state/``), the spout reports
(``state/keys.py`` ``spout_report_key``: written by the planner, read and
cleared by the driver, so the record's both halves live here with its writer).
``source.py`` imports ``planner.py`` (lazily, in the planner process only);
both import ``options.py``. ``live_spout.py`` (the read) and ``spout_host.py``
(the host process) both import ``live_registry.py`` and ``host_client.py``, and
the host imports the read's catch-up: no cycle (tests/test_code_quality.py
checks the whole package).
"""

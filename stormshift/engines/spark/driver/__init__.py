"""engines/spark/driver: the Spark driver's side of a run (the process that calls ``SparkEngine.run``).

Runs in: the driver only (``submit.py``: in the ``stormshift submit`` process,
which builds the spark-submit command that starts a driver on a cluster).

- ``engine.py``: ``SparkEngine``: the session, one source per spout, the
  streaming query, ``foreachBatch``, stopping, the run summary;
- ``batch.py``: one micro-batch: its plan (stages, ticks, redriven rows) and
  the commit protocol (``committed = txid`` in Redis before ``foreachBatch``
  returns); ``ticks.py`` (tick tuples decided and recorded per batch),
  ``windows.py`` (each batch's processing time, windowed bolts' watermarks and
  end of input, decided and recorded per batch),
  ``redrive.py`` (claimed dead letters turned into rows);
- ``progress.py`` (progress lines, why a query stopped), ``recovery.py``
  (a Spark checkpoint ahead of Redis), ``stopping.py`` (Ctrl-C / SIGTERM as
  stop requests), ``upgrade.py`` (new code on stored state, before any batch:
  ``stormshift plan`` and the run's check), ``deps.py`` (the project's
  dependencies ``submit`` ships), ``zips.py`` (the reproducible zips both
  ``submit.py`` and ``deps.py`` write).

Crosses the boundary: OUT a pickled ``task.stage.StageJob`` per stage (with the
``layout.Layout``) inside the ``mapInArrow`` function, small DataFrames of
beacons and redriven rows (``protocol/rows.py``), string options for each source;
IN offsets JSON through Spark's offset log (``windows.py`` reads a batch's to tell
the final batch), and Redis (keys in ``state/keys.py``):
the commit record, the tasks' counters (``task/counters.py``), the spout reports
(``source/spout_report.py``), dead letters.
"""

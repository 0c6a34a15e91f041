"""engines/spark/protocol: what every process of a Spark run agrees on (no process of its own).

Imported by the driver, the sources' planners, the executors' reads and the
stage tasks, so nothing here may import one of those folders:

- ``layout.py``: the plan of a run (stream codes, stages, fused members, heads
  colocated with their spout), built on the driver, pickled into every
  ``StageJob`` and rebuilt from the same graph by each source;
- ``rows.py``: the row protocol, the one owner of the row schema and its ``kind``
  column, for every row any side writes or reads;
- ``spoutrange.py``: a spout task's range for one batch (what Spark's offset log
  holds, and what a ``READ`` row carries) and its one reader, used by the
  source's ``read`` and by a stage head that reads its spout itself.

Crosses the boundary: these are the formats that cross every other one: a
pickled ``Layout``, Arrow rows with ``SCHEMA``, a range as a ``READ`` row's cell.
"""

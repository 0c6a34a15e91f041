"""engines/spark: run streamparse topologies on Spark Structured Streaming micro-batches.

One folder per process, each ``__init__`` says what runs there and what crosses
its boundary:

- ``driver/``: the engine, a batch's plan and commit protocol (the driver);
- ``source/``: each spout as a streaming data source and its planner (the
  source's planning process, and ``read`` on executors);
- ``task/``: what one Spark task runs (executors);
- ``runtime/``: the session and how Spark's Python processes start.

Shared by every process, at this level: ``layout.py`` (the plan of stages and
which heads are colocated with their spout, built on the driver, pickled into
each ``StageJob`` and rebuilt by the planner and the source), ``rows.py`` (the
row protocol: the one owner of the row schema and its ``kind`` column, for
every row any side writes or reads: source ``read``, stages, the driver's
beacons and redriven rows), ``spoutrange.py`` (the one reader of a spout task's
range: the source's ``read`` and a head reading its spout itself), ``faults.py`` (fault points in the driver,
the planner and the tasks) and ``profiling.py`` (wraps the source's ``read``
and every stage task). ``daemon.py`` is a shim for the worker daemon's old
module path (``runtime/daemon.py``).

See ``driver.engine.SparkEngine`` for the API and DESIGN.md "Data flow of one
micro-batch". ``SparkEngine`` is imported on first use, so a submodule (the
worker daemon) can be run without importing pyspark and pyarrow first.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stormshift.engines.spark.driver.engine import SparkEngine

__all__ = ["SparkEngine"]


def __getattr__(name: str) -> Any:
    if name == "SparkEngine":
        from stormshift.engines.spark.driver.engine import SparkEngine

        return SparkEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

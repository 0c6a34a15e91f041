"""Spouts as PySpark Python streaming data sources (one source per spout).

Where each method runs (pyspark 4.3, ``python_streaming_source_runner``):
``initialOffset``/``latestOffset``/``partitions``/``commit``/``stop`` run in
ONE long-lived planning Python process per source, across batches, so the
spout instances live there; ``read`` runs in executors, from a pickled copy
of the reader, and must only use its options and the partition.

Offsets (JSON): ``t`` (generic spouts: logged seq per task) or ``p``
(replayable spouts: offset per source partition), ``done`` (all input is in
batches up to this offset), ``fin`` (an empty batch at or after ``done``:
planning it makes Spark commit -- and so ack -- the last data batch; the
engine stops once every source reports ``fin``; when end of input is found
with nothing new to read, that empty batch is ``done`` and ``fin`` at once),
``k`` (tick clock: changes every tick interval so batches run for tick tuples
even without new input), ``n`` (spout tuples per task in batches up to this
offset: the durable count ``--max-tuples`` is checked against,
``stormshift.engines.budget``) and ``capped`` (``done`` because the count
reached the budget, not end of input: a later run with a larger budget, from
the same checkpoint, goes on from here).

Generic spouts: ``latestOffset`` runs ``next_tuple()`` within ``budget_ms`` and
appends the emits to the write-ahead log (``stormshift.engines.spark.records.wal``), or, with
``stormshift.spout.lead_batches`` > 0, a pump thread of the planner process does
so ahead of the batches (``planner/pump.py``); ``latestOffset`` takes up to ``batch_max``
logged tuples per task, cut at the task's ``--max-tuples`` target. Either way a tuple is logged before an offset covering it leaves.
``commit(end)`` acks the tuples of committed batches, then trims the log.
With ``stormshift.spout.executor`` (``planner/chunk_planner.py``) no spout runs here: the
offset holds chunk numbers (``x``), and the first read of a chunk runs the spout
and logs it (``read/chunk_read.py``); a re-read reads the log.
Replayable spouts (``stormshift.spouts.base``) are read through their replay
interface and need no log. ``read`` reads its partition's range through the
one spout-range reader (``protocol/spoutrange.py``) and sends its tuples as rows where
they were routed; when every consumer of the spout runs on the source's
partitions (``Layout.deferred``), it sends only beacons and one ``READ`` row
per head: the heads' stages read the range themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.source.options import Opts

if TYPE_CHECKING:
    from stormshift.engines.spark.source.planner.planner import Planner

__all__ = ["SOURCE_NAME", "SpoutSource"]

SOURCE_NAME = "stormshift_spout"


class SpoutSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return R.SCHEMA_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return SpoutReader(dict(self.options))


class SpoutReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        self.options = options
        self._planner: Planner | None = None

    def _plan(self) -> Planner:
        if self._planner is None:
            from stormshift.engines.spark.source.planner.planner import make_planner

            self._planner = make_planner(Opts.parse(self.options))
        return self._planner

    def initialOffset(self) -> dict:
        return self._plan().initial_offset()

    def latestOffset(self, start: dict, limit: Any) -> dict:
        if self._stopping():  # the driver is stopping the query: no new batch (engine._stop)
            return start
        return self._plan().latest_offset(start)

    def _stopping(self) -> bool:
        from stormshift.engines.spark.records.runrecords import stop_requested
        from stormshift.engines.spark.runtime.worker import redis_for

        opts = Opts.parse(self.options)
        return stop_requested(redis_for(opts.redis_url), opts.namespace)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return self._plan().partitions(start, end)

    def commit(self, end: dict) -> None:
        self._plan().commit(end)

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()

    def read(self, partition: InputPartition) -> Any:
        opts = Opts.parse(self.options)
        from stormshift.engines.spark.runtime.worker import ensure_paths

        ensure_paths(opts.graph)
        from stormshift.engines.spark.diagnostics.profiling import profiled
        from stormshift.engines.spark.source.read.partition import read_partition

        yield from profiled(f"source-{opts.spout}", read_partition(opts, partition))

"""Replayable spouts: sources that can re-read any range of their input.

A replayable spout is an ordinary streamparse ``Spout`` (the local engine
drives it through ``next_tuple``/``ack``/``fail`` with Storm semantics) that
also exposes its input as *partitions* with *offsets*, so the Spark engine can
plan a micro-batch as "every partition from offset A to offset B" and re-read
exactly that range after a crash, without a write-ahead log.

Vocabulary:
- *partition*: a stable name (a Redis stream key, a file path relative to the
  spout's directory). ``replay_partitions()`` lists them sorted; partition
  number ``i`` in that order belongs to spout task ``i % par``.
- *offset*: a JSON-able position *after* a record. A range ``(start, end]``
  holds the records after ``start`` up to and including ``end``.
- *msg id*: ``"<partition>:<offset>"`` of the record (its Storm tuple id).

Call order (Spark engine): ``initialize(conf, context)``, then
``replay_initial_offsets()`` once per new query, ``replay_plan(start,
budgets)`` per batch (driver; ``replay_task_ended`` under ``--max-tuples``),
``replay_lag(end)`` after it (the operator's lag, ``lag.py``), ``replay_read(p,
start, end)`` per partition (executors), ``replay_exhausted(offsets)`` to end a
bounded run.

A record that cannot be a tuple is never dropped: ``replay_read`` raises
:class:`RecordDecodeError` (a ``TupleError`` carrying the raw record, its
``kind`` ``decode`` or ``value``: ``spouts/values.py``); the reader
dead-letters it *at the spout* and resumes after it — :func:`read_range` does
both, and also refuses a decoded record Storm could not send (NaN, wrong
arity...) before it is emitted, so both engines dead-letter the same records.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import streamparse

from stormshift.errors import TopologyError
from stormshift.spouts.partitions import parse_msg_id, partitions_of_task, read_range, task_position
from stormshift.spouts.position import write_position
from stormshift.spouts.starts import START_OFFSETS_KEY, initial_offset, initial_offsets
from stormshift.spouts.values import VALUE, RecordDecodeError, msg_id_for, plain, unsendable

__all__ = [
    "START_OFFSETS_KEY",
    "RecordDecodeError",
    "ReplayableSpout",
    "initial_offset",
    "initial_offsets",
    "msg_id_for",
    "parse_msg_id",
    "partitions_of_task",
    "read_range",
    "task_position",
]



_VALUES_BLOCK = 1024


class ReplayableSpout(streamparse.Spout):
    """Base of the built-in sources: replay interface + Storm-like local loop.

    Subclasses implement ``replay_configure`` and the five ``replay_*``
    methods; this class turns them into ``next_tuple``/``ack``/``fail`` for
    the local engine: reliable emits (msg id = position), a failed tuple is
    re-emitted (before new records) until acked, the cursor only moves forward.
    """

    #: config key prefix of the subclass, e.g. ``"jsonlines"``.
    config_prefix = "replay"
    #: the declared fields of the spout's default stream (``initialize`` reads them from the
    #: Storm context): a record is refused when its values do not fit them
    _arity: int | None = None
    _out_fields: tuple[str, ...] = ()

    def initialize(self, storm_conf: Mapping[str, Any], context: Mapping[str, Any]) -> None:
        self.replay_configure(storm_conf or {})
        self._task_index, self._par = task_position(context)
        starts = (storm_conf or {}).get(START_OFFSETS_KEY) or {}
        self._start_at: dict[str, Any] = dict(starts.get((context or {}).get("componentid"), {}))
        self._position_to = self._conf_value(storm_conf or {}, "commit_position")
        self._position_every = float(self._conf_value(storm_conf or {}, "commit_interval_secs", 5))
        self._position_last = time.monotonic()
        self._local_chunk = int(self._conf_value(storm_conf or {}, "local_chunk", 1000))
        self._cursor: dict[str, Any] = {}
        self._buffer: collections.deque[tuple[list[Any], str] | RecordDecodeError] = (
            collections.deque()
        )
        self._pending: dict[str, list[Any]] = {}
        self._retry: collections.deque[str] = collections.deque()
        declared = ((context or {}).get("stream->outputfields") or {}).get("default")
        # the declared fields of the stream the spout emits on: a record with another
        # number of values is no tuple of it (None: no context, not checked)
        self._out_fields: tuple[str, ...] = tuple(declared or ())
        self._arity: int | None = len(declared) if declared is not None else None
        self._read_count = 0  # records taken from the buffer: emitted or dead-lettered
        self._dead: list[RecordDecodeError] = []  # dead-lettered, not yet taken by the engine

    # -- configuration -------------------------------------------------
    def replay_configure(self, conf: Mapping[str, Any]) -> None:
        """Read this source's keys from the merged topology/component conf."""
        raise NotImplementedError

    def _conf_value(self, conf: Mapping[str, Any], key: str, default: Any = None) -> Any:
        return conf.get(f"{self.config_prefix}.{key}", default)

    def _require(self, conf: Mapping[str, Any], key: str) -> Any:
        full = f"{self.config_prefix}.{key}"
        if conf.get(full) in (None, "", []):
            raise TopologyError(
                f"{type(self).__name__} needs config {full!r}",
                component=self._name(conf),
                fix=f"set {full!r} in the spout's config (or the topology config / "
                f"stormshift.replacements entry)",
            )
        return conf[full]

    def _name(self, conf: Mapping[str, Any] | None = None) -> str:
        return getattr(self, "component_name", None) or type(self).__name__

    # -- the replay interface (see module docstring) ---------------------
    def replay_partitions(self) -> list[str]:
        raise NotImplementedError

    def replay_initial_offsets(self) -> dict[str, Any]:
        raise NotImplementedError

    def replay_latest_offsets(self, start: dict[str, Any], max_records: int) -> dict[str, Any]:
        """Offsets at most ``max_records`` records per spout task past ``start``
        (``replay_plan`` with the same budget for every task)."""
        return self.replay_plan(start, [max_records] * self._par)[0]

    def replay_plan(self, start: dict[str, Any], budgets: Sequence[int]) -> tuple[dict[str, Any], list[int]]:
        """``(offsets, counts)``: at most ``budgets[t]`` records of task ``t`` past ``start``,
        and how many records each task's ranges hold.

        A task reads its partitions in sorted order (oldest file first) until
        its budget is spent, so a budget is "tuples of this spout task in this
        batch". Partitions missing from ``start`` (new ones) start at their
        initial offset; partitions that vanished keep their offset.
        """
        latest = dict(start)
        counts = [0] * self._par
        partitions = self.replay_partitions()
        for task_index in range(self._par):
            budget = budgets[task_index]
            for partition in partitions_of_task(partitions, task_index, self._par):
                begin = start.get(partition)
                if begin is None:
                    begin = initial_offset(self, partition)
                if budget > 0:
                    end, count = self.replay_advance(partition, begin, budget)
                    budget -= count
                    counts[task_index] += count
                else:
                    end = begin
                latest[partition] = end
        return latest, counts

    def replay_task_ended(self, offsets: dict[str, Any], task_index: int) -> bool:
        """True when task ``task_index`` can read nothing more: the input is bounded and
        each of its partitions is read to its end, or it has no partition at all."""
        mine = partitions_of_task(self.replay_partitions(), task_index, self._par)
        return not mine or (self.bounded and all(
            self.replay_partition_done(p, offsets.get(p, initial_offset(self, p))) for p in mine))

    def replay_advance(self, partition: str, start: Any, max_records: int) -> tuple[Any, int]:
        """``(end, n)``: the offset ``n <= max_records`` records past ``start`` (now)."""
        raise NotImplementedError

    def replay_read(self, partition: str, start: Any, end: Any) -> Iterator[tuple[list[Any], str]]:
        raise NotImplementedError

    def replay_values(self, partition: str, start: Any, end: Any,
                      on_error: Callable[[RecordDecodeError], None]) -> Iterator[list[list[Any]]]:
        """The values of every good record of ``(start, end]`` in order, in blocks (lists
        of value lists, any size); a bad record goes to ``on_error``, reading goes on.

        The Spark engine's read path: no msg ids (a batch is replayed by its range, not
        per tuple). The default is ``read_range`` in blocks; a source overrides it where
        it can decode a whole block at once. Both must give the same records.
        """
        block: list[list[Any]] = []
        for values, _msg_id in read_range(self, partition, start, end, on_error):
            block.append(values)
            if len(block) >= _VALUES_BLOCK:
                yield block
                block = []
        if block:
            yield block

    def replay_exhausted(self, offsets: dict[str, Any]) -> bool:
        """True when the input is bounded and every partition is read to its end."""
        return self.bounded and all(
            self.replay_partition_done(p, offsets.get(p, initial_offset(self, p)))
            for p in self.replay_partitions()
        )

    def replay_initial_offset(self, partition: str) -> Any:
        """Position before the first record of one (possibly new) partition."""
        raise NotImplementedError

    def replay_partition_done(self, partition: str, offset: Any) -> bool:
        """No record of ``partition`` lies after ``offset`` right now."""
        raise NotImplementedError

    def replay_partition_lag(self, partition: str, offset: Any) -> tuple[int, bool]:
        """``(records, exact)``: records of ``partition`` after ``offset`` right now (its lag,
        ``spouts/lag.py``); ``exact`` False when the count stopped at a cap."""
        raise NotImplementedError

    def replay_lag(self, offsets: Mapping[str, Any], tasks: Sequence[int] | None = None) -> Any:
        """Each task's lag at ``offsets`` (a ``spouts.lag.SourceLag``; only ``tasks`` if given)."""
        from stormshift.spouts.lag import task_lags

        partitions = self.replay_partitions()
        wanted = range(self._par) if tasks is None else tasks
        return task_lags(self, offsets, self._par,
                         {t: partitions_of_task(partitions, t, self._par) for t in wanted})

    def local_lag(self) -> Any:
        """This task's lag at its cursor (the local engine's figure: records not yet
        emitted), a ``SourceLag`` measuring this task only."""
        return self.replay_lag(self._cursor, [self._task_index])

    @property
    def bounded(self) -> bool:
        """Whether reaching the end of every partition ends the input."""
        return bool(getattr(self, "_bounded", False))

    def idle_advice(self) -> str:
        """Why this built-in source did not end its input when a run stopped idle, and the
        fix: its own ``bounded`` key (the user's code raises nothing here, so "raise
        StopIteration" would be advice about stormshift's own spout)."""
        key = f"{self.config_prefix}.bounded"
        if self.bounded:
            return (f"it is bounded ({key}) but had not read every partition to its end and "
                    "acked it")
        return (f"{type(self).__name__} follows its input for new records ({key} is false): "
                f"set -o {key}=true to end the run at the last record, or stop it with "
                "--max-tuples / --duration")

    def refuse(self, partition: str, msg_id: str, values: Any) -> RecordDecodeError | None:
        """The dead letter for a decoded record Storm could not send as a tuple of this spout's
        declared fields (``values.unsendable``), or None when it can be emitted."""
        why = unsendable(values, self._arity, self._out_fields)
        if why is None:
            return None
        _, offset = parse_msg_id(msg_id)
        return RecordDecodeError(why, component=self._name(), partition=partition,
                                 offset=int(offset) if offset.isdigit() else offset,
                                 raw=values if plain(values) else repr(values), kind=VALUE)

    # -- Storm-like local loop -----------------------------------------
    def my_partitions(self) -> list[str]:
        return partitions_of_task(self.replay_partitions(), self._task_index, self._par)

    def next_tuple(self) -> None:
        """:meth:`emit_next`; with ``<prefix>.commit_position`` the acked prefix of each
        partition is written there every ``<prefix>.commit_interval_secs`` and at the end of
        a bounded input (the local engine's acks are Storm's: a legacy that records where it
        stands, for ``stormshift cutover``)."""
        if not self._position_to:
            self.emit_next()
            return
        try:
            self.emit_next()
        except StopIteration:
            self.commit_position(self.acked_offsets())
            raise
        if time.monotonic() - self._position_last >= self._position_every:
            self._position_last = time.monotonic()
            self.commit_position(self.acked_offsets())

    def commit_position(self, offsets: Mapping[str, Any]) -> None:
        """Write ``offsets`` to ``<prefix>.commit_position`` (``position.write_position``:
        a Redis hash or a JSON file); other tasks' partitions are left as they are."""
        write_position(self._position_to, offsets)

    def offset_before(self, offset: Any) -> Any:
        """The position just before the record at ``offset`` (an integer count here)."""
        return int(offset) - 1

    def offset_order(self, offset: Any) -> Any:
        """A sort key of offsets (an integer count here)."""
        return int(offset)

    def acked_offsets(self) -> dict[str, Any]:
        """Per partition of this task, the position below which every record is acked."""
        safe = dict(self._cursor)
        waiting = [parse_msg_id(m) for m in self._pending]
        waiting += [parse_msg_id(item[1]) for item in self._buffer if isinstance(item, tuple)]
        for partition, offset in waiting:
            before = self.offset_before(offset)
            if partition not in safe or self.offset_order(before) < self.offset_order(safe[partition]):
                safe[partition] = before
        return safe

    def emit_next(self) -> None:
        """Emit one tuple: a failed one first, else the next record.

        A record that is no tuple (``decode`` / ``value``) is dead-lettered at
        the spout (``report_bad_record``) and skipped -- raising would kill the
        spout task, and a re-created one would meet the same record again.
        Raises ``StopIteration`` once a bounded input is fully read and acked.
        """
        if self._retry:
            msg_id = self._retry.popleft()
            if msg_id in self._pending:
                self.emit(self._pending[msg_id], tup_id=msg_id)
            return
        if not self._buffer:
            self._fill_buffer()
        if not self._buffer:
            if not self._pending and self._local_exhausted():
                raise StopIteration(f"{self._name()}: end of input")
            return
        item = self._buffer.popleft()
        self._read_count += 1
        if isinstance(item, RecordDecodeError):
            self.report_bad_record(item)
            return
        values, msg_id = item
        self._pending[msg_id] = values
        self.emit(values, tup_id=msg_id)

    def report_bad_record(self, err: RecordDecodeError) -> None:
        """Dead-letter one bad record at the spout: kept until the engine takes it
        (``take_spout_report``), with a warning line in the component log (Storm's
        pipe has no dead letters; a log line is what a Storm operator would see)."""
        self.bad_record_count = getattr(self, "bad_record_count", 0) + 1
        self._dead.append(err)
        try:
            self.log(f"dead-lettered ({err.kind}) {err.position}: {err.reason}", level="warning")
        except Exception:  # noqa: BLE001, S110 - no pipe (a bare instance in a test): the letter is kept
            pass

    def take_spout_report(self) -> tuple[int, list[RecordDecodeError]]:
        """``(records read, dead letters)`` since the last call: the local engine's
        accounting of this spout task (records read = emitted + dead-lettered)."""
        read, dead = self._read_count, self._dead
        self._read_count, self._dead = 0, []
        return read, dead

    def ack(self, tup_id: Any) -> None:
        self._pending.pop(str(tup_id), None)

    def fail(self, tup_id: Any) -> None:
        """Re-emit the tuple (Storm's reliable-spout contract: nothing lost)."""
        if str(tup_id) in self._pending:
            self._retry.append(str(tup_id))

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (for executors): drops pystorm's pipe serializer and locks."""
        state = dict(self.__dict__)
        for unpicklable in ("logger", "serializer", "_reader_lock", "_writer_lock"):
            state.pop(unpicklable, None)
        return state

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def _fill_buffer(self) -> None:
        for partition in self.my_partitions():
            start = self._cursor.get(partition)
            if start is None:
                start = initial_offset(self, partition)
                self._cursor[partition] = start
            end, count = self.replay_advance(partition, start, self._local_chunk)
            if count == 0:
                continue
            for item in read_range(self, partition, start, end, self._buffer.append):
                self._buffer.append(item)
            self._cursor[partition] = end
            if self._buffer:
                return

    def _local_exhausted(self) -> bool:
        return self.bounded and all(
            self.replay_partition_done(p, self._cursor.get(p, initial_offset(self, p)))
            for p in self.my_partitions()
        )

"""Kafka topics as a replayable spout: one partition per Kafka topic partition.

Config (topology or component conf, ``kafka.*``): ``kafka_config.py`` says each key and
checks them (``read_config``).

Partitions are named ``<topic>/<partition, 5 digits>`` so that their sorted
order is (topic, partition) order; partition ``i`` of that order belongs to
spout task ``i % par``. An offset is the Kafka offset of the last record
consumed (``-1`` before offset 0), so a msg id ``pixels/00002:41`` is the
record at offset 41 of partition 2 of ``pixels``. An offset range that
retention deleted before it was read is an error naming the records lost
(:class:`~stormshift.errors.SourceDataLostError`), never a silent skip.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from stormshift.errors import InfraError, SourceDataLostError
from stormshift.spouts.base import (
    RecordDecodeError,
    ReplayableSpout,
    initial_offset,
    initial_offsets,
    msg_id_for,
)
from stormshift.spouts.kafka_config import read_config
from stormshift.spouts.kafka_records import RECORD_FIELDS

__all__ = ["RECORD_FIELDS", "KafkaSpout", "check_not_lost", "partition_name", "split_partition"]

_CONSUME_MAX = 10_000
_POLL_SECS = 1.0
_META_TIMEOUT_SECS = 10.0


def partition_name(topic: str, partition: int) -> str:
    """``topic/00003``: sorts as (topic, partition) for up to 100000 partitions."""
    return f"{topic}/{partition:05d}"


def split_partition(name: str) -> tuple[str, int]:
    topic, _, number = name.rpartition("/")
    return topic, int(number)


def check_not_lost(component: str, partition: str, offset: int, log_start: int) -> None:
    """Records after ``offset`` are still in the log (retention starts it at ``log_start``)."""
    if offset + 1 < log_start:
        topic, number = split_partition(partition)
        raise SourceDataLostError(
            f"Kafka topic {topic!r} partition {number}: offsets {offset + 1}..{log_start - 1} "
            f"({log_start - offset - 1} records) were deleted by retention before this query "
            "read them",
            component=component,
            fix="the records are gone from Kafka: re-produce them from their origin, or accept "
            "the loss and start a new query (a new checkpoint) with kafka.start; raise the "
            "topic's retention.ms above the longest time a query may stay stopped",
        )


class KafkaSpout(ReplayableSpout):
    """Emits one tuple per record of the configured Kafka topics (module doc)."""

    config_prefix = "kafka"

    @staticmethod
    def from_java(java_class: str, args: Sequence[Any], config: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], dict[str, str]]:
        """Config from a Java Kafka spout's declaration (``stormshift.spouts.kafka_java``)."""
        from stormshift.spouts.kafka_java import from_java

        return from_java(java_class, args, config)

    def replay_configure(self, conf: Mapping[str, Any]) -> None:
        c = read_config(conf, self._name(), lambda key, default=None: self._conf_value(conf, key, default),
                        lambda key: self._require(conf, key))
        self._servers, self._topics, self._pattern = c.servers, c.topics, c.pattern
        self._start, self._fallback, self._start_ts = c.start, c.fallback, c.start_ts
        self._group, self._commit, self._records = c.group, c.commit, c.records
        self._bounded, self._read_timeout, self._client_conf = c.bounded, c.read_timeout, c.client_conf
        self._consumer: Any = None
        self._known: list[str] = []
        self._initial: dict[str, int] | None = None
        self._new_starts: dict[str, int] = {}
        self._commit_every = c.commit_every
        self._last_commit = time.monotonic()

    @property
    def consumer(self) -> Any:
        """The client (made lazily so the spout pickles); it never joins its group."""
        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(self._client_conf | {"group.id": self._group or "stormshift"})
        return self._consumer

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_consumer"] = None
        return state

    # -- partitions / offsets -------------------------------------------
    def replay_partitions(self) -> list[str]:
        """Current partitions; the last known ones while the broker does not answer."""
        from confluent_kafka import KafkaException

        try:
            topics = self.consumer.list_topics(timeout=_META_TIMEOUT_SECS).topics
        except KafkaException as exc:
            if self._known:
                return list(self._known)
            raise InfraError(
                f"spout {self._name()}: cannot reach Kafka at {self._servers} "
                f"({exc.args[0] if exc.args else exc}); fix: start the broker, or point "
                f"{self.config_prefix}.bootstrap_servers at one") from exc
        names: list[str] = []
        for topic, meta in topics.items():
            wanted = topic in self._topics if self._pattern is None else (
                not topic.startswith("__") and self._pattern.fullmatch(topic) is not None)
            if wanted and meta.error is None:
                names.extend(partition_name(topic, p) for p in meta.partitions)
        self._known = sorted(names)
        return list(self._known)

    def _watermarks(self, partition: str) -> tuple[int, int]:
        """``(log start, end)``: the first offset still in the log, the next offset."""
        from confluent_kafka import TopicPartition

        topic, number = split_partition(partition)
        low, high = self.consumer.get_watermark_offsets(
            TopicPartition(topic, number), timeout=_META_TIMEOUT_SECS, cached=False)
        return int(low), int(high)

    def replay_initial_offsets(self) -> dict[str, Any]:
        """Where the query starts, resolved once (``kafka.start``) for today's partitions."""
        if self._initial is None:
            self._initial = {p: self._resolve_start(p, self._start) for p in self.replay_partitions()}
        return dict(self._initial)

    def replay_initial_offset(self, partition: str) -> int:
        """Start of a partition the query did not start with (a partition added, a new topic
        of the pattern): its first record ("earliest" and "latest"), else by
        ``kafka.start``. Kept per process, so planning and reading agree."""
        if partition not in self._new_starts:
            mode = self._start if self._start in ("committed", "timestamp") else "earliest"
            self._new_starts[partition] = self._resolve_start(partition, mode)
        return self._new_starts[partition]

    def _fill_buffer(self) -> None:
        """Local engine: a task starts today's partitions where ``kafka.start`` says."""
        for partition in self.my_partitions():
            if partition not in self._cursor:
                initial = initial_offsets(self)
                self._cursor[partition] = initial.get(partition, initial_offset(self, partition))
        super()._fill_buffer()

    def _resolve_start(self, partition: str, mode: str) -> int:
        from confluent_kafka import TopicPartition

        low, high = self._watermarks(partition)
        topic, number = split_partition(partition)
        if mode == "latest":
            return high - 1
        if mode == "committed":
            [tp] = self.consumer.committed([TopicPartition(topic, number)], timeout=_META_TIMEOUT_SECS)
            if tp.offset >= 0:
                return int(tp.offset) - 1
            return self._resolve_start(partition, self._fallback)
        if mode == "timestamp":
            return self._offset_for_time(partition, int(self._start_ts), low, high)
        return low - 1

    def _offset_for_time(self, partition: str, ts_ms: int, low: int, high: int) -> int:
        """The offset before the first record with timestamp >= ``ts_ms``. The broker's
        answer is only where to start looking (some brokers answer a batch's first offset)."""
        from confluent_kafka import TopicPartition

        topic, number = split_partition(partition)
        [tp] = self.consumer.offsets_for_times([TopicPartition(topic, number, ts_ms)],
                                               timeout=_META_TIMEOUT_SECS)
        begin = max(low, int(tp.offset)) if tp.offset >= 0 else high
        for message in self._fetch(partition, begin - 1, high - 1):
            if message.timestamp()[1] >= ts_ms:
                return int(message.offset()) - 1
        return high - 1

    def replay_plan(self, start: dict[str, Any], budgets: Sequence[int]) -> tuple[dict[str, Any], list[int]]:
        """As the base class; with the broker unreachable the batch is empty (planned again
        later) instead of a failed query."""
        from confluent_kafka import KafkaException

        try:
            return super().replay_plan(start, budgets)
        except KafkaException as exc:
            self._warn(f"broker unreachable while planning ({exc}); retrying")
            return dict(start), [0] * len(budgets)

    def replay_advance(self, partition: str, start: Any, max_records: int) -> tuple[int, int]:
        low, high = self._watermarks(partition)
        begin = int(start)
        check_not_lost(self._name(), partition, begin, low)
        end = max(begin, min(high - 1, begin + max_records))
        return end, end - begin

    def replay_partition_done(self, partition: str, offset: Any) -> bool:
        from confluent_kafka import KafkaException

        try:
            return int(offset) >= self._watermarks(partition)[1] - 1
        except KafkaException:
            return False

    def replay_partition_lag(self, partition: str, offset: Any) -> tuple[int, bool]:
        """High watermark minus the position (``offset`` is the last record read)."""
        return max(0, self._watermarks(partition)[1] - 1 - int(offset)), True

    def replay_lag(self, offsets: Mapping[str, Any], tasks: Sequence[int] | None = None) -> Any:
        """As the base class; None (no figure) while the broker does not answer."""
        from confluent_kafka import KafkaException

        try:
            return super().replay_lag(offsets, tasks)
        except KafkaException:
            return None

    def replay_exhausted(self, offsets: dict[str, Any]) -> bool:
        from confluent_kafka import KafkaException

        try:
            return super().replay_exhausted(offsets)
        except KafkaException:
            return False

    def _warn(self, text: str) -> None:
        try:
            self.log(f"{self._name()}: {text}", level="warning")
        except Exception:  # noqa: BLE001, S110 - no pipe (a planner/executor copy): stay quiet
            pass

    # -- reading ---------------------------------------------------------
    def _fetch(self, partition: str, start: int, end: int) -> Iterator[Any]:
        """The records at offsets ``start+1 .. end`` (gaps of compacted/transactional topics
        skipped); waits up to ``kafka.read_timeout_secs`` for an unreachable broker."""
        from confluent_kafka import KafkaError, TopicPartition

        if end <= start:
            return
        topic, number = split_partition(partition)
        consumer = self.consumer
        consumer.assign([TopicPartition(topic, number, start + 1)])
        position = start + 1
        deadline = time.monotonic() + self._read_timeout
        try:
            while position <= end:
                messages = consumer.consume(min(_CONSUME_MAX, end - position + 1), _POLL_SECS)
                for message in messages:
                    err = message.error()
                    if err is None:
                        offset = message.offset()
                        if message.topic() != topic or message.partition() != number or offset < position:
                            continue
                        if offset > end:
                            return
                        yield message
                        position = offset + 1
                        deadline = time.monotonic() + self._read_timeout
                    elif err.code() == KafkaError._PARTITION_EOF:
                        if message.offset() > end:
                            return  # only control records (transaction markers) were left
                    elif err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                        check_not_lost(self._name(), partition, position - 1, self._watermarks(partition)[0])
                        raise RuntimeError(f"{self._name()}: {partition} offset {position}: {err.str()}")
                if position <= end and time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{self._name()}: Kafka topic {topic!r} partition {number}: no record at "
                        f"offset {position} (range ends at {end}) for {self._read_timeout:g}s; is "
                        f"the broker {self._servers} reachable? (kafka.read_timeout_secs)")
        finally:
            consumer.unassign()

    def replay_read(self, partition: str, start: Any, end: Any) -> Iterator[tuple[list[Any], str]]:
        for message in self._fetch(partition, int(start), int(end)):
            yield self._records.decode(partition, message), msg_id_for(partition, message.offset())

    def replay_values(self, partition: str, start: Any, end: Any,
                      on_error: Callable[[RecordDecodeError], None]) -> Iterator[list[list[Any]]]:
        block: list[list[Any]] = []
        decode = self._records.decode
        plain_text = self._records.plain_text and self._arity in (None, 1)
        refuse = self.refuse
        for message in self._fetch(partition, int(start), int(end)):
            values = None
            if plain_text:
                try:
                    values = [message.value().decode("utf-8")]
                except (AttributeError, UnicodeDecodeError):
                    values = None
            if values is None:
                try:
                    values = decode(partition, message)
                except RecordDecodeError as err:
                    on_error(err)
                    continue
                bad = refuse(partition, msg_id_for(partition, message.offset()), values)
                if bad is not None:
                    on_error(bad)
                    continue
            block.append(values)
            if len(block) >= 1024:
                yield block
                block = []
        if block:
            yield block

    # -- committing back to the group -------------------------------------
    def replay_commit(self, offsets: Mapping[str, Any]) -> None:
        """Commit ``offsets`` (the end of a committed batch) to ``kafka.group_id`` when
        ``kafka.commit`` is on. Best effort: a failure is a warning, the next commit
        catches up."""
        if not self._commit or not offsets:
            return
        from confluent_kafka import KafkaException, TopicPartition

        tps = [TopicPartition(*split_partition(p), int(o) + 1) for p, o in sorted(offsets.items())]
        try:
            self.consumer.commit(offsets=tps, asynchronous=False)
        except KafkaException as exc:
            self._warn(f"committing offsets to group {self._group!r} failed ({exc})")

    def next_tuple(self) -> None:
        """The base loop; with ``kafka.commit`` the acked prefix of each partition
        (``acked_offsets``) is committed every ``kafka.commit_interval_secs`` (local engine:
        acks are its batch commits)."""
        try:
            super().next_tuple()
        except StopIteration:
            if self._commit:  # end of a bounded input: everything is acked
                self.replay_commit(self.acked_offsets())
            raise
        if self._commit and time.monotonic() - self._last_commit >= self._commit_every:
            self._last_commit = time.monotonic()
            self.replay_commit(self.acked_offsets())

"""A Kafka spout's configuration: every ``kafka.*`` key, what it means, checked at load.

Config (topology or component conf; the ``stormshift.replacements`` entry of a
Java ``KafkaSpout`` fills most of it from the declaration, see
``stormshift.spouts.kafka_java``):

- ``kafka.bootstrap_servers`` — ``host:port[,host:port]``.
- ``kafka.topics`` (a list, or a string for one topic) or ``kafka.pattern``
  (a regular expression matched against whole topic names; new matching
  topics are picked up while running).
- ``kafka.start`` — where a new query starts in partitions it has never read:
  ``"earliest"`` (default), ``"latest"`` (the end of each partition when the
  query starts; partitions that appear later are read from their start),
  ``"timestamp"`` (the first record with a timestamp at or after
  ``kafka.start_timestamp_ms``), or ``"committed"`` (the committed offsets of
  consumer group ``kafka.group_id``, e.g. the legacy topology's
  storm-kafka-client group; partitions it has no offset for start at
  ``kafka.start_fallback``, ``"earliest"`` or ``"latest"``).
- ``kafka.fields`` — the record fields of a tuple, in order, from ``key``,
  ``value``, ``topic``, ``partition``, ``offset``, ``timestamp`` (ms) and
  ``headers`` (a list of ``[name, value]``). Default ``["value"]``.
- ``kafka.value_format`` — ``"text"`` (UTF-8, default), ``"json"`` or
  ``"bytes"``; ``kafka.key_format`` — ``"text"`` (default) or ``"bytes"`` (also
  used for header values). With ``"json"`` and ``kafka.json_fields`` (a list
  of keys, as ``jsonlines.fields``) the field ``value`` stands for those keys'
  values; without ``json_fields`` it is the decoded JSON value.
- ``kafka.group_id`` and ``kafka.commit`` (bool) — commit the offsets of
  committed batches back to the group, for lag monitoring with the usual
  Kafka tools; never read back while a query runs (the engine's offsets are
  the truth).
- ``kafka.bounded`` — true: the input ends once every partition is read up to
  its end (checked when the spout is polled).
- ``security.protocol``, ``sasl.*``, ``ssl.*`` — passed to confluent-kafka as
  they are; ``kafka.client.<property>`` passes any other librdkafka property.
- ``kafka.read_timeout_secs`` (default 300) — how long a read waits for an
  unreachable broker before it fails (the engine retries the batch).

Split from ``kafka.py`` (the spout: partitions, offsets, reads) because this is the
configuration's vocabulary and its checks; ``read_config`` raises a ``TopologyError``
naming the key and an example, before anything connects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stormshift.errors import TopologyError
from stormshift.spouts.kafka_records import RECORD_FIELDS, RecordDecoder, client_conf

__all__ = ["STARTS", "KafkaConfig", "read_config"]

STARTS = ("earliest", "latest", "timestamp", "committed")


@dataclass(frozen=True)
class KafkaConfig:
    """The checked ``kafka.*`` keys (module doc), as the spout keeps them."""

    servers: str
    topics: list[str]
    pattern: re.Pattern[str] | None
    start: str
    fallback: str
    start_ts: Any
    group: Any
    commit: bool
    records: RecordDecoder
    bounded: bool
    read_timeout: float
    client_conf: dict[str, Any]
    commit_every: float


def read_config(conf: Any, name: str, value: Callable[..., Any],
                require: Callable[[str], Any]) -> KafkaConfig:
    """The spout ``name``'s config from ``conf`` (the merged topology and component conf);
    ``value(key, default)`` / ``require(key)`` read ``kafka.<key>`` (the spout's own)."""

    def choice(key: str, allowed: Sequence[str], default: str) -> str:
        got = value(key, default)
        if got not in allowed:
            raise TopologyError(f"kafka.{key} must be one of {list(allowed)}, got {got!r}",
                                component=name, fix=f'e.g. "kafka.{key}": "{default}"')
        return str(got)

    servers = str(require("bootstrap_servers"))
    named = value("topics")
    regex = value("pattern")
    if bool(named) == bool(regex):
        raise TopologyError(
            "KafkaSpout needs exactly one of kafka.topics and kafka.pattern",
            component=name, fix='e.g. "kafka.topics": ["pixels"] or "kafka.pattern": "pixels-.*"')
    topics = sorted([named] if isinstance(named, str) else map(str, named or []))
    pattern = re.compile(str(regex)) if regex else None
    start = choice("start", STARTS, "earliest")
    fallback = choice("start_fallback", ("earliest", "latest"), "earliest")
    start_ts = value("start_timestamp_ms")
    group = value("group_id")
    commit = bool(value("commit", False))
    if start == "timestamp" and not isinstance(start_ts, int):
        raise TopologyError("kafka.start 'timestamp' needs an integer kafka.start_timestamp_ms",
                            component=name, fix='e.g. "kafka.start_timestamp_ms": 1700000000000')
    if (start == "committed" or commit) and not group:
        raise TopologyError("kafka.start 'committed' and kafka.commit need kafka.group_id",
                            component=name, fix='set "kafka.group_id" to the consumer group')
    json_fields = value("json_fields")
    fields = value("fields", ["value"])
    if isinstance(fields, str) or not fields or any(f not in RECORD_FIELDS for f in fields):
        raise TopologyError(f"kafka.fields must be a list of {list(RECORD_FIELDS)}, got {fields!r}",
                            component=name, fix='e.g. "kafka.fields": ["key", "value"]')
    records = RecordDecoder(
        name, tuple(fields),
        choice("value_format", ("text", "json", "bytes"), "text"),
        choice("key_format", ("text", "bytes"), "text"),
        tuple(map(str, json_fields)) if json_fields else None)
    bounded = bool(value("bounded", False))
    read_timeout = float(value("read_timeout_secs", 300))
    return KafkaConfig(servers, topics, pattern, start, fallback, start_ts, group, commit, records,
                       bounded, read_timeout, client_conf(conf, servers),
                       float(value("commit_interval_secs", 5)))

"""What a Java Kafka spout's declaration says, as ``KafkaSpout`` config.

A streamparse topology declares Storm's Kafka spout as a ``JavaSpout`` with
constructor arguments (``args_list``) and a component config. Two classes are
understood (anything else is configured from ``stormshift.replacements`` only):

- ``org.apache.storm.kafka.spout.KafkaSpout`` (storm-kafka-client): ``args_list``
  as ``KafkaSpoutConfig.builder(bootstrapServers, topics...)``: servers, then
  topics. Config keys, with or without a ``kafka.`` prefix: ``bootstrap.servers``,
  ``topic``/``topics``, ``topic.pattern``, ``group.id``,
  ``first.poll.offset.strategy`` (``EARLIEST``, ``LATEST``,
  ``UNCOMMITTED_EARLIEST`` -- its default --, ``UNCOMMITTED_LATEST``).
- ``storm.kafka.KafkaSpout`` (storm-kafka): ``args_list`` as
  ``SpoutConfig(zkHosts, topic, zkRoot, id)``: the topic and the consumer id
  (its offsets were in ZooKeeper: a port starts at ``startOffsetTime``, -2 =
  earliest by default, -1 = latest, else a timestamp in ms). ZooKeeper hosts
  are no bootstrap servers: ``kafka.bootstrap_servers`` comes from config.

Translated values are the component's config; the replacement entry's
``config`` wins over them. Each translated key says where it came from, which
``stormshift inspect`` shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["JAVA_KAFKA_SPOUTS", "from_java"]

CLIENT = "org.apache.storm.kafka.spout.KafkaSpout"
LEGACY = "storm.kafka.KafkaSpout"
JAVA_KAFKA_SPOUTS = (CLIENT, LEGACY)

_FIRST_POLL = {
    "EARLIEST": {"kafka.start": "earliest"},
    "LATEST": {"kafka.start": "latest"},
    "UNCOMMITTED_EARLIEST": {"kafka.start": "committed", "kafka.start_fallback": "earliest"},
    "UNCOMMITTED_LATEST": {"kafka.start": "committed", "kafka.start_fallback": "latest"},
}


def _find(config: Mapping[str, Any], *names: str) -> tuple[str, Any] | None:
    for name in names:
        for key in (name, f"kafka.{name}"):
            if config.get(key) not in (None, "", []):
                return key, config[key]
    return None


def from_java(java_class: str, args: Sequence[Any], config: Mapping[str, Any]
              ) -> tuple[dict[str, Any], dict[str, str]]:
    """``(config, where)``: KafkaSpout config keys from the declaration, and for each key
    where its value came from (``args_list[1]``, ``config 'group.id'``)."""
    out: dict[str, Any] = {}
    where: dict[str, str] = {}

    def put(key: str, value: Any, source: str) -> None:
        out[key], where[key] = value, source

    def from_config(key: str, names: tuple[str, ...], convert: Any = None) -> None:
        found = _find(config, *names)
        if found is not None:
            put(key, convert(found[1]) if convert else found[1], f"config {found[0]!r}")

    if java_class == CLIENT:
        if args:
            put("kafka.bootstrap_servers", str(args[0]), "args_list[0]")
        if len(args) > 1:
            put("kafka.topics", [str(a) for a in args[1:]], f"args_list[1:{len(args)}]")
        from_config("kafka.bootstrap_servers", ("bootstrap.servers",))
        from_config("kafka.topics", ("topics", "topic"), lambda v: [v] if isinstance(v, str) else list(v))
        from_config("kafka.pattern", ("topic.pattern",))
        from_config("kafka.group_id", ("group.id",))
        found = _find(config, "first.poll.offset.strategy")
        strategy = str(found[1]).upper() if found else "UNCOMMITTED_EARLIEST"
        for key, value in _FIRST_POLL.get(strategy, {}).items():
            put(key, value, f"config {found[0]!r}" if found else "storm-kafka-client's default "
                "first poll strategy UNCOMMITTED_EARLIEST")
        if out.get("kafka.start") == "committed" and "kafka.group_id" not in out:
            for key in ("kafka.start", "kafka.start_fallback"):  # no group: nothing committed
                out.pop(key, None)
                where.pop(key, None)
    elif java_class == LEGACY:
        if len(args) > 1:
            put("kafka.topics", [str(args[1])], "args_list[1]")
        if len(args) > 3:
            put("kafka.group_id", str(args[3]), "args_list[3] (SpoutConfig id)")
        from_config("kafka.topics", ("topic",), lambda v: [v] if isinstance(v, str) else list(v))
        found = _find(config, "startOffsetTime")
        if found is not None:
            t = int(found[1])
            start: dict[str, Any] = {-2: {"kafka.start": "earliest"}, -1: {"kafka.start": "latest"}}.get(
                t, {"kafka.start": "timestamp", "kafka.start_timestamp_ms": t})
            for key, value in start.items():
                put(key, value, f"config {found[0]!r}")
    return out, where

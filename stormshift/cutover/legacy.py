"""The legacy's side of a cut-over: its position (consumer group, position store) and
its state store, read at cut-over and written at hand-back.

Position specs and seeds are ``plan.py``'s; offsets are spout offsets throughout (the
Kafka arithmetic is ``plan.from_kafka`` / ``plan.to_kafka``). A store's write goes in as
one MULTI/EXEC, so a reader of the legacy's store sees all of a hand-back or none of it.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from stormshift.cutover.plan import Seed, from_kafka, key_to_port, to_kafka, to_legacy, to_port
from stormshift.errors import OptionError
from stormshift.state.client import Redis

__all__ = ["group_members", "read_position", "read_store", "write_position", "write_store"]

_TIMEOUT_SECS = 10.0


def _redis(url: str | None, default: Any) -> Any:
    if not url:
        return default
    import redis

    return redis.Redis.from_url(url)


def _hook(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    except (ImportError, AttributeError) as exc:
        raise OptionError(f"cut-over hook {path!r} cannot be loaded ({exc}); fix: name a "
                          "function of the project's src/ as module:function") from None


def _kafka_consumer(conf: Mapping[str, Any], group: str) -> Any:
    from confluent_kafka import Consumer

    from stormshift.spouts.kafka_records import client_conf

    return Consumer(client_conf(conf, str(conf["kafka.bootstrap_servers"]))
                    | {"group.id": group, "enable.auto.commit": False})


def _kafka_partitions(consumer: Any, conf: Mapping[str, Any]) -> list[tuple[str, int]]:
    import re

    topics = conf.get("kafka.topics")
    pattern = conf.get("kafka.pattern")
    wanted = [topics] if isinstance(topics, str) else list(topics or [])
    meta = consumer.list_topics(timeout=_TIMEOUT_SECS).topics
    out = []
    for topic, info in sorted(meta.items()):
        if topic in wanted or (pattern and not topic.startswith("__")
                               and re.fullmatch(str(pattern), topic)):
            out += [(topic, p) for p in sorted(info.partitions)]
    return out


def read_position(spec: Mapping[str, Any], conf: Mapping[str, Any], r: Redis) -> dict[str, Any]:
    """The legacy's position now, as spout offsets by partition."""
    if "kafka_group" in spec:
        from confluent_kafka import TopicPartition

        from stormshift.spouts.kafka import partition_name

        consumer = _kafka_consumer(conf, str(spec["kafka_group"]))
        try:
            tps = [TopicPartition(t, p) for t, p in _kafka_partitions(consumer, conf)]
            got = consumer.committed(tps, timeout=_TIMEOUT_SECS) if tps else []
        finally:
            consumer.close()
        return from_kafka({partition_name(tp.topic, tp.partition): tp.offset for tp in got})
    if "redis_hash" in spec:
        raw = _redis(spec.get("url"), r).hgetall(str(spec["redis_hash"]))
        return {k.decode(): _offset(v.decode()) for k, v in sorted(raw.items())}
    if "file" in spec:
        try:
            with open(str(spec["file"]), encoding="utf-8") as fh:
                return dict(json.load(fh))
        except FileNotFoundError:
            return {}
    return dict(_hook(str(spec["hook"]))(dict(conf)))


def _offset(text: str) -> Any:
    return int(text) if text.lstrip("-").isdigit() else text


def write_position(spec: Mapping[str, Any], conf: Mapping[str, Any], r: Redis,
                   offsets: Mapping[str, Any]) -> None:
    """Record ``offsets`` where the legacy resumes from (hand-back)."""
    if not offsets:
        return
    if "kafka_group" in spec:
        from confluent_kafka import TopicPartition

        from stormshift.spouts.kafka import split_partition

        consumer = _kafka_consumer(conf, str(spec["kafka_group"]))
        try:
            consumer.commit(offsets=[TopicPartition(*split_partition(p), c)
                                     for p, c in sorted(to_kafka(offsets).items())],
                            asynchronous=False)
        finally:
            consumer.close()
    elif "redis_hash" in spec:
        _redis(spec.get("url"), r).hset(str(spec["redis_hash"]),
                                        mapping={p: str(o) for p, o in offsets.items()})
    elif "file" in spec:
        path = str(spec["file"])
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(dict(offsets), fh, sort_keys=True)
        os.replace(tmp, path)
    elif spec.get("hook_back"):
        _hook(str(spec["hook_back"]))(dict(conf), dict(offsets))


def group_members(spec: Mapping[str, Any], conf: Mapping[str, Any]) -> int:
    """Live members of the legacy's consumer group (0 for other position stores). A group
    the broker reports as stable or rebalancing counts one member at least."""
    if "kafka_group" not in spec:
        return 0
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient

    from stormshift.spouts.kafka_records import client_conf

    admin = AdminClient(client_conf(conf, str(conf["kafka.bootstrap_servers"])))
    group = str(spec["kafka_group"])
    described = admin.describe_consumer_groups([group])[group].result(_TIMEOUT_SECS)
    busy = described.state in (ConsumerGroupState.STABLE, ConsumerGroupState.PREPARING_REBALANCING,
                               ConsumerGroupState.COMPLETING_REBALANCING)
    return max(len(described.members or []), int(busy))


def read_store(seed: Seed, r: Redis, conf: Mapping[str, Any]) -> dict[Any, Any]:
    """The legacy's state for ``seed``, as the port's map holds it (key -> value)."""
    if seed.store == "hook":
        return dict(_hook(seed.name)(dict(conf)))
    client = _redis(seed.url, r)
    if seed.store == "redis_zset":
        items = client.zrange(seed.name, 0, -1, withscores=True)
    elif seed.store == "redis_hash":
        items = list(client.hgetall(seed.name).items())
    else:
        keys = sorted(k for k in client.scan_iter(match=f"{seed.name}*", count=1000)
                      if not k.endswith(b":stormshift:txid"))
        items = [(k[len(seed.name.encode()):], v)
                 for k, v in zip(keys, client.mget(keys) if keys else []) if v is not None]
    return {key_to_port(k, seed.key): to_port(v, seed.value) for k, v in items}


def write_store(seed: Seed, r: Redis, conf: Mapping[str, Any], values: Mapping[Any, Any]) -> None:
    """Write ``values`` (the port's state) into the legacy's store in its format, in one
    MULTI/EXEC; keys the port does not hold are left as they are."""
    if seed.store == "hook":
        _hook(str(seed.extra.get("hook_back") or seed.name))(dict(conf), dict(values))
        return
    if not values:
        return
    pipe = _redis(seed.url, r).pipeline(transaction=True)
    for key, value in values.items():
        text = to_legacy(value, seed.value)
        if seed.store == "redis_zset":
            pipe.zadd(seed.name, {str(key): float(text)})
        elif seed.store == "redis_hash":
            pipe.hset(seed.name, str(key), text)
        else:
            pipe.set(f"{seed.name}{key}", text)
    pipe.execute()

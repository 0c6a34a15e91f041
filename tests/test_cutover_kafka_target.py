"""The Kafka target's guard (``state/target_kafka.py``) on a real broker (tansu) and a real
Redis: a batch produced once, its re-run, a zombie of an older batch, and the two things
a kill leaves behind -- a transaction committed before the guard recorded it, and one
half produced and never committed -- each end with every message in the topic once."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from support.kafka_broker import TansuBroker

from stormshift.state import keys as K
from stormshift.state import target_kafka
from stormshift.state.connection import run_scripts
from stormshift.state.target import parse_targets

pytestmark = [pytest.mark.kafka]

FIELDS = ("word", "count", "rid")
WHO = "count_bolt:1"


@pytest.fixture(scope="module")
def broker() -> Iterator[TansuBroker]:
    b = TansuBroker()
    yield b
    b.stop()


def _target(broker: TansuBroker) -> Any:
    topic = f"out-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    return parse_targets({"cutover.sink": {"count_bolt:default": {
        "kafka_topic": topic, "key": "word", "value": ["word", "count", "rid"],
        "bootstrap_servers": broker.bootstrap}}})["count_bolt:default"]


def _messages(target: Any, first_rid: int, n: int) -> list[tuple[bytes | None, bytes]]:
    leaves = [("default", [f"w{i % 3}", i, first_rid + i]) for i in range(n)]
    return target_kafka.kafka_messages(target, FIELDS, leaves)


def _topic(broker: TansuBroker, topic: str) -> list[dict[str, Any]]:
    """Every message a read_committed consumer sees, to the end of each partition."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                  "enable.partition.eof": True, "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    out, todo, deadline = [], {0, 1}, time.monotonic() + 30
    while todo and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
            todo.discard(m.partition())
            continue
        out.append(json.loads(m.value()))
    c.close()
    assert not todo, "the topic was not read to its end"
    return out


def _rids(broker: TansuBroker, topic: str) -> list[int]:
    return sorted(m["rid"] for m in _topic(broker, topic))


def test_a_batch_is_produced_once_and_never_by_an_older_one(
        broker: TansuBroker, redis_url: str, namespace: str) -> None:
    r = redis.Redis.from_url(redis_url)
    t = _target(broker)
    assert target_kafka.write(r, namespace, t, WHO, 5, _messages(t, 0, 6)) == 6
    assert target_kafka.write(r, namespace, t, WHO, 5, _messages(t, 0, 6)) == 0  # re-run
    assert target_kafka.write(r, namespace, t, WHO, 4, _messages(t, 50, 6)) == 0  # zombie
    assert target_kafka.write(r, namespace, t, "count_bolt:0", 5, _messages(t, 10, 2)) == 2
    assert _rids(broker, t.name) == [0, 1, 2, 3, 4, 5, 10, 11]
    by_word = {m["word"]: m["count"] for m in _topic(broker, t.name) if m["rid"] < 10}
    assert by_word == {"w0": 3, "w1": 4, "w2": 5}  # per key in emit order (one partition a key)


@pytest.mark.parametrize("committed", [True, False], ids=["after-commit", "mid-produce"])
def test_a_batch_a_killed_attempt_left_is_completed_not_repeated(
        broker: TansuBroker, redis_url: str, namespace: str, committed: bool) -> None:
    """What a kill leaves: the intent recorded and either the whole transaction committed
    (killed before step 5) or half the messages sent in a transaction never committed
    (killed in step 4). The re-run's ``write`` fences that producer, reads what is there
    and produces only the rest."""
    from confluent_kafka import Producer

    r = redis.Redis.from_url(redis_url)
    t = _target(broker)
    messages = _messages(t, 100, 8)
    guard = K.kafka_target_key(namespace, t.name)
    since = target_kafka._ends(target_kafka._reader(t), t.name)
    run_scripts(r, [("kafka_intent", [guard], [WHO, 7, json.dumps(since)])])
    dead = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random",
                     "transactional.id": target_kafka.transactional_id(namespace, WHO, t.name)})
    dead.init_transactions(15)
    dead.begin_transaction()
    for seq, (key, value) in enumerate(messages if committed else messages[:4]):
        dead.produce(t.name, key=key, value=value, headers=[
            ("stormshift.task", WHO.encode()), ("stormshift.txid", b"7"),
            ("stormshift.seq", str(seq).encode())])
    if committed:
        dead.commit_transaction(15)
    else:
        dead.flush(15)  # sent, its transaction left open
    produced = target_kafka.write(r, namespace, t, WHO, 7, messages)
    assert _rids(broker, t.name) == list(range(100, 108)), "a message missing or produced twice"
    # tansu shows the open transaction's 4 records to read_committed readers: the rest is
    # produced; a Kafka broker hides them (aborted by the fencing): all 8 are.
    assert produced == (0 if committed else 4)
    assert target_kafka.write(r, namespace, t, WHO, 7, messages) == 0
    assert r.hget(guard, WHO) == b"7" and not r.hexists(guard, f"{WHO}:intent")
    target_kafka._PRODUCERS.clear()

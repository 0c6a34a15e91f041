"""A Kafka topic as the legacy's target, written by the port exactly once.

A topic has no place for a txid guard, so the guard is kept in Redis beside the state
(``keys.kafka_target_key``) and each task writes one batch's messages in numbered steps
(``write``), after its fenced state commit (a fenced attempt produces nothing):

1. the guard says whether this task already produced txid N whole: then nothing;
2. else it records an *intent* (N, and where each partition of the topic ended: its high
   watermark), or finds the intent an earlier attempt of N left;
3. after an earlier attempt it first makes its own producer (``transactional.id`` per
   task and topic: the broker fences the earlier attempt's producer), then reads the
   topic from that intent's offsets and keeps the sequence numbers of this task's
   messages of N already there (every message carries the headers ``stormshift.task``,
   ``stormshift.txid`` and ``stormshift.seq``);
4. it produces the messages not there, in one Kafka transaction;
5. it records N as produced whole (the guard only grows).

Why exactly once: a batch's emits are a pure function of the state committed before it
and its input, so every attempt of N has the same messages under the same seqs. A kill
before step 4 leaves nothing in the topic; a kill in or after step 4 but before step 5
leaves the intent, and the re-run produces only the seqs the topic lacks. A broker that
hides aborted transactions from ``read_committed`` readers (Kafka) hides a dead
attempt's unfinished transaction from the scan and from the topic's consumers alike (it
is produced again); a broker that shows them (tansu, the test broker: it shows an
aborted transaction's records to ``read_committed`` consumers) shows them to both (they
are not produced again). Consumers see each message once either way.

What remains: step 3 counts on the broker refusing the fenced producer's further
records (Kafka's producer epoch does; on tansu only the refusal of a fenced producer's
``AddPartitionsToTxn`` was seen), and on the intent's offsets still being in the topic
(retention deleting them within the seconds before a re-run would make the scan miss
them). The normal path costs a watermark query per partition and two Redis scripts per
task and batch; the scan happens only after a failed attempt.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import run_scripts
from stormshift.state.target import Target, target_text

__all__ = ["HEADERS", "kafka_messages", "our_seq", "transactional_id", "write"]

HEADERS = ("stormshift.task", "stormshift.txid", "stormshift.seq")
_TIMEOUT_SECS = 30.0
_PRODUCERS: dict[str, Any] = {}  # transactional.id -> an initialized producer (this process)


def kafka_messages(target: Target, fields: Sequence[str],
                   leaves: Iterable[tuple[str, Sequence[Any]]]) -> list[tuple[bytes | None, bytes]]:
    """``(key, value)`` of every emit of one task on ``target``'s stream, in emit order
    (``fields``: the stream's declared fields); pure. The key is the key field(s) joined by
    ``:`` (None without one), the value one field's text or a JSON object of several."""
    stream = target.stream.partition(":")[2]
    kpos = [fields.index(k) for k in target.key]
    names = target.value_fields or (target.value,)
    vpos = [fields.index(v) for v in names]
    out: list[tuple[bytes | None, bytes]] = []
    for name, values in leaves:
        if name != stream:
            continue
        key = ":".join(str(values[i]) for i in kpos).encode() if kpos else None
        if target.value_fields:
            value = json.dumps({n: values[i] for n, i in zip(names, vpos)}, sort_keys=True,
                               separators=(",", ":")).encode()
        else:
            value = target_text(values[vpos[0]]).encode()
        out.append((key, value))
    return out


def transactional_id(namespace: str, who: str, topic: str) -> str:
    return f"stormshift.{namespace}.{who}.{topic}"


def our_seq(headers: Sequence[tuple[str, bytes]] | None, who: str, txid: int) -> int | None:
    """The seq of a message this task produced for ``txid`` (None: another's); pure."""
    held = dict(headers or ())
    if held.get(HEADERS[0]) != who.encode() or held.get(HEADERS[1]) != str(txid).encode():
        return None
    return int(held[HEADERS[2]])


def _producer(target: Target, tid: str, fresh: bool) -> Any:
    from confluent_kafka import Producer

    if fresh or tid not in _PRODUCERS:
        _PRODUCERS.pop(tid, None)
        producer = Producer({"bootstrap.servers": target.servers, "transactional.id": tid,
                             "partitioner": "murmur2_random",  # a Java client's key placement
                             "linger.ms": 5, "log.connection.close": False})
        producer.init_transactions(_TIMEOUT_SECS)
        _PRODUCERS[tid] = producer
    return _PRODUCERS[tid]


def _reader(target: Target) -> Any:
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": target.servers, "group.id": "stormshift-target-scan",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "isolation.level": "read_committed", "log.connection.close": False})


def _ends(reader: Any, topic: str) -> dict[str, int]:
    """Each partition's high watermark now."""
    from confluent_kafka import TopicPartition

    meta = reader.list_topics(topic, timeout=_TIMEOUT_SECS).topics[topic]
    if meta.error is not None:
        raise StateError(f"cutover.sink: Kafka topic {topic!r}: {meta.error}")
    return {str(p): reader.get_watermark_offsets(TopicPartition(topic, p), _TIMEOUT_SECS)[1]
            for p in sorted(meta.partitions)}


def _found(reader: Any, topic: str, since: Mapping[str, int], who: str, txid: int) -> set[int]:
    """Step 3: seqs of this task's messages of ``txid`` in the topic after ``since``."""
    from confluent_kafka import KafkaError, TopicPartition

    ends = _ends(reader, topic)
    todo = {p for p, end in ends.items() if end > int(since.get(p, 0))}
    reader.assign([TopicPartition(topic, int(p), int(since.get(p, 0))) for p in sorted(todo)])
    found: set[int] = set()
    deadline = time.monotonic() + _TIMEOUT_SECS
    while todo:
        if time.monotonic() > deadline:
            raise StateError(f"cutover.sink: Kafka topic {topic!r}: partitions {sorted(todo)} "
                             f"not read to their end in {_TIMEOUT_SECS:g} s; the batch is retried")
        msg = reader.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                todo.discard(str(msg.partition()))
                continue
            raise StateError(f"cutover.sink: Kafka topic {topic!r}: {msg.error()}")
        seq = our_seq(msg.headers(), who, txid)
        if seq is not None:
            found.add(seq)
    reader.unassign()
    return found


def write(r: Redis, namespace: str, target: Target, who: str, txid: int,
          messages: Sequence[tuple[bytes | None, bytes]]) -> int:
    """Steps 1-5 of the module doc for one task's ``messages`` of ``txid``; returns how
    many were produced now."""
    from confluent_kafka import KafkaException

    if not messages:
        return 0
    guard = K.kafka_target_key(namespace, target.name)
    tid = transactional_id(namespace, who, target.name)
    reader = _reader(target)
    try:
        # Steps 1-2.
        since = _ends(reader, target.name)
        (state, held), = run_scripts(r, [("kafka_intent", [guard], [who, txid, json.dumps(since)])])
        if int(state) == 0:
            return 0
        # Step 3.
        producer = _producer(target, tid, fresh=int(state) == 2)
        found: set[int] = set()
        if int(state) == 2:
            text = held.decode() if isinstance(held, bytes) else str(held)
            found = _found(reader, target.name, json.loads(text.partition("|")[2]), who, txid)
    finally:
        reader.close()
    # Step 4.
    todo = [(seq, m) for seq, m in enumerate(messages) if seq not in found]
    try:
        producer.begin_transaction()
        for seq, (key, value) in todo:
            producer.produce(target.name, key=key, value=value, headers=[
                (HEADERS[0], who.encode()), (HEADERS[1], str(txid).encode()),
                (HEADERS[2], str(seq).encode())])
        producer.commit_transaction(_TIMEOUT_SECS)
    except KafkaException as exc:
        _PRODUCERS.pop(tid, None)  # fenced or failed: the next attempt starts a new producer
        raise StateError(f"cutover.sink: Kafka topic {target.name!r}, task {who}, txid {txid}: "
                         f"{exc.args[0] if exc.args else exc}; the batch is retried") from None
    # Step 5.
    run_scripts(r, [("kafka_done", [guard], [who, txid])])
    return len(todo)

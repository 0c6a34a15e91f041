"""A legacy and its port taking turns on one input: the cut-over tests' harness.

``Switch`` holds one scenario: a source (a Kafka topic, a Redis stream or a JSON-lines
folder) filled with records ``{"word": w, "rid": n}`` numbered from 0, the legacy project
(``tests/fixtures/cutover/legacy``: ZINCRBY into a sorted set, each record id pushed to a
list) run on the local engine as a process, and the port (``.../port``: an opaque map,
``cutover.sink`` into the same sorted set) cut over and handed back with the real
commands, each a process of its own in its own session (a driver kill takes its group).
With ``topology="words_attr"`` both sides count in a ``Counter`` attribute of a
fields-grouped bolt instead (the port's attribute seeded by ``cutover.seed``'s ``attr``).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "cutover"
WORDS = ["it", "was", "the", "best", "of", "times", "worst", "age", "wisdom", "folly"]
RUN_TIMEOUT_SECS = 240


class Switch:
    def __init__(self, kind: str, tmp: Path, redis_url: str, namespace: str,
                 broker: Any = None, topology: str | None = None):
        self.kind, self.tmp, self.url, self.ns, self.broker = kind, tmp, redis_url, namespace, broker
        self.topology = topology or f"words_{kind}"
        self.r = redis.Redis.from_url(redis_url)
        self.tag = tag = uuid.uuid4().hex[:8]
        self.zset, self.ids, self.pos = f"cut:{tag}:words", f"cut:{tag}:ids", f"cut:{tag}:pos"
        self.topic, self.group, self.stream = f"words-{tag}", f"legacy-{tag}", f"cut:{tag}:in"
        self.folder = tmp / "input"
        self.folder.mkdir(exist_ok=True)
        self.posfile = tmp / "legacy-position.json"
        self.checkpoint = tmp / "checkpoint"
        self.sink = tmp / "sink"
        self.words: list[str] = []
        self.target: dict[str, Any] | None = None  # cutover.sink instead of the sorted set
        self.rng = random.Random(7)
        if kind == "kafka":
            broker.create_topic(self.topic, 2)

    # -- the input -------------------------------------------------------------------
    def produce(self, n: int) -> None:
        """``n`` more records, numbered on from the last."""
        first = len(self.words)
        new = [self.rng.choice(WORDS) for _ in range(n)]
        self.words += new
        records = [json.dumps({"word": w, "rid": first + i}) for i, w in enumerate(new)]
        if self.kind == "kafka":
            self.broker.produce(self.topic, [((first + i) % 2, None, v.encode())
                                             for i, v in enumerate(records)])
        elif self.kind == "streams":
            pipe = self.r.pipeline()
            for v in records:
                pipe.xadd(self.stream, {"payload": v})
            pipe.execute()
        else:
            with open(self.folder / "words.jsonl", "a", encoding="utf-8") as fh:
                fh.write("".join(v + "\n" for v in records))

    # -- configs ---------------------------------------------------------------------
    def source_options(self, side: str) -> dict[str, Any]:
        common = {"words.redis_url": self.url, "words.zset": self.zset, "words.ids": self.ids}
        if self.kind == "kafka":
            conf = {"kafka.bootstrap_servers": self.broker.bootstrap, "kafka.topics": [self.topic],
                    "kafka.value_format": "json", "kafka.json_fields": ["word", "rid"],
                    "kafka.group_id": self.group, "kafka.bounded": True}
            if side == "legacy":
                conf |= {"kafka.start": "committed", "kafka.commit": True,
                         "kafka.commit_interval_secs": 0.2}
        elif self.kind == "streams":
            conf = {"redis_streams.url": self.url, "redis_streams.keys": [self.stream],
                    "redis_streams.json_fields": ["word", "rid"], "redis_streams.bounded": True}
            if side == "legacy":
                conf["redis_streams.commit_position"] = {"redis_hash": self.pos, "url": self.url}
        else:
            conf = {"jsonlines.path": str(self.folder), "jsonlines.fields": ["word", "rid"],
                    "jsonlines.bounded": True}
            if side == "legacy":
                conf["jsonlines.commit_position"] = {"file": str(self.posfile)}
        return common | conf

    def position(self) -> dict[str, Any]:
        if self.kind == "kafka":
            return {"kafka_group": self.group}
        if self.kind == "streams":
            return {"redis_hash": self.pos, "url": self.url}
        return {"file": str(self.posfile)}

    def port_options(self) -> dict[str, Any]:
        held = {"attr": "counts"} if self.topology == "words_attr" else {"map": "counts",
                                                                          "kind": "opaque"}
        return self.source_options("port") | {
            "cutover.position": {"word_spout": self.position()},
            "cutover.seed": {"count_bolt": held | {
                "value": "int", "from": {"redis_zset": self.zset, "url": self.url}}},
            "cutover.sink": self.target or {"count_bolt:default": {
                "redis_zset": self.zset, "key": "word", "value": "count", "url": self.url}}}

    # -- the commands ----------------------------------------------------------------
    def _run(self, args: list[str], options: dict[str, Any], env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "stormshift", *args]
        for key, value in options.items():
            cmd += ["-o", f"{key}={json.dumps(value)}"]
        full = dict(os.environ)
        full["PYTHONPATH"] = os.pathsep.join([str(REPO), full.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        full["PYSPARK_PYTHON"] = sys.executable
        full.pop("STORMSHIFT_FAULTS", None)
        full |= env or {}
        return subprocess.run(cmd, cwd=self.tmp, env=full, text=True, capture_output=True,
                              timeout=RUN_TIMEOUT_SECS, start_new_session=True, check=False)

    def legacy_start(self) -> dict[str, Any]:
        """Where the legacy resumes (its own resume logic: the group is Kafka's own)."""
        if self.kind == "kafka":
            return {}
        if self.kind == "streams":
            held = {k.decode(): v.decode() for k, v in self.r.hgetall(self.pos).items()}
        else:
            held = json.loads(self.posfile.read_text()) if self.posfile.exists() else {}
        return {"stormshift.start_offsets": {"word_spout": held}} if held else {}

    def legacy(self) -> subprocess.CompletedProcess[str]:
        """The legacy topology on the local engine to the end of its input."""
        out = self._run(["run", str(FIXTURES / "legacy"), "-n", self.topology,
                         "--engine", "local", "--until-done"],
                        self.source_options("legacy") | self.legacy_start())
        assert out.returncode == 0, out.stderr[-3000:]
        return out

    def cutover(self, *extra: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
        return self._run(["cutover", str(FIXTURES / "port"), "-n", self.topology,
                          "--namespace", self.ns, "--redis", self.url, "--checkpoint",
                          str(self.checkpoint), "--master", "local[2]", "--until-done",
                          "--batch-max-tuples", "60", "--sink", f"jsonl:{self.sink}",
                          "--settle", "1", *extra], self.port_options(), env)

    def handback(self) -> subprocess.CompletedProcess[str]:
        out = self._run(["handback", str(FIXTURES / "port"), "-n", self.topology,
                         "--namespace", self.ns, "--redis", self.url], self.port_options())
        assert out.returncode == 0, out.stderr[-3000:]
        return out

    def status(self) -> dict[str, Any]:
        out = self._run(["cutover", "status", str(FIXTURES / "port"), "-n", self.topology,
                         "--namespace", self.ns, "--redis", self.url, "--json"], self.port_options())
        assert out.returncode == 0, out.stderr[-3000:]
        return dict(json.loads(out.stdout))

    # -- what came out -----------------------------------------------------------------
    def totals(self) -> dict[str, int]:
        return {k.decode(): int(v) for k, v in self.r.zrange(self.zset, 0, -1, withscores=True)}

    def expected(self) -> dict[str, int]:
        return dict(Counter(self.words))

    def legacy_ids(self) -> list[int]:
        return [int(x) for x in self.r.lrange(self.ids, 0, -1)]

    def port_ids(self) -> list[int]:
        from stormshift.engines.spark.task.sink import read_jsonl_outputs

        rows = read_jsonl_outputs(str(self.sink)).get(("count_bolt", "default"), [])
        return [int(values[2]) for values in rows]

    def cleanup(self) -> None:
        for key in (self.zset, self.ids, self.pos, self.stream, f"{self.zset}:stormshift:txid"):
            self.r.delete(key)


def wait_for(predicate: Any, timeout_secs: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_secs
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.1)


def read_topic(bootstrap: str, topic: str, partitions: int, timeout_secs: float = 60.0,
               ) -> list[Any]:
    """Every message of ``topic`` a read_committed consumer sees (JSON values), partition by
    partition in order, to the end of each."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                  "enable.partition.eof": True, "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Any] = []
    todo = set(range(partitions))
    deadline = time.monotonic() + timeout_secs
    try:
        while todo:
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {topic}: partitions {sorted(todo)} not read to the end")
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                todo.discard(m.partition())
                continue
            out.append(json.loads(m.value()))
    finally:
        c.close()
    return out

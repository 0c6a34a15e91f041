"""Cut over and hand back for real: the legacy (local engine, Storm semantics) counts N1
records into its sorted set, the port takes over on Spark at the legacy's position with
the set's totals seeded, runs N2 more with its driver SIGKILLed mid-way (the rerun of the
same ``stormshift cutover`` resumes), hands back, and the legacy runs N3 more. The set
must hold an independent count of all N1+N2+N3 records exactly, and the record ids seen
by the two sides must be every id once: none processed by both, none by neither.
Kafka on a real broker (tansu), Redis Streams and JSON lines on a real Redis.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cutover_harness import FIXTURES, REPO, Switch, read_topic, wait_for
from support.kafka_broker import TansuBroker

pytestmark = [pytest.mark.spark, pytest.mark.redis]

N1, N2, N3 = 240, 300, 180


@pytest.fixture(scope="module")
def broker() -> Iterator[TansuBroker]:
    b = TansuBroker()
    yield b
    b.stop()


def _switch(kind: str, tmp_path: Path, redis_url: str, namespace: str,
            request: pytest.FixtureRequest, topology: str | None = None) -> Switch:
    broker = request.getfixturevalue("broker") if kind == "kafka" else None
    s = Switch(kind, tmp_path, redis_url, namespace, broker, topology)
    request.addfinalizer(s.cleanup)
    return s


@pytest.mark.parametrize("kind", [pytest.param("kafka", marks=pytest.mark.kafka), "streams",
                                  "files"])
def test_cut_over_and_hand_back_count_every_record_once(
        kind: str, tmp_path: Path, redis_url: str, namespace: str,
        request: pytest.FixtureRequest) -> None:
    seen = _switch_and_back(_switch(kind, tmp_path, redis_url, namespace, request), tmp_path)
    assert sorted(seen) == list(range(N1 + N2 + N3)), "a record processed twice or never"


def test_cut_over_and_hand_back_a_counter_attribute_count_every_record_once(
        tmp_path: Path, redis_url: str, namespace: str, request: pytest.FixtureRequest) -> None:
    """The same switch with both sides counting in a ``Counter`` attribute of a bolt on 2
    tasks behind a fields grouping: the legacy's totals split by that grouping into the
    tasks' seeded snapshots, and merged back into the sorted set by the hand-back."""
    s = _switch("streams", tmp_path, redis_url, namespace, request, "words_attr")
    seen = _switch_and_back(s, tmp_path, wipe_before_handback=True)
    assert sorted(seen) == list(range(N1 + N2 + N3)), "a record processed twice or never"


@pytest.mark.kafka
def test_cut_over_onto_the_legacys_kafka_topic_produces_each_value_once_across_a_driver_kill(
        tmp_path: Path, redis_url: str, namespace: str, request: pytest.FixtureRequest,
        broker: TansuBroker) -> None:
    """The port writes the topic the legacy produced its counts to (``cutover.sink``
    ``kafka_topic``); its driver is SIGKILLed after batch 2's commit and the cut-over
    resumed: a read_committed consumer of the topic sees every record's count once, and
    each word's last message is its total (the seed plus the port's count)."""
    s = _switch("kafka", tmp_path, redis_url, namespace, request)
    topic = f"counts-{s.tag}"
    broker.create_topic(topic, 2)
    s.target = {"count_bolt:default": {"kafka_topic": topic, "key": "word",
                                       "value": ["word", "count", "rid"],
                                       "bootstrap_servers": broker.bootstrap}}
    s.produce(N1)
    s.legacy()
    s.produce(N2)
    _cut_over_with_a_driver_kill(s, tmp_path)
    seen = read_topic(broker.bootstrap, topic, 2)
    assert sorted(m["rid"] for m in seen) == list(range(N1, N1 + N2)), "a count produced twice or never"
    last = {m["word"]: m["count"] for m in seen}  # one partition per word: in order
    assert last == {w: s.expected()[w] for w in set(s.words[N1:])}


def _cut_over_with_a_driver_kill(s: Switch, tmp_path: Path) -> None:
    faults = [{"name": "k", "at": "driver.after_commit", "action": "kill_run", "secs": 0,
               "when": {"txid": 2}}]
    (tmp_path / "f").mkdir()
    env = {"STORMSHIFT_FAULTS": json.dumps(faults), "STORMSHIFT_FAULT_DIR": str(tmp_path / "f")}
    killed = s.cutover(env=env)
    assert killed.returncode == -9, (killed.returncode, killed.stderr[-3000:])
    assert (tmp_path / "f" / "fired-k").exists(), "the driver kill never fired"
    resumed = s.cutover(env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming the cut-over" in resumed.stderr


def _switch_and_back(s: Switch, tmp_path: Path, wipe_before_handback: bool = False) -> list[int]:
    """Legacy N1, cut over (a driver kill inside), hand back, legacy N3; the record ids both
    sides processed, for the caller's check that each was processed exactly once."""
    s.produce(N1)
    s.legacy()
    assert s.totals() == s.expected() and len(s.legacy_ids()) == N1
    s.produce(N2)
    _cut_over_with_a_driver_kill(s, tmp_path)
    assert s.totals() == s.expected(), "the port's sink: the seed plus the port's count"
    status = s.status()
    assert status["status"] == "live"
    [compared] = status["compared"].values()
    assert compared == {"same": len(s.expected()), "differ": 0, "port_only": 0, "target_only": 0}
    if wipe_before_handback:  # so the totals below can only come from the port's state
        s.r.delete(s.zset)
    s.handback()
    assert s.status()["status"] == "handed_back"
    s.produce(N3)
    s.legacy()
    assert s.totals() == s.expected(), "the legacy's store after N1+N2+N3"
    assert set(s.port_ids()) == set(range(N1, N1 + N2))
    return s.legacy_ids() + s.port_ids()


@pytest.mark.kafka
def test_cut_over_while_the_legacy_consumes_is_refused_and_writes_nothing(
        tmp_path: Path, redis_url: str, namespace: str, request: pytest.FixtureRequest) -> None:
    s = _switch("kafka", tmp_path, redis_url, namespace, request)
    s.produce(50)
    stop = threading.Event()

    def keep_producing() -> None:
        while not stop.is_set():
            s.produce(5)
            time.sleep(0.1)

    producer = threading.Thread(target=keep_producing, daemon=True)
    options = s.source_options("legacy") | {"kafka.bounded": False}
    cmd = [sys.executable, "-m", "stormshift", "run", str(FIXTURES / "legacy"), "-n",
           "words_kafka", "--engine", "local"]
    for key, value in options.items():
        cmd += ["-o", f"{key}={json.dumps(value)}"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    legacy = subprocess.Popen(cmd, cwd=tmp_path, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        producer.start()
        wait_for(lambda: len(s.legacy_ids()) > 0, 60)
        out = s.cutover("--settle", "2")
    finally:
        stop.set()
        os.killpg(legacy.pid, signal.SIGKILL)
        legacy.wait()
        producer.join()
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cutover refused: the legacy still consumes" in lines[0], lines
    assert "nothing was written" in lines[0]
    keys = [k for p in (f"ss:{{{namespace}}}:*", f"ss:{{{namespace}:*}}:*")
            for k in s.r.scan_iter(match=p)]
    assert keys == [], "the refused cut-over wrote state"
    assert not s.r.exists(f"{s.zset}:stormshift:txid")
    assert not (tmp_path / "checkpoint").exists()


@pytest.mark.kafka
def test_cut_over_while_the_legacys_group_has_a_live_member_is_refused_and_writes_nothing(
        tmp_path: Path, redis_url: str, namespace: str, request: pytest.FixtureRequest,
        broker: TansuBroker) -> None:
    """The legacy's position stands still (it read everything and committed), but a member
    of its consumer group is alive (subscribed, polling, as a Storm KafkaSpout is): the
    cut-over is refused on the group's members alone. tansu describes such a group as
    STABLE with an empty member list, which ``legacy.group_members`` counts as one."""
    from confluent_kafka import Consumer, ConsumerGroupState

    s = _switch("kafka", tmp_path, redis_url, namespace, request)
    s.produce(50)
    s.legacy()
    stop = threading.Event()

    def member() -> None:
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": s.group,
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        c.subscribe([s.topic])
        while not stop.is_set():
            c.poll(0.2)
        c.close()

    thread = threading.Thread(target=member, daemon=True)
    thread.start()
    try:
        admin = broker.admin()
        wait_for(lambda: admin.describe_consumer_groups([s.group])[s.group].result(10).state
                 is ConsumerGroupState.STABLE, 60)
        out = s.cutover("--settle", "1")
    finally:
        stop.set()
        thread.join()
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"consumer group {s.group!r} has 1 live member(s)" in lines[0], lines
    assert "nothing was written" in lines[0]
    keys = [k for p in (f"ss:{{{namespace}}}:*", f"ss:{{{namespace}:*}}:*")
            for k in s.r.scan_iter(match=p)]
    assert keys == [] and not (tmp_path / "checkpoint").exists()

"""KafkaSpout on a real Kafka-protocol broker (tansu), on both engines.

The oracle is the one of tests/test_max_tuples.py: partition ``i`` of the sorted
partition names (``topic/00003``) belongs to spout task ``i % par``; a run with
``--max-tuples N`` takes tuples round-robin over the tasks. Every record's value is
``{"n": n, "key": key_of(n)}``.
"""

from __future__ import annotations

import io
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))

import kafkatopo
from support.kafka_broker import TansuBroker
from support.kafka_topics import SIZES, fill, kafka_graph, topic_name, value
from support.max_tuples import counts, first_n, key_counts, per_task_of_partitions, seen

from stormshift.errors import SourceDataLostError, TopologyError
from stormshift.spouts import KafkaSpout, RecordDecodeError, read_range
from stormshift.spouts.kafka import check_not_lost, partition_name


@pytest.fixture
def broker() -> Iterator[TansuBroker]:
    b = TansuBroker()
    yield b
    b.stop()


def make(conf: dict[str, Any], task_index: int = 0, par: int = 1) -> KafkaSpout:
    spout = KafkaSpout(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    ctx = {"taskid": 1 + task_index, "componentid": "k",
           "task->component": {str(1 + i): "k" for i in range(par)}}
    spout.initialize(conf, ctx)
    return spout


def read_all(spout: KafkaSpout, start: dict[str, Any], end: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    good: list[Any] = []
    bad: list[RecordDecodeError] = []
    for p in sorted(end):
        for values, _ in read_range(spout, p, start.get(p, spout.replay_initial_offset(p)), end[p],
                                    bad.append):
            good.append(values)
    return good, bad


# -- no broker ----------------------------------------------------------------------
def test_partition_names_sort_as_topic_then_partition_number() -> None:
    names = [partition_name(t, p) for t in ("b", "a") for p in (10, 2, 0)]
    assert sorted(names) == ["a/00000", "a/00002", "a/00010", "b/00000", "b/00002", "b/00010"]


def test_offsets_deleted_by_retention_name_the_records_lost() -> None:
    check_not_lost("src", "pixels/00002", 9, 10)  # the next record is the log's first: fine
    with pytest.raises(SourceDataLostError) as err:
        check_not_lost("src", "pixels/00002", 4, 10)
    text = str(err.value)
    assert "'pixels' partition 2: offsets 5..9 (5 records) were deleted by retention" in text
    assert "component 'src'" in text and "retention.ms" in text


@pytest.mark.parametrize("conf, words", [
    ({"kafka.topics": ["t"]}, "kafka.bootstrap_servers"),
    ({"kafka.bootstrap_servers": "x:1"}, "exactly one of kafka.topics and kafka.pattern"),
    ({"kafka.bootstrap_servers": "x:1", "kafka.topics": "t", "kafka.start": "committed"}, "group_id"),
    ({"kafka.bootstrap_servers": "x:1", "kafka.topics": "t", "kafka.fields": ["value", "size"]},
     "kafka.fields must be a list of"),
    ({"kafka.bootstrap_servers": "x:1", "kafka.topics": "t", "kafka.start": "timestamp"},
     "start_timestamp_ms"),
])
def test_config_errors_say_the_fix(conf: dict[str, Any], words: str) -> None:
    with pytest.raises(TopologyError, match=words):
        make(conf)


def test_security_settings_pass_through_to_the_client() -> None:
    spout = make({"kafka.bootstrap_servers": "x:1", "kafka.topics": "t", "security.protocol": "SASL_SSL",
                  "sasl.mechanism": "PLAIN", "ssl.ca.location": "/ca.pem", "kafka.client.fetch.max.bytes": 7,
                  "storm.other": 1})
    conf = spout._client_conf
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.mechanism"] == "PLAIN"
    assert conf["ssl.ca.location"] == "/ca.pem" and conf["fetch.max.bytes"] == 7
    assert "storm.other" not in conf and conf["auto.offset.reset"] == "error"


# -- the spout on a broker ---------------------------------------------------------------
def test_ranges_fields_and_sorted_round_robin_tasks(broker: TansuBroker) -> None:
    topic = topic_name("ranges")
    parts = fill(broker, topic, [5, 7, 3])
    conf = {"kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": [topic],
            "kafka.value_format": "json", "kafka.json_fields": ["n", "key"], "kafka.bounded": True}
    spout = make(conf, 0, 2)
    start = spout.replay_initial_offsets()
    assert start == {p: -1 for p in parts}
    end, took = spout.replay_plan(start, [4, 100])
    # task 0 owns partitions 0 and 2 and reads in order: 4 of partition 0; task 1 all of 1
    assert end == {f"{topic}/00000": 3, f"{topic}/00001": 6, f"{topic}/00002": -1} and took == [4, 7]
    good, bad = read_all(spout, start, end)
    assert [v[0] for v in good] == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11] and not bad
    assert good[0] == [0, "k0"]
    assert list(spout.replay_read(f"{topic}/00001", 1, 2)) == [([7, "k0"], f"{topic}/00001:2")]
    assert not spout.replay_exhausted(end)
    end2, _ = spout.replay_plan(end, [100, 100])
    assert spout.replay_exhausted(end2) and end2 == {p: len(v) - 1 for p, v in parts.items()}


def test_record_fields_decoders_and_headers(broker: TansuBroker) -> None:
    topic = topic_name("fields")
    broker.create_topic(topic, 1)
    broker.produce(topic, [(0, b"k1", b"hello")], headers=[("trace", b"t-1")])
    base = {"kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": topic}
    spout = make({**base, "kafka.fields": ["key", "value", "topic", "partition", "offset", "headers"]})
    [(values, msg_id)] = spout.replay_read(f"{topic}/00000", -1, 0)
    assert values == ["k1", "hello", topic, 0, 0, [["trace", "t-1"]]] and msg_id == f"{topic}/00000:0"
    raw = make({**base, "kafka.value_format": "bytes", "kafka.key_format": "bytes",
                "kafka.fields": ["key", "value", "timestamp"]})
    [(values, _)] = raw.replay_read(f"{topic}/00000", -1, 0)
    assert values[:2] == [b"k1", b"hello"] and isinstance(values[2], int) and values[2] > 0


def test_undecodable_record_names_topic_partition_offset_and_reading_resumes(broker: TansuBroker) -> None:
    topic = topic_name("bad")
    broker.create_topic(topic, 2)
    broker.produce(topic, [(1, None, value(1)), (1, None, b"{not json"), (1, None, b"\xff\xfe"),
                           (1, None, value(4))])
    spout = make({"kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": [topic],
                  "kafka.value_format": "json", "kafka.json_fields": ["n", "key"]})
    good, bad = read_all(spout, {}, {f"{topic}/00001": 3})
    assert [v[0] for v in good] == [1, 4]
    assert [(e.partition, e.offset) for e in bad] == [(f"{topic}/00001", 1), (f"{topic}/00001", 2)]
    assert f"Kafka topic {topic!r} partition 1 offset 1: value not JSON" in str(bad[0])
    assert "offset 2: value is not UTF-8" in str(bad[1])
    assert bad[0].raw == {"topic": topic, "partition": 1, "offset": 1, "key": None, "value": "{not json"}
    blocks_bad: list[Any] = []
    blocks = list(spout.replay_values(f"{topic}/00001", -1, 3, blocks_bad.append))
    assert [v for b in blocks for v in b] == good and len(blocks_bad) == 2


def test_start_latest_timestamp_and_committed_group_offsets(broker: TansuBroker) -> None:
    topic = topic_name("start")
    broker.create_topic(topic, 2)
    broker.produce(topic, [(p, None, value(i)) for i in range(6) for p in (0, 1)])
    cut_ms = int(time.time() * 1000) + 60_000
    broker.produce(topic, [(0, None, value(100)), (1, None, value(101))], timestamp=cut_ms)
    base = {"kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": [topic]}
    p0, p1 = f"{topic}/00000", f"{topic}/00001"
    assert make({**base, "kafka.start": "latest"}).replay_initial_offsets() == {p0: 6, p1: 6}
    at = make({**base, "kafka.start": "timestamp", "kafka.start_timestamp_ms": cut_ms})
    assert at.replay_initial_offsets() == {p0: 5, p1: 5}
    group = f"legacy-{uuid.uuid4().hex[:6]}"
    committer = make({**base, "kafka.group_id": group, "kafka.commit": True})
    committer.replay_commit({p0: 2})  # offsets 0..2 done: Kafka's committed offset is 3
    resumed = make({**base, "kafka.start": "committed", "kafka.group_id": group,
                    "kafka.start_fallback": "latest"})
    assert resumed.replay_initial_offsets() == {p0: 2, p1: 6}  # p1: no offset -> fallback


@pytest.mark.redis
def test_a_latest_start_is_planned_once_per_checkpoint(broker: TansuBroker, redis_url: str,
                                                       namespace: str) -> None:
    """A driver restarted before batch 0 committed plans batch 0 again: its planner must
    start where the first one did, not at the end the topic has grown to since."""
    from stormshift.engines.spark.source.options import Opts, source_options
    from stormshift.engines.spark.source.planner.planner import ReplayPlanner

    topic = topic_name("latest")
    fill(broker, topic, [4, 3])
    graph = kafka_graph(broker, topic, **{"kafka.start": "latest"})

    def planner(checkpoint_id: str) -> ReplayPlanner:
        return ReplayPlanner(Opts.parse(source_options(
            graph, "numbers", redis_url=redis_url, namespace=namespace, batch_max=10, budget_ms=100,
            max_total=None, tick_ms=0, checkpoint_id=checkpoint_id)))

    first = planner("ck-a").initial_offset()["p"]
    broker.produce(topic, [(0, None, value(50)), (1, None, value(51))])  # the topic moves on
    assert planner("ck-a").initial_offset()["p"] == first == {f"{topic}/00000": 3, f"{topic}/00001": 2}
    assert planner("ck-b").initial_offset()["p"] == {f"{topic}/00000": 4, f"{topic}/00001": 3}


def test_a_topic_matching_the_pattern_is_picked_up_and_read_from_its_start(broker: TansuBroker) -> None:
    prefix = topic_name("pat")
    fill(broker, f"{prefix}-a", [3])
    spout = make({"kafka.bootstrap_servers": broker.bootstrap, "kafka.pattern": f"{prefix}-.*",
                  "kafka.start": "latest"})
    start = spout.replay_initial_offsets()
    assert start == {f"{prefix}-a/00000": 2}
    fill(broker, f"{prefix}-b", [2, 2])
    end, took = spout.replay_plan(start, [100])
    assert took == [4] and end[f"{prefix}-b/00000"] == 1 and end[f"{prefix}-b/00001"] == 1


def test_broker_paused_planning_waits_and_reading_resumes(broker: TansuBroker) -> None:
    topic = topic_name("pause")
    parts = fill(broker, topic, [20])
    spout = make({"kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": [topic],
                  "kafka.json_fields": ["n", "key"], "kafka.value_format": "json"})
    start = spout.replay_initial_offsets()
    with broker.paused():
        t0 = time.monotonic()
        assert spout.replay_plan(start, [100]) == (start, [0])  # an empty batch, not a failure
        assert time.monotonic() - t0 < 60
    end, _ = spout.replay_plan(start, [100])
    threading.Timer(1.0, broker.resume).start()
    broker.pause()
    good, bad = read_all(spout, start, end)  # waits for the broker, then reads everything
    assert [v[0] for v in good] == parts[f"{topic}/00000"] and not bad


# -- local engine ----------------------------------------------------------------------
def test_local_engine_exact_counts_and_dead_letters(broker: TansuBroker) -> None:
    from stormshift.engines.local import LocalEngine

    topic = topic_name("local")
    parts = fill(broker, topic, SIZES)
    broker.produce(topic, [(2, None, b"{not json")])
    summary = LocalEngine(kafka_graph(broker, topic, **{"kafka.bounded": True})).run()
    want = sorted(n for ns in parts.values() for n in ns)
    assert seen(summary) == want and counts(summary) == key_counts(want)
    numbers = summary["numbers"]
    assert numbers.tuples_out == len(want) and numbers.errors == 0
    assert numbers.dead_lettered == 1 and summary.dead_letter_reasons == {"numbers": {"decode": 1}}
    [letter] = summary.spout_dead_letters  # dead-lettered at the spout, as on Spark
    assert letter["position"] == f"{topic}/00002:{SIZES[2]}" and letter["reason"] == "decode"


@pytest.mark.parametrize("n", [7, 20, 27])  # unbounded: at most twice task 0's 14
def test_local_max_tuples_takes_exactly_n(broker: TansuBroker, n: int) -> None:
    from stormshift.engines.local import LocalEngine

    topic = topic_name("maxl")
    parts = fill(broker, topic, SIZES)
    summary = LocalEngine(kafka_graph(broker, topic)).run(max_tuples=n)
    want = first_n(per_task_of_partitions(parts, 2), n)
    assert summary.spout_tuples == n and seen(summary) == want and counts(summary) == key_counts(want)


def test_local_commit_back_to_the_group_after_acks(broker: TansuBroker) -> None:
    from confluent_kafka import Consumer, TopicPartition

    from stormshift.engines.local import LocalEngine

    topic = topic_name("commit")
    fill(broker, topic, [6, 4])
    group = f"port-{uuid.uuid4().hex[:6]}"
    graph = kafka_graph(broker, topic, **{"kafka.bounded": True, "kafka.group_id": group,
                                          "kafka.commit": True, "kafka.commit_interval_secs": 0})
    LocalEngine(graph).run()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    got = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    c.close()
    assert [tp.offset for tp in got] == [6, 4]


# -- Spark engine ------------------------------------------------------------------------
def run_spark(spark: Any, graph: Any, ck: Path, redis_url: str, namespace: str,
              n: int | None, **kw: Any) -> Any:
    from stormshift.engines.spark import SparkEngine

    duration = kw.pop("duration_secs", 240)
    engine = SparkEngine(graph, checkpoint_dir=str(ck), redis_url=redis_url, spark=spark,
                         namespace=namespace, batch_max_tuples=kw.pop("batch", 6), **kw)
    return engine.run(max_tuples=n, duration_secs=duration)


@pytest.mark.spark
@pytest.mark.redis
def test_spark_exact_counts_max_tuples_restart_and_dead_letter(spark, redis_url, namespace, tmp_path,
                                                               broker) -> None:
    from stormshift.engines.local import LocalEngine
    from stormshift.state.connection import connect
    from stormshift.state.deadletter import DeadLetters

    topic = topic_name("spark")
    parts = fill(broker, topic, SIZES)
    broker.produce(topic, [(3, None, b"\xffbad")])  # offset 11 of partition 3
    graph = kafka_graph(broker, topic)
    per_task = per_task_of_partitions(parts, 2)
    ck = tmp_path / "ck"
    first = run_spark(spark, graph, ck, redis_url, namespace, 20)
    assert first.stop_reason == "max_tuples=20 reached" and first.spout_tuples == 20
    assert seen(first) == first_n(per_task, 20) and counts(first) == key_counts(first_n(per_task, 20))
    # the same checkpoint, a larger budget: continues exactly where the first run stopped
    second = run_spark(spark, graph, ck, redis_url, namespace, 26, batch=5)
    assert second.spout_tuples == 6
    assert seen(second) == first_n(per_task, 26) and counts(second) == key_counts(first_n(per_task, 26))
    assert counts(LocalEngine(graph).run(max_tuples=26)) == counts(second)
    # no budget, bounded: the rest, to the end of every partition
    bounded = kafka_graph(broker, topic, **{"kafka.bounded": True})
    rest = run_spark(spark, bounded, ck, redis_url, namespace, None, until_done=True)
    want = sorted(n for ns in parts.values() for n in ns)
    assert rest.stop_reason == "done" and seen(rest) == want and counts(rest) == key_counts(want)
    [letter] = [d for d in DeadLetters(connect(redis_url), namespace).list() if d.reason == "decode"]
    assert letter.tuple_key == f"{topic}/00003:11" and "partition 3 offset 11" in letter.error


@pytest.mark.spark
@pytest.mark.redis
def test_spark_commits_the_committed_batches_offsets_back_to_the_group(spark, redis_url, namespace,
                                                                      tmp_path, broker) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = topic_name("sparkcommit")
    fill(broker, topic, [6, 4])
    group = f"port-{uuid.uuid4().hex[:6]}"
    graph = kafka_graph(broker, topic, **{"kafka.bounded": True, "kafka.group_id": group,
                                          "kafka.commit": True})
    summary = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, None, until_done=True)
    assert summary.stop_reason == "done" and summary.spout_tuples == 10
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    got = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    c.close()
    assert [tp.offset for tp in got] == [6, 4]


@pytest.mark.spark
@pytest.mark.redis
def test_spark_broker_paused_mid_run_equals_a_failure_free_run(spark, redis_url, namespace, tmp_path,
                                                               broker) -> None:
    topic = topic_name("outage")
    parts = fill(broker, topic, [40, 35, 25])
    graph = kafka_graph(broker, topic, **{"kafka.bounded": True})
    want = sorted(n for ns in parts.values() for n in ns)
    events: list[float] = []

    def outage() -> None:
        time.sleep(4)
        events.append(time.monotonic())
        with broker.paused():
            time.sleep(8)
        events.append(time.monotonic())

    threading.Thread(target=outage, daemon=True).start()
    summary = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, None, until_done=True,
                        batch=4)
    ended = time.monotonic()
    assert len(events) == 2 and events[1] < ended, "the outage must happen during the run"
    assert summary.stop_reason == "done" and seen(summary) == want and counts(summary) == key_counts(want)


@pytest.mark.spark
@pytest.mark.redis
def test_spark_partitions_added_while_running_are_read_from_their_start(spark, redis_url, namespace,
                                                                         tmp_path, broker) -> None:
    """tansu has no CreatePartitions: a new topic matching the spout's pattern is the same
    event for the spout (new topic/partition names, read from their first record)."""
    from stormshift.topology.loader import load_topology

    prefix = topic_name("grow")
    parts = fill(broker, f"{prefix}-a", [30, 30])
    graph = load_topology(kafkatopo.Kafka, overrides={
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.pattern": f"{prefix}-.*"})
    late: dict[str, list[int]] = {}

    def add() -> None:
        time.sleep(5)
        late.update(fill(broker, f"{prefix}-b", [6, 9, 3], first=1000))

    threading.Thread(target=add, daemon=True).start()
    total = 60 + 18  # task 0: a/0, b/0, b/2 (39 records), task 1: a/1, b/1 (39): even shares
    summary = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, total, batch=3,
                        duration_secs=180)
    want = sorted([n for ns in parts.values() for n in ns] + [n for ns in late.values() for n in ns])
    assert summary.stop_reason == f"max_tuples={total} reached"
    assert seen(summary) == want and counts(summary) == key_counts(want)


# -- a Java KafkaSpout replaced through config ----------------------------------------------
def test_java_declarations_translate_to_kafka_spout_config() -> None:
    from stormshift.spouts.kafka_java import from_java

    conf, where = from_java("org.apache.storm.kafka.spout.KafkaSpout", ["b1:9092,b2:9092", "a", "b"],
                            {"kafka.group.id": "legacy", "first.poll.offset.strategy": "LATEST"})
    assert conf == {"kafka.bootstrap_servers": "b1:9092,b2:9092", "kafka.topics": ["a", "b"],
                    "kafka.group_id": "legacy", "kafka.start": "latest"}
    assert where["kafka.group_id"] == "config 'kafka.group.id'" and where["kafka.topics"] == "args_list[1:3]"
    conf, _ = from_java("org.apache.storm.kafka.spout.KafkaSpout", ["b:1", "t"], {"group.id": "g"})
    assert conf["kafka.start"] == "committed" and conf["kafka.start_fallback"] == "earliest"  # its default
    conf, where = from_java("storm.kafka.KafkaSpout", ["zk1:2181", "clicks", "/kafka", "clicks-spout"],
                            {"kafka.startOffsetTime": -1})
    assert conf == {"kafka.topics": ["clicks"], "kafka.group_id": "clicks-spout", "kafka.start": "latest"}
    assert from_java("pixelcount.spouts.pixel_spout", ["x"], {}) == ({}, {})


def test_inspect_shows_what_the_replacement_read_from_the_declaration() -> None:
    from click.testing import CliRunner

    from stormshift.cli import cli

    project = str(Path(__file__).parents[1] / "examples" / "pixelcount")
    out = CliRunner().invoke(cli, ["inspect", project, "--json"])
    assert out.exit_code == 0, out.output
    [spout] = [c for c in json.loads(out.output)["components"] if c["name"] == "pixel-spout"]
    assert spout["class"] == "stormshift.spouts.KafkaSpout"
    assert spout["replaces"] == "org.apache.storm.kafka.spout.KafkaSpout"
    assert spout["translated"]["kafka.topics"] == "args_list[1:2]"
    assert spout["config"]["kafka.group_id"] == "pixelcount"
    # the replacement entry's own config wins over the declaration (servers of the dev broker)
    assert spout["config"]["kafka.bootstrap_servers"] == "127.0.0.1:9092"
    assert "kafka.bootstrap_servers" not in spout["translated"]
    text = CliRunner().invoke(cli, ["inspect", project], env={"COLUMNS": "120"}).output
    assert "config read from their declaration" in text and "config 'group.id'" in text


def test_pixelcount_example_runs_unchanged_on_the_local_engine(broker: TansuBroker) -> None:
    import subprocess

    from stormshift.engines.local import LocalEngine
    from stormshift.topology.loader import load_topology

    project = Path(__file__).parents[1] / "examples" / "pixelcount"
    produce = [sys.executable, str(project / "src" / "produce.py"), "--bootstrap", broker.bootstrap,
               "-n", "600"]
    subprocess.run(produce, check=True, capture_output=True)
    want = json.loads(subprocess.run([*produce, "--expected"], check=True, capture_output=True).stdout)
    graph = load_topology(project, overrides={"stormshift.replacements": {"pixel-spout": {
        "class": "stormshift.spouts.KafkaSpout",
        "config": {"kafka.bootstrap_servers": broker.bootstrap, "kafka.bounded": True}}}})
    summary = LocalEngine(graph).run()
    assert {url: v[1] for url, v in summary.latest("pixel-count-bolt").items()} == want

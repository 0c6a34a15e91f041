"""Records a built-in spout cannot emit, on both engines alike (issue 49, item 5).

~5,000 good records with NaN, Infinity, -Infinity, an undecodable record and one of the
wrong arity among them, from each built-in spout (JSON-lines files, Redis Streams, Kafka):
both engines read every record, dead-letter the same bad ones *at the spout* with the same
reason and position, compute the same downstream counts, and the accounting holds while
counting the spout's dead letters; the run exits 3 (dead letters). On Spark a batch re-run
after the driver died before its commit leaves each bad record dead-lettered once.

Real Spark (the session fixture), real Redis, a real Kafka-protocol broker (tansu).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "spark_fixtures"
sys.path.insert(0, str(FIXTURES))

import spoutdltopo

from stormshift.cli.exit_codes import FAILED_TUPLES, run_exit_code
from stormshift.engines.local import LocalEngine
from stormshift.state.connection import connect
from stormshift.state.deadletter import DeadLetters
from stormshift.topology.loader import load_topology

GOOD = 5_000
WORDS = 13

# (record, reason): each inserted into the good records at a fixed place
BAD = [
    ('{"word": NaN, "n": 1}', "value"),
    ('{"word": "w1", "n": Infinity}', "value"),
    ('{"word": "w2", "n": -Infinity}', "value"),
    ('{"word": "w3", "n": 4', "decode"),  # cut off: no JSON
    ('{"word": "w4"}', "value"),  # wrong arity: one value for the spout's two fields
]
BAD_AT = (7, 1200, 2600, 3999, 4990)  # in the sequence of all records (good and bad)


def records() -> Iterator[tuple[str, str | None]]:
    """Every record in order: ``(text, reason)``, reason None for a good one."""
    bad = dict(zip(BAD_AT, BAD))
    n = 0
    for i in range(GOOD + len(BAD)):
        if i in bad:
            yield bad[i]
        else:
            yield json.dumps({"word": f"w{n % WORDS}", "n": n}), None
            n += 1


def want_counts() -> dict[str, tuple[int, int]]:
    counts: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for n in range(GOOD):
        counts[f"w{n % WORDS}"] += 1
        totals[f"w{n % WORDS}"] += n
    return {w: (counts[w], totals[w]) for w in counts}


def downstream(summary: Any) -> dict[str, tuple[int, int]]:
    return {w: (v[1], v[2]) for w, v in summary.latest("count").items()}


def letters_of(summary: Any) -> list[tuple[str, str, str]]:
    return sorted((d["component"], d["reason"], d["position"]) for d in summary.spout_dead_letters)


def run_spark(spark: Any, graph: Any, ck: Path, redis_url: str, namespace: str,
              batch: int = 1500) -> Any:
    from stormshift.engines.spark import SparkEngine

    return SparkEngine(graph, checkpoint_dir=str(ck), redis_url=redis_url, spark=spark,
                       namespace=namespace, batch_max_tuples=batch, until_done=True).run()


def check_redis_letters(redis_url: str, namespace: str, want: list[tuple[str, str, str]]) -> None:
    """What ``stormshift deadletter ls`` shows: the spout as component, once per record."""
    letters = DeadLetters(connect(redis_url), namespace).list()
    assert sorted((d.component, d.reason, d.tuple_key) for d in letters) == want
    assert {(d.source, d.txid) for d in letters} == {("words", -1)}
    assert all(d.values and isinstance(d.values[0], (str, dict)) for d in letters)


# -- JSON-lines files ------------------------------------------------------------------------
def write_files(data: Path) -> list[tuple[str, str, str]]:
    """Two files (one per spout task), an extra non-UTF-8 line; the dead letters to expect."""
    data.mkdir(parents=True)
    all_records = list(records())
    half = len(all_records) // 2
    want = []
    for name, part in (("part-0.jsonl", all_records[:half]), ("part-1.jsonl", all_records[half:])):
        lines = [text.encode() for text, _ in part]
        for line_no, (_, reason) in enumerate(part, 1):
            if reason:
                want.append(("words", reason, f"{name}:{line_no}"))
        (data / name).write_bytes(b"\n".join(lines) + b"\n")
    with open(data / "part-1.jsonl", "ab") as fh:
        fh.write(b'{"word": "\xff\xfe", "n": 1}\n')  # not UTF-8
    want.append(("words", "decode", f"part-1.jsonl:{len(all_records) - half + 1}"))
    return sorted(want)


@pytest.fixture(scope="module")
def lines_input(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    data = tmp_path_factory.mktemp("spoutdl") / "in"
    return data, write_files(data)


def lines_graph(data: Path) -> Any:
    return load_topology(spoutdltopo.Lines, overrides={"jsonlines.path": str(data)})


def check_with_extra(summary: Any, want: list[tuple[str, str, str]]) -> None:
    """``check_run`` with the extra non-UTF-8 line (one more dead letter than ``BAD``)."""
    words = summary["words"]
    assert downstream(summary) == want_counts()
    assert letters_of(summary) == want
    assert words.tuples_out - words.replays == GOOD and words.dead_lettered == len(want)
    assert words.records_read == GOOD + len(want) and words.unread == 0
    acc = summary.accounting()
    assert acc["spouts"]["words"]["holds"] and acc["topology"]["holds"], acc
    assert acc["topology"]["spout_dead_lettered"] == len(want)
    assert not summary.problems, summary.problems.to_list()
    assert run_exit_code(summary) == FAILED_TUPLES


def test_jsonlines_local_engine_reads_every_line(lines_input: tuple[Path, list[Any]]) -> None:
    from rich.console import Console

    from stormshift.runner import print_summary

    data, want = lines_input
    graph = lines_graph(data)
    summary = LocalEngine(graph).run()
    assert summary.stop_reason == "sources exhausted"
    check_with_extra(summary, want)
    assert summary.dead_letter_reasons["words"] == {"decode": 2, "value": 4}
    nan = next(d for d in summary.spout_dead_letters if d["values"] == [BAD[0][0]])
    assert "'word' is nan" in nan["error"] and nan["task"] == 0
    console = Console(record=True, width=100)
    print_summary(graph, summary, console)
    text = console.export_text()
    assert "spout words: read 5,006 = emitted 5,000 + dead-lettered at the spout 6 (holds)" in text
    assert "records dead-lettered at the spout: 6" in text and "words value at part-0.jsonl:8" in text


@pytest.mark.spark
def test_jsonlines_spark_engine_agrees(spark: Any, redis_url: str, namespace: str,
                                       tmp_path: Path, lines_input: tuple[Path, list[Any]]) -> None:
    data, want = lines_input
    summary = run_spark(spark, lines_graph(data), tmp_path / "ck", redis_url, namespace)
    assert summary.stop_reason == "done"
    check_with_extra(summary, want)
    check_redis_letters(redis_url, namespace, want)
    local = LocalEngine(lines_graph(data)).run()
    assert downstream(local) == downstream(summary) and letters_of(local) == letters_of(summary)

    from click.testing import CliRunner

    from stormshift.cli import cli

    shown = CliRunner().invoke(cli, ["deadletter", "ls", "--namespace", namespace, "--redis",
                                     redis_url, "--json"])
    assert shown.exit_code == 0, shown.output
    entries = json.loads(shown.output)  # one document
    assert sorted((e["component"], e["reason"], e["tuple_key"]) for e in entries) == want
    nan = next(e for e in entries if e["values"] == [BAD[0][0]])
    assert "'word' is nan" in nan["error"] and "cannot be sent as a tuple" in nan["error"]


@pytest.mark.spark
def test_jsonlines_spark_rerun_batch_dead_letters_each_record_once(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path, monkeypatch: Any,
        lines_input: tuple[Path, list[Any]]) -> None:
    """The driver dies after a batch's stages, before its commit: the next run re-reads the
    batch's ranges (the bad records among them) and adds no dead letter twice."""
    from stormshift.state.commit import CommitLog

    data, want = lines_input
    original = CommitLog.record_commit
    refused: list[int] = []

    def flaky(self: Any, txid: int) -> None:
        if txid == 1 and not refused:
            refused.append(txid)
            raise RuntimeError(f"injected: driver lost before committing txid {txid}")
        original(self, txid)

    monkeypatch.setattr(CommitLog, "record_commit", flaky)
    graph = lines_graph(data)
    with pytest.raises(Exception, match="injected: driver lost"):
        run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, batch=1000)
    assert refused == [1]
    dl = DeadLetters(connect(redis_url), namespace)
    first = {d.tuple_key for d in dl.list()}
    assert first and first < {p for _, _, p in want}  # batches 0 and 1 read, some bad records
    second = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, batch=1000)
    assert downstream(second) == want_counts()
    check_redis_letters(redis_url, namespace, want)  # each once: the re-run added no twin
    assert second.accounting()["topology"]["holds"]
    # the re-run batch's records count for the run that committed it, though their entries
    # are older (``driver/spout_letters.py``): never a clean exit over dead-lettered input
    counted = {d["position"] for d in second.spout_dead_letters}
    assert {p for _, _, p in want} - first <= counted and len(counted) == second["words"].dead_lettered
    assert run_exit_code(second) == FAILED_TUPLES


# -- Redis Streams ---------------------------------------------------------------------------
@pytest.fixture
def stream_input(redis_url: str) -> Iterator[tuple[list[str], list[tuple[str, str, str]]]]:
    r = connect(redis_url)
    keys = [f"spoutdl-{uuid.uuid4().hex[:10]}-{i}" for i in range(2)]
    all_records = list(records())
    half = len(all_records) // 2
    want = []
    for key, part in ((keys[0], all_records[:half]), (keys[1], all_records[half:])):
        pipe = r.pipeline()
        for text, _ in part:
            pipe.xadd(key, {"payload": text})
        ids = pipe.execute()
        want += [("words", reason, f"{key}:{entry_id.decode()}")
                 for entry_id, (_, reason) in zip(ids, part) if reason]
    extra = r.xadd(keys[1], {"payload": b'{"word": "\xff", "n": 1}'}).decode()  # not UTF-8
    want.append(("words", "decode", f"{keys[1]}:{extra}"))
    try:
        yield keys, sorted(want)
    finally:
        r.delete(*keys)


def entries_graph(keys: list[str], redis_url: str) -> Any:
    return load_topology(spoutdltopo.Entries, overrides={"redis_streams.keys": keys,
                                                          "redis_streams.url": redis_url})


@pytest.mark.redis
def test_redis_streams_local_engine_reads_every_entry(redis_url: str, stream_input: Any) -> None:
    keys, want = stream_input
    summary = LocalEngine(entries_graph(keys, redis_url)).run()
    check_with_extra(summary, want)


@pytest.mark.spark
def test_redis_streams_spark_engine_agrees(spark: Any, redis_url: str, namespace: str,
                                           tmp_path: Path, stream_input: Any) -> None:
    keys, want = stream_input
    graph = entries_graph(keys, redis_url)
    summary = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace)
    check_with_extra(summary, want)
    check_redis_letters(redis_url, namespace, want)
    local = LocalEngine(graph).run()
    assert downstream(local) == downstream(summary) and letters_of(local) == letters_of(summary)


# -- Kafka -----------------------------------------------------------------------------------
@pytest.fixture
def broker() -> Iterator[Any]:
    from support.kafka_broker import TansuBroker

    b = TansuBroker()
    yield b
    b.stop()


def fill_topic(broker: Any) -> tuple[str, list[tuple[str, str, str]]]:
    from stormshift.spouts.kafka import partition_name

    topic = f"spoutdl-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    all_records = list(records())
    half = len(all_records) // 2
    produced, want = [], []
    for p, part in enumerate((all_records[:half], all_records[half:])):
        produced += [(p, None, text.encode()) for text, _ in part]
        want += [("words", reason, f"{partition_name(topic, p)}:{offset}")
                 for offset, (_, reason) in enumerate(part) if reason]
    produced.append((1, None, b"\xffbad"))  # not UTF-8
    want.append(("words", "decode", f"{partition_name(topic, 1)}:{len(all_records) - half}"))
    broker.produce(topic, produced)
    return topic, sorted(want)


def records_graph(broker: Any, topic: str) -> Any:
    return load_topology(spoutdltopo.Records, overrides={
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.topics": [topic]})


@pytest.mark.kafka
@pytest.mark.spark
def test_kafka_both_engines_dead_letter_the_same_records(spark: Any, redis_url: str,
                                                         namespace: str, tmp_path: Path,
                                                         broker: Any) -> None:
    topic, want = fill_topic(broker)
    graph = records_graph(broker, topic)
    local = LocalEngine(graph).run()
    check_with_extra(local, want)
    summary = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace)
    check_with_extra(summary, want)
    check_redis_letters(redis_url, namespace, want)
    assert downstream(local) == downstream(summary)


# -- a run killed mid-batch (the fault harness: ``stormshift run`` as a process) -----------
@pytest.mark.faults
@pytest.mark.spark
@pytest.mark.redis
def test_jsonlines_run_killed_after_the_read_dead_letters_each_record_once(
        tmp_path: Path, lines_input: tuple[Path, list[Any]]) -> None:
    """SIGKILL of the whole run (driver, JVM, workers) when the counter's stage of txid 2
    starts: the sources of txid 2 were read (a bad record of part-0.jsonl among them, its
    dead letter written); the restarted run re-reads the batch and adds no twin."""
    from support.fault_harness import Case

    data, want = lines_input
    faults = [{"name": "k", "at": "stage.start", "action": "kill_run",
               "when": {"txid": 2, "component": "count", "task": 0}}]
    case = Case(tmp_path, str(FIXTURES / "spoutdl_lines.py"),
                options={"jsonlines.path": str(data)},
                args=["--until-done", "--master", "local[2,3]", "--batch-max-tuples", "1000"],
                faults=faults)
    out = case.run()
    assert out.runs == 2 and out.exit_codes[-1] == FAILED_TUPLES, out.exit_codes
    # the restarted run re-ran txid 2: its bad records count there, though written before
    assert out.summary["spout_dead_letters"] and out.summary["accounting"]["topology"]["holds"]
    assert {w: tuple(v) for w, v in out.finals()["count:default"].items()} == want_counts()
    assert out.dead_letters == len(want)  # each bad record once, though txid 2 was read twice

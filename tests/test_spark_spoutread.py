"""A head that reads its spout's ranges itself (``engines/spark/protocol/spoutrange.py``): the stage's
output from a read row equals its output from the rows the source used to send, for a
write-ahead-logged spout and a replayable one. Real Redis, no Spark."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pytest

from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.engines.spark.records.wal import WriteAheadLog
from stormshift.engines.spark.runtime.worker import redis_for
from stormshift.engines.spark.source.options import Opts, ReplayPartition, WalPartition
from stormshift.engines.spark.source.read.partition import read_partition
from stormshift.engines.spark.task.counters import read_stats
from stormshift.engines.spark.task.headinput import HeadInput
from stormshift.engines.spark.task.sink import SinkSpec
from stormshift.engines.spark.task.stage import StageJob, run_partition
from stormshift.state.deadletter import DeadLetters
from stormshift.topology.loader import load_topology

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
import outtopo

NUMBERS = [1, 2, 3, 4, 6, 7, 8, 9, 10, 11] * 7  # 70 tuples: more than two chunks


@pytest.fixture
def r(redis_url: str) -> Any:
    import redis

    client = redis.Redis.from_url(redis_url)
    made: list[str] = []
    client.namespaces = made
    yield client
    for ns in made:
        for key in client.scan_iter(match=f"*{ns}*"):
            client.delete(key)


def _ns(r: Any) -> str:
    ns = f"test-spoutread-{uuid.uuid4().hex[:10]}"
    r.namespaces.append(ns)
    return ns


def _opts(graph: Any, redis_url: str, namespace: str) -> Opts:
    return Opts(graph, "numbers", redis_url, namespace, 1000, 100, -1, 0)


def _stage(layout: Layout, redis_url: str, namespace: str, table: pa.Table) -> tuple[list[Any], dict]:
    jobs = {s.head: StageJob(layout, s, 1, frozenset(), redis_url, namespace, b"k", SinkSpec("drop"))
            for s in layout.stages}
    out = list(run_partition(jobs, iter(table.to_batches())))
    rows = sorted(zip(*(pa.Table.from_batches(out).column(c).to_pylist()
                        for c in ("dest", "kind", "src", "seq", "sid", "v"))))
    return rows, dict(read_stats(redis_for(redis_url), namespace, 1))


def test_only_a_spout_whose_every_consumer_reads_locally_is_deferred() -> None:
    assert Layout(load_topology(outtopo.EncodeTopo)).deferred("numbers")
    assert Layout(load_topology(outtopo.LinesTopo)).deferred("numbers")
    assert not Layout(load_topology(outtopo.MixedTopo)).deferred("numbers")


def test_a_read_row_of_the_log_gives_the_stage_the_same_tuples(r: Any, redis_url: str) -> None:
    layout = Layout(load_topology(outtopo.EncodeTopo))
    ns_rows, ns_wal = _ns(r), _ns(r)
    want_rows, want_stats = _stage(layout, redis_url, ns_rows, pa.Table.from_batches(outtopo.encoder_rows(layout, NUMBERS)))

    wal = WriteAheadLog(r, ns_wal, "numbers", 0)
    head = wal.open_for_append()
    code = layout.stream_code[("numbers", "default")]
    target = layout.first_task("encoder")
    entries = [(code, [target], msgpack.packb([n, f"k{n % 2}"])) for n in NUMBERS]
    end = wal.append(wal.append(head, entries[:30]), entries[30:])
    sent = list(read_partition(_opts(layout.graph, redis_url, ns_wal), WalPartition(0, head, end)))
    table = pa.Table.from_batches(sent)
    assert table.num_rows == 2  # the beacon and one read row: no tuple crossed
    assert table.column("kind").to_pylist()[1] == R.Kind.READ

    got_rows, got_stats = _stage(layout, redis_url, ns_wal, table)
    assert got_rows == want_rows
    for name in ("encoder",):
        assert got_stats[name].tuples_in == want_stats[name].tuples_in == len(NUMBERS)
        assert got_stats[name].maxseq == want_stats[name].maxseq == {
            layout.graph.component("numbers").task_id(0): len(NUMBERS) - 1}


def test_a_read_row_of_a_replay_range_reads_the_files_and_dead_letters_bad_lines(
        r: Any, redis_url: str, tmp_path: Path) -> None:
    lines = [json.dumps({"n": n, "key": f"k{n % 2}"}) for n in NUMBERS]
    lines.insert(5, "{not json")
    (tmp_path / "part-0.jsonl").write_text("\n".join(lines) + "\n")
    graph = load_topology(outtopo.LinesTopo, overrides={"jsonlines.path": str(tmp_path)})
    layout = Layout(graph)
    ns = _ns(r)
    table = pa.Table.from_batches(list(read_partition(
        _opts(graph, redis_url, ns), ReplayPartition(0, [("part-0.jsonl", 0, len(lines))]))))
    assert table.num_rows == 2

    feed = HeadInput(table.slice(1), layout, redis_url, ns)
    values = [v for _src, _sid, chunk in feed for v in chunk]
    assert values == [[n, f"k{n % 2}"] for n in NUMBERS]
    assert feed.maxseq == {graph.component("numbers").task_id(0): len(NUMBERS) - 1}
    again = [v for _src, _sid, chunk in HeadInput(table.slice(1), layout, redis_url, ns) for v in chunk]
    assert again == values  # a re-run reads the same tuples
    letters = DeadLetters(r, ns).list()
    assert [e.reason for e in letters] == ["decode"]  # once, though the range was read twice

    ns_rows = _ns(r)
    want_rows, _ = _stage(Layout(load_topology(outtopo.EncodeTopo)), redis_url, ns_rows,
                          pa.Table.from_batches(outtopo.encoder_rows(Layout(load_topology(outtopo.EncodeTopo)), NUMBERS)))
    got_rows, got_stats = _stage(layout, redis_url, ns, table)
    assert got_rows == want_rows
    assert got_stats["encoder"].tuples_in == len(NUMBERS)


def test_a_spout_feeding_other_stages_still_sends_rows(r: Any, redis_url: str) -> None:
    layout = Layout(load_topology(outtopo.MixedTopo))
    ns = _ns(r)
    wal = WriteAheadLog(r, ns, "numbers", 0)
    head = wal.open_for_append()
    code = layout.stream_code[("numbers", "default")]
    entries = [(code, [layout.first_task("encoder"), layout.first_task("totals") + n % 2],
                msgpack.packb([n, f"k{n % 2}"])) for n in NUMBERS]
    end = wal.append(head, entries)
    table = pa.Table.from_batches(list(read_partition(_opts(layout.graph, redis_url, ns),
                                                 WalPartition(0, head, end))))
    assert R.Kind.READ not in table.column("kind").to_pylist()
    assert R.tuple_count(table.filter(pa.compute.not_equal(table.column("kind"), R.Kind.BEACON))) == 2 * len(NUMBERS)


def test_rechunk_keeps_every_item_in_order_in_full_chunks() -> None:
    from stormshift.engines.spark.protocol.spoutrange import rechunk

    sizes = [0, 1, 31, 32, 33, 0, 64, 5, 100, 3]
    items = iter(range(10_000))
    blocks = [[next(items) for _ in range(n)] for n in sizes]
    chunks = list(rechunk(iter(blocks), 32))
    assert [x for c in chunks for x in c] == list(range(sum(sizes)))
    assert all(len(c) == 32 for c in chunks[:-1]) and 0 < len(chunks[-1]) <= 32
    assert list(rechunk(iter([[], []]), 32)) == []

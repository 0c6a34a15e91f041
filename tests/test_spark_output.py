"""A stage's output path without Spark: emits go straight into rows and fused queues
(``engines/spark/task/output.py``), and a tuple whose emit cannot be encoded is dead-lettered
and leaves no trace (its member is redone). Real Redis (``redis_url`` fixture)."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.engines.spark.task.counters import MemberStats, read_stats
from stormshift.engines.spark.task.output import MemberOutput
from stormshift.engines.spark.task.sink import SinkSpec
from stormshift.engines.spark.task.stage import StageJob, run_partition
from stormshift.state.deadletter import DeadLetters
from stormshift.topology.loader import load_topology

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
import outtopo


@pytest.fixture
def run(redis_url):
    import redis

    r = redis.Redis.from_url(redis_url)
    namespaces = []

    def run_stage(topology, numbers, sink=None, txid=1, namespace=None, task=0):
        layout = Layout(load_topology(topology))
        namespace = namespace or f"test-output-{uuid.uuid4().hex[:10]}"
        namespaces.append(namespace)
        sink = sink or SinkSpec("drop")
        jobs = {s.head: StageJob(layout, s, txid, frozenset(), redis_url, namespace, b"k", sink)
                for s in layout.stages}
        out = list(run_partition(jobs, iter(outtopo.encoder_rows(layout, numbers, task=task))))
        table = pa.Table.from_batches(out) if out else R.SCHEMA.empty_table()
        return layout, namespace, table

    yield r, run_stage
    for ns in namespaces:
        for key in r.scan_iter(f"*{ns}*"):
            r.delete(key)


def test_an_emit_that_cannot_be_encoded_dead_letters_its_tuple_and_leaves_no_trace(run):
    r, run_stage = run
    _layout, namespace, table = run_stage(outtopo.EncodeTopo, list(range(10)))
    got = sorted(tuple(values) for _src, _sid, values in R.iter_rows(table))
    # n == 5 changed the k1 sum, then emitted a good tuple and a bad one: both its emits
    # and its share of the sum are gone; every other tuple counts once.
    assert got == sorted([("k0", 0), ("k0", 2), ("k0", 6), ("k0", 12), ("k0", 20),
                          ("k1", 1), ("k1", 4), ("k1", 11), ("k1", 20)])
    seqs = [s for s in table.column("seq").to_pylist() if s >= 0]
    assert max(seqs) == 8  # nine emits of the redo: seqs 0..8, none left from the first run
    (letter,) = DeadLetters(r, namespace).list()
    assert (letter.component, letter.reason, letter.values) == ("encoder", "encode", [5, "k1"])
    assert "encoder" in letter.error and "fix" in letter.error
    stats = dict(read_stats(r, namespace, 1))
    assert (stats["encoder"].tuples_in, stats["encoder"].tuples_out) == (10, 9)
    assert stats["encoder"].dead_lettered == 1 and stats["encoder"].reasons == {"encode": 1}


def test_fused_emits_arrive_in_order_and_a_redo_drops_the_first_runs_queue(run, tmp_path):
    _r, run_stage = run
    layout, _namespace, _table = run_stage(outtopo.FusedTopo, list(range(10)),
                                          sink=SinkSpec("jsonl", str(tmp_path)))
    (stage,) = layout.stages
    assert stage.members == ("encoder", "totals")
    (written,) = (tmp_path / "totals" / "default").glob("*.jsonl")
    got = [tuple(json.loads(line)) for line in written.read_text().splitlines()]
    # n = 0..9 in order, without n == 5 (dead-lettered in the first run, skipped by the redo)
    assert got == [("k0", 0), ("k1", 1), ("k0", 2), ("k1", 4), ("k0", 6), ("k0", 12),
                   ("k1", 11), ("k0", 20), ("k1", 20)]


def test_a_redis_sink_gets_each_leaf_emit_once_when_a_batch_runs_again(run):
    r, run_stage = run
    namespace = f"test-output-{uuid.uuid4().hex[:10]}"
    stream = f"sink-{namespace}"
    for _attempt in range(2):  # the second run: a later attempt of txid 1 (a retry)
        run_stage(outtopo.FusedTopo, list(range(10)), sink=SinkSpec("redis", stream),
                  namespace=namespace)
    got = [(f[b"component"], int(f[b"txid"]), tuple(json.loads(f[b"values"])))
           for _id, f in r.xrange(stream)]
    assert got == [(b"totals", 1, v) for v in [("k0", 0), ("k1", 1), ("k0", 2), ("k1", 4),
                                               ("k0", 6), ("k0", 12), ("k1", 11), ("k0", 20),
                                               ("k1", 20)]]


def test_member_output_routes_chunks_fuses_and_counts_leaves():
    layout = Layout(load_topology(outtopo.FusedTopo))
    out = R.RowBuilder()
    queues: dict = {"totals": []}
    stats = MemberStats()
    output = MemberOutput(layout, "encoder", 0, out, queues, keep_leaves=True, stats=stats)
    for i in range(3):
        output.deliver("default", ["k", i], (("totals", 0),))
    output.deliver("default", ["k", "\ud800"], (("totals", 0),))
    src = layout.graph.component("encoder").task_id(0)
    code = layout.stream_code[("encoder", "default")]
    assert queues["totals"] == [(src, code, [["k", 0], ["k", 1], ["k", 2]])]  # one chunk
    assert [type(e) for e in output.bad] == [UnicodeEncodeError]  # dropped, not raised
    output.settle()  # the counts reach stats once the member is done
    assert stats.tuples_out == 3 and out.next_seq(src) == 3  # each emit took a seq

    leaf = MemberOutput(layout, "totals", 0, R.RowBuilder(), {}, keep_leaves=True, stats=MemberStats())
    leaf.deliver("default", ["k", 1], ())
    leaf.settle()
    assert leaf.leaves == [("default", ["k", 1])] and leaf.stats.leaf == 1


def test_a_sink_keeps_only_the_leaf_streams_it_names():
    from stormshift.engines.spark.task.sink import keep_streams
    from stormshift.errors import StormshiftError

    layout = Layout(load_topology(outtopo.FusedTopo))
    spec = keep_streams(SinkSpec("jsonl", "/tmp/x"), ["totals:default"], layout.leaf_streams)
    assert spec.kept_streams("totals") == {"default"} and spec.kept_streams("encoder") == set()
    assert keep_streams(spec, None, layout.leaf_streams) is spec
    with pytest.raises(StormshiftError, match="not leaf streams"):
        keep_streams(SinkSpec("drop"), ["encoder:default"], layout.leaf_streams)
    counted = MemberOutput(layout, "totals", 0, R.RowBuilder(), {}, keep_leaves=True,
                           stats=MemberStats(), only=frozenset())
    counted.deliver("default", ["k", 1], ())
    counted.settle()
    assert counted.leaves == [] and counted.stats.leaf == 1  # counted, as a drop sink counts it


def test_what_deliver_keeps_is_a_copy_of_the_emitted_list():
    """The fast emit hands ``deliver`` the user's own list (no copy per emit): what deliver
    keeps past the call (a fused queue's chunk, a sink's leaves) must not follow the
    user's later writes to it, as Storm serializes a tuple at emit time."""
    layout = Layout(load_topology(outtopo.FusedTopo))
    queues: dict = {"totals": []}
    output = MemberOutput(layout, "encoder", 0, R.RowBuilder(), queues, keep_leaves=True,
                          stats=MemberStats())
    reused = ["k", 0]
    for i in range(3):
        reused[1] = i  # a bolt reusing one list for every emit
        output.deliver("default", reused, (("totals", 0),))
    reused.append("late")
    assert queues["totals"][0][2] == [["k", 0], ["k", 1], ["k", 2]]
    assert all(type(v) is list for v in queues["totals"][0][2])
    output.deliver("default", ("k", 9), (("totals", 0),))  # an emitted tuple: a list queued
    assert queues["totals"][0][2][-1] == ["k", 9] and type(queues["totals"][0][2][-1]) is list

    leaf = MemberOutput(layout, "totals", 0, R.RowBuilder(), {}, keep_leaves=True,
                        stats=MemberStats())
    mine = ["k", 1]
    leaf.deliver("default", mine, ())
    mine[1] = 2
    assert leaf.leaves == [("default", ["k", 1])]


def test_keyed_fusion_takes_emits_routed_to_the_running_task(run, tmp_path):
    """keys k0 and k1 both go to task 1 of a par-2 fields grouping (CRC-32): fed to
    encoder's task 1, every emit's key routes totals to task 1, the running one."""
    from stormshift.adapters.hashing import hash_one

    assert {hash_one(k) % 2 for k in ("k0", "k1")} == {1}
    _r, run_stage = run
    layout, _ns, table = run_stage(outtopo.KeyedTopo, [0, 1, 2, 3], task=1,
                                   sink=SinkSpec("jsonl", str(tmp_path)))
    assert [s.members for s in layout.stages] == [("encoder", "totals")]
    assert table.num_rows == 0 or all(s < 0 for s in table.column("seq").to_pylist())  # no row
    (written,) = (tmp_path / "totals" / "default").glob("*.jsonl")
    got = [tuple(json.loads(line)) for line in written.read_text().splitlines()]
    assert got == [("k0", 0), ("k1", 1), ("k0", 2), ("k1", 4)]


def test_keyed_fusion_fails_the_batch_when_a_key_routes_elsewhere(run, tmp_path):
    """The same tuples fed to encoder's task 0 (as if its code emitted other keys than it
    was given): the emit routes totals to task 1, so the task fails, naming the bolt, the
    values and the fix, and commits nothing."""
    from stormshift.errors import KeyedFusionError

    r, run_stage = run
    namespace = f"test-output-{uuid.uuid4().hex[:10]}"
    with pytest.raises(KeyedFusionError) as err:
        run_stage(outtopo.KeyedTopo, [0, 1, 2, 3], task=0, namespace=namespace,
                  sink=SinkSpec("jsonl", str(tmp_path)))
    text = str(err.value)
    assert "'totals' runs fused by key behind 'encoder'" in text and "['k0', 0]" in text
    assert "totals' task 1" in text and "4 such emits" in text
    assert text.endswith("fix: remove 'totals' from stormshift.fuse.keyed") and "\n" not in text
    assert not list((tmp_path / "totals").rglob("*.jsonl"))  # no sink file
    assert dict(read_stats(r, namespace, 1)) == {}  # no member's commit (its counters) landed

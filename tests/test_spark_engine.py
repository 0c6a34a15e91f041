"""The Spark engine end to end: real Spark (local[2], one session) and real Redis."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "spark_fixtures"
sys.path.insert(0, str(FIXTURES))

import sparktopo

from stormshift.engines.spark import SparkEngine
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]
N = sparktopo.N_NUMBERS


def run(spark: Any, graph: Any, tmp_path: Path, redis_url: str, namespace: str, **kw: Any) -> Any:
    run_kw = {k: kw.pop(k) for k in ("max_tuples", "duration_secs", "max_batches") if k in kw}
    kw.setdefault("until_done", True)
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                         spark=spark, namespace=namespace, batch_max_tuples=kw.pop("batch", 25), **kw)
    lines: list[str] = []
    summary = engine.run(on_progress=lines.append, **run_kw)
    assert lines, "a progress line per batch"
    return summary


def by_task(rows: list[list[Any]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for task, n in rows:
        out[task].append(n)
    return out


def test_every_grouping_kind_delivers_like_storm(spark, redis_url, namespace, tmp_path):
    graph = load_topology(sparktopo.Groupings)
    s = run(spark, graph, tmp_path, redis_url, namespace)
    everything = list(range(N))
    assert s.stop_reason == "done"
    assert s["numbers"].tuples_out == N
    fields = by_task(s.output("fields_seen", "seen"))
    assert sorted(n for ns in fields.values() for n in ns) == everything
    tasks_of_key: dict[int, set[int]] = defaultdict(set)
    for task, ns in fields.items():
        for n in ns:
            tasks_of_key[n % 7].add(task)
    assert all(len(tasks) == 1 for tasks in tasks_of_key.values()), tasks_of_key
    for name in ("shuffle_seen", "none_seen"):
        got = by_task(s.output(name, "seen"))
        assert sorted(n for ns in got.values() for n in ns) == everything
        assert set(got) == {0, 1}, f"{name}: shuffle spreads over both tasks"
    all_seen = by_task(s.output("all_seen", "seen"))
    assert {t: sorted(ns) for t, ns in all_seen.items()} == {0: everything, 1: everything}
    assert {t: sorted(ns) for t, ns in by_task(s.output("global_seen", "seen")).items()} == {0: everything}
    direct = by_task(s.output("direct_seen", "seen"))
    assert {t: sorted(ns) for t, ns in direct.items()} == {0: everything[0::2], 1: everything[1::2]}
    assert sorted(n for _, n in s.output("local_seen", "seen")) == everything[0::2]
    assert sorted(n for _, n in s.output("odd_seen", "seen")) == everything[1::2]
    assert s["fields_seen"].tuples_in == N and s["all_seen"].tuples_in == 2 * N


def test_a_stage_input_split_into_tiny_arrow_batches_delivers_the_same(spark, redis_url, namespace,
                                                                      tmp_path):
    """``RUNTIME_SIZES`` bounds a stage's Arrow input in bytes, so one partition comes in
    several batches: here one row each (the bound below any row), every tuple once."""
    from stormshift.engines.spark.runtime.session import RUNTIME_SIZES

    key = "spark.sql.execution.arrow.maxBytesPerBatch"
    spark.conf.set(key, "1")  # the user's size: kept by the engine's configure_session
    try:
        s = run(spark, load_topology(sparktopo.Groupings), tmp_path, redis_url, namespace)
        assert spark.conf.get(key) == "1"
    finally:
        spark.conf.set(key, RUNTIME_SIZES[key])
    everything = list(range(N))
    assert s.stop_reason == "done" and s["numbers"].tuples_out == N
    assert sorted(n for _, n in s.output("fields_seen", "seen")) == everything
    all_seen = by_task(s.output("all_seen", "seen"))
    assert {t: sorted(ns) for t, ns in all_seen.items()} == {0: everything, 1: everything}
    assert s["fields_seen"].tuples_in == N and s["all_seen"].tuples_in == 2 * N


def test_state_join_and_poison_tuple_dead_lettered(spark, redis_url, namespace, tmp_path):
    from stormshift.state.connection import connect
    from stormshift.state.deadletter import DeadLetters

    graph = load_topology(sparktopo.Stateful)
    s = run(spark, graph, tmp_path, redis_url, namespace, batch=20)
    expected = Counter()
    for n in range(N):
        if n != sparktopo.KeySum.POISON:
            expected[f"k{n % 7}"] += n
    assert {k: v[1] for k, v in s.latest("sums").items()} == dict(expected)
    keys = Counter(f"k{n % 7}" for n in range(N))
    assert {k: (v[1], v[2]) for k, v in s.latest("join").items()} == {k: (c, c) for k, c in keys.items()}
    assert s["sums"].dead_lettered == 1
    letters = DeadLetters(connect(redis_url), namespace).list(component="sums")
    assert len(letters) == 1
    assert list(letters[0].values) == [sparktopo.KeySum.POISON, "k6"]
    assert "poison tuple 13" in letters[0].error


def test_ticks_flush_batching_bolt(spark, redis_url, namespace, tmp_path):
    graph = load_topology(sparktopo.Ticking)
    s = run(spark, graph, tmp_path, redis_url, namespace, batch=20, trigger_secs=0.5)
    flushed: Counter = Counter()
    sums: Counter = Counter()
    for key, count, total in s.output("buffer"):
        flushed[key] += count
        sums[key] += total
    # every tuple reached a flush that followed a tick, each exactly once
    assert sum(flushed.values()) == N
    assert dict(sums) == {f"k{k}": sum(n for n in range(N) if n % 7 == k) for k in range(7)}


def test_restart_from_checkpoint_loses_and_duplicates_nothing(spark, redis_url, namespace, tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    with (data / "part-000.jsonl").open("w") as fh:
        for n in range(N):
            fh.write(json.dumps({"n": n, "key": f"k{n % 7}"}) + "\n")
    graph = load_topology(sparktopo.Replayable, overrides={"jsonlines.path": str(data)})
    first = run(spark, graph, tmp_path, redis_url, namespace, batch=10, until_done=False,
                max_batches=2)
    assert first.stop_reason == "max_batches"
    assert 0 < len(first.latest("sums")) and first["numbers"].tuples_out < N
    second = run(spark, graph, tmp_path, redis_url, namespace, batch=10)
    expected = Counter()
    for n in range(N):
        if n != sparktopo.KeySum.POISON:
            expected[f"k{n % 7}"] += n
    assert {k: v[1] for k, v in second.latest("sums").items()} == dict(expected)
    # the same state adopted under a new checkpoint dir: its snapshots were signed with the
    # key kept beside the old one, so the run stops at start-up naming the fix
    from stormshift.errors import StateError

    other = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck-new"), redis_url=redis_url,
                        spark=spark, namespace=namespace, until_done=True, state_mode="adopt")
    lines: list[str] = []
    with pytest.raises(StateError, match="stormshift-state.key") as err:
        other.run(on_progress=lines.append)
    assert str(tmp_path / "ck-new") in str(err.value) and not lines


def test_heads_read_their_spout_tasks_ranges_themselves(spark, redis_url, namespace, tmp_path):
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.state.connection import connect
    from stormshift.state.deadletter import DeadLetters

    data = tmp_path / "in"
    data.mkdir()
    files = {"part-000.jsonl": range(25), "part-001.jsonl": range(25, N)}  # uneven on purpose
    for name, ns in files.items():
        lines = [json.dumps({"n": n, "key": f"k{n % 7}"}) for n in ns]
        lines.insert(3, "{not json")
        (data / name).write_text("\n".join(lines) + "\n")
    graph = load_topology(sparktopo.ReadLocally, overrides={"jsonlines.path": str(data)})
    assert Layout(graph).deferred("numbers")
    s = run(spark, graph, tmp_path, redis_url, namespace, batch=10)
    expected = Counter()
    for n in range(N):
        expected[f"k{n % 7}"] += 2 * n
    assert {k: v[1] for k, v in s.latest("sums").items()} == dict(expected)
    assert s["numbers"].tuples_out == N and s["doubler"].tuples_in == N
    assert s["sums"].tuples_in == N
    decode = [d for d in DeadLetters(connect(redis_url), namespace).list() if d.reason == "decode"]
    assert sorted(d.tuple_key.split(":")[0] for d in decode) == sorted(files)  # each once


def test_head_on_the_source_partitions_gets_its_spout_tasks_tuples(spark, redis_url, namespace,
                                                                   tmp_path):
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.state.fencing import current_epoch

    data = tmp_path / "in"
    data.mkdir()
    files = {"part-000.jsonl": range(45), "part-001.jsonl": range(45, N)}  # uneven on purpose
    for name, ns in files.items():
        with (data / name).open("w") as fh:
            for n in ns:
                fh.write(json.dumps({"n": n, "key": f"k{n % 7}"}) + "\n")
    graph = load_topology(sparktopo.LocalReplay, overrides={"jsonlines.path": str(data)})
    assert Layout(graph).direct_heads == {"seen"}
    s = run(spark, graph, tmp_path, redis_url, namespace, batch=10)
    seen = by_task(s.output("seen", "seen"))
    # spout task i reads file i; its tuples all reach seen's task i, each once
    assert {t: sorted(ns) for t, ns in seen.items()} == {0: list(range(45)), 1: list(range(45, N))}
    expected = Counter()
    for n in range(N):
        if n != sparktopo.KeySum.POISON:
            expected[f"k{n % 7}"] += n
    assert {k: v[1] for k, v in s.latest("sums").items()} == dict(expected)
    # task 1's file runs out first (2 batches of 10): it still ran every batch (its beacon
    # comes from the source), as often as a task of the shuffled stage, whose beacons the
    # driver adds (an epoch per run; the sums task with the poison tuple ran once more: redo)
    from redis import Redis

    r = Redis.from_url(redis_url)
    runs = {(c, t): current_epoch(r, namespace, c, t) for c in ("seen", "sums") for t in (0, 1)}
    batches = min(runs[("sums", 0)], runs[("sums", 1)])
    assert runs[("seen", 0)] == runs[("seen", 1)] == batches > 2, runs

"""``--max-tuples N``: exactly N spout tuples per run, for every spout kind, on both engines.

The oracle is independent of the engines' code: spout task ``i`` has an ordered list
of tuples (a generic spout: what it emits; a replayable one: its partitions -- partition
``p`` of the sorted list belongs to task ``p % par`` -- read in sorted order); the run
takes tuples one at a time round-robin over the tasks that still have input, in task
order, until it has N. (The documented rule -- even shares, what an ended task leaves
goes to the others -- gives the same tuples.) A restart from the same checkpoint with
a larger N must end exactly where a fresh run with that N would.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))

import maxtopo
from support.max_tuples import (
    counts,
    first_n,
    jsonlines_graph,
    key_counts,
    make_redis_streams,
    seen,
)

from stormshift.engines.budget import even_split, spout_budgets, task_targets
from stormshift.engines.local import LocalEngine
from stormshift.topology.loader import load_topology


@pytest.fixture
def redis_streams(redis_url: str) -> Iterator[tuple[Any, list[list[int]]]]:
    """Streams a, b, c of random names (``support.max_tuples.make_redis_streams``)."""
    yield from make_redis_streams(redis_url)


# -- the three spout kinds ----------------------------------------------------------
GENERIC_LIMITS = [12, 60]  # task 0 ends early: its unused share goes to task 1


def generic_graph() -> tuple[Any, list[list[int]]]:
    graph = load_topology(maxtopo.Generic, overrides={"maxt.limits": GENERIC_LIMITS, "maxt.burst": 3})
    per_task = [[i * maxtopo.TASK_STRIDE + j for j in range(limit)]
                for i, limit in enumerate(GENERIC_LIMITS)]
    return graph, per_task


# -- the budget rule ------------------------------------------------------------------
def test_shares_split_evenly_first_tasks_first() -> None:
    assert even_split(7, 3) == [3, 2, 2] and even_split(0, 2) == [0, 0] and even_split(5, 0) == []
    assert spout_budgets(5, ["a", "b"]) == {"a": 3, "b": 2}
    assert spout_budgets(None, ["a"]) == {"a": None}


def test_ended_tasks_leave_their_share_to_the_others() -> None:
    assert task_targets(40, [0, 0], [False, False]) == [20, 20]
    assert task_targets(40, [12, 10], [True, False]) == [12, 28]
    assert task_targets(7, [2, 0, 0], [True, False, False]) == [2, 3, 2]
    # a count already past its split (an earlier run with other shares) is kept, never undone
    assert task_targets(10, [8, 0], [False, False]) == [8, 2]
    assert task_targets(5, [4, 4], [False, False]) == [4, 4]  # a smaller budget takes nothing


def test_oracle_matches_the_documented_rule() -> None:
    per_task = [list(range(5)), list(range(100, 150)), list(range(200, 230))]
    for n in (0, 1, 7, 16, 40, 85, 200):
        consumed = [0, 0, 0]
        ended = [False] * 3
        for _ in range(10):  # the planner's fixpoint: end tasks, retarget
            targets = task_targets(n, consumed, ended)
            consumed = [min(t, len(p)) for t, p in zip(targets, per_task)]
            ended = [c == len(p) for c, p in zip(consumed, per_task)]
        got = sorted(x for c, p in zip(consumed, per_task) for x in p[:c])
        assert got == first_n(per_task, n), n


# -- local engine -------------------------------------------------------------------
def run_local(graph: Any, n: int) -> Any:
    return LocalEngine(graph).run(max_tuples=n)


@pytest.mark.parametrize("n", [20, 40, 72, 500])
def test_local_generic_spout_takes_exactly_n(n: int) -> None:
    graph, per_task = generic_graph()
    summary = run_local(graph, n)
    want = first_n(per_task, n)
    assert summary.spout_tuples == len(want) == min(n, 72)
    assert seen(summary) == want and counts(summary) == key_counts(want)
    assert summary["numbers"].tuples_out == len(want)  # held emits are not part of the run


@pytest.mark.parametrize("n", [20, 40])
def test_local_jsonlines_takes_exactly_n(tmp_path: Path, n: int) -> None:
    graph, per_task = jsonlines_graph(tmp_path / "in")
    summary = run_local(graph, n)
    want = first_n(per_task, n)
    assert summary.spout_tuples == n and seen(summary) == want and counts(summary) == key_counts(want)
    assert summary.stop_reason == f"max_tuples={n} reached"


@pytest.mark.redis
@pytest.mark.parametrize("n", [14, 36])
def test_local_redis_streams_takes_exactly_n(redis_streams: Any, n: int) -> None:
    graph, per_task = redis_streams
    summary = run_local(graph, n)
    want = first_n(per_task, n)
    assert summary.spout_tuples == n and seen(summary) == want and counts(summary) == key_counts(want)


def test_local_end_of_input_comes_first(tmp_path: Path) -> None:
    graph, per_task = jsonlines_graph(tmp_path / "in")
    summary = run_local(graph, 1000)
    assert summary.spout_tuples == 42 and seen(summary) == first_n(per_task, 1000)
    assert summary.stop_reason == "sources exhausted"


def two_spouts_want(n: int) -> list[int]:
    """``first`` (one task) gets ceil(n / 2); ``second``'s two tasks split the rest. Both
    spouts emit the same numbers: ``seen`` gets a multiset."""
    share_first, share_second = (n + 1) // 2, n // 2
    tasks = [list(range(60)), [maxtopo.TASK_STRIDE + j for j in range(60)]]
    return sorted(first_n([list(range(60))], share_first) + first_n(tasks, share_second))


def test_local_several_spouts_split_the_budget_in_declaration_order() -> None:
    summary = run_local(load_topology(maxtopo.TwoSpouts), 31)
    assert summary.spout_tuples == 31 and seen(summary) == two_spouts_want(31)
    assert summary["first"].tuples_out == 16 and summary["second"].tuples_out == 15


# -- Spark engine ---------------------------------------------------------------------
def run_spark(spark: Any, graph: Any, ck: Path, redis_url: str, namespace: str, n: int | None,
              **kw: Any) -> Any:
    from stormshift.engines.spark import SparkEngine

    duration = kw.pop("duration_secs", 120)  # a safety net: every test stops on its own
    max_batches = kw.pop("max_batches", None)
    engine = SparkEngine(graph, checkpoint_dir=str(ck), redis_url=redis_url, spark=spark,
                         namespace=namespace, batch_max_tuples=kw.pop("batch", 4), **kw)
    return engine.run(max_tuples=n, duration_secs=duration, max_batches=max_batches)


def check_restart(spark: Any, redis_url: str, namespace: str, ck: Path, graph: Any,
                  per_task: list[list[int]], n1: int, n2: int, local_n2: Any) -> None:
    first = run_spark(spark, graph, ck, redis_url, namespace, n1)
    want1 = first_n(per_task, n1)
    assert first.stop_reason == f"max_tuples={n1} reached"
    assert first.spout_tuples == n1
    assert seen(first) == want1 and counts(first) == key_counts(want1)
    second = run_spark(spark, graph, ck, redis_url, namespace, n2, batch=5)
    want2 = first_n(per_task, n2)
    assert second.stop_reason == f"max_tuples={n2} reached"
    assert second.spout_tuples == n2 - n1  # the count of the first run came from its offsets
    # the sink keeps both runs' leaf emits: each tuple once, none skipped
    assert seen(second) == want2 and counts(second) == key_counts(want2)
    # the same tuples and results as the local engine's fresh run with N2
    assert seen(local_n2) == want2 and counts(local_n2) == counts(second)


@pytest.mark.spark
@pytest.mark.redis
def test_spark_generic_spout_cut_at_n_and_restart_continues(spark, redis_url, namespace, tmp_path):
    graph, per_task = generic_graph()
    check_restart(spark, redis_url, namespace, tmp_path / "ck", graph, per_task, 20, 40,
                  run_local(graph, 40))


@pytest.mark.spark
@pytest.mark.redis
def test_spark_jsonlines_cut_at_n_and_restart_continues(spark, redis_url, namespace, tmp_path):
    graph, per_task = jsonlines_graph(tmp_path / "in")
    check_restart(spark, redis_url, namespace, tmp_path / "ck", graph, per_task, 20, 40,
                  run_local(graph, 40))
    # N counts from the checkpoint's start: the same N again reads nothing ...
    again = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, 40)
    assert again.stop_reason == "max_tuples=40 reached" and again.spout_tuples == 0
    # ... and no budget reads the rest, to end of input
    rest = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, None, until_done=True)
    assert rest.stop_reason == "done" and rest.spout_tuples == 2
    assert seen(rest) == first_n(per_task, 42) and counts(rest) == key_counts(first_n(per_task, 42))


@pytest.mark.spark
@pytest.mark.redis
def test_spark_redis_streams_cut_at_n_and_restart_continues(spark, redis_url, namespace, tmp_path,
                                                            redis_streams):
    graph, per_task = redis_streams
    check_restart(spark, redis_url, namespace, tmp_path / "ck", graph, per_task, 14, 36,
                  run_local(graph, 36))


@pytest.mark.spark
@pytest.mark.redis
def test_spark_heads_reading_ranges_themselves_get_the_cut(spark, redis_url, namespace, tmp_path):
    from stormshift.engines.spark.protocol.layout import Layout

    graph, per_task = jsonlines_graph(tmp_path / "in", maxtopo.ReadLocally)
    assert Layout(graph).deferred("numbers")
    summary = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, 23, batch=3)
    assert summary.spout_tuples == 23 and seen(summary) == first_n(per_task, 23)


@pytest.mark.spark
@pytest.mark.redis
def test_spark_end_of_input_before_n_stops_with_or_without_until_done(spark, redis_url, namespace,
                                                                      tmp_path):
    graph, per_task = jsonlines_graph(tmp_path / "in")
    summary = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, 1000, batch=10)
    assert summary.stop_reason == "done" and summary.spout_tuples == 42
    assert seen(summary) == first_n(per_task, 1000)
    other = run_spark(spark, graph, tmp_path / "ck2", redis_url, namespace + "-2", 30, batch=10,
                      until_done=True)
    assert other.stop_reason == "max_tuples=30 reached" and other.spout_tuples == 30


@pytest.mark.spark
@pytest.mark.redis
def test_spark_several_spouts_split_the_budget_like_local(spark, redis_url, namespace, tmp_path):
    summary = run_spark(spark, load_topology(maxtopo.TwoSpouts), tmp_path / "ck", redis_url,
                        namespace, 31, batch=5)
    assert summary.stop_reason == "max_tuples=31 reached" and summary.spout_tuples == 31
    assert seen(summary) == two_spouts_want(31)


@pytest.mark.spark
@pytest.mark.redis
def test_spark_stopped_mid_run_replays_the_cut_batch_exactly(spark, redis_url, namespace, tmp_path,
                                                             redis_streams):
    """A run stopped after two batches may leave the next one planned (in the offset log)
    but not committed; the next run re-reads exactly its planned, cut range and goes on to N."""
    graph, per_task = redis_streams
    first = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, 36, batch=7,
                      max_batches=2)
    assert first.stop_reason == "max_batches" and first.spout_tuples < 36
    second = run_spark(spark, graph, tmp_path / "ck", redis_url, namespace, 36, batch=7)
    assert second.stop_reason == "max_tuples=36 reached"
    assert first.spout_tuples + second.spout_tuples == 36
    want = first_n(per_task, 36)
    assert seen(second) == want and counts(second) == key_counts(want)

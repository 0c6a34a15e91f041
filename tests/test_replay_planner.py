"""The Spark planner of a replayable source, in process (no JVM; a real Redis for its lag).

A component's class swapped with ``dataclasses.replace`` kept the old class's
capabilities: bench/spark_adclicks.py put ``JsonLinesSpout`` in ``AdLogSpout``'s place
that way, the engine went on deciding from ``AdLogSpout``'s (a generic spout), so the
files were read by hosting ``next_tuple()`` on the driver and logging every line to
Redis, within the 500 ms spout budget per task: ~111,000 events per batch instead of
``--batch`` 500,000, and seconds per ``latestOffset``. The graph now refuses
capabilities read for another class path, and the bench's graph plans a whole
``batch_max`` per task in one call.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from stormshift.engines.spark.source.options import Opts
from stormshift.engines.spark.source.planner.planner import ReplayPlanner, make_planner
from stormshift.errors import TopologyError
from stormshift.spouts import jsonlines
from stormshift.topology.loader import with_class

REPO = Path(__file__).resolve().parents[1]
FILES, LINES, PAR = 4, 3_000, 2  # 2 files per spout task


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_spark_adclicks",
                                                  REPO / "bench" / "spark_adclicks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(root: Path) -> Path:
    data = root / "data"
    data.mkdir()
    for f in range(FILES):
        (data / f"part-{f:05d}.jsonl").write_text("".join(
            json.dumps({"ad_id": f"ad-{i % 7}", "n": f * LINES + i}) + "\n" for i in range(LINES)))
    return data


def _opts(graph: Any, batch_max: int, redis_url: str, namespace: str) -> Opts:
    return Opts(graph=graph, spout="ad_log_spout", redis_url=redis_url, namespace=namespace,
                batch_max=batch_max, budget_ms=500, max_total=-1, tick_ms=0)


def test_a_class_swapped_without_its_capabilities_is_refused(tmp_path: Path) -> None:
    """What bench/spark_adclicks.py did: the engine then hosted a replayable spout as a
    generic one (driver-side next_tuple, a write-ahead log, batches cut by the budget)."""
    graph = _bench().adclicks_on_files(_files(tmp_path), PAR)
    spout = graph.component("ad_log_spout")
    assert spout.class_path == "stormshift.spouts.jsonlines.JsonLinesSpout"
    assert spout.capabilities.replayable
    with pytest.raises(TopologyError, match="with_class"):
        dataclasses.replace(spout, class_path=spout.replaces)
    generic = with_class(spout, str(spout.replaces), graph.source_dirs, spout.config)
    assert not generic.capabilities.replayable
    with pytest.raises(TopologyError, match="capabilities were read from class"):
        dataclasses.replace(generic, class_path="stormshift.spouts.jsonlines.JsonLinesSpout")


def _plans(planner: ReplayPlanner) -> Iterator[dict]:
    offset = planner.initial_offset()
    for _ in range(FILES * LINES):  # far more than needed: ends at "fin"
        end = planner.latest_offset(offset)
        if end == offset:
            return
        yield end
        planner.commit(end)
        offset = end
        if end["fin"]:
            return


@pytest.mark.redis
def test_the_bench_graph_plans_a_whole_batch_max_per_task_in_one_call(
        tmp_path: Path, redis_url: str, namespace: str) -> None:
    data = _files(tmp_path)
    graph = _bench().adclicks_on_files(data, PAR)
    batch_max = LINES + LINES // 2  # a task's batch spans its files: 1.5 files
    planner = make_planner(_opts(graph, batch_max, redis_url, namespace))
    assert isinstance(planner, ReplayPlanner)  # no spout hosted, nothing logged
    plans = list(_plans(planner))
    per_task_lines = FILES // PAR * LINES
    assert [p["n"] for p in plans] == [[batch_max] * PAR, [per_task_lines] * PAR,
                                       [per_task_lines] * PAR]
    assert [p["done"] for p in plans] == [False, True, True]
    assert plans[-1]["fin"] and plans[1]["p"] == {f"part-{f:05d}.jsonl": LINES for f in range(FILES)}
    r = redis.Redis.from_url(redis_url)
    assert not r.keys(f"*{namespace}*wal*")  # the generic path's write-ahead log: never written
    lag = json.loads(next(iter(r.hgetall(next(iter(r.keys(f"*{namespace}*lag*")))).values())))
    assert lag["records"] == [0, 0]


class _Counting:
    """The spout's calls the planner makes, counted per plan."""

    def __init__(self, spout: Any, names: tuple[str, ...]):
        self.calls: dict[str, int] = dict.fromkeys(names, 0)
        for name in names:
            setattr(spout, name, self._counted(name, getattr(spout, name)))

    def _counted(self, name: str, method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return method(*args, **kwargs)
        return call

    def take(self) -> dict[str, int]:
        calls, self.calls = self.calls, dict.fromkeys(self.calls, 0)
        return calls


@pytest.mark.redis
def test_planning_work_does_not_grow_with_the_lines_already_read(
        tmp_path: Path, redis_url: str, namespace: str) -> None:
    """Each plan asks the spout the same number of questions, and no plan rescans a file
    the planner indexed already: planning a batch is per-partition work, not per line."""
    data = _files(tmp_path)
    graph = _bench().adclicks_on_files(data, PAR)
    planner = make_planner(_opts(graph, LINES // 4, redis_url, namespace))
    counting = _Counting(planner.spout, ("replay_partitions", "replay_advance",
                                         "replay_partition_lag", "replay_partition_done"))
    offset = planner.initial_offset()
    offset = planner.latest_offset(offset)  # the first plan indexes the files
    counting.take()
    indexes = {p: jsonlines._INDEXES[str(data / p)] for p in offset["p"]}
    scanned = {p: index.scanned for p, index in indexes.items()}
    per_plan = []
    while not offset["done"]:
        offset = planner.latest_offset(offset)
        per_plan.append(counting.take())
    assert len(per_plan) == FILES // PAR * 4 - 1  # batches of a quarter file per task
    # per partition at most, whatever was read before: one listing per question asked of
    # all partitions (plan, end of input, lag), an advance, a done check and a lag each
    assert all(calls["replay_partitions"] == 3 and calls["replay_partition_lag"] == FILES
               and calls["replay_advance"] <= FILES and calls["replay_partition_done"] <= FILES
               for calls in per_plan), per_plan
    assert {p: jsonlines._INDEXES[str(data / p)] for p in offset["p"]} == indexes
    assert {p: index.scanned for p, index in indexes.items()} == scanned

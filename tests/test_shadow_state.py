"""Shadow runs compare the bolts' final state (stormshift/shadow/final_state.py).

Unit tier: entries from hand-written task states (merging tasks, sets, scalars,
maps), divergence kinds and tolerance; the local engine reporting its
instances' attributes; shadows with the port on the local engine where Storm's
crash loses a task's dict (classified as such) and where a changed bolt's
state differs on exactly the keys the change affects; ``shadow.state.ignore``.
Redis tier: ``state/final.py`` reads committed snapshots (verified) and maps back.
Spark tier: a port that moves a legacy bolt's dict into an ``opaque_map`` is
compared, key by key, with the legacy's attribute -- and agrees.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.adclicks_port import (
    ADCLICKS,
    EVENTS,
    SMALL,
    changed_port_shadow,
    oracle,
    ported_adclicks,
    rounded_advertisers,
)

from stormshift.cli.shadow import shadow_command
from stormshift.engines.local import LocalEngine, SimClock
from stormshift.engines.summary import ComponentState
from stormshift.errors import StormshiftError
from stormshift.shadow import DivergenceKind, Tolerance, run_shadow
from stormshift.shadow.classify import CRASH_LOST_STATE, PORT_DIFFERENCE
from stormshift.shadow.final_state import compare_state, entries_of
from stormshift.topology.loader import load_topology

CRASH = "crash:client_spent_bolt[0]@500"
#: these tests are about the spend dicts: adclicks without its windowed reports (each run
#: costs a quarter; the windowed bolts' final state is tests/test_shadow.py's HTML test's)
UNWINDOWED = {**SMALL, "adclicks.windows": False}


def test_entries_merge_tasks_sets_scalars_and_maps() -> None:
    state = ComponentState(
        tasks=[{"counts": Counter(a=2, b=1), "seen": {"x"}, "total": 3, "name": "t"},
               {"counts": Counter(a=1, c=4), "seen": {"x", "y"}, "total": 5, "name": "t"}],
        maps={"spend": {("adv", 1): 10, "z": 1.5}},
    )
    entries = entries_of(state)
    assert entries["counts"] == ("attribute", {"a": 3, "b": 1, "c": 4})  # a split over tasks
    assert entries["seen"] == ("attribute", {"x": 2, "y": 1})
    assert entries["total"] == ("attribute", {"(value)": 8})
    assert entries["name"] == ("attribute", {"(value)": ["t", "t"]})
    assert entries["spend"] == ("map", {'["adv", 1]': 10, "z": 1.5})


def test_state_divergence_kinds_and_tolerance() -> None:
    legacy = {"bolt": ComponentState([{"m": {"a": 1, "b": 2.0, "c": 3, "l": [1, 2]}}])}
    port = {"bolt": ComponentState([{"m": {"a": 1, "b": 2.004, "d": 4, "l": [1, 2, 2]}}])}
    (entry,) = compare_state(legacy, port)
    kinds = {d.key: d.kind for d in entry.divergences}
    assert kinds == {"b": DivergenceKind.VALUE_DIFFERS, "c": DivergenceKind.MISSING_KEY,
                     "d": DivergenceKind.EXTRA_KEY, "l": DivergenceKind.COUNT_DIFFERS}
    assert (entry.same, entry.missing_left, entry.missing_right, entry.different) == (1, 1, 1, 2)
    (loose,) = compare_state(legacy, port, Tolerance(abs=0.01))
    assert "b" not in {d.key for d in loose.divergences if not d.within_tolerance}
    assert compare_state(legacy, port, ignore=["bolt.m"]) == []


def test_local_engine_reports_its_instances_user_attributes() -> None:
    graph = load_topology(ADCLICKS, overrides=UNWINDOWED)
    summary = LocalEngine(graph, clock=SimClock(), seed=0, read_state=True).run()
    state = summary.final_state["client_spent_bolt"]
    assert len(state.tasks) == graph.component("client_spent_bolt").par
    assert all(set(t) == {"spend"} for t in state.tasks)  # no logger, conf, context, emit
    merged: dict[str, int] = {}
    for task in state.tasks:
        merged.update(task["spend"])
    want = oracle().compute(oracle().generated_lines(7, EVENTS)).spend_by_advertiser
    assert merged == want
    assert "ad_log_spout" not in summary.final_state  # bolts only
    assert LocalEngine(graph, clock=SimClock(), seed=0).run().final_state == {}  # not asked


def test_storm_crash_shows_as_lost_state_in_the_final_state() -> None:
    graph = load_topology(ADCLICKS, overrides=UNWINDOWED)
    result = run_shadow(graph, legacy_faults=CRASH, port_engine="local")
    states = {s.label: s for s in result.states}
    spend = states["client_spent_bolt.spend"]
    assert spend.divergences and {d.cause for d in spend.divergences} == {CRASH_LOST_STATE}
    for d in spend.divergences:  # the restarted task began again from initialize()
        assert d.kind in (DivergenceKind.VALUE_DIFFERS, DivergenceKind.EXTRA_KEY)
        assert (d.legacy or 0) <= d.port
    # the crashed task's keys only: the other task's dict survived
    engine = LocalEngine(graph, clock=SimClock(), seed=0)
    engine.run()
    survivor = set(engine.instances("client_spent_bolt")[1].spend)
    assert not survivor & {d.key for d in spend.divergences}
    assert result.exit_code == 0 and "legacy crash loss" in result.verdict.line  # not the port's


def test_changed_bolt_final_state_differs_on_the_right_keys() -> None:
    result = changed_port_shadow()
    states = {s.label: s for s in result.states}
    assert all(states[f"ads_ctr_bolt.{e}"].equal for e in ("clicks", "impressions", "spend"))
    spend = states["client_spent_bolt.spend"]
    assert {d.key for d in spend.divergences} == rounded_advertisers()
    assert {d.cause for d in spend.divergences} == {PORT_DIFFERENCE}
    assert all(d.port < d.legacy for d in spend.divergences)


def test_command_json_has_the_state_and_ignore_config() -> None:
    runner = CliRunner()
    base = [str(ADCLICKS), "-o", f"adclicks.events={EVENTS}", "-o", "adclicks.windows=false",
            "--port-engine", "local",
            "--port", str(ported_adclicks()), "--json"]
    done = runner.invoke(shadow_command, base, catch_exceptions=False)
    assert done.exit_code == 1
    doc = json.loads(done.output)
    spend = next(s for s in doc["state"] if s["state"] == "client_spent_bolt.spend")
    assert spend["different"] == len(rounded_advertisers())
    assert (spend["legacy_source"], spend["port_source"]) == ("attribute", "attribute")
    ignore = 'shadow.state={"ignore": ["client_spent_bolt"]}'
    skip = runner.invoke(shadow_command, [*base, "-o", ignore], catch_exceptions=False)
    assert "client_spent_bolt.spend" not in {s["state"] for s in json.loads(skip.output)["state"]}
    bad = runner.invoke(shadow_command, [*base, "-o", 'shadow.state={"ignore": ["nope"]}'])
    assert bad.exit_code == 2 and "no such bolt" in bad.output
    with pytest.raises(StormshiftError, match=r"-o shadow.state=\[\"x\"\]: expected a JSON object"):
        run_shadow(load_topology(ADCLICKS, overrides={**UNWINDOWED, "shadow.state": ["x"]}),
                   port_engine="local")


# -- Spark: a port that moved a dict into a keyed state map ------------------------------
MAP_BOLT = '''"""Spend per advertiser, kept in an exactly-once keyed state map (the port)."""

from streamparse import Bolt

from stormshift.state import opaque_map


class ClientSpentBolt(Bolt):
    outputs = ["advertiser_id", "spend"]

    def initialize(self, conf, ctx):
        self.spend = opaque_map("spend")

    def process(self, tup):
        advertiser_id = tup.values[1]
        self.spend.increment(advertiser_id, tup.values[7])
        self.emit([advertiser_id, self.spend.get(advertiser_id)])
'''


@pytest.fixture
def map_port() -> Any:
    root = Path(tempfile.mkdtemp(prefix="adclicks-map-")) / "adclicks"
    shutil.copytree(ADCLICKS, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "src" / "bolts" / "spend.py").write_text(MAP_BOLT, encoding="utf-8")
    try:
        yield root
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


@pytest.mark.spark
@pytest.mark.redis
def test_port_with_opaque_map_agrees_with_the_legacy_dict(spark: Any, redis_url: str,
                                                           map_port: Path) -> None:
    import redis

    namespace = f"t-shadow-map-{uuid.uuid4().hex[:8]}"
    graph = load_topology(ADCLICKS, overrides=SMALL)
    try:
        result = run_shadow(graph, port_graph=load_topology(map_port, overrides=SMALL),
                            spark=spark, redis_url=redis_url, namespace=namespace,
                            batch_max_tuples=500)
    finally:
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(match=f"*{namespace}*", count=1000):
            client.delete(key)
    states = {s.label: s for s in result.states}
    spend = states["client_spent_bolt.spend"]
    assert (spend.legacy_source, spend.port_source) == ("attribute", "map")
    want = oracle().compute(oracle().generated_lines(7, EVENTS)).spend_by_advertiser
    assert spend.equal and spend.keys == len(want) > 0
    assert result.port.final_state["client_spent_bolt"].maps["spend"] == want
    assert result.equal, [d.to_dict() for s in result.states for d in s.divergences][:5]


def test_key_series_per_mode_over_event_time_or_position() -> None:
    from stormshift.shadow.key_chart import key_series
    from stormshift.shadow.results import ResultMode, ResultSpec

    rows = [["a", 2, 100], ["b", 1, 150], ["a", 3, 200]]
    latest = ResultSpec("bolt", "default", ("k", "v", "ts"), ResultMode.LATEST, ("k",),
                        ("v", "ts"), "ts")
    assert key_series(latest, rows, {"a"}) == {"a": (([100, 200], [2.0, 3.0]), True)}
    summed = ResultSpec("bolt", "default", ("k", "v", "ts"), ResultMode.SUM, ("k",), ("v",))
    assert key_series(summed, rows, {"a", "b"}, scale=2.0) == {
        "a": (([0, 4], [2.0, 5.0]), False), "b": (([2], [1.0]), False)}


@pytest.mark.redis
def test_committed_state_is_read_back_verified_and_uncommitted_left_out(redis_url: str,
                                                                        namespace: str) -> None:
    import pickle

    import redis as redis_py

    from stormshift.errors import StateError
    from stormshift.state import keys as K
    from stormshift.state import opaque_map
    from stormshift.state.commit import CommitLog
    from stormshift.state.fencing import acquire_epoch
    from stormshift.state.final import committed_attributes, committed_maps
    from stormshift.state.scope import TaskScope
    from stormshift.state.snapshots import SnapshotStore

    r = redis_py.Redis.from_url(redis_url)
    store = SnapshotStore(r, namespace, b"k" * 32)
    epoch = acquire_epoch(r, namespace, "bolt", 0)
    with TaskScope(r, namespace, "bolt", 0, 1, epoch):
        opaque_map("spend").increment("adv-1", 5)
    store.save("bolt", 0, 1, epoch, pickle.dumps({"counts": {"a": 1}}))
    CommitLog(r, namespace).record_commit(1)
    store.save("bolt", 0, 2, epoch, pickle.dumps({"counts": {"a": 2}}))  # not committed
    assert committed_attributes(r, namespace, b"k" * 32, "bolt", 0) == {"counts": {"a": 1}}
    assert committed_attributes(r, namespace, b"k" * 32, "bolt", 1) == {}
    assert committed_maps(r, namespace, "bolt") == {"spend": {"adv-1": 5}}
    key = K.snapshot_key(namespace, "bolt", 0)
    r.hset(key, "b:1", r.hget(key, "b:1")[:-1] + b"x")  # tampered: refused, never unpickled
    with pytest.raises(StateError, match="integrity check"):
        committed_attributes(r, namespace, b"k" * 32, "bolt", 0)

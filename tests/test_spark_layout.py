"""The per-batch plan's shape, without Spark: stages, fused members and stage groups."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stormshift.adapters.routing import Router
from stormshift.engines.spark.driver.batch import SPOUTS, stage_groups
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.topology.loader import load_topology

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
import sparktopo


def heads(groups):
    return [[s.head for s in g] for g in groups]


def test_consumers_of_one_output_run_as_one_spark_stage():
    # adclicks: parse feeds five fields groupings (two on its default stream, three on
    # "events"); all five read parse's rows in ONE mapInArrow, so parse's output is read
    # once and needs no persist. The formatting bolts (local_or_shuffle) are fused into
    # their windowed bolt; the sessions report (fields(user_id)) is a stage of its own.
    layout = Layout(load_topology(str(EXAMPLES / "adclicks"), name="adclicks"))
    groups, reads = stage_groups(layout)
    assert heads(groups) == [["parse_bolt"], ["ads_ctr_bolt", "client_spent_bolt",
                                              "ad_ctr_minute_bolt", "advertiser_day_bolt",
                                              "user_sessions_bolt"],
                             ["user_sessions_report_bolt"]]
    assert reads == [[SPOUTS], ["parse_bolt"], ["ads_ctr_bolt"]]
    fused = {s.head: s.members for s in layout.stages}
    assert fused["advertiser_day_bolt"] == ("advertiser_day_bolt", "daily_spend_bolt",
                                            "budget_alert_bolt")


def test_groups_follow_what_each_stage_reads():
    layout = Layout(load_topology(sparktopo.Groupings))
    groups, reads = stage_groups(layout)
    by_head = {s.head: s for s in layout.stages}
    assert by_head["director"].members == ("director", "local_seen")  # fused: local_or_shuffle
    assert heads(groups) == [
        ["fields_seen", "shuffle_seen", "all_seen", "global_seen", "none_seen", "director"],
        ["direct_seen", "odd_seen"],
    ]  # topological (declaration) order
    assert reads == [[SPOUTS], ["fields_seen"]]  # a group is named by its first head
    # every group reads only groups planned before it
    planned: set[str] = {SPOUTS}
    for group, names in zip(groups, reads, strict=True):
        assert set(names) <= planned
        planned.add(group[0].head)


def test_a_head_runs_on_the_source_partitions_unless_turned_off():
    # the only spout, shuffle grouping, same par: spout task i feeds head task i
    lines = str(EXAMPLES / "adclicks")
    graph = load_topology(lines, name="adclicks")
    assert Layout(graph).direct_heads == frozenset()  # AdLogSpout par 1, parse par 2
    local = load_topology(sparktopo.LocalReplay, overrides={"jsonlines.path": "/nonexistent"})
    layout = Layout(local)
    assert layout.direct_heads == {"seen"}
    seen, spout = local.component("seen"), local.component("numbers")
    # spout task 1 routes every tuple for seen to seen's task 1, when it routes it
    assert layout.colocated("numbers") == {"seen"}
    router = Router(local, "numbers", 1, layout.colocated("numbers"))
    fields = local.stream_fields("numbers", "default")
    picks = [i for n in range(6) for c, i in router.route("default", [n] * len(fields)) if c == "seen"]
    assert picks == [1] * 6
    assert spout.par == seen.par == 2
    groups, reads = stage_groups(layout)
    assert heads(groups) == [["seen"], ["sums"]] and reads == [[SPOUTS], [SPOUTS]]
    off = load_topology(sparktopo.LocalReplay, overrides={"jsonlines.path": "/nonexistent",
                                                          "stormshift.spark.source_local": False})
    assert Layout(off).direct_heads == frozenset()


def test_fuse_false_makes_every_bolt_a_stage_and_no_head_colocated():
    """``-o stormshift.fuse=false``: every hop a row and a shuffle (layout doc)."""
    on = Layout(load_topology(sparktopo.ReadLocally, overrides={"jsonlines.path": "/x"}))
    assert on.direct_heads == {"doubler"} and on.deferred("numbers")
    off = Layout(load_topology(sparktopo.ReadLocally, overrides={"jsonlines.path": "/x",
                                                                 "stormshift.fuse": False}))
    assert off.direct_heads == frozenset() and not off.deferred("numbers")
    assert off.colocated("numbers") == frozenset()
    graph = load_topology(EXAMPLES / "adclicks", name="adclicks",
                          overrides={"stormshift.fuse": False})
    layout = Layout(graph)
    assert [s.members for s in layout.stages] == [(b.name,) for b in graph.bolts]
    assert all(layout.stage_of[b.name].head == b.name for b in graph.bolts)
    # a topology's own config is checked too (an -o is checked at load)
    from streamparse import Grouping, Topology

    from stormshift.errors import TopologyError

    class StringFlag(Topology):
        config = {"stormshift.fuse": "false"}  # a string, as config.json may hold it
        numbers = sparktopo.NumberSpout.spec(par=1)
        seen = sparktopo.Seen.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)

    with pytest.raises(TopologyError, match="stormshift.fuse='false': expected true or false"):
        Layout(load_topology(StringFlag))
    # the default (and an explicit true) keeps the fused plan
    fused = load_topology(EXAMPLES / "adclicks", name="adclicks", overrides={"stormshift.fuse": True})
    assert Layout(fused).stage_of["budget_alert_bolt"].head == "advertiser_day_bolt"


def test_spark_plan_names_fused_chains_and_heads_on_spout_partitions():
    from stormshift.engines.spark import spark_plan

    plan = spark_plan(load_topology(EXAMPLES / "adclicks", name="adclicks"))
    assert plan["fuse"] is True
    by_head = {s["head"]: s for s in plan["stages"]}
    assert by_head["advertiser_day_bolt"]["fused"] == [
        {"bolt": "daily_spend_bolt", "behind": "advertiser_day_bolt", "grouping": "local_or_shuffle",
         "keyed": False},
        {"bolt": "budget_alert_bolt", "behind": "advertiser_day_bolt", "grouping": "local_or_shuffle",
         "keyed": False},
    ]
    assert by_head["parse_bolt"]["spout_partitions"] is None  # spout par 1, parse par 2
    local = spark_plan(load_topology(sparktopo.ReadLocally, overrides={"jsonlines.path": "/x"}))
    assert [(s["head"], s["spout_partitions"], s["reads_spout_range"]) for s in local["stages"]] == \
        [("doubler", "numbers", True), ("sums", None, False)]
    off = spark_plan(load_topology(sparktopo.Groupings, overrides={"stormshift.fuse": False}))
    assert off["fuse"] is False
    assert all(s["fused"] == [] and s["spout_partitions"] is None for s in off["stages"])
    assert len(off["stages"]) == len(load_topology(sparktopo.Groupings).bolts)


def test_keyed_fusion_is_opt_in_and_checked_at_load():
    sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
    import outtopo

    from stormshift.errors import TopologyError

    layout = Layout(load_topology(outtopo.KeyedTopo))
    assert layout.keyed == {"totals"} and [s.members for s in layout.stages] == [("encoder", "totals")]
    plain = Layout(load_topology(outtopo.KeyedTopo, overrides={"stormshift.fuse.keyed": None}))
    assert plain.keyed == frozenset() and len(plain.stages) == 2  # not named: a stage of its own
    off = Layout(load_topology(outtopo.KeyedTopo, overrides={"stormshift.fuse": False}))
    assert off.keyed == frozenset() and len(off.stages) == 2
    for topo, names, why in ((outtopo.KeyedTopo, ["nope"], "no bolt of the topology has that name"),
                             (outtopo.KeyedTopo, ["encoder"], "must read one bolt only"),
                             (outtopo.EncodeTopo, ["totals"], "its par 2 differs from that of 'encoder' (1)"),
                             (outtopo.FusedTopo, ["totals"], "is not a fields grouping"),
                             (outtopo.ShuffledKeyTopo, ["totals"], "is not itself fields-grouped")):
        with pytest.raises(TopologyError) as err:
            Layout(load_topology(topo, overrides={"stormshift.fuse.keyed": names}))
        assert why in str(err.value) and f"fix: remove {names[0]!r} from stormshift.fuse.keyed" \
            in str(err.value)
    with pytest.raises(TopologyError, match="expected a JSON list of bolt names"):
        load_topology(outtopo.KeyedTopo, overrides={"stormshift.fuse.keyed": "totals"})

"""`stormshift inspect` views of a graph: rich tables and JSON data."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from stormshift.topology.loader import load_topology
from stormshift.topology.render import graph_to_dict, render_graph

FIXTURES = Path(__file__).parent / "fixtures" / "topologies"


def rendered(renderable: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_render_graph_shows_components_streams_and_groupings() -> None:
    graph = load_topology(FIXTURES / "multi", name="inline")
    text = rendered(render_graph(graph))
    assert "topology inline" in text
    lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") > 3}
    assert "inline.EventSpout" in lines["events"] and "spout" in lines["events"]
    assert "routed (direct): user, event" in lines["router"]
    assert "events:events <- fields(user)" in lines["router"]
    assert "3-4" in lines["sink"] and "router:routed <- direct" in lines["sink"]


def test_render_graph_marks_replaced_java_spout_and_config() -> None:
    overrides = {"stormshift.replacements": {"pixel-spout": {"class": "spouts.pixels.PixelSpout"}}}
    graph = load_topology(FIXTURES / "kafka", overrides=overrides)
    text = rendered(render_graph(graph))
    assert "(env prod)" in text
    assert "replaces Java" in text and "pixelcount.spouts.pixel_spout" in text
    assert "topology config" in text and "'pixels-default'" in text


def test_graph_to_dict_is_json_ready() -> None:
    graph = load_topology(FIXTURES / "files" / "groupings_all.py")
    data = json.loads(json.dumps(graph_to_dict(graph)))
    assert data["name"] == "groupings_all"
    assert data["total_tasks"] == graph.total_tasks
    names = [c["name"] for c in data["components"]]
    assert names == [c.name for c in graph]
    src = data["components"][0]
    assert src["kind"] == "spout" and src["class"] == "_parts.TwoStreamSpout"
    assert {"name": "direct_out", "fields": ["n", "target"], "direct": True} in src["streams"]
    by_name = {c["name"]: c for c in data["components"]}
    assert by_name["by_fields"]["inputs"] == [
        {"source": "src", "stream": "default", "grouping": "fields", "fields": ["n"]}
    ]
    assert by_name["by_global"]["task_ids"] == list(graph.component("by_global").task_ids)
    assert by_name["by_global"]["inputs"][0]["grouping"] == "global"


def test_inspect_shows_the_spark_plan_fused_chains_or_none_with_fuse_false() -> None:
    from stormshift.engines.spark import spark_plan

    adclicks = Path(__file__).resolve().parents[1] / "examples" / "adclicks"
    graph = load_topology(adclicks)
    text = rendered(render_graph(graph, spark_plan(graph)))
    assert "Spark plan: stages" in text and "7 stages, 3 fused bolts, 0 on spout partitions" in text
    plan_text = text.split("Spark plan")[1]
    row = next(line for line in plan_text.splitlines() if line.startswith("│ advertiser_day_bolt "))
    assert "daily_spend_bolt <- advertiser_day_bolt (local_or_shuffle)" in row
    assert json.loads(json.dumps(graph_to_dict(graph, spark_plan(graph))))["spark_plan"]["fuse"]
    assert "spark_plan" not in graph_to_dict(graph)  # no plan given: as before
    off = load_topology(adclicks, overrides={"stormshift.fuse": False})
    text = rendered(render_graph(off, spark_plan(off)))
    assert "fusion off (stormshift.fuse=false)" in text and "<-" not in text.split("Spark plan")[1]

"""Java spouts replaced by Python spouts through "stormshift.replacements"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stormshift.errors import TopologyError
from stormshift.topology.loader import import_component_class, load_topology

KAFKA = Path(__file__).parent / "fixtures" / "topologies" / "kafka"
FILES = Path(__file__).parent / "fixtures" / "topologies" / "files"
KEY = "stormshift.replacements"


def replace_with(class_path: str, **config: object) -> dict[str, object]:
    return {KEY: {"pixel-spout": {"class": class_path, "config": config}}}


def copy_project(tmp_path: Path) -> Path:
    project = tmp_path / "kafka_copy"
    shutil.copytree(KAFKA, project, ignore=shutil.ignore_patterns("__pycache__"))
    return project


def test_java_spout_without_replacement_says_what_config_to_add() -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(KAFKA)
    err = info.value
    assert err.component == "pixel-spout"
    assert "pixelcount.spouts.pixel_spout" in str(err)
    assert err.fix is not None
    assert '{"stormshift.replacements": {"pixel-spout": {"class": ' in err.fix
    assert "config.json" in err.fix and "['pixel']" in err.fix


def test_replacement_keeps_java_outputs_and_par() -> None:
    graph = load_topology(
        KAFKA, overrides=replace_with("spouts.pixels.PixelSpout", **{"kafka.topic": "pixels"})
    )
    spout = graph.component("pixel-spout")
    assert spout.class_path == "spouts.pixels.PixelSpout"
    assert spout.replaces == "pixelcount.spouts.pixel_spout"
    assert spout.par == 2
    assert {n: s.fields for n, s in spout.outputs.items()} == {"default": ("pixel",)}
    # replacement config > Java spec config > topology config; our key is not passed on
    assert spout.config["kafka.topic"] == "pixels"
    assert spout.config["kafka.zk.hosts"] == "streamparse-box:2181"
    assert KEY not in spout.config
    assert graph.component("pixel-deserializer-bolt").config["kafka.topic"] == "pixels-default"
    assert [c.name for c in graph] == ["pixel-spout", "pixel-deserializer-bolt", "pixel-count-bolt"]
    cls = import_component_class(spout.class_path, graph.source_dirs)
    assert cls.__name__ == "PixelSpout"


def test_replacement_from_config_json(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    config = json.loads((project / "config.json").read_text())
    config.update(replace_with("spouts.pixels.PixelSpout"))
    (project / "config.json").write_text(json.dumps(config))
    graph = load_topology(project)
    assert graph.component("pixel-spout").class_path == "spouts.pixels.PixelSpout"
    assert graph.project_dir == str(project)


def test_replacement_from_topology_config(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    topology = project / "topologies" / "pixelcount.py"
    text = topology.read_text().replace(
        'config = {"kafka.topic": "pixels-default"}',
        'config = {"kafka.topic": "pixels-default", "stormshift.replacements": '
        '{"pixel-spout": {"class": "spouts.pixels.PixelSpout"}}}',
    )
    topology.write_text(text)
    graph = load_topology(topology)
    assert graph.component("pixel-spout").replaces == "pixelcount.spouts.pixel_spout"


def test_overrides_beat_config_json(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    config = json.loads((project / "config.json").read_text())
    config.update(replace_with("spouts.pixels.RawSpout"))  # wrong outputs: would fail
    (project / "config.json").write_text(json.dumps(config))
    with pytest.raises(TopologyError, match="RawSpout declares outputs"):
        load_topology(project)
    graph = load_topology(project, overrides=replace_with("spouts.pixels.PixelSpout"))
    assert graph.component("pixel-spout").class_path == "spouts.pixels.PixelSpout"


@pytest.mark.parametrize(
    ("class_path", "message", "fix"),
    [
        ("spouts.pixels.RawSpout", "declares outputs default: ['raw']", "match the Java spout"),
        ("spouts.pixels.NotASpout", "is not a Spout subclass", "Spout subclass"),
        (
            "spouts.pixels.Missing",
            "cannot import component class 'spouts.pixels.Missing'",
            "module path",
        ),
    ],
)
def test_bad_replacement_class(class_path: str, message: str, fix: str) -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(KAFKA, overrides=replace_with(class_path))
    assert info.value.component == "pixel-spout"
    assert message in str(info.value)
    assert info.value.fix is not None and fix in info.value.fix


def test_replacement_for_unknown_component_is_a_typo() -> None:
    overrides = {KEY: {"pixel_spout": {"class": "spouts.pixels.PixelSpout"}}}
    with pytest.raises(TopologyError) as info:
        load_topology(KAFKA, overrides=overrides)
    assert info.value.component == "pixel_spout"
    assert "['pixel-spout']" in str(info.value)


def test_java_bolt_cannot_be_replaced() -> None:
    overrides = {KEY: {"enricher": {"class": "_parts.PassBolt"}}}
    with pytest.raises(TopologyError) as info:
        load_topology(FILES / "java_bolt.py", overrides=overrides)
    assert info.value.component == "enricher"
    assert "not a Java spout" in str(info.value)


def test_malformed_replacement_entry() -> None:
    with pytest.raises(TopologyError) as info:
        load_topology(KAFKA, overrides={KEY: {"pixel-spout": "spouts.pixels.PixelSpout"}})
    assert info.value.component == "pixel-spout"
    assert info.value.fix is not None and '"class"' in info.value.fix

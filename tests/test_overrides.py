"""``-o`` values checked at load, the same on both engines (issue 33.6)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stormshift.errors import TopologyError
from stormshift.topology.loader import load_topology
from stormshift.topology.overrides import keys_read, refuse_bad_values, unknown_key_warnings

ROOT = Path(__file__).resolve().parents[1]
ADCLICKS = ROOT / "examples" / "adclicks"


def stormshift(tmp_path: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STORMSHIFT_REDIS", "STORMSHIFT_REDIS_URL", "REDIS_URL")}
    env.update(PYTHONPATH=str(ROOT), STORMSHIFT_STATE_DIR=str(tmp_path / "state"), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "stormshift", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=tmp_path, check=False)


@pytest.mark.parametrize(("overrides", "said"), [
    ({"adclicks.events": "abc"}, ("-o adclicks.events=abc: expected an integer like its declared "
                                 "default; fix: -o adclicks.events=200000")),
    ({"adclicks.windows": "off"}, "-o adclicks.windows=off: expected true or false"),
    ({"stormshift.max_replays": -1}, "-o stormshift.max_replays=-1: expected an integer >= 0"),
    ({"stormshift.idle_timeout_secs": "soon"}, "expected seconds >= 0"),
    ({"topology.tick.tuple.freq.secs": 0}, "expected seconds > 0"),
    ({"state.hmac_key": ""}, "expected a non-empty string"),
    ({"shadow.results": [1]}, "expected a JSON object"),
    ({"pystorm.log.level": "loud"}, "expected a log level"),
    ({"stormshift.fuse": "no"}, ("-o stormshift.fuse=no: expected true or false (false: no fused "
                                 "stages); fix: -o stormshift.fuse=false")),
    ({"stormshift.fuse": 0}, "-o stormshift.fuse=0: expected true or false"),
])
def test_a_value_of_the_wrong_kind_is_refused_with_one_line(overrides: dict, said: str) -> None:
    with pytest.raises(TopologyError) as err:
        load_topology(ADCLICKS, overrides=overrides)
    text = str(err.value)
    assert said in text and "\n" not in text


@pytest.mark.parametrize("overrides", [
    {"adclicks.events": 500}, {"adclicks.events": None}, {"adclicks.late_rate": 0},
    {"adclicks.path": "/data/x.log"}, {"stormshift.spout.executor": "true"},
    {"pystorm.log.level": "WARN"}, {"something.new": "abc"}, {"stormshift.fuse": False},
])
def test_values_of_the_right_kind_and_unknown_keys_load(overrides: dict) -> None:
    graph = load_topology(ADCLICKS, overrides=overrides)
    assert all(graph.config[k] == v for k, v in overrides.items() if v is not None)


def test_a_mistyped_key_warns_did_you_mean() -> None:
    graph = load_topology(ADCLICKS, overrides={"adclicks.evnets": 100, "zzz.other": 1,
                                               "stormshift.idle_timout_secs": 3})
    assert graph.warnings == (
        "-o adclicks.evnets: no such config key; did you mean adclicks.events? (kept as given)",
        ("-o stormshift.idle_timout_secs: no such config key; did you mean "
        "stormshift.idle_timeout_secs? (kept as given)"),
    )
    assert load_topology(ADCLICKS, overrides={"adclicks.events": 100}).warnings == ()


def test_keys_the_sources_read_are_known() -> None:
    code = ('class B:\n'
            '    def initialize(self, conf, ctx):\n'
            '        self.n = conf.get("mine.batch_size", 10)\n'
            '        self.m = self.storm_conf["mine.mode"]\n'
            '        self.x = other.get("not.a.conf")\n')
    assert keys_read(ast.parse(code)) == {"mine.batch_size", "mine.mode"}
    refuse_bad_values({"mine.batch_size": "x"}, {})  # undeclared: the component decides


def test_a_key_only_a_component_reads_is_known_to_the_hint(tmp_path: Path) -> None:
    """A project whose bolt reads ``mine.batch_size`` in initialize() (nothing declares it)."""
    (tmp_path / "topologies").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "config.json").write_text('{"envs": {}}')
    (tmp_path / "src" / "mine.py").write_text(
        "from streamparse import Bolt, Spout\n\n\n"
        "class S(Spout):\n    outputs = ['x']\n\n    def next_tuple(self):\n"
        "        self.emit([1])\n\n\n"
        "class B(Bolt):\n    def initialize(self, conf, ctx):\n"
        "        self.size = int(conf.get('mine.batch_size', 10))\n\n"
        "    def process(self, tup):\n        pass\n")
    (tmp_path / "topologies" / "minetopo.py").write_text(
        "from streamparse import Grouping, Topology\n\nfrom mine import B, S\n\n\n"
        "class Mine(Topology):\n    s = S.spec()\n"
        "    b = B.spec(inputs={s: Grouping.SHUFFLE})\n")
    graph = load_topology(tmp_path, overrides={"mine.batch_sise": 5})
    assert graph.warnings == (("-o mine.batch_sise: no such config key; did you mean "
                              "mine.batch_size? (kept as given)"),)
    assert load_topology(tmp_path, overrides={"mine.batch_size": 5}).warnings == ()
    assert unknown_key_warnings({"mine.batch_sise": 5}, ()) == []  # no sources: no hint


def test_adclicks_reads_its_keys_in_its_sources(tmp_path: Path) -> None:
    from stormshift.topology.overrides import config_keys_read

    graph = load_topology(ADCLICKS)
    assert {"adclicks.max_replays", "adclicks.path", "adclicks.daily_budget_micros"} <= \
        config_keys_read(graph.source_dirs)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_bad_value_exits_2_with_one_line_before_any_engine_starts(
        engine: str, capsys: pytest.CaptureFixture[str]) -> None:
    """In-process: the unit tier fails the test if a JVM or a Redis server starts."""
    from stormshift.cli import main

    code = main(["run", str(ADCLICKS), "--engine", engine, "-o", "adclicks.events=abc",
                 "--max-tuples", "10"])
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "-o adclicks.events=abc: expected an integer like its declared default; fix: -o " \
           "adclicks.events=200000" in lines[0]


def test_inspect_warns_about_a_mistyped_key(tmp_path: Path) -> None:
    done = stormshift(tmp_path, "inspect", str(ADCLICKS), "-o", "adclicks.evnets=100")
    assert done.returncode == 0, done.stderr
    assert "did you mean adclicks.events?" in done.stderr


@pytest.mark.spark
def test_initialize_raising_on_a_config_value_reads_the_same_on_both_engines(
        tmp_path: Path) -> None:
    """``adclicks.max_replays=-1`` is an integer (passes the load check); the spout's own
    ``initialize()`` refuses it: exit 2 and the same error line on both engines, no
    traceback, no JVM frames on Spark."""
    said = {}
    for engine in ("local", "spark"):
        (tmp_path / engine).mkdir()
        done = stormshift(tmp_path / engine, "run", str(ADCLICKS), "--engine", engine,
                          "-o", "adclicks.max_replays=-1", "--max-tuples", "100",
                          "--checkpoint", str(tmp_path / "ck"))
        assert done.returncode == 2, done.stderr[-3000:]
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, done.stderr
        assert "Traceback" not in done.stderr and "\tat " not in done.stderr
        assert len(done.stderr.strip().splitlines()) <= 5, done.stderr
        said[engine] = errors[0]
    assert said["local"] == said["spark"]
    assert "component 'ad_log_spout' task 0: initialize() raised ValueError: AdLogSpout: " \
           "adclicks.max_replays must be an integer >= 0" in said["spark"]

"""`stormshift submit`: the spark-submit command and the files it ships (no cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from stormshift.cli.submit import submit_command
from stormshift.engines.spark.driver.submit import (
    DRIVER_FILE,
    build_submit_command,
    build_submit_plan,
)
from stormshift.errors import TopologyError

TOPOLOGY = '''
from streamparse import Grouping, Topology
from spouts.words import WordSpout
from bolts.count import CountBolt


class WordCount(Topology):
    word_spout = WordSpout.spec()
    count_bolt = CountBolt.spec(inputs={word_spout: Grouping.fields("word")}, par=2)
'''

SPOUT = '''
from streamparse import Spout


class WordSpout(Spout):
    outputs = ["word"]

    def next_tuple(self):
        self.emit(["dog"])
'''

BOLT = '''
from streamparse import Bolt


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def process(self, tup):
        self.emit([tup.values[0], 1])
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "wordcount"
    for rel, text in {
        "config.json": json.dumps({"topology_specs": "topologies/", "envs": {}}),
        "topologies/wordcount.py": TOPOLOGY,
        "src/spouts/__init__.py": "",
        "src/spouts/words.py": SPOUT,
        "src/bolts/__init__.py": "",
        "src/bolts/count.py": BOLT,
        "src/bolts/__pycache__/count.cpython-311.pyc": "junk",
        "README.md": "not shipped",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def names(path: Path) -> list[str]:
    """Files in a zip (directory entries left out)."""
    with zipfile.ZipFile(path) as archive:
        return [n for n in archive.namelist() if not n.endswith("/")]


def test_command_ships_project_and_stormshift(project: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    plan = build_submit_plan(project, "spark://head:7077", build_dir=build,
                             run_args=["--redis", "redis://r:6379", "--until-done"],
                             spark_args=["--deploy-mode", "client"], spark_submit="spark-submit")
    cmd = plan.command
    assert cmd[:5] == ["spark-submit", "--master", "spark://head:7077", "--name", "stormshift-wordcount"]
    py_files = cmd[cmd.index("--py-files") + 1].split(",")
    assert py_files == [str(build / "wordcount-project.zip"), str(build / "stormshift.zip")]
    conf = cmd[cmd.index("--conf") + 1]
    assert conf == f"spark.executorEnv.PYTHONPATH=wordcount-project.zip{os.pathsep}stormshift.zip"
    driver_at = cmd.index(str(build / DRIVER_FILE))
    assert cmd[driver_at - 2: driver_at] == ["--deploy-mode", "client"]  # spark options first
    assert cmd[driver_at + 1:] == ["run", str(project), "-n", "wordcount", "--master",
                                   "spark://head:7077", "--redis", "redis://r:6379", "--until-done"]

    shipped = names(plan.project_zip)
    assert set(shipped) == {
        "config.json", "topologies/wordcount.py",
        "src/spouts/__init__.py", "src/spouts/words.py", "src/bolts/__init__.py", "src/bolts/count.py",
        "spouts/__init__.py", "spouts/words.py", "bolts/__init__.py", "bolts/count.py",
    }
    package = names(plan.stormshift_zip)
    for module in ("stormshift/__init__.py", "stormshift/__main__.py", "stormshift/cli/__init__.py",
                   "stormshift/spouts/jsonlines.py", "stormshift/engines/spark/driver/submit.py"):
        assert module in package
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in package)
    assert not any(n.endswith((".so", "_compiled.json")) for n in package)


def test_zips_are_reproducible(project: Path, tmp_path: Path) -> None:
    first = build_submit_plan(project, "local[2]", build_dir=tmp_path / "a", ship_stormshift=False)
    second = build_submit_plan(project, "local[2]", build_dir=tmp_path / "b", ship_stormshift=False)
    assert first.stormshift_zip is None and second.stormshift_zip is None
    assert first.project_zip.read_bytes() == second.project_zip.read_bytes()
    assert str(tmp_path / "a" / "wordcount-project.zip") == first.command[first.command.index("--py-files") + 1]


def test_shipped_zip_imports_user_components(project: Path, tmp_path: Path) -> None:
    plan = build_submit_plan(project, "local[2]", build_dir=tmp_path / "b", ship_stormshift=False)
    code = ("from bolts.count import CountBolt; from src.spouts.words import WordSpout; "
            "print(CountBolt.outputs, WordSpout.outputs)")
    env = {**os.environ, "PYTHONPATH": str(plan.project_zip)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "['word', 'count'] ['word']"


def test_driver_unpacks_project_when_path_is_missing(project: Path, tmp_path: Path) -> None:
    """Cluster deploy mode: the driver sees only the shipped zip, not the project dir."""
    plan = build_submit_plan(project, "local[2]", build_dir=tmp_path / "b", ship_stormshift=False)
    cluster_cwd = tmp_path / "container"
    cluster_cwd.mkdir()
    (cluster_cwd / plan.project_zip.name).write_bytes(plan.project_zip.read_bytes())
    missing = str(tmp_path / "not-on-this-host")
    repo_root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, str(plan.driver_file), "inspect", missing, "-n", "wordcount", "--json"],
        cwd=cluster_cwd, env={**os.environ, "PYTHONPATH": str(repo_root)},
        capture_output=True, text=True, check=False,
    )
    assert out.returncode == 0, out.stderr
    graph = json.loads(out.stdout)
    assert "count_bolt" in json.dumps(graph) and "word_spout" in json.dumps(graph)


def test_topology_file_path_and_environment(project: Path, tmp_path: Path) -> None:
    cmd = build_submit_command(project / "topologies" / "wordcount.py", "yarn",
                               build_dir=tmp_path / "c", ship_stormshift=False, spark_submit="ss")
    assert cmd[-6:] == ["run", str(project), "-n", "wordcount", "--master", "yarn"]


def test_topology_outside_a_project_is_refused(tmp_path: Path) -> None:
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "lone_spouts.py").write_text(SPOUT)
    (lone / "lone_bolts.py").write_text(BOLT)
    (lone / "topo.py").write_text(
        TOPOLOGY.replace("spouts.words", "lone_spouts").replace("bolts.count", "lone_bolts"))
    with pytest.raises(TopologyError, match="not loaded from a streamparse project"):
        build_submit_command(lone / "topo.py", "local[2]", build_dir=tmp_path / "d")


def test_cli_prints_command_and_passes_unknown_options(project: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(submit_command, [
        str(project), "--master", "spark://m:7077", "--build-dir", str(tmp_path / "e"),
        "--checkpoint", "/chk", "--trigger", "2", "--no-ship-stormshift", "--adopt-state",
        "--spark-submit", "/opt/spark/bin/spark-submit", "--executor-memory", "4g",
    ])
    assert result.exit_code == 0, result.output
    line = result.output.strip()
    assert line.startswith("/opt/spark/bin/spark-submit --master spark://m:7077 ")
    assert "--executor-memory 4g " + str(tmp_path / "e" / DRIVER_FILE) in line
    assert line.endswith("--master spark://m:7077 --checkpoint /chk --trigger 2.0 --adopt-state")
    assert "stormshift.zip" not in line


def test_cli_run_reports_spark_submit_failure(project: Path, tmp_path: Path) -> None:
    fake = tmp_path / "spark-submit"
    fake.write_text("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args\"\nexit 3\n")
    fake.chmod(0o755)
    result = CliRunner().invoke(submit_command, [
        str(project), "--master", "local[1]", "--build-dir", str(tmp_path / "f"),
        "--spark-submit", str(fake), "--run",
    ])
    assert result.exit_code == 1 and "exited with code 3" in result.output
    assert (tmp_path / "args").read_text().startswith("--master local[1] --name stormshift-wordcount")

"""``-o/--option KEY=VALUE`` and ``--conf KEY=VALUE`` of ``stormshift run`` and ``submit`` (no Spark)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from stormshift.cli import main
from stormshift.cli.options import parse_confs, parse_overrides
from stormshift.cli.submit import submit_command

ADCLICKS = Path(__file__).resolve().parents[1] / "examples" / "adclicks"


def test_override_values_are_json_else_text() -> None:
    got = parse_overrides(["adclicks.events=20000", "a.rate=0.5", "a.flag=true", "a.none=null",
                           "a.path=/data/day 1.log", "a.list=[1, 2]", "a.events=7", "a.empty="])
    assert got == {"adclicks.events": 20000, "a.rate": 0.5, "a.flag": True, "a.none": None,
                   "a.path": "/data/day 1.log", "a.list": [1, 2], "a.events": 7, "a.empty": ""}
    assert parse_confs(["spark.speculation=true", "spark.executorEnv.X={\"a\":1}"]) == {
        "spark.speculation": "true", "spark.executorEnv.X": "{\"a\":1}"}


@pytest.mark.parametrize("bad", ["adclicks.events", "=5"])
def test_not_key_value_is_a_usage_error(bad: str) -> None:
    with pytest.raises(click.BadParameter, match="KEY=VALUE"):
        parse_overrides([bad])


def test_run_option_overrides_topology_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ADCLICKS), "--engine", "local", "-o", "adclicks.events=300",
                 "--option", "adclicks.seed=3", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["components"]["ad_log_spout"]["tuples_out"] == 300


def test_submit_forwards_options_to_driver_and_confs_to_spark_submit(tmp_path: Path) -> None:
    result = CliRunner().invoke(submit_command, [
        str(ADCLICKS), "--master", "spark://m:7077", "--build-dir", str(tmp_path),
        "--spark-submit", "spark-submit", "-o", "adclicks.events=20000", "-o", "a.path=/x y",
        "--conf", "spark.speculation=true", "--executor-memory", "1g",
    ])
    assert result.exit_code == 0, result.output
    cmd = shlex.split(result.output.strip())
    driver = cmd.index(str(tmp_path / "stormshift_driver.py"))
    spark_part, driver_part = cmd[:driver], cmd[driver + 1:]
    assert "spark.speculation=true" in spark_part
    assert spark_part[spark_part.index("spark.speculation=true") - 1] == "--conf"
    assert spark_part[-2:] == ["--executor-memory", "1g"]
    assert driver_part[-4:] == ["-o", "adclicks.events=20000", "-o", "a.path=/x y"]


def test_submit_rejects_a_bad_option_before_building(tmp_path: Path) -> None:
    result = CliRunner().invoke(submit_command, [
        str(ADCLICKS), "--master", "local[2]", "--build-dir", str(tmp_path), "-o", "oops"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output
    assert not (tmp_path / "stormshift_driver.py").exists()

"""The ``stormshift`` command end to end (in-process, local engine: no Spark needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stormshift.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_inspect_json_lists_components_and_groupings(capsys):
    assert main(["inspect", str(ROOT / "examples/adclicks"), "--json"]) == 0
    graph = json.loads(capsys.readouterr().out)
    text = json.dumps(graph)
    for name in ("ad_log_spout", "parse_bolt", "ads_ctr_bolt", "client_spent_bolt"):
        assert name in text
    assert "advertiser_id" in text and "ad_id" in text
    fused = {s["head"]: [f["bolt"] for f in s["fused"]] for s in graph["spark_plan"]["stages"]}
    assert fused["ad_ctr_minute_bolt"] == ["minute_ctr_bolt"]


def test_inspect_with_fuse_false_shows_no_fused_chain(capsys):
    assert main(["inspect", str(ROOT / "examples/adclicks"), "-o", "stormshift.fuse=false"]) == 0
    text = capsys.readouterr().out
    assert "fusion off (stormshift.fuse=false)" in text
    assert main(["inspect", str(ROOT / "examples/adclicks"), "-o", "stormshift.fuse=false",
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["spark_plan"]
    assert plan["fuse"] is False and not any(s["fused"] for s in plan["stages"])


def test_run_wordcount_local_prints_exact_counts(capsys):
    assert main(["run", str(ROOT / "examples/wordcount"), "--engine", "local",
                 "--max-tuples", "400", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["spout_tuples"] == 400
    bolt = summary["components"]["count_bolt"]
    assert bolt["tuples_in"] == 400 and bolt["tuples_out"] == 400 and bolt["fails"] == 0


def test_broken_target_is_one_clear_error_exit_2(tmp_path, capsys):
    bad = tmp_path / "topologies"
    bad.mkdir()
    (bad / "broken.py").write_text("from streamparse import Topology\nraise RuntimeError('boom')\n")
    code = main(["inspect", str(bad / "broken.py")])
    err = capsys.readouterr().err
    assert code == 2
    assert "broken.py" in err and "Traceback" not in err


def test_console_script_is_installed():
    done = subprocess.run([sys.executable, "-m", "stormshift", "--help"], capture_output=True, check=False,
                          text=True, timeout=120)
    assert done.returncode == 0
    for command in ("run", "inspect", "submit", "state"):
        assert command in done.stdout

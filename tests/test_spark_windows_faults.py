"""Windows replayed after faults: ``stormshift run`` of a window scenario killed and restarted
(``support/fault_harness.py``), its panes compared with a failure-free run's -- exactly.

The scenario ``tumbling_late_pane_then_late_stream`` runs as batches cut where its
watermark advances (``windows_harness.spark_batches``): txid 4 fires two ON_TIME
panes at its start (the recorded watermark) and a LATE pane for one of its tuples,
txid 5 fires one more and sends a tuple to the late stream, txid 7 is the final
batch (end of input fires the last window). The faults: the whole run killed after
the windowed task of txid 4 ran but before it committed; a Python worker killed
halfway through txid 5's windowed task (Spark retries it); the run killed in txid
7 before its stages. Each re-run of a batch reads its recorded watermark and
end-of-input flag back and fires exactly the same panes: the sink holds each pane
once, and the committed window counters are the failure-free ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.fault_harness import REPO, Case, CaseRunner
from support.windows_harness import load, spark_batches

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis]

NAME = "tumbling_late_pane_then_late_stream"
PROJECT = str(REPO / "tests" / "spark_fixtures" / "windowtopo.py")
ARGS = ["--until-done", "--master", "local[2,3]"]


def fault(at: str, action: str, **when: Any) -> dict[str, Any]:
    return {"name": f"{at}-{action}", "at": at, "action": action, "secs": 0, "when": when}


FAULTS = [
    fault("task.before_close", "kill_run", txid=4, component="windows", task=0),
    fault("task.midway", "kill_self", txid=5, component="windows", task=0),
    fault("driver.before_stages", "kill_run", txid=7),
]


def _case(tmp: Path, plan: list[dict[str, Any]] | None) -> Case:
    steps, cuts, _ = spark_batches(load(NAME))
    assert len(cuts) == 7, cuts  # txids 0..6, then the final batch 7 (module doc)
    options = {"steps.steps": json.dumps(steps), "steps.cuts": json.dumps(cuts),
               "steps.partitions": 1, "fixture.scenario": NAME}
    return Case(tmp, PROJECT, options=options, args=ARGS, faults=plan)


def _panes(rows: list[list[Any]]) -> list[dict[str, Any]]:
    return [{"kind": kind, **json.loads(payload)} for kind, payload in rows]


def test_window_panes_after_driver_and_worker_kills_equal_a_failure_free_run(tmp_path) -> None:
    runner = CaseRunner()
    try:
        runner.submit("baseline", lambda: _case(tmp_path / "baseline", None))
        runner.submit("faults", lambda: _case(tmp_path / "faults", FAULTS))
        baseline = runner.outcome("baseline", lambda: _case(tmp_path / "baseline", None))
        broken = runner.outcome("faults", lambda: _case(tmp_path / "faults", FAULTS))
    finally:
        runner.close()
    fired = sorted(e["fault"] for e in broken.events if "fault" in e)
    assert fired == sorted(f["name"] for f in FAULTS), fired
    assert broken.runs == 3, (broken.exit_codes, fired, broken.logs[-1])
    assert baseline.runs == 1 and broken.committed == baseline.committed == 7
    panes = _panes(broken.sink[("collect", "default")])
    assert panes == _panes(baseline.sink[("collect", "default")])
    scenario = load(NAME)
    expected = [{"kind": "late", **e["late"]} if "late" in e else {"kind": "pane", **e}
                for e in scenario["expected"]]
    assert panes == expected
    for outcome in (baseline, broken):
        (state,) = outcome.state["windows"]["windowing_state"]
        # the harness's event-time view of the committed WindowingState
        assert {k: state["counters"][k] for k in scenario["counters"]} == scenario["counters"]
        assert state["counters"]["late_stream"] == 1
        assert state["windows"]["windows"] == {}  # every window fired and was dropped

"""``stormshift check``'s short run stops at its budget and reports what it saw.

Real-shaped projects (``tests/fixtures/runs/``): a spout that sleeps 0.3 s per
``next_tuple`` (the engine is asked to stop between two calls) and a spout
blocked for good in one call (left behind after the grace period). Neither
may end ``check`` as an interrupt (exit 130), nor lose the static findings.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from click.testing import CliRunner

from stormshift.check import Severity, run_check
from stormshift.cli.check import check_command

RUNS = Path(__file__).resolve().parent / "fixtures" / "runs"
CHECK = Path(__file__).resolve().parent / "fixtures" / "check"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_a_sleeping_spout_stops_at_the_budget_with_a_run_budget_finding() -> None:
    started = time.monotonic()
    report = run_check(RUNS / "sleeping_spout", wall_secs=2.0)
    took = time.monotonic() - started
    budget = report.by_rule("run-budget")
    assert len(budget) == 1 and budget[0].severity is Severity.INFO
    seen = int(report.ran.split()[0])
    assert 3 <= seen <= 2.0 / 0.3 + 2  # what got through in 2 s at 0.3 s a tuple
    assert report.ran == f"{seen} spout tuples in 2 s (budget)"
    assert budget[0].message.startswith(f"short run: {seen} spout tuples in 2 s (budget)")
    assert took < 2.0 + 5.0 and report.exit_code == 0


def test_a_spout_blocked_in_one_call_is_left_behind_and_located() -> None:
    cwd = os.getcwd()
    report = run_check(RUNS / "blocked_spout", wall_secs=1.0, grace_secs=0.5)  # not 5 s idle
    assert os.getcwd() == cwd  # the run left behind does not keep check in its working dir
    (budget,) = report.by_rule("run-budget")
    assert report.ran == "5 spout tuples in 1 s (budget), then left behind"
    assert (budget.file, budget.line) == ("src/spouts/consumer.py", 17)
    assert "src/spouts/consumer.py:17 in next_tuple" in budget.message


def test_the_command_reports_instead_of_exiting_130() -> None:
    """The issue's shape through the command, its budget from ``--duration``: exit 0 with the
    report, not 130."""
    result = CliRunner().invoke(check_command, [str(RUNS / "sleeping_spout"), "--json", "--duration", "1.5"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["dynamic_run"].endswith("spout tuples in 1.5 s (budget)")
    assert [f["rule"] for f in data["findings"]] == ["run-budget"]


def test_static_emit_errors_and_the_short_run_together() -> None:
    report = run_check(CHECK / "emits", wall_secs=1.0)
    rules = {f.rule for f in report.findings if f.severity is Severity.ERROR}
    assert rules == {"emit-arity", "emit-without-outputs", "emit-undeclared-stream"}
    assert report.exit_code == 3


def test_emit_errors_are_found_with_no_run_and_name_the_fix() -> None:
    result = CliRunner().invoke(check_command, [str(CHECK / "emits"), "--no-run", "--json"])
    assert result.exit_code == 3
    data = json.loads(result.output)
    top = next(f for f in data["findings"] if f["component"] == "top")
    assert (top["rule"], top["file"], top["line"]) == ("emit-arity", "src/bolts/counting.py", 38)
    assert "2 value(s)" in top["message"] and "['top-N']" in top["message"]
    assert "outputs = ['word', 'count']" in top["fix"]
    assert data["dynamic_run"] is None


def test_the_short_run_takes_max_tuples_from_the_command() -> None:
    result = CliRunner().invoke(check_command, [str(EXAMPLES / "wordcount"), "--json", "--max-tuples", "7"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["dynamic_run"] == "7 spout tuples on the local engine"
    refused = CliRunner().invoke(check_command, [str(EXAMPLES / "wordcount"), "--duration", "0"])
    assert refused.exit_code == 2 and "--duration" in refused.output

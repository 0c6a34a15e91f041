"""adclicks' own ``AdLogSpout`` on executors (``stormshift.spout.executor``), broken and restarted.

The spout runs at par 2 in the reads of its batches (``source/read/chunk_read.py``): each
read logs its chunk first, a retried or re-run read re-reads it, and a worker
without the task's live instance replays the generator up to the log's head,
checking it re-emits the logged msg ids. Each case is a ``stormshift run`` of its own
(``support/fault_harness.py``: own redis-server, checkpoint, restarts after crashes); the
totals must equal ``examples/adclicks/expected.py``'s and the failure-free run's.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fault_harness import (
    FINISHED,
    REPO,
    Case,
    CaseRunner,
    Outcome,
    adclicks_with_two_spout_tasks,
)

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis]

EVENTS, SEED, BATCH = 6_000, 7, 1_000
OPTIONS = {"adclicks.events": EVENTS, "adclicks.seed": SEED, "adclicks.malformed_rate": 0.002,
           "stormshift.spout.executor": True}
ARGS = ["--until-done", "--master", "local[2,3]", "--batch-max-tuples", str(BATCH)]


def fault(name: str, action: str, at: str = "source.after_chunk_log", **when: Any) -> dict[str, Any]:
    return {"name": name, "at": at, "action": action, "when": when}


# 6,000 events over 2 spout tasks in chunks of <= 1,000: chunks 0..2 per task.
CASES: dict[str, list[dict[str, Any]] | None] = {
    "baseline": None,
    # the Python worker dies after its read logged chunk 1 of task 1: Spark retries the read
    # (it re-reads the chunk); later reads of the task land on workers whose instance replays
    "worker-killed-after-chunk": [fault("w", "kill_self", spout="ad_log_spout", task=1, chunk=1)],
    # the spout host of task 1 dies after emitting chunk 1, before the worker got it: the read
    # fails, Spark retries it, and the retry starts a new host that replays up to the head
    "host-killed-mid-emit": [fault("h", "kill_self", "source.spout_host_emitted",
                                   spout="ad_log_spout", task=1, chunk=1)],
    # the whole run dies after chunk 2 of task 0 was logged, before the batch committed: the
    # restarted run re-runs the batch from Spark's offset log, its reads re-read the chunks
    "driver-killed-after-chunk": [fault("d", "kill_run", spout="ad_log_spout", task=0, chunk=2)],
}


def _case(tmp: Path, plan: list[dict[str, Any]] | None) -> Case:
    return Case(tmp, str(adclicks_with_two_spout_tasks(tmp)), options=OPTIONS, args=ARGS,
                faults=plan)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CaseRunner]:
    runner = CaseRunner()
    for name, plan in CASES.items():
        runner.submit(name, lambda name=name, plan=plan: _case(tmp_path_factory.mktemp(name), plan))
    yield runner
    runner.close()


def _outcome(runner: CaseRunner, name: str) -> Outcome:
    return runner.outcome(name, lambda: pytest.fail(f"case {name} was not submitted"))


def _expected() -> Any:
    spec = importlib.util.spec_from_file_location("adclicks_expected", REPO / "examples/adclicks/expected.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.compute(mod.generated_lines(seed=SEED, events=EVENTS, malformed_rate=0.002))


def _assert_expected_totals(out: Outcome) -> None:
    exp = _expected()
    finals = out.finals()
    assert {k: tuple(v) for k, v in finals["ads_ctr_bolt:default"].items()} == \
        {k: tuple(v) for k, v in exp.ctr_by_ad.items()}
    assert {k: v[0] for k, v in finals["client_spent_bolt:default"].items()} == exp.spend_by_advertiser
    assert out.dead_letters == exp.malformed > 0


def test_adclicks_own_spout_on_executors_par_2_computes_the_expected_totals(runner: CaseRunner) -> None:
    out = _outcome(runner, "baseline")
    assert out.exit_codes == [3], out.logs[-1][-2000:]  # finished, malformed lines dead-lettered
    _assert_expected_totals(out)
    # one spout host per task served every read, whichever worker ran it: no replay
    assert out.chunk_stats == {"fresh": 2}, out.chunk_stats


def test_no_spout_host_outlives_its_run(runner: CaseRunner) -> None:
    for name in CASES:
        _outcome(runner, name)
    deadline = time.monotonic() + 15  # a host checks its owner twice a second
    while _orphans() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _orphans()


def _orphans() -> list[str]:
    """Spout host processes whose owner (the run's Python worker daemon) is gone."""
    out = subprocess.run(["ps", "-ww", "-eo", "args="], capture_output=True, text=True, check=True).stdout
    hosts = [line for line in out.splitlines() if "-m stormshift.engines.spark.source.spouthost.spout_host" in line]
    return [h for h in hosts if not Path(f"/proc/{h.split()[-1]}").exists()]


@pytest.mark.parametrize("name", [n for n in CASES if n != "baseline"])
def test_adclicks_own_spout_on_executors_exact_after_a_kill(name: str, runner: CaseRunner) -> None:
    base, out = _outcome(runner, "baseline"), _outcome(runner, name)
    assert out.events, f"{name}: the fault never fired"
    assert out.exit_codes[-1] in FINISHED, out.logs[-1][-2000:]
    if name.startswith("driver-"):
        assert len(out.exit_codes) >= 2 and out.exit_codes[0] not in FINISHED, out.exit_codes
    elif name.startswith("worker-"):
        assert out.retried >= 1 and len(out.exit_codes) == 1, (out.retried, out.exit_codes)
        # the instances live in the spout hosts, not in the dead worker: nothing replayed
        assert out.chunk_stats == {"fresh": 2}, out.chunk_stats
    else:
        assert out.retried >= 1 and len(out.exit_codes) == 1, (out.retried, out.exit_codes)
        # task 1's new host re-ran the generator up to the log's head, checked against the
        # logged chunks (chunk 0: at most 1,000 tuples)
        assert out.chunk_stats["fresh"] == 3 and 0 < out.chunk_stats["replayed"] <= BATCH, out.chunk_stats
    _assert_expected_totals(out)
    assert out.finals() == base.finals()
    assert out.emit_counts() == base.emit_counts()  # no event counted twice, none lost
    assert out.state == base.state

"""Redis outages are ridden through in every phase (issue 49 item 2), or end the run with
one line past ``stormshift.redis_outage_s``.

Each case is a ``stormshift run`` of adclicks (windows off, no malformed lines: a clean
run exits 0) against a redis-server of its own (appendonly, fsync always) that is
SIGKILLed and restarted by a supervisor (``support/outage_harness.py``):

- two kills at seeded moments of one run: ONE run, exit 0, exact, one "unreachable"
  and one "back" line per outage on the console, no stack trace;
- a kill at each fault point of ``diagnostics/faults.py`` (``kill_redis``): the same;
  the two executor-side spout points run adclicks with its spout on executors;
- the server killed for good: the run stops with one line and exit 5 after the bound,
  and the same command after the server is back ends exact.

"Exact" is the failure-free run's final totals, emits per key and committed bolt state.
The local engine sends Redis nothing (it keeps Storm's in-memory semantics): no case.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.fault_harness import REPO, Outcome, adclicks_with_two_spout_tasks
from support.outage_harness import BACK, DOWN, TRACES, Killer, OutageCase, outage_log

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis, pytest.mark.slow]

EVENTS, SEED, BATCH = 3_000, 11, 1_000  # txids 0..2; executor spout: 2 tasks x chunks 0..1
OPTIONS = {"adclicks.events": EVENTS, "adclicks.seed": SEED, "adclicks.malformed_rate": 0.0,
           "adclicks.windows": False}
EXECUTOR = {**OPTIONS, "stormshift.spout.executor": True}
ARGS = ["--until-done", "--master", "local[2,3]", "--batch-max-tuples", str(BATCH)]
BOUND_S = 6


def kill(at: str, **when: Any) -> dict[str, Any]:
    return {"name": f"redis@{at}", "at": at, "action": "kill_redis", "when": when}


# fault point -> (spout on executors?, the fault): each case kills Redis once, at txid 1
POINTS: dict[str, tuple[bool, dict[str, Any]]] = {
    "driver.before_stages": (False, kill("driver.before_stages", txid=1)),
    "driver.after_commit": (False, kill("driver.after_commit", txid=1)),
    "stage.start": (False, kill("stage.start", txid=1, component="ads_ctr_bolt", task=0)),
    "task.midway": (False, kill("task.midway", txid=1, component="ads_ctr_bolt", task=1)),
    "task.before_close": (False, kill("task.before_close", txid=1, component="client_spent_bolt",
                                      task=0)),
    "task_host.midway": (False, kill("task_host.midway", txid=1, component="ads_ctr_bolt", task=0)),
    "task_host.sent": (False, kill("task_host.sent", txid=1, component="ads_ctr_bolt", task=1)),
    "source.after_wal_append": (False, kill("source.after_wal_append", spout="ad_log_spout",
                                            head=2 * BATCH)),
    "source.after_chunk_log": (True, kill("source.after_chunk_log", spout="ad_log_spout", task=1,
                                          chunk=1)),
    "source.spout_host_emitted": (True, kill("source.spout_host_emitted", spout="ad_log_spout",
                                             task=1, chunk=1)),
}


def _case(tmp: Path, key: str) -> OutageCase:
    if key == "baseline" or key.startswith("point:") and not POINTS[key[6:]][0]:
        plan = [POINTS[key[6:]][1]] if key.startswith("point:") else None
        return OutageCase(tmp, str(REPO / "examples" / "adclicks"), options=OPTIONS, args=ARGS,
                          faults=plan)
    if key == "baseline-executor" or key.startswith("point:"):
        plan = [POINTS[key[6:]][1]] if key.startswith("point:") else None
        return OutageCase(tmp, str(adclicks_with_two_spout_tasks(tmp)), options=EXECUTOR,
                          args=ARGS, faults=plan)
    if key == "two-kills":  # smaller batches: a longer run, two outages inside it
        return OutageCase(tmp, str(REPO / "examples" / "adclicks"), options=OPTIONS,
                          args=[*ARGS[:-1], "300"])
    assert key == "bound"
    return OutageCase(tmp, str(REPO / "examples" / "adclicks"),
                      options={**OPTIONS, "stormshift.redis_outage_s": BOUND_S}, args=ARGS,
                      faults=[kill("task.midway", txid=1, component="ads_ctr_bolt", task=0)],
                      restart_delay=None)  # mid-stage: the driver stops a query whose job runs


class Runs:
    """Every case of the selected tests, two at a time, started ahead of the tests."""

    def __init__(self, factory: pytest.TempPathFactory):
        self.factory = factory
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="outage-case")
        self.futures: dict[str, Future[tuple[OutageCase, Outcome, float, Any]]] = {}

    def submit(self, key: str) -> None:
        if key not in self.futures:
            case = _case(self.factory.mktemp(key.replace(":", "-").replace(".", "-")), key)
            self.futures[key] = self.pool.submit(self._run, key, case)

    @staticmethod
    def _run(key: str, case: OutageCase) -> tuple[OutageCase, Outcome, float, Any]:
        killer = Killer(case, after=[1, 6], seed=SEED) if key == "two-kills" else None
        if killer is not None:
            killer.start()
        started = time.monotonic()
        try:
            out = case.run()
        finally:
            if killer is not None:
                killer.close()
        return case, out, time.monotonic() - started, killer

    def get(self, key: str) -> tuple[OutageCase, Outcome, float, Any]:
        self.submit(key)
        return self.futures[key].result()


def _keys(item: pytest.Item) -> list[str]:
    params = getattr(item, "callspec", None)
    point = params.params.get("point") if params else None
    if point:
        return ["baseline-executor" if POINTS[point][0] else "baseline", f"point:{point}"]
    if "two_kills" in item.name:
        return ["baseline", "two-kills"]
    if "bound" in item.name:
        return ["baseline", "bound"]
    return []


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    runs = Runs(tmp_path_factory)
    for item in request.session.items:
        if item.module is request.module:
            for key in _keys(item):
                runs.submit(key)
    yield runs
    runs.pool.shutdown(wait=True, cancel_futures=True)


def _exact(out: Outcome, base: Outcome) -> None:
    assert out.finals() == base.finals(), "final totals differ"
    assert out.emit_counts() == base.emit_counts(), "an event counted twice or lost"
    assert out.state == base.state, "committed bolt state differs"
    assert out.dead_letters == base.dead_letters == 0


def _no_trace(case: OutageCase) -> None:
    for trace in TRACES:
        assert trace not in case.stderr, f"{trace!r} on the console:\n{case.stderr[-3000:]}"


def test_two_kills_at_seeded_moments_ride_through(runs: Runs) -> None:
    base = runs.get("baseline")[1]
    case, out, secs, killer = runs.get("two-kills")
    assert len(killer.killed) == 2 and out.redis_restarts == 2, killer.killed
    assert out.exit_codes == [0], f"one run, clean: {out.exit_codes}\n{case.stderr[-3000:]}"
    _exact(out, base)
    assert len(DOWN.findall(case.stderr)) == 2, case.stderr[-3000:]
    assert len(BACK.findall(case.stderr)) == 2, case.stderr[-3000:]
    _no_trace(case)
    print(f"two kills at {killer.killed}: {secs:.0f} s")


@pytest.mark.parametrize("point", list(POINTS))
def test_a_kill_at_each_fault_point_rides_through(point: str, runs: Runs) -> None:
    base = runs.get("baseline-executor" if POINTS[point][0] else "baseline")[1]
    case, out, secs, _ = runs.get(f"point:{point}")
    assert [e["fault"] for e in out.events] == [f"redis@{point}"], "the fault fired"
    assert out.redis_restarts == 1
    assert out.exit_codes == [0], f"one run, clean: {out.exit_codes}\n{case.stderr[-3000:]}"
    _exact(out, base)
    _no_trace(case)
    down, back = DOWN.findall(case.stderr), BACK.findall(case.stderr)
    assert len(down) == len(back) <= 1, case.stderr[-3000:]  # the driver's, if it noticed
    if not down:  # then the process that met the outage said it in the run's outage log
        assert "unreachable" in outage_log(case) and "is back after" in outage_log(case)
    print(f"{point}: {secs:.0f} s")


def test_past_the_bound_the_run_stops_with_one_line(runs: Runs) -> None:
    base = runs.get("baseline")[1]
    case, out, secs, _ = runs.get("bound")
    code, stdout, stderr = case.outputs[0]
    assert code == 5, f"exit {code}\n{stderr[-3000:]}"
    port = case.redis.port
    line = (f"Redis at 127.0.0.1:{port} unreachable for {BOUND_S} s (stormshift.redis_outage_s); "
            "the run stopped at batch 0, nothing committed after 0; rerun the same command "
            "when Redis is back")
    failed = [x for x in stderr.splitlines() if x.startswith("run failed:")]
    assert failed == [f"run failed: {line}"], stderr[-3000:]
    assert '"exit_code": 5' in stdout
    for trace in TRACES:
        assert trace not in stderr, f"{trace!r} on the console:\n{stderr[-3000:]}"
    assert len(DOWN.findall(stderr)) == 1, stderr[-3000:]
    assert out.exit_codes == [5, 0]  # the same command, Redis back: to the end, exact
    _exact(out, base)
    print(f"bound {BOUND_S} s: first run {secs:.0f} s in all")

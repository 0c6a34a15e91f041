"""Exactly-once under injected faults: ``stormshift run`` broken at chosen points, restarted,
and compared with a failure-free run over the same input -- exactly.

Each case runs the topology as a separate process (its own JVM, Python
workers and redis-server with appendonly and fsync always), injects one
fault (``stormshift/engines/spark/diagnostics/faults.py``), restarts the run after every
crash until it reaches the end of its input, and then compares:

- the final per-key results in the sink (the last running total per ad and
  per advertiser / per word; adclicks' event-time reports by the keys its
  ``shadow.results`` declares: the last pane per ad-minute and per
  advertiser-day, the budget alerts, each user's sessions) and how many emits
  each key got (one per event; one per pane);
- the bolts' committed per-task state in Redis (their snapshots, merged; a
  windowed bolt's windowing state by event time: ``fault_harness._windows_outcome``);
- the dead letters (adclicks includes malformed lines);

with those of the failure-free run. The master is ``local[2,3]``: Spark
retries a failed task up to 3 times, as on a cluster. The session prints a
table (fault, runs, batches, tuples, retries, fenced writes, result) beside
what the same fault does to the legacy topology on the local engine (Storm
semantics, ``tests/support/faults_storm.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fault_harness import (
    FINISHED,
    REPO,
    TABLE,
    Case,
    CaseRunner,
    Outcome,
    adclicks_with_two_spout_tasks,
)
from support.session_tables import record

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis]

EVENTS, SEED, BATCH = 6_000, 7, 1_500
# adclicks.windows is on (the default): the event-time reports run too; a $5 daily budget so
# that some advertiser-days (8 of 6,000 events' 109) emit a budget alert
BUDGET = 5_000_000
ADCLICKS = {"adclicks.events": EVENTS, "adclicks.seed": SEED, "adclicks.malformed_rate": 0.002,
            "adclicks.daily_budget_micros": BUDGET}
ADCLICKS_ARGS = ["--until-done", "--master", "local[2,3]", "--batch-max-tuples", str(BATCH)]
WORDS = 16_000
WORDCOUNT_ARGS = ["--max-tuples", str(WORDS), "--master", "local[2,3]", "--batch-max-tuples", "4000"]


def fault(name: str, at: str, action: str, secs: float = 0, **when: Any) -> dict[str, Any]:
    return {"name": name, "at": at, "action": action, "secs": secs, "when": when}


# name -> (fault plan, slow?) ; txids: 6,000 events in batches of 1,500 -> txids 0..3. A fault
# fires once per case, so several faults share a case (one failure-free input, one set of
# JVM starts): each part's own checks (``_check_fault_specifics``) still apply, and the parts
# must not mask each other -- every fault in a case must fire and the result must be exact.
ADCLICKS_FAULTS = {
    # the whole run killed (driver, JVM, planner, workers) at four points, each in a later run
    # than the one before: a chunk logged but not planned (txid 1), ticks planned but no stage
    # started (txid 1, replanned from the log), one stage done (txid 2), Redis committed but
    # Spark's commit log not (txid 3): five runs, each resuming where the last one died
    "driver-during-wal-append+driver-before-stages+driver-between-stages+driver-after-commit": ([
        fault("w", "source.after_wal_append", "kill_run", spout="ad_log_spout", head=3000),
        fault("b", "driver.before_stages", "kill_run", txid=1),
        fault("s", "stage.start", "kill_run", txid=2, component="ads_ctr_bolt", task=0),
        fault("c", "driver.after_commit", "kill_run", txid=3),
    ], False),
    # faults the driver lives through, in one run: Redis killed between batches (txid 0) and
    # mid-task (txid 3), a worker killed mid-task (txid 1), an attempt left as a zombie (txid 2),
    # the spout restarted after logging a chunk (it re-emits from its own start)
    "redis-restart-between-batches+worker-mid-task+zombie-attempt+spout-reemit"
    "+redis-restart-mid-batch": ([
        fault("rb", "driver.after_commit", "kill_redis", txid=0),
        fault("k", "task.midway", "kill_self", txid=1, component="ads_ctr_bolt", task=1),
        fault("z", "task.before_close", "zombie", secs=120, txid=2, component="ads_ctr_bolt", task=0),
        fault("r", "source.after_wal_append", "restart", spout="ad_log_spout", head=4500),
        fault("rm", "task.midway", "kill_redis", txid=3, component="client_spent_bolt", task=0),
    ], False),
    # the windowed bolts' tasks (each fused with its formatting bolt): faults that keep the
    # driver alive, in one run (one JVM start); the driver kills above hit them with the rest
    "windowed-worker-kill+zombie+redis-restart": ([
        fault("k", "task.midway", "kill_self", txid=1, component="ad_ctr_minute_bolt", task=1),
        fault("z", "task.before_close", "zombie", secs=120, txid=2, component="user_sessions_bolt",
              task=0),
        fault("r", "task.midway", "kill_redis", txid=3, component="advertiser_day_bolt", task=0),
    ], False),
    # task hosts (on by default: ``task/task_host.py``): a host killed half-way through a
    # windowed task's batch, and a worker killed while its host runs the task (the host
    # finishes and commits; Spark's retry takes a newer epoch and runs it again)
    "windowed-task-host-kill+worker-kill": ([
        fault("h", "task_host.midway", "kill_self", txid=1, component="user_sessions_bolt", task=0),
        fault("w", "task_host.sent", "kill_self", txid=2, component="ad_ctr_minute_bolt", task=1),
    ], False),
}

# wordcount's spout gives no msg ids (Storm's unreliable emit): a restarted spout's
# re-emissions are new input, so only faults that keep the driver alive apply; they run
# together in ONE run (one JVM start) and must all fire.
WORDCOUNT_FAULTS = {
    "worker-kill+zombie+redis-restart": ([
        fault("k", "task.midway", "kill_self", txid=1, component="count_bolt", task=0),
        fault("z", "task.before_close", "zombie", secs=120, txid=2, component="count_bolt", task=1),
        fault("r", "task.midway", "kill_redis", txid=3, component="count_bolt", task=1),
    ], False),
}


# adclicks with its spout at parse's par (2): parse runs on the source's partitions (no
# shuffle, spout task i -> parse task i: stormshift/engines/spark/protocol/layout.py). 3,000 events
# per batch: txids 0..1. Same events, so its final results must equal the plain adclicks
# baseline's; its emits and windowing state (which records came late depends on where the
# batches were cut and on the partitions' watermarks) equal its own failure-free run's.
LOCAL_FAULTS = {
    "worker-kill+zombie": ([
        fault("k", "task.midway", "kill_self", txid=1, component="parse_bolt", task=1),
        fault("z", "task.before_close", "zombie", secs=120, txid=0, component="parse_bolt", task=0),
    ], False),
}


def _params(table: dict[str, tuple[list[dict[str, Any]], bool]]) -> list[Any]:
    return [pytest.param(name, plan, id=name, marks=[pytest.mark.slow] if slow else [])
            for name, (plan, slow) in table.items()]


def _case(tmp: Path, project: str, plan: list[dict[str, Any]] | None) -> Case:
    if project == "adclicks-local":
        return Case(tmp, str(adclicks_with_two_spout_tasks(tmp)), options=ADCLICKS,
                    args=ADCLICKS_ARGS, faults=plan)
    if project == "adclicks":
        return Case(tmp, str(REPO / "examples" / "adclicks"), options=ADCLICKS, args=ADCLICKS_ARGS,
                    faults=plan)
    return Case(tmp, str(REPO / "examples" / "wordcount"), options={}, args=WORDCOUNT_ARGS,
                faults=plan)


def _plans(project: str) -> dict[str, list[dict[str, Any]] | None]:
    """Case key -> fault plan, for every case of ``project`` (baseline: no plan)."""
    table = {"adclicks": ADCLICKS_FAULTS, "wordcount": WORDCOUNT_FAULTS,
             "adclicks-local": LOCAL_FAULTS}[project]
    return {f"{project}:baseline": None, **{f"{project}:{n}": plan for n, (plan, _) in table.items()}}


@pytest.fixture(scope="module")
def runner(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CaseRunner]:
    """Starts every case the selected tests of this module need, two at a time, in test order."""
    runner = CaseRunner()
    plans = {**_plans("adclicks"), **_plans("wordcount"), **_plans("adclicks-local")}
    for item in request.session.items:
        if item.module is not request.module:
            continue
        project = ("wordcount" if "wordcount" in item.name else
                   "adclicks-local" if "source_partitions" in item.name else "adclicks")
        name = getattr(item, "callspec", None) and item.callspec.params.get("name")
        base = "wordcount" if project == "wordcount" else "adclicks"
        keys = list(dict.fromkeys([f"{base}:baseline", f"{project}:baseline"]))
        keys += [f"{project}:{name}"] if name else []
        for key in keys:
            runner.submit(key, lambda key=key: _make(tmp_path_factory, key, plans[key]))
    yield runner
    runner.close()


def _make(factory: pytest.TempPathFactory, key: str, plan: list[dict[str, Any]] | None) -> Case:
    project, name = key.split(":", 1)
    return _case(factory.mktemp(f"{project}-{name}"), project, plan)


def _outcome(runner: CaseRunner, factory: pytest.TempPathFactory, project: str, name: str) -> Outcome:
    key = f"{project}:{name}"
    return runner.outcome(key, lambda: _make(factory, key, _plans(project)[key]))


@pytest.fixture(scope="module")
def baseline_adclicks(runner: CaseRunner, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    out = _outcome(runner, tmp_path_factory, "adclicks", "baseline")
    _row("adclicks", "none (baseline)", out, "exact" if out.exit_codes == [3] else "FAILED")
    return out


@pytest.fixture(scope="module")
def baseline_adclicks_local(runner: CaseRunner, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    out = _outcome(runner, tmp_path_factory, "adclicks-local", "baseline")
    _row("adclicks, spout par 2", "none (baseline)", out,
         "exact" if out.exit_codes == [3] else "FAILED")
    return out


@pytest.fixture(scope="module")
def baseline_wordcount(runner: CaseRunner, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    out = _outcome(runner, tmp_path_factory, "wordcount", "baseline")
    _row("wordcount", "none (baseline)", out, "exact" if out.exit_codes == [0] else "FAILED")
    return out


def test_baseline_adclicks_equals_the_independent_computation(baseline_adclicks: Outcome) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("adclicks_expected", REPO / "examples/adclicks/expected.py")
    assert spec and spec.loader
    expected_mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = expected_mod  # dataclasses look their module up
    spec.loader.exec_module(expected_mod)
    exp = expected_mod.compute(expected_mod.generated_lines(seed=SEED, events=EVENTS, malformed_rate=0.002))
    finals = baseline_adclicks.finals()
    assert {k: tuple(v) for k, v in finals["ads_ctr_bolt:default"].items()} == \
        {k: tuple(v) for k, v in exp.ctr_by_ad.items()}
    assert {k: v[0] for k, v in finals["client_spent_bolt:default"].items()} == exp.spend_by_advertiser
    assert baseline_adclicks.dead_letters == exp.malformed > 0
    assert baseline_adclicks.exit_codes == [3]  # finished, with the malformed lines dead-lettered
    # the event-time reports, by each record's ts (compute_windowed: the lines alone)
    adgen = importlib.util.spec_from_file_location("adclicks_adgen", REPO / "examples/adclicks/src/adgen.py")
    assert adgen and adgen.loader
    adgen_mod = importlib.util.module_from_spec(adgen)
    sys.modules[adgen.name] = adgen_mod
    adgen.loader.exec_module(adgen_mod)
    lines = expected_mod.generated_lines(seed=SEED, events=EVENTS, malformed_rate=0.002)
    win = expected_mod.compute_windowed(lines, adgen_mod.advertiser_zone, BUDGET)
    assert {k: (v[0], v[2]) for k, v in finals["minute_ctr_bolt:default"].items()} == \
        win.ctr_by_ad_minute
    assert {k: v[1] for k, v in finals["daily_spend_bolt:default"].items()} == \
        win.spend_by_advertiser_day
    assert sorted(finals["budget_alert_bolt:default"]) == win.alerts != []
    assert baseline_adclicks.emit_counts()["budget_alert_bolt:default"] == {k: 1 for k in win.alerts}
    assert {k: tuple(v) for k, v in finals["user_sessions_report_bolt:default"].items()} == \
        win.sessions_by_user


@pytest.mark.parametrize(("name", "plan"), _params(ADCLICKS_FAULTS))
def test_adclicks_fault_changes_nothing(name: str, plan: list[dict[str, Any]], baseline_adclicks: Outcome,
                                        runner: CaseRunner, tmp_path_factory: pytest.TempPathFactory) -> None:
    out = _outcome(runner, tmp_path_factory, "adclicks", name)
    result = _compare(out, baseline_adclicks)
    windowed = name.startswith("windowed-")  # Storm had no windowed bolts: no legacy column
    parts = [_PARTS.get(p, p) for p in name.removeprefix("windowed-").split("+")]
    if windowed or len(parts) == 1:
        _row("adclicks", name, out, result, storm="" if windowed else _storm(parts[0]))
    else:  # the case's row, then one row per fault with what it does to the legacy topology
        _row("adclicks", " + ".join(parts[:1]) + f" (+{len(parts) - 1} in one case)", out, result)
        for part in parts:
            record(TABLE, {"topology": "", "fault": f"  {part}", "storm": _storm(part)})
    assert out.events, f"{name}: the fault never fired (check its 'when')"
    assert {e["fault"] for e in out.events if "fault" in e} == {f["name"] for f in plan}, \
        "every fault fired"
    assert result == "exact", result
    assert out.redis_restarts == sum(f["action"] == "kill_redis" for f in plan)
    for part in parts:
        _check_fault_specifics(part, out)


@pytest.mark.parametrize(("name", "plan"), _params(WORDCOUNT_FAULTS))
def test_wordcount_fault_changes_nothing(name: str, plan: list[dict[str, Any]], baseline_wordcount: Outcome,
                                         runner: CaseRunner, tmp_path_factory: pytest.TempPathFactory) -> None:
    out = _outcome(runner, tmp_path_factory, "wordcount", name)
    result = _compare(out, baseline_wordcount)
    _row("wordcount", name, out, result, storm=_storm("worker-mid-task", topology="wordcount"))
    assert {e["fault"] for e in out.events} == {f["name"] for f in plan}, "every fault fired"
    assert result == "exact", result
    assert out.redis_restarts == sum(f["action"] == "kill_redis" for f in plan)
    for part in name.split("+"):
        _check_fault_specifics(_PARTS[part], out)


# the parts of a combined case -> the single fault whose checks apply
_PARTS = {"worker-kill": "worker-mid-task", "task-host-kill": "worker-mid-task", "zombie": "zombie-attempt",
          "redis-restart": "redis-restart-mid-batch"}


@pytest.mark.parametrize(("name", "plan"), _params(LOCAL_FAULTS))
def test_adclicks_fault_on_source_partitions_changes_nothing(
        name: str, plan: list[dict[str, Any]], baseline_adclicks: Outcome,
        baseline_adclicks_local: Outcome, runner: CaseRunner,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    out = _outcome(runner, tmp_path_factory, "adclicks-local", name)
    result = _compare(out, baseline_adclicks_local)
    _row("adclicks, spout par 2", name, out, result,
         storm=_storm("worker-mid-task"))
    assert {e["fault"] for e in out.events} == {f["name"] for f in plan}, "every fault fired"
    assert result == "exact", result
    # whatever the layout and the batches: the same results, one running total per event
    local = baseline_adclicks_local
    assert local.finals() == baseline_adclicks.finals()
    assert local.dead_letters == baseline_adclicks.dead_letters
    legacy = ("ads_ctr_bolt:default", "client_spent_bolt:default")
    assert [local.emit_counts()[s] for s in legacy] == \
        [baseline_adclicks.emit_counts()[s] for s in legacy]
    _check_fault_specifics("worker-mid-task", out)
    _check_fault_specifics("zombie-attempt", out)


def _check_fault_specifics(name: str, out: Outcome) -> None:
    """What each fault must have done, so a passing case is not a fault that did nothing."""
    if name.startswith("driver-"):
        assert len(out.exit_codes) >= 2 and out.exit_codes[0] not in FINISHED, out.exit_codes
    if name == "driver-between-stages":  # the stage that ran before the kill ran again
        assert out.retried >= 1, out
    if name == "worker-mid-task":
        assert out.retried >= 1 and out.exit_codes[-1] in FINISHED
    if name.startswith("redis-restart"):  # how many: the test counts the plan's Redis kills
        assert out.redis_restarts >= 1
    if name == "zombie-attempt":
        zombies = out.zombie_outcomes()
        assert zombies and all(z.startswith("FencedError") for z in zombies), zombies
        assert out.fenced >= 1 and out.retried >= 1
    if name == "spout-reemit":  # the spout restarted, the run did not
        assert len(out.exit_codes) == 1 and out.exit_codes[0] in FINISHED, out.exit_codes


def _compare(out: Outcome, base: Outcome) -> str:
    """'exact', or what differs from the failure-free run."""
    problems = []
    if out.finals() != base.finals():
        problems.append(f"final totals differ: {_diff(out.finals(), base.finals())}")
    if out.emit_counts() != base.emit_counts():
        problems.append("emits per key differ (an event counted twice or lost): "
                        f"{out.leaf_tuples} vs {base.leaf_tuples} leaf tuples")
    if out.state != base.state:
        problems.append(f"committed bolt state differs: {_diff(out.state, base.state)}")
    if out.dead_letters != base.dead_letters:
        problems.append(f"dead letters {out.dead_letters} vs {base.dead_letters}")
    return "; ".join(problems) or "exact"


def _diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            x, y = a.get(key) or {}, b.get(key) or {}
            if isinstance(x, dict) and isinstance(y, dict):
                bad = [k for k in sorted(set(x) | set(y), key=str) if x.get(k) != y.get(k)]
                return f"{key}: {len(bad)} keys, e.g. {bad[:1]} {[x.get(k) for k in bad[:1]]} vs " \
                       f"{[y.get(k) for k in bad[:1]]}"
            return f"{key}: {x!r:.80} vs {y!r:.80}"
    return ""


def _storm(fault_name: str, topology: str = "adclicks") -> str:
    """What the legacy topology computes under the same fault on the local engine."""
    try:
        from support.faults_storm import storm_side
    except ImportError:  # pragma: no cover - module missing
        return "n/a"
    res = storm_side(fault_name, events=EVENTS if topology == "adclicks" else WORDS, seed=SEED,
                     topology=topology)
    return f"double counted {res.double_counted:,}, lost {res.lost:,}"


def _row(topology: str, fault_name: str, out: Outcome, result: str, storm: str = "") -> None:
    record(TABLE, {
        "topology": topology, "fault": fault_name, "runs": out.runs,
        "batches": out.committed + 1, "tuples": f"{out.leaf_tuples:,}",
        "retries": out.retried, "fenced": out.fenced,
        "result": result if len(result) < 60 else result[:57] + "...", "storm": storm,
    })

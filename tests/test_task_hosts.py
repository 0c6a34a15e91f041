"""Task hosts keep a stateful task's live instance where it runs (``task/task_host.py``).

On ``local[2]`` Spark hands a stage's task to either Python worker; with task
hosts (the default) every batch after a task's first finds its live instance
current: no restore, no catch-up. ``-o stormshift.task_hosts=false`` runs tasks
in the workers and computes the same results. The summary counts how each task
found its state (a first run with nothing stored is ``started``, not a restore).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from stormshift.engines.spark.task import task_host
from stormshift.errors import StormshiftError
from stormshift.topology.loader import load_topology

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BOLTS = ("parse_bolt", "ads_ctr_bolt", "client_spent_bolt", "ad_ctr_minute_bolt",
         "minute_ctr_bolt", "advertiser_day_bolt", "daily_spend_bolt", "budget_alert_bolt",
         "user_sessions_bolt", "user_sessions_report_bolt")


def test_slots_follow_the_options():
    assert task_host.slots_for({}, 2) == 2
    assert task_host.slots_for({task_host.SLOTS_KEY: "3"}, 2) == 3
    assert task_host.slots_for({task_host.ENABLED_KEY: False}, 2) == 0
    assert task_host.slots_for({task_host.ENABLED_KEY: "false", task_host.SLOTS_KEY: 4}, 2) == 0
    with pytest.raises(StormshiftError, match="stormshift.task_hosts.slots"):
        task_host.slots_for({task_host.SLOTS_KEY: "two"}, 2)
    with pytest.raises(StormshiftError, match="at least 1"):
        task_host.slots_for({task_host.SLOTS_KEY: 0}, 2)


def test_a_task_always_goes_to_the_same_slot_and_neighbours_to_different_ones():
    assert [task_host.slot_of(d, 2) for d in range(6)] == [0, 1, 0, 1, 0, 1]
    assert {task_host.slot_of(7, 3) for _ in range(5)} == {1}


def test_a_host_starts_on_first_request_and_stops_when_asked(monkeypatch):
    """The process side of a host, without Spark: started detached by the first connect,
    one per slot path, gone (socket removed) after ``stop``."""
    import shutil
    import tempfile
    import time

    short = tempfile.mkdtemp(prefix="th-", dir="/tmp")  # a Unix socket path has ~100 bytes
    monkeypatch.setattr(tempfile, "tempdir", short)
    request_cleanup = shutil.rmtree
    owner = os.getpid()
    path = task_host.socket_path(0, owner)
    sock = task_host.connect(path, owner)
    sock.close()
    assert path.exists()
    again = task_host.connect(path, owner)  # the running host answers: none started
    again.close()
    assert task_host.stop_hosts(owner) == 1
    for _ in range(200):
        if not path.exists():
            break
        time.sleep(0.05)
    assert not path.exists()
    request_cleanup(short, ignore_errors=True)


def _oracle() -> Any:
    spec = importlib.util.spec_from_file_location("adclicks_expected_hosts",
                                                  EXAMPLES / "adclicks" / "expected.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _run(spark: Any, redis_url: str, namespace: str, ck: Path, **overrides: Any) -> Any:
    from stormshift.engines.spark import SparkEngine

    graph = load_topology(str(EXAMPLES / "adclicks"),
                          overrides={"adclicks.events": 3000, **overrides})
    engine = SparkEngine(graph, checkpoint_dir=str(ck), redis_url=redis_url, spark=spark,
                         namespace=namespace, until_done=True, batch_max_tuples=500)
    return engine.run()


@pytest.mark.spark
@pytest.mark.redis
def test_live_state_stays_in_the_host_and_results_equal_a_run_without_hosts(
        spark, redis_url, namespace, tmp_path):
    """Windows on: after its first run no task restores or catches up; each bolt that ran
    was started once per task (fresh namespace) and reused after. The legacy totals equal
    the oracle's, and a run with hosts off gives the same leaf results."""
    on = _run(spark, redis_url, namespace, tmp_path / "on")
    assert on.stop_reason == "done"
    for name in BOLTS:
        c = on[name]
        assert (c.restored, c.caught_up) == (0, 0), (name, c)
        assert c.started == (c.par if c.reused or c.started else 0), (name, c)
    assert on["ads_ctr_bolt"].reused >= 2 * 5  # 3,000 events in batches of 500
    assert on.to_dict()["components"]["ads_ctr_bolt"]["started"] == 2  # --json has them
    oracle = _oracle()
    expected = oracle.compute(oracle.generated_lines(7, 3000))
    assert {ad: tuple(v[1:4]) for ad, v in on.latest("ads_ctr_bolt").items()} == \
        {ad: tuple(t) for ad, t in expected.ctr_by_ad.items()}
    off = _run(spark, redis_url, namespace + "-off", tmp_path / "off",
               **{task_host.ENABLED_KEY: False})
    assert off.stop_reason == "done"
    for name in ("ads_ctr_bolt", "client_spent_bolt", "minute_ctr_bolt", "daily_spend_bolt",
                 "budget_alert_bolt", "user_sessions_report_bolt"):
        assert off.latest(name) == on.latest(name), name

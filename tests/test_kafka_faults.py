"""Exactly-once on Kafka: the pixelcount example (a storm-kafka-client ``JavaSpout``
replaced through ``config.json``) killed at chosen points, restarted, and compared with
a failure-free run over the same records -- exactly.

One tansu broker for the module holds the records (``examples/pixelcount/src/produce.py``,
4 partitions); every case is a separate ``stormshift run`` process tree with its own
redis-server and checkpoint (``tests/support/fault_harness.py``) reading the topic from its
first offset. A driver killed before a batch's stages or after its commit, and a Python
worker killed in the middle of a counting task, must leave the same per-URL totals,
the same emits per URL and the same committed bolt state as the failure-free run, and
those totals must be the producer's own (``produce.py --expected``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from support.fault_harness import FINISHED, REPO, Case, CaseRunner, Outcome
from support.kafka_broker import TansuBroker

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis, pytest.mark.kafka]

PROJECT = REPO / "examples" / "pixelcount"
PIXELS, BATCH = 2_000, 500  # at most 500 records per spout task per batch
ARGS = ["--until-done", "--master", "local[2,3]", "--batch-max-tuples", str(BATCH)]


def fault(at: str, action: str, **when: Any) -> dict[str, Any]:
    return {"name": "k", "at": at, "action": action, "secs": 0, "when": when}


FAULTS = {
    "driver-before-stages": [fault("driver.before_stages", "kill_run", txid=2)],
    "driver-after-commit": [fault("driver.after_commit", "kill_run", txid=1)],
    "worker-mid-task": [fault("task.midway", "kill_self", txid=1, component="pixel-count-bolt", task=1)],
}


@pytest.fixture(scope="module")
def broker() -> Iterator[TansuBroker]:
    b = TansuBroker()
    produce = [sys.executable, str(PROJECT / "src" / "produce.py"), "--bootstrap", b.bootstrap,
               "-n", str(PIXELS)]
    subprocess.run(produce, check=True, capture_output=True, timeout=120)
    yield b
    b.stop()


@pytest.fixture(scope="module")
def expected() -> dict[str, int]:
    out = subprocess.run([sys.executable, str(PROJECT / "src" / "produce.py"), "-n", str(PIXELS),
                          "--expected"], check=True, capture_output=True, text=True).stdout
    return {str(k): int(v) for k, v in json.loads(out).items()}


@pytest.fixture(scope="module")
def runner(broker: TansuBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CaseRunner]:
    runner = CaseRunner()
    for name in ["baseline", *FAULTS]:
        runner.submit(name, lambda name=name: _case(broker, tmp_path_factory, name))
    yield runner
    runner.close()


def _case(broker: TansuBroker, factory: pytest.TempPathFactory, name: str) -> Case:
    replacement = {"pixel-spout": {"class": "stormshift.spouts.KafkaSpout", "config": {
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.bounded": True}}}
    return Case(factory.mktemp(f"pixelcount-{name}"), str(PROJECT),
                options={"stormshift.replacements": replacement}, args=ARGS,
                faults=FAULTS.get(name))


@pytest.fixture(scope="module")
def baseline(runner: CaseRunner, broker: TansuBroker, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return runner.outcome("baseline", lambda: _case(broker, tmp_path_factory, "baseline"))


def test_failure_free_run_counts_every_record_once(baseline: Outcome, expected: dict[str, int]) -> None:
    finals = baseline.finals()["pixel-count-bolt:default"]
    assert {url: values[0] for url, values in finals.items()} == expected
    assert baseline.leaf_tuples == PIXELS and baseline.exit_codes == [0]
    merged = baseline.state["pixel-count-bolt"]["counts"]
    assert merged == expected  # the committed snapshots of both tasks, merged by URL


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_killed_driver_or_worker_changes_nothing(name: str, baseline: Outcome, runner: CaseRunner,
                                                   broker: TansuBroker,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    out = runner.outcome(name, lambda: _case(broker, tmp_path_factory, name))
    assert out.events, f"{name}: the fault never fired"
    assert out.exit_codes[-1] in FINISHED
    if name.startswith("driver-"):
        assert len(out.exit_codes) >= 2 and out.exit_codes[0] not in FINISHED, out.exit_codes
    else:
        assert out.retried >= 1, "the killed worker's task ran again"
    assert out.finals() == baseline.finals()
    assert out.emit_counts() == baseline.emit_counts(), "a record counted twice or lost"
    assert out.state == baseline.state
    assert out.dead_letters == baseline.dead_letters == 0

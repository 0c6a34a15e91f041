"""A Python worker killed in the middle of a fused chain: the run recovers and its results are
exact -- equal to the same plan's failure-free run, and to the unfused plan's.

``fusedchain`` (``tests/fixtures/topologies/fusedchain``) runs as two stages: parse (on the
spout's partitions) -> enrich -> drop -> buckets, and spend -> report. ``task.midway`` of a
fused member fires half-way through its in-process queue, after its head (and the members
before it) processed the task's whole input and committed their state for the batch
(``stage.py`` closes members in order), before the member finished: Spark's retry runs
the whole chain again, the committed head included (``faults.py``'s ``kill_self``: with
task hosts on, the host running the task dies; with ``stormshift.task_hosts=false`` the
Python worker itself). A zombie attempt of a fused member is fenced. With ``rank`` fused by
key (``stormshift.fuse.keyed``), it reads what it read as a stage of its own, in the same
order (spend's task i is its only source of keys of task i), so that case too must equal
the plain fused run exactly. Each case runs
``stormshift run`` as its own process tree with its own Redis (``support/fault_harness.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fault_harness import _UNPICKLE_LOCK, FINISHED, Case, CaseRunner, Outcome
from support.fusion_outcome import PROJECT, check_expected, differences, outcome, write_input

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis]

ARGS = ["--until-done", "--master", "local[2,3]", "--batch-max-tuples", "40"]  # 240 events: txids 0..3


def fault(name: str, at: str, action: str, secs: float = 0, **when: Any) -> dict[str, Any]:
    return {"name": name, "at": at, "action": action, "secs": secs, "when": when}


# a member in the middle of the spout-side chain (parse -> enrich -> drop -> buckets), the
# member behind the fields-grouped head, a zombie of the chain's last-but-one member, and
# (with rank fused by key behind spend: ``stormshift.fuse.keyed``) the keyed member
MID_CHAIN = [
    fault("k-enrich", "task.midway", "kill_self", txid=1, component="enrich", task=0),
    fault("k-report", "task.midway", "kill_self", txid=2, component="report", task=1),
    fault("z-drop", "task.before_close", "zombie", secs=120, txid=3, component="drop", task=1),
    fault("k-rank", "task.midway", "kill_self", txid=3, component="rank", task=0),
]
CASES: dict[str, tuple[dict[str, Any], list[dict[str, Any]] | None]] = {
    "fused": ({}, None),
    "unfused": ({"stormshift.fuse": False}, None),
    "fused-kill-mid-chain": ({"stormshift.fuse.keyed": ["rank"]}, MID_CHAIN),
    "fused-kill-mid-chain-no-task-hosts": ({"stormshift.task_hosts": False}, MID_CHAIN[:2]),
}


class ChainCase(Case):
    """``Case`` with each bolt task's committed attributes kept per task (a shuffle-fed
    bolt's per-key maps overlap across its tasks: ``fusion_outcome`` sums them)."""

    def _snapshots(self, r: Any, committed: int) -> dict[str, Any]:
        from stormshift.state.final import committed_attributes
        from stormshift.topology.sources import use_sources

        key = (self.checkpoint / "stormshift-state.key").read_text().strip().encode()
        with _UNPICKLE_LOCK:
            use_sources(self.graph.source_dirs)
            return {b.name: [committed_attributes(r, self.namespace, key, b.name, t)
                             for t in range(b.par)] for b in self.graph.bolts}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("fusedchain-input")
    return folder, write_input(folder)


@pytest.fixture(scope="module")
def runner(data: tuple[Path, list[dict[str, Any]]],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[CaseRunner]:
    runner = CaseRunner()
    for name, (options, plan) in CASES.items():
        runner.submit(name, lambda name=name, options=options, plan=plan: ChainCase(
            tmp_path_factory.mktemp(name), str(PROJECT),
            options={"jsonlines.path": str(data[0]), **options}, args=ARGS, faults=plan))
    yield runner
    runner.close()


def result(runner: CaseRunner, name: str) -> Outcome:
    return runner.outcome(name, lambda: pytest.fail(f"case {name} was not submitted"))


def normalised(out: Outcome) -> dict[str, Any]:
    return outcome(out.sink, out.state)


def test_failure_free_plans_agree(runner: CaseRunner, data: tuple[Path, list[dict[str, Any]]]) -> None:
    fused, unfused = result(runner, "fused"), result(runner, "unfused")
    assert fused.exit_codes == unfused.exit_codes == [0]
    assert differences(normalised(fused), normalised(unfused)) == []
    check_expected(normalised(fused), data[1])


@pytest.mark.parametrize("name", ["fused-kill-mid-chain", "fused-kill-mid-chain-no-task-hosts"])
def test_a_worker_killed_mid_chain_changes_nothing(runner: CaseRunner, name: str) -> None:
    out, base, unfused = result(runner, name), result(runner, "fused"), result(runner, "unfused")
    plan = CASES[name][1] or []
    assert {e["fault"] for e in out.events if "fault" in e} == {f["name"] for f in plan}, \
        "every fault fired"
    assert out.exit_codes[-1] in FINISHED and out.retried >= len(plan), (out.exit_codes, out.retried)
    if any(f["action"] == "zombie" for f in plan):
        zombies = out.zombie_outcomes()
        assert zombies and all(z.startswith("FencedError") for z in zombies), zombies
    # exact against the same plan's failure-free run: every sink row but the tick-cut
    # BatchingBolt's, every bolt task's committed state but its held tuples
    ticked = ("buckets", "default")
    assert {k: v for k, v in out.sink.items() if k != ticked} == \
        {k: v for k, v in base.sink.items() if k != ticked}
    assert {b: t for b, t in out.state.items() if b != "buckets"} == \
        {b: t for b, t in base.state.items() if b != "buckets"}
    assert out.dead_letters == base.dead_letters == 0
    assert normalised(out) == normalised(base)
    assert differences(normalised(out), normalised(unfused)) == []

"""Storm's side of the fault table: the same faults on the local engine (Storm semantics).

These pin what the legacy topology computes under each fault, so the suite's
"storm (local engine)" column is a measured fact, not a claim: the replaying
spout double counts when acks are lost or the spout rewinds, and a dead
task's in-memory totals are lost; faults outside the bolts' path change nothing.
"""

from __future__ import annotations

import pytest
from support.faults_storm import storm_side

EVENTS, SEED = 3_000, 7


@pytest.mark.parametrize("fault", ["driver-before-stages", "redis-restart-mid-batch"])
def test_faults_storm_replays_or_misses_leave_totals_exact(fault: str) -> None:
    res = storm_side(fault, events=EVENTS, seed=SEED)
    assert (res.double_counted, res.lost) == (0, 0), res.injected
    assert res.observed.per_key == res.expected.per_key


def test_faults_storm_lost_acks_double_count_money() -> None:
    res = storm_side("driver-after-commit", events=EVENTS, seed=SEED)
    assert res.double_counted > 0 and res.lost == 0
    assert res.overbilled > 0, "a replay after lost acks is billed twice on Storm"
    assert res.replays >= res.double_counted


def test_faults_storm_rewinding_spout_recounts_everything_it_replays() -> None:
    res = storm_side("spout-reemit", events=EVENTS, seed=SEED)
    assert res.double_counted >= EVENTS // 2, res.double_by_view
    assert res.lost == 0


def test_faults_storm_dead_task_loses_its_totals() -> None:
    res = storm_side("worker-mid-task", events=EVENTS, seed=SEED)
    assert res.lost > 0, "a restarted bolt task starts from empty memory on Storm"


def test_faults_storm_unreliable_wordcount_only_loses() -> None:
    res = storm_side("worker-mid-task", events=8_000, seed=SEED, topology="wordcount")
    assert res.double_counted == 0 and res.lost > 0


def test_faults_storm_rejects_unknown_fault() -> None:
    with pytest.raises(ValueError, match="unknown fault 'typo'"):
        storm_side("typo", events=EVENTS, seed=SEED)

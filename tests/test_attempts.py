"""The per-member attempt state machine (``stormshift/adapters/attempts.py``): pure, unit tier.

What the Spark task does with each status is proven by the engines' dead-letter
and bad-input tests (tests/test_bad_input.py, tests/test_deadletter.py); here the
transitions themselves, with the run plans they hand out.
"""

from __future__ import annotations

import pytest

from stormshift.adapters.attempts import (
    AttemptOrderError,
    AttemptStatus,
    MemberAttempts,
    NoProgress,
    Run,
)


def test_a_clean_first_run_is_the_only_one() -> None:
    attempts = MemberAttempts("component 'count' task 0")
    runs = []
    for run in attempts.runs():
        runs.append(run)
        assert attempts.status is AttemptStatus.RUNNING
        assert attempts.finish(False, False, {}) is AttemptStatus.DONE
    assert runs == [Run(0, {}, False, 0)] and attempts.status is AttemptStatus.DONE


def test_a_tainted_run_is_redone_skipping_what_it_dead_lettered_until_a_clean_one() -> None:
    attempts = MemberAttempts("component 'count' task 1")
    plans, results = [], iter([(True, {"1:1:3": "a"}), (True, {"1:1:3": "a", "1:1:7": "b"}),
                               (False, {"1:1:3": "a", "1:1:7": "b"})])
    for run in attempts.runs():
        plans.append(run)
        tainted, poison = next(results)
        attempts.finish(tainted, False, poison)
    assert plans == [Run(0, {}, False, 0), Run(1, {"1:1:3": "a"}, True, 0),
                     Run(2, {"1:1:3": "a", "1:1:7": "b"}, True, 0)]
    assert attempts.runs_started == 3


def test_a_run_owns_a_copy_of_the_poison() -> None:
    attempts = MemberAttempts("m")
    first = attempts.start()
    mine = {"t": 1}
    attempts.finish(True, False, mine)
    mine["u"] = 2  # the member's dict keeps changing in a later run: the plan must not
    second = attempts.start()
    second.poison["v"] = 3
    assert second.poison == {"t": 1, "v": 3} and first.poison == {}
    attempts.finish(True, False, {"t": 1, "w": 4})
    assert attempts.start().poison == {"t": 1, "w": 4}


def test_a_retried_flush_runs_again_with_the_same_poison_and_one_flush_attempt_more() -> None:
    attempts = MemberAttempts("component 'batcher' task 0")
    attempts.start()
    assert attempts.finish(True, True, {}) is AttemptStatus.REDO
    second = attempts.start()
    assert (second.redo, second.flush_attempt, second.poison) == (True, 1, {})
    assert attempts.finish(True, True, {}) is AttemptStatus.REDO  # no new dead letter: fine
    assert attempts.start().flush_attempt == 2


def test_a_redo_that_dead_letters_nothing_new_raises_instead_of_looping() -> None:
    attempts = MemberAttempts("component 'count' task 2")
    attempts.start()
    attempts.finish(True, False, {"t": 1})
    attempts.start()
    with pytest.raises(NoProgress, match="component 'count' task 2: a redo found no new dead letter"):
        attempts.finish(True, False, {"t": 1})
    with pytest.raises(AttemptOrderError):
        attempts.start()


def test_calls_in_the_wrong_status_are_refused_naming_the_member_and_the_status() -> None:
    attempts = MemberAttempts("component 'count' task 3")
    with pytest.raises(AttemptOrderError, match=r"task 3: finish\(\) while ready"):
        attempts.finish(False, False, {})
    attempts.start()
    with pytest.raises(AttemptOrderError, match=r"start\(\) while running"):
        attempts.start()
    attempts.finish(False, False, {})
    with pytest.raises(AttemptOrderError, match=r"start\(\) while done"):
        attempts.start()


def test_runs_refuses_a_run_that_was_not_finished() -> None:
    attempts = MemberAttempts("component 'count' task 4")
    runs = attempts.runs()
    next(runs)
    with pytest.raises(AttemptOrderError, match="run 0 was not finished"):
        next(runs)

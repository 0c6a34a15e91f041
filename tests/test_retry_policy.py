"""The retry / redo / dead-letter decisions (``stormshift.adapters.retry_policy``): pure tables."""

from __future__ import annotations

import pytest

from stormshift.adapters.retry_policy import Action, Decision, Outcome, RetryPolicy

ACCEPT = Decision(Action.ACCEPT)
RETRY = Decision(Action.RETRY, redo=True)
REPORT = Decision(Action.REPORT)


def letter(reason: str, redo: bool = True, skip: bool = True) -> Decision:
    return Decision(Action.DEAD_LETTER, reason, redo=redo, skip=skip)


# (outcome, attempt, this run is a redo, max_attempts) -> decision
ATTEMPTS = [
    (Outcome.OK, 1, False, 3, ACCEPT),
    (Outcome.OK, 3, False, 3, ACCEPT),  # succeeded on its last retry (the raise already redoes)
    (Outcome.OK, 1, True, 3, ACCEPT),
    (Outcome.RAISED, 1, False, 3, RETRY),
    (Outcome.RAISED, 2, False, 3, RETRY),
    (Outcome.RAISED, 3, False, 3, letter("raised")),  # max_attempts in all
    (Outcome.RAISED, 1, False, 1, letter("raised")),  # no retries at all
    (Outcome.RAISED, 1, True, 3, letter("raised")),  # a redo retries nothing
    (Outcome.EMIT, 1, False, 3, letter("emit")),  # same values, same error: not retried
    (Outcome.EMIT, 2, False, 3, letter("emit")),
    (Outcome.ENCODE, 1, False, 3, letter("encode")),  # its other emits are in the run: redo
    (Outcome.ENCODE, 1, True, 3, letter("encode")),
    (Outcome.FAILED, 1, False, 3, letter("fail", redo=False, skip=False)),  # state is its own
    (Outcome.FAILED, 2, False, 3, letter("fail", redo=False, skip=False)),
    (Outcome.ARITY, 1, False, 3, letter("arity", redo=False, skip=False)),  # never processed
    (Outcome.ARITY, 1, True, 3, letter("arity", redo=False, skip=False)),
]


@pytest.mark.parametrize(("outcome", "attempt", "redo", "max_attempts", "decision"), ATTEMPTS)
def test_after_attempt(outcome: Outcome, attempt: int, redo: bool, max_attempts: int,
                       decision: Decision) -> None:
    assert RetryPolicy(max_attempts).after_attempt(outcome, attempt, redo) == decision


# (outcome of the flush, earlier runs whose flush raised, the failure names held tuples,
#  max_attempts) -> decision
FLUSHES = [
    (Outcome.OK, 0, True, 3, ACCEPT),
    (Outcome.RAISED, 0, False, 3, REPORT),  # a plain bolt's process_tick: only an error
    (Outcome.EMIT, 0, False, 3, REPORT),
    (Outcome.RAISED, 0, True, 3, RETRY),  # the whole member runs again
    (Outcome.RAISED, 1, True, 3, RETRY),
    (Outcome.RAISED, 2, True, 3, letter("raised")),  # its third run: the batch is dead-lettered
    (Outcome.RAISED, 0, True, 1, letter("raised")),
    (Outcome.EMIT, 0, True, 3, letter("emit")),  # not retried
]


@pytest.mark.parametrize(("outcome", "flush_attempt", "holds_batch", "max_attempts", "decision"),
                         FLUSHES)
def test_after_flush(outcome: Outcome, flush_attempt: int, holds_batch: bool, max_attempts: int,
                     decision: Decision) -> None:
    assert RetryPolicy(max_attempts).after_flush(outcome, flush_attempt, holds_batch) == decision


def test_every_outcome_but_ok_has_its_own_reason() -> None:
    reasons = {RetryPolicy(1).after_attempt(o, 1, False).reason for o in Outcome if o is not Outcome.OK}
    assert reasons == {"raised", "emit", "encode", "fail", "arity"}


def test_max_attempts_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1, got 0"):
        RetryPolicy(0)

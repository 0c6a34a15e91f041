"""What a batch engine does with a tuple whose attempt did not succeed: retry, redo, dead-letter.

The kernel (``kernel.py``) classifies every attempt into an ``Outcome``; this
policy turns an outcome into a ``Decision``, and nothing else: pure, so its
whole table is tested in the unit tier (``tests/test_retry_policy.py``). The
Spark task (``engines/spark/task/stage.py``) carries the decisions out. The
local engine has no policy: under Storm a raise kills the task and the spout
replays, which is what it reproduces.

The words:

- **retry**: run the same tuple again in the same member run, at most
  ``max_attempts`` attempts in all; the emits of a failed attempt are discarded.
- **redo**: the member's run is thrown away (its rows, fused queues and state
  map writes of this batch) and runs again from the state of txid-1, because a
  failed attempt may have changed the bolt's attributes before it raised. In a
  redo no tuple is retried: one that raises again is dead-lettered at once.
- **skip**: the redo skips the tuple (its dead letter from the run before is
  kept), so a dead-lettered tuple leaves no trace in state.
- **dead-letter** with a reason: the tuple goes to the dead-letter stream; the
  batch goes on without it. The reason is the outcome's value.

Retrying cannot change a deterministic outcome, so only ``RAISED`` is retried:
a tuple of the wrong arity, one that emitted the wrong arity or to an
undeclared stream, one whose emit cannot be encoded, one its bolt ``fail()``s
(Storm would replay it from the spout; a batch has no replay) is dead-lettered
at once. A flush (a BatchingBolt's tick) that raises consumed its batch, so its
retry is a redo of the whole member (``after_flush``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Action", "Decision", "Outcome", "RetryPolicy"]


class Outcome(enum.Enum):
    """One attempt at one tuple, as the kernel saw it; the value is the dead-letter reason."""

    OK = "ok"
    RAISED = "raised"  # process() raised
    EMIT = "emit"  # process() raised a TupleError: it emitted the wrong arity or to an undeclared stream
    ENCODE = "encode"  # the engine could not encode one of its emits
    FAILED = "fail"  # the bolt called fail() on it
    ARITY = "arity"  # the tuple could not be built: wrong number of values for its stream


class Action(enum.Enum):
    ACCEPT = "accept"  # nothing to do
    RETRY = "retry"  # attempt the tuple again (a flush: run the member again)
    DEAD_LETTER = "dead-letter"  # to the dead-letter stream with ``Decision.reason``
    REPORT = "report"  # a tick that raised with no tuple to blame: an error, counted


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str = ""  # the dead letter's reason (an ``Outcome`` value)
    redo: bool = False  # the member's run must be redone from the state of txid-1
    skip: bool = False  # that redo skips this tuple, keeping its dead letter


ACCEPT = Decision(Action.ACCEPT)
_RETRY = Decision(Action.RETRY, redo=True)
_REPORT = Decision(Action.REPORT)
_BY_OUTCOME = {  # what a final outcome does (after the retries of RAISED)
    Outcome.RAISED: Decision(Action.DEAD_LETTER, "raised", redo=True, skip=True),
    Outcome.EMIT: Decision(Action.DEAD_LETTER, "emit", redo=True, skip=True),
    # its other emits and its state changes are in this run already: redo without it
    Outcome.ENCODE: Decision(Action.DEAD_LETTER, "encode", redo=True, skip=True),
    # process() returned normally: its state changes are the tuple's own, nothing to undo
    Outcome.FAILED: Decision(Action.DEAD_LETTER, "fail"),
    Outcome.ARITY: Decision(Action.DEAD_LETTER, "arity"),  # never reached the bolt
}


@dataclass(frozen=True)
class RetryPolicy:
    """Retry / redo / dead-letter decisions for one member run (module doc)."""

    max_attempts: int = 3

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")

    def after_attempt(self, outcome: Outcome, attempt: int, redo: bool) -> Decision:
        """The decision after ``attempt`` (1 for the first) at one tuple in a member run;
        ``redo``: this run is a redo (no retries)."""
        if outcome is Outcome.OK:
            return ACCEPT
        if outcome is Outcome.RAISED and not redo and attempt < self.max_attempts:
            return _RETRY
        return _BY_OUTCOME[outcome]

    def after_flush(self, outcome: Outcome, flush_attempt: int, holds_batch: bool) -> Decision:
        """The decision after a tick or flush of a member raised (``RAISED`` or ``EMIT``);
        ``flush_attempt``: earlier runs of the member whose flush raised; ``holds_batch``:
        the failure names tuples the bolt held (a BatchingBolt's batch being flushed)."""
        if outcome is Outcome.OK:
            return ACCEPT
        if not holds_batch:  # a plain bolt's process_tick: no tuple to retry or dead-letter
            return _REPORT
        if outcome is Outcome.RAISED and flush_attempt + 1 < self.max_attempts:
            return _RETRY
        return _BY_OUTCOME[outcome]

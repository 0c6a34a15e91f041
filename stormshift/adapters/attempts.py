"""The runs of one member (a hosted bolt task) in one batch: a state machine with an explicit status.

A batch engine runs a member over its input; a run in which a tuple's attempt
failed and may have changed the bolt's attributes is *tainted* and thrown away
(a **redo**, ``retry_policy.py`` defines the words). This module decides, from
what each run reported, whether the member is done or runs again and with what:
the tuples to skip (those the run dead-lettered: ``poison``), whether the run
is a redo (no tuple is retried in a redo) and how many flushes were retried.
The engine keeps the effects (rows, fused queues, state writes): it drops them
when :meth:`MemberAttempts.finish` says ``REDO``.

Call order (any other raises :class:`AttemptOrderError`)::

    attempts = MemberAttempts("component 'count' task 0")
    for run in attempts.runs():          # READY/REDO -> RUNNING
        ...run the member with run.poison, run.redo, run.flush_attempt...
        attempts.finish(tainted, retry_flush, poison)   # RUNNING -> DONE | REDO

A redo must make progress: a tainted run that dead-lettered no new tuple (and
retried no flush) would loop forever, so it raises :class:`NoProgress`. The
number of runs is bounded by the member's tuples plus its flush retries.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AttemptOrderError", "AttemptStatus", "MemberAttempts", "NoProgress", "Run"]

Poison = Mapping[str, Any]  # tuple id -> what the engine keeps of its dead letter


class AttemptStatus(enum.Enum):
    READY = "ready"  # no run yet
    RUNNING = "running"  # a run is under way: finish() says how it ended
    REDO = "redo"  # the last run was tainted: its effects are dropped, the member runs again
    DONE = "done"  # the last run was clean: its effects stand


class AttemptOrderError(RuntimeError):
    """A call in the wrong status (an engine bug, never a user's)."""


class NoProgress(RuntimeError):
    """A redo that dead-lettered no new tuple: running it again would loop forever."""


@dataclass(frozen=True)
class Run:
    """What one run of the member starts with."""

    number: int  # 0 for the first run
    poison: dict[str, Any]  # tuples dead-lettered by earlier runs: skipped (a copy, the run's own)
    redo: bool  # an earlier run was thrown away: no tuple is retried in this one
    flush_attempt: int  # earlier runs whose flush raised and was retried


class MemberAttempts:
    """The runs of one member in one batch (module doc: words and call order)."""

    def __init__(self, member: str):
        self.member = member  # for messages: "component 'x' task 0"
        self.status = AttemptStatus.READY
        self.runs_started = 0
        self._poison: dict[str, Any] = {}
        self._redo = False
        self._flush_attempt = 0

    def _need(self, *allowed: AttemptStatus, call: str) -> None:
        if self.status not in allowed:
            raise AttemptOrderError(f"{self.member}: {call}() while {self.status.value} "
                                    f"(allowed: {', '.join(s.value for s in allowed)})")

    def start(self) -> Run:
        """The next run: READY or REDO -> RUNNING."""
        self._need(AttemptStatus.READY, AttemptStatus.REDO, call="start")
        self.status = AttemptStatus.RUNNING
        run = Run(self.runs_started, dict(self._poison), self._redo, self._flush_attempt)
        self.runs_started += 1
        return run

    def finish(self, tainted: bool, retry_flush: bool, poison: Poison) -> AttemptStatus:
        """How the run ended: ``tainted`` (a decision said redo), ``retry_flush`` (its flush
        raised and is retried), ``poison`` (the run's dead-lettered tuples, earlier ones
        included). RUNNING -> DONE, or REDO with the next run's poison and flags."""
        self._need(AttemptStatus.RUNNING, call="finish")
        if not tainted:
            self.status = AttemptStatus.DONE
            return self.status
        if retry_flush:
            self._flush_attempt += 1  # the same poison, one flush attempt more
        elif self._redo and poison.keys() == self._poison.keys():
            self.status = AttemptStatus.DONE  # refuse further calls: the member failed
            raise NoProgress(f"{self.member}: a redo found no new dead letter")
        self._poison, self._redo = dict(poison), True
        self.status = AttemptStatus.REDO
        return self.status

    def runs(self) -> Iterator[Run]:
        """:meth:`start` until a run finishes clean; each run must be :meth:`finish`\\ ed."""
        while self.status is not AttemptStatus.DONE:
            yield self.start()
            if self.status is AttemptStatus.RUNNING:
                raise AttemptOrderError(f"{self.member}: run {self.runs_started - 1} was not finished")

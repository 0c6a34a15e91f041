"""Poison tuples in a Spark stage task: how each one is dead-lettered (the decisions:
``adapters/retry_policy.py``).

Kept apart from ``stage.py`` (the per-tuple hot path) because none of this runs
for a good tuple.
"""

from __future__ import annotations

import traceback as tb
from typing import Any, NamedTuple

from stormshift.errors import TupleError
from stormshift.state.deadletter import plain

__all__ = ["PendingLetter", "drop_held", "encode_error", "format_trace", "held_tuples", "stage_dead_letter"]


class PendingLetter(NamedTuple):
    """One input tuple a stage task dead-lettered, held until its member's ``close`` writes
    it into the task's transaction (after the fenced snapshot), and kept with its reason in
    ``poison`` so a redo skips the tuple and keeps its letter. Written, it is a stored
    ``state.deadletter.DeadLetter`` (its error then a line of text, with an id and txid)."""

    stream: str
    values: Any  # plain values (``state.deadletter.plain``)
    error: BaseException
    trace: str
    reason: str  # the retry policy's reason (``adapters/retry_policy.py``)
    source: str  # the component that emitted the tuple
    tuple_id: str  # ``txid:task:n``: a re-run adds the letter once


def held_tuples(instance: Any) -> dict[str, Any]:
    """A BatchingBolt's tuples waiting for a flush, by id, in flush order."""
    return {t.id: t for batch in instance._batches.values() for t in batch}


def drop_held(instance: Any,
              poison: dict[str, tuple[str, PendingLetter]]) -> list[tuple[str, PendingLetter]]:
    """Take the dead-lettered tuples out of a restored BatchingBolt's batches (an earlier
    run's flush failed on them); returns their ``(reason, letter)`` entries."""
    dropped: list[tuple[str, PendingLetter]] = []
    for key, batch in list(instance._batches.items()):
        kept = [t for t in batch if t.id not in poison]
        dropped.extend(poison[t.id] for t in batch if t.id in poison)
        if kept:
            instance._batches[key] = kept
        else:
            del instance._batches[key]
    return dropped


def encode_error(component: str, exc: BaseException) -> TupleError:
    return TupleError(
        f"an emitted value cannot be encoded ({exc}); fix: emit JSON-like values "
        "(str, int, float, bool, None, bytes, lists, dicts)",
        component=component,
    )


def format_trace(error: BaseException) -> str:
    return "".join(tb.format_exception(error))


def stage_dead_letter(txn: Any, letter: PendingLetter) -> None:
    """One entry into the task's transaction, keyed by the tuple id (``txid:task:n``): a
    re-run of the batch adds nothing (``state/task_txn.py``)."""
    error = letter.error
    txn.dead_letter(letter.stream, plain(letter.values), f"{type(error).__name__}: {error}",
                    letter.trace or format_trace(error), source=letter.source,
                    tuple_key=letter.tuple_id, reason=letter.reason)

"""The tuple counters every record of a run carries, named and defined once: ``TupleCounts``.

A run is counted at three grains, each a record of its own: a Spark task's member in one
batch (``engines/spark/task/counters.py`` ``MemberStats``, what the task sends the driver),
a task over the run (``board.py`` ``TaskFigures``, what the endpoint and ``top`` show) and a
component over the run (``engines/summary.py`` ``ComponentStats``, the run summary). Each is
a ``TupleCounts`` plus what its grain adds, so these counters cannot drift apart in name or
meaning, and the board is fed from a task's record by ``COUNTERS``:

- ``tuples_in``: data tuples a bolt executed (ticks not counted);
- ``tuples_out``: tuples a component emitted (one per ``emit`` call, whatever the number
  of target tasks);
- ``acks`` / ``fails``: for a spout, the ``ack(msg_id)`` / ``fail(msg_id)`` calls it
  received; for a bolt, the input tuples it acked / failed;
- ``dead_lettered``: tuples sent to the dead-letter store.

The other counters (timeouts, replays, windows, ...) are one grain's own, defined where
that record is (the run summary's module doc holds the whole vocabulary). Here because the
metrics layer is below both engines: every record can derive from it, no arrow points up.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["COUNTERS", "TupleCounts"]


@dataclass(kw_only=True)
class TupleCounts:
    """The counters every record carries (module doc); keyword-only, so a record's own
    positional fields (its component, task, ...) come first in its constructor."""

    tuples_in: int = 0
    tuples_out: int = 0
    acks: int = 0
    fails: int = 0
    dead_lettered: int = 0


COUNTERS: tuple[str, ...] = tuple(f.name for f in fields(TupleCounts))
"""``TupleCounts``' names, in order: what ``Board.add`` takes and ``feed.py`` copies."""

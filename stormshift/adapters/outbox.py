"""What a hosted component sent, captured instead of the multilang pipe.

Every message pystorm would write to Storm lands here, in call order per
kind: ``emits`` (``Emit``), ``acks``/``fails`` (tuple ids), ``logs``
(``(level, msg)`` with level one of TRACE/DEBUG/INFO/WARN/ERROR),
``errors`` (reported exception texts), ``metrics`` (``(name, value)``)
and a count of ``syncs``. Engines ``drain()`` it after each call or batch.

Acks and fails of tick tuples are not recorded: Storm's acker never tracks
tick tuples, so there is nothing for an engine to do with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Targets = tuple[tuple[str, int], ...]


@dataclass(slots=True)
class Emit:
    """One emitted tuple.

    ``values`` is the wire form (a list of JSON-compatible values);
    ``targets`` the (consumer, task index) pairs it goes to; ``anchors`` the
    ids of the input tuples it is anchored to (bolts); ``msg_id`` the spout's
    tuple id (None for unreliable spout emits and for bolts).
    """

    stream: str
    values: list[Any]
    targets: Targets
    anchors: tuple[str, ...] = ()
    msg_id: Any | None = None


@dataclass(slots=True)
class Outbox:
    emits: list[Emit] = field(default_factory=list)
    acks: list[Any] = field(default_factory=list)
    fails: list[Any] = field(default_factory=list)
    logs: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    metrics: list[tuple[str, Any]] = field(default_factory=list)
    syncs: int = 0

    def drain(self) -> Outbox:
        """Return the current contents and start empty.

        The lists are emptied in place (not replaced), so fast-path closures
        that hold ``outbox.emits.append`` keep appending to the live outbox.
        """
        taken = Outbox(
            emits=self.emits[:],
            acks=self.acks[:],
            fails=self.fails[:],
            logs=self.logs[:],
            errors=self.errors[:],
            metrics=self.metrics[:],
            syncs=self.syncs,
        )
        self.emits.clear()
        self.acks.clear()
        self.fails.clear()
        self.logs.clear()
        self.errors.clear()
        self.metrics.clear()
        self.syncs = 0
        return taken

    def __bool__(self) -> bool:
        return bool(
            self.emits
            or self.acks
            or self.fails
            or self.logs
            or self.errors
            or self.metrics
            or self.syncs
        )

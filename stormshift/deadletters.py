"""The dead-letter desk: one public API to look at a namespace's dead letters and send them back.

Words (``state/deadletter.py`` holds the entries, ``state/redrive.py`` the queue):

- **dead letter**: an input tuple a bolt could not process (or a spout record
  that could not be decoded), with its reason, error, source and tuple id;
- **redrive**: after a fix, a dead letter is MOVED (each once, atomically) into
  the namespace's redrive stream; the next batch of ``stormshift run`` (Spark
  engine) *claims* the waiting entries and processes each exactly once, as if
  its source had emitted it again (``engines/spark/driver/redrive.py``);
- **refused**: an entry that cannot go back now, with why: a spout record
  (never a tuple), a batch not committed yet, or one that no longer fits the
  topology (component, fused stage, subscription or arity changed).

Why one desk: the ``stormshift deadletter`` command, scripts and tests need the
same three things -- list, what is queued, redrive with its refusals -- and
must not reach into the Spark driver's planning or the state layout for them.
The desk reads the topology graph only to judge refusals; listing needs none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stormshift.state.client import Redis
from stormshift.state.commit import CommitLog
from stormshift.state.deadletter import DeadLetter, DeadLetters
from stormshift.state.redrive import Redrive
from stormshift.topology.graph import TopologyGraph

__all__ = ["DeadLetter", "DeadLetterDesk", "Queued", "RedriveResult"]


@dataclass(frozen=True)
class Queued:
    """Entries moved for redrive: ``waiting`` for the next batch, and per uncommitted txid
    how many a batch already ``claimed``."""

    waiting: int
    claimed: dict[int, int]


@dataclass
class RedriveResult:
    """What :meth:`DeadLetterDesk.redrive` did: entry ids ``moved`` to the redrive stream,
    ids ``refused`` per reason (left in the dead-letter stream), ids asked for that are
    ``missing`` from it."""

    moved: list[str] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


class DeadLetterDesk:
    """The dead letters of namespace ``namespace`` on Redis client ``r``; ``graph`` (the
    topology, a ``TopologyGraph``) is needed only to judge and redrive entries."""

    def __init__(self, r: Redis, namespace: str, graph: TopologyGraph | None = None):
        self.r, self.namespace, self.graph = r, namespace, graph
        self._layout: Any = None

    def entries(self, component: str | None = None, limit: int | None = None) -> list[DeadLetter]:
        """Dead letters oldest first (of one component), at most ``limit``."""
        return DeadLetters(self.r, self.namespace).list(component=component, limit=limit)

    def queued(self) -> Queued:
        """What waits in the redrive stream, and what uncommitted batches claimed."""
        redrive = Redrive(self.r, self.namespace)
        return Queued(len(redrive.waiting()),
                      redrive.claimed(above=CommitLog(self.r, self.namespace).committed()))

    def refusal(self, letter: DeadLetter, committed: int | None = None) -> str | None:
        """Why ``letter`` cannot be redriven now (None: it can); ``committed`` defaults to the
        namespace's committed txid."""
        graph = self._need_graph()
        if committed is None:
            committed = CommitLog(self.r, self.namespace).committed()
        comp = graph.components.get(letter.component)
        if letter.reason == "decode" or (comp is not None and comp.is_spout) or (
                letter.reason == "value" and letter.txid == -1):
            return ("a spout record that is no tuple (undecodable, or values Storm cannot send) "
                    "cannot be redriven; fix the source data and append it to the source again")
        if letter.txid > committed:
            return (f"its batch (txid {letter.txid}) has not committed yet (committed: {committed}); "
                    "let the run finish first")
        from stormshift.engines.spark.driver.redrive import plan_redrive

        rejected = plan_redrive(self._layout_of(graph), [letter]).rejected
        return rejected[0][1] if rejected else None

    def redrive(self, ids: Iterable[str] = (), component: str | None = None) -> RedriveResult:
        """Move the dead letters that can go back (those with ``ids``, else all; of
        ``component``) to the redrive stream; the rest stay, with why."""
        wanted = set(ids)
        letters = self.entries(component=component)
        result = RedriveResult()
        if wanted:
            letters = [d for d in letters if d.id in wanted]
            result.missing = sorted(wanted - {d.id for d in letters})
        committed = CommitLog(self.r, self.namespace).committed()
        chosen: list[str] = []
        for d in letters:
            why = self.refusal(d, committed)
            if why is None:
                chosen.append(d.id)
            else:
                result.refused.setdefault(why, []).append(d.id)
        result.moved = list(Redrive(self.r, self.namespace).move(chosen))
        return result

    def _need_graph(self) -> Any:
        if self.graph is None:
            raise ValueError("DeadLetterDesk: judging or redriving dead letters needs the "
                             "topology: DeadLetterDesk(r, namespace, graph)")
        return self.graph

    def _layout_of(self, graph: TopologyGraph) -> Any:
        if self._layout is None:
            from stormshift.engines.spark.protocol.layout import Layout

            self._layout = Layout(graph)
        return self._layout


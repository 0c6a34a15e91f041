"""Where a hosted bolt task's emits go inside a Spark stage.

An emit is routed by the host's ``Router`` (so every engine picks the same
tasks); here its targets become one of three things:

- rows for consumer tasks in other stages: the packed values join those
  destinations' open chunks (``RowBuilder.add_emit``, which also gives the
  emit its seq);
- items in a fused consumer's in-process queue (same task index, no
  shuffle), merged into chunks of consecutive emits of one stream;
- a leaf emit (no consumer): the sink's, or only counted (a drop sink, or a stream
  the sink does not keep: ``SinkSpec.streams``).

``deliver`` is handed to the host's fast ``emit`` (``BoltHost.deliver_to``),
so a bolt's emit lands in the rows at once, without an ``Emit`` object and a
second pass. A class that defines its own ``emit`` still fills the outbox;
``dispatch`` sends those. A value msgpack cannot encode is never raised into
the user's code: the emit is dropped and its error kept in ``bad``; the stage
dead-letters the tuple and redoes the member (so the tuple's other emits and
its state changes are rewound, see ``stage.py``). A *keyed* fused consumer
(``protocol/layout.py``) gets the emit in process only when the router picked
the running task for it; any other pick is kept in ``misrouted`` (never cached
as a plan, so the check costs nothing per emit) and the stage fails the batch. Values are packed by
``engines/spark/dataplane/cwire.pyx`` where the install built it (the same bytes and errors as
msgpack's ``Packer``, which packs them otherwise).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from stormshift import native
from stormshift.engines.spark.protocol import rows as R
from stormshift.errors import KeyedFusionError

__all__ = ["MemberOutput"]

# A fused queue item: (source task id, stream code, consecutive value lists of that stream).
QueueItem = tuple[int, int, list[list[Any]]]
_CWIRE = native.load("stormshift.engines.spark.dataplane.cwire")  # its pack: msgpack's bytes, in C


class MemberOutput:
    """One member's output for one batch: ``deliver`` per emit, ``leaves`` for the sink;
    ``settle()`` once the member is done adds its emit counts to ``stats``."""

    def __init__(self, layout: Any, name: str, task: int, out: R.RowBuilder,
                 queues: dict[str, list[QueueItem]], keep_leaves: bool, stats: Any,
                 only: frozenset[str] | None = None):
        """``keep_leaves``: False for a drop sink; ``only``: the leaf streams kept (None: all)."""
        comp = layout.graph.component(name)
        self.task_id = comp.task_id(task)
        self.out, self.queues, self.stats = out, queues, stats
        self.first_task = {c.name: c.first_task_id for c in layout.graph}
        self.codes = {s: layout.stream_code[(name, s)] for s in comp.outputs}
        self.leaf_streams = frozenset(s for (c, s) in layout.leaf_streams if c == name)
        self.fused = frozenset(queues)
        self.name, self.task = name, task
        self.keyed = frozenset(c for c in queues if c in layout.keyed)
        # (consumer, task the router picked, stream, values) of emits a keyed consumer's
        # running task must not take: the stage fails the batch (``KeyedFusionError``)
        self.misrouted: list[tuple[str, int, str, list[Any]]] = []
        self.keep_leaves = keep_leaves  # a drop sink only counts leaf emits
        self.kept = frozenset(s for s in self.leaf_streams
                              if keep_leaves and (only is None or s in only))
        self.leaves: list[tuple[str, list[Any]]] = []
        self.bad: list[BaseException] = []  # encode errors since the stage last looked
        self.deliver = self._compile()

    def _compile(self) -> Callable[[str, list[Any], Any], None]:
        """The per-emit ``deliver``. Its counts are closure ints, not ``stats`` attributes
        (an attribute update per emit cost as much as the row write): ``settle`` adds them."""
        plans: dict[str, dict[Any, tuple[tuple[int, ...], tuple[str, ...], int]]] = {
            s: {} for s in self.codes
        }
        plan_for = self._plan
        pack = _CWIRE.pack if _CWIRE is not None else msgpack.Packer(use_bin_type=True).pack
        task_id, queues, out = self.task_id, self.queues, self.out
        write = out.writer(task_id)  # every emit with targets takes a seq there
        first_seq = out.emitted(task_id)
        stats, bad, misrouted = self.stats, self.bad, self.misrouted
        leaf_streams, kept, leaves = self.leaf_streams, self.kept, self.leaves
        leaf = 0  # emits on a leaf stream
        stray = 0  # emits without targets on a stream that has consumers (none today)

        if _CWIRE is not None:  # the same deliver in C (dataplane/cwire.pyx)
            return self._compile_c(plans, write, first_seq)

        def deliver(stream: str, values: list[Any], targets: Any) -> None:
            nonlocal leaf, stray
            if not targets:  # a leaf emit: the sink's (a drop sink only counts it)
                if stream in leaf_streams:
                    leaf += 1
                    if stream in kept:
                        leaves.append((stream, list(values)))
                else:
                    stray += 1
                return
            try:  # a subscript, not .get(): a method call costs more than the lookup here
                plan = plans[stream][targets]
            except KeyError:
                plan = plan_for(stream, targets, values)
                if not misrouted:  # a misrouting plan is never kept (module doc)
                    plans[stream][targets] = plan
            try:
                v = pack(values)
            except (TypeError, ValueError, OverflowError) as exc:
                bad.append(exc)
                return
            dests, fused, code = plan
            write(code, v, dests)  # the emit's seq even when all consumers are fused
            for consumer in fused:  # kept past the emit: a copy (the emit passes the user's list)
                q = queues[consumer]
                if q and q[-1][0] == task_id and q[-1][1] == code:
                    q[-1][2].append(list(values))
                else:
                    q.append((task_id, code, [list(values)]))

        def settle() -> None:
            nonlocal leaf, stray, first_seq
            now = out.emitted(task_id)
            stats.tuples_out += now - first_seq + leaf + stray
            stats.leaf += leaf
            leaf = stray = 0
            first_seq = now

        self.settle = settle
        return deliver

    def _compile_c(self, plans: dict[str, dict[Any, Any]], write: Any,
                   first_seq: int) -> Callable[[str, list[Any], Any], None]:
        """``_compile``'s ``deliver`` and ``settle`` with ``cwire.Deliver`` (its counts are
        C ints on the object)."""
        task_id, out, stats = self.task_id, self.out, self.stats
        c = _CWIRE.Deliver(plans, self._plan, self.misrouted, self.bad, self.leaf_streams,  # type: ignore[union-attr]
                           self.kept, self.leaves, self.queues, task_id, write)

        def settle() -> None:
            nonlocal first_seq
            now = out.emitted(task_id)
            stats.tuples_out += now - first_seq + c.leaf + c.stray
            stats.leaf += c.leaf
            c.leaf = c.stray = 0
            first_seq = now

        self.settle = settle
        return c  # type: ignore[no-any-return]

    def _plan(self, stream: str, targets: Any,
              values: Any = ()) -> tuple[tuple[int, ...], tuple[str, ...], int]:
        """``(global task ids of rows to other stages, fused consumers, stream code)``; a
        keyed consumer picked on another task than this one goes to ``misrouted``."""
        dests = tuple(self.first_task[c] + i for c, i in targets if c not in self.fused)
        fused = tuple(c for c, i in targets if c in self.fused
                      and (c not in self.keyed or i == self.task))
        self.misrouted.extend((c, i, stream, list(values)) for c, i in targets
                              if c in self.keyed and i != self.task)
        return dests, fused, self.codes[stream]

    def misrouted_error(self, txid: int) -> KeyedFusionError:
        """The batch's error for ``misrouted`` (one line: the bolt, the values, the fix)."""
        consumer, picked, stream, values = self.misrouted[0]
        return KeyedFusionError(
            f"{consumer!r} runs fused by key behind {self.name!r} (stormshift.fuse.keyed), but "
            f"{self.name!r} task {self.task} emitted {values!r} on stream {stream!r} in txid "
            f"{txid}, which the fields grouping sends to {consumer!r} task {picked}: the bolt "
            f"emits other keys than it is given ({len(self.misrouted)} such emits); fix: "
            f"remove {consumer!r} from stormshift.fuse.keyed")

    def dispatch(self, emits: list[Any]) -> None:
        """Send the outbox's emits (a class with its own ``emit``), then empty it."""
        deliver = self.deliver
        for e in emits:
            deliver(e.stream, e.values, e.targets)
        emits.clear()

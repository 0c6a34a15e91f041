"""Storm's acker: XOR ack trees, with timeouts on an injected clock.

How Storm tracks a spout tuple (and so how this module does):

- A spout emit with a ``msg_id`` starts a *tree* with a random 64-bit *root*
  id. Every delivery of a tuple to a task is an *edge* with its own random
  64-bit id. The tree's *ack value* starts as the XOR of the edge ids of the
  spout tuple's deliveries.
- When a bolt acks an input tuple, it sends ``edge id XOR (edge ids of every
  tuple it emitted anchored to that input)``. Each edge id therefore enters
  the ack value exactly twice (created, then acked) and the value is 0 exactly
  when every tuple of the tree has been acked: the tree is *complete* and the
  spout's ``ack(msg_id)`` is called.
- A bolt's ``fail`` on any tuple of the tree fails the whole tree
  (``spout.fail(msg_id)``); so does a tree still pending after
  ``topology.message.timeout.secs``. Acks and fails arriving for a tree that
  already completed, failed or timed out are ignored, as in Storm.

Deviation, on purpose: Storm checks timeouts by rotating buckets, so a tree
times out between T and 2T after its emit; here it times out at exactly T,
which makes runs on an injected clock exact.

``Acker`` is pure: time comes in as ``now_ms`` arguments, ids from the caller.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

__all__ = ["Acker", "Tree"]


@dataclass(slots=True)
class Tree:
    """One pending spout tuple: who emitted it and its running XOR."""

    root: int
    spout: str
    task_index: int
    msg_id: Any
    ack_val: int
    started_ms: int


class Acker:
    """Pending trees keyed by root id, in emit order (so expiry is a front scan).

    ``timeout_ms=None`` disables timeouts (``topology.enable.message.timeouts``
    false). ``pending(spout, task_index)`` is what ``topology.max.spout.pending``
    is compared against.
    """

    def __init__(self, timeout_ms: int | None) -> None:
        if timeout_ms is not None and timeout_ms <= 0:
            raise ValueError(f"message timeout must be positive, got {timeout_ms} ms")
        self.timeout_ms = timeout_ms
        self._trees: dict[int, Tree] = {}
        self._pending_per_task: dict[tuple[str, int], int] = {}

    def __len__(self) -> int:
        return len(self._trees)

    def pending(self, spout: str, task_index: int) -> int:
        return self._pending_per_task.get((spout, task_index), 0)

    def init(
        self, root: int, spout: str, task_index: int, msg_id: Hashable, xor_val: int, now_ms: int
    ) -> Tree | None:
        """Start a tree; returns it at once (complete) if it has no edges.

        Storm acks a spout tuple immediately when no task receives it.
        """
        if root in self._trees:
            raise ValueError(f"root id {root} is already pending (ids must be unique)")
        tree = Tree(root, spout, task_index, msg_id, xor_val, now_ms)
        if xor_val == 0:
            return tree
        self._trees[root] = tree
        key = (spout, task_index)
        self._pending_per_task[key] = self._pending_per_task.get(key, 0) + 1
        return None

    def ack(self, root: int, xor_val: int) -> Tree | None:
        """XOR an ack into a tree; returns the tree if that completed it."""
        tree = self._trees.get(root)
        if tree is None:
            return None
        tree.ack_val ^= xor_val
        if tree.ack_val != 0:
            return None
        return self._remove(root)

    def fail(self, root: int) -> Tree | None:
        """Fail a tree; returns it unless it was no longer pending."""
        if root not in self._trees:
            return None
        return self._remove(root)

    def expire(self, now_ms: int) -> list[Tree]:
        """Remove and return trees pending for ``timeout_ms`` or more, oldest first."""
        if self.timeout_ms is None:
            return []
        expired: list[Tree] = []
        while self._trees:
            tree = next(iter(self._trees.values()))
            if now_ms - tree.started_ms < self.timeout_ms:
                break
            expired.append(self._remove(tree.root))
        return expired

    def next_expiry_ms(self) -> int | None:
        """When the oldest pending tree times out (None if nothing can)."""
        if self.timeout_ms is None or not self._trees:
            return None
        return next(iter(self._trees.values())).started_ms + self.timeout_ms

    def forget_task(self, spout: str, task_index: int) -> list[Tree]:
        """Drop a crashed spout task's trees: its successor never hears of them."""
        dropped = [
            t for t in self._trees.values() if (t.spout, t.task_index) == (spout, task_index)
        ]
        for tree in dropped:
            self._remove(tree.root)
        return dropped

    def _remove(self, root: int) -> Tree:
        tree = self._trees.pop(root)
        key = (tree.spout, tree.task_index)
        self._pending_per_task[key] -= 1
        return tree

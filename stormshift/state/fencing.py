"""Zombie fencing: every task attempt takes a new epoch before it writes.

Words: an *attempt* is one execution of one task for one txid (a retry, a
speculative copy and a slow "zombie" are all attempts). Its *epoch* is a
number from a per-(namespace, component, task) counter that only grows and
never expires. ``acquire_epoch`` increments the counter and then copies the
new epoch into the fence of every key group; each write script compares its
epoch with its group's copy and refuses a smaller one (``FencedError``), and
refuses any txid at or below the committed one. Once ``acquire_epoch`` has
returned, nothing a predecessor sends can land.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stormshift.errors import FencedError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import retrying, run_scripts

__all__ = ["FencedError", "FencedWriter", "acquire_epoch", "current_epoch"]


@retrying
def _incr(r: Redis, namespace: str, field: str) -> int:
    return int(r.hincrby(K.epochs_key(namespace), field, 1))


def acquire_epoch(r: Redis, namespace: str, component: str, task_index: int) -> int:
    """A new epoch for one attempt of (component, task); fences out every older attempt."""
    K.check_name("namespace", namespace)
    field = K.who(component, task_index)
    epoch = _incr(r, namespace, field)
    run_scripts(
        r,
        [("fence_epoch", [K.fence_key(namespace, g)], [field, epoch]) for g in range(K.KEY_GROUPS)],
    )
    return epoch


def current_epoch(r: Redis, namespace: str, component: str, task_index: int) -> int:
    """The newest epoch handed out for a task (0 if none)."""
    v = r.hget(K.epochs_key(namespace), K.who(component, task_index))
    return int(v) if v is not None else 0


class FencedWriter:
    """Fenced single commands on keys owned by one task (write-ahead logs, sinks).

    Use ``key(suffix)`` for key names: they live in the slot of the task's
    fence, so the check and the command run in one script. Allowed commands:
    ``keys.FENCED_COMMANDS``.
    """

    def __init__(self, r: Redis, namespace: str, component: str, task_index: int, txid: int, epoch: int):
        self.r = r
        self.namespace = namespace
        self.component = component
        self.task_index = task_index
        self.txid = txid
        self.epoch = epoch
        self.fence_key = K.fence_key(namespace, K.task_group(component, task_index))
        self.who = K.who(component, task_index)

    def key(self, suffix: str) -> str:
        return K.task_key(self.namespace, self.component, self.task_index, suffix)

    def call(self, command: str, key: str, *args: Any) -> Any:
        """Run ``command key *args`` if this attempt still owns the task, else FencedError."""
        return self.call_many([(command, key, args)])[0]

    def call_many(self, commands: Sequence[tuple[str, str, Sequence[Any]]]) -> list[Any]:
        """Several fenced commands in one pipelined round trip."""
        calls = []
        for command, key, args in commands:
            cmd = command.upper()
            if cmd not in K.FENCED_COMMANDS:
                raise ValueError(f"FencedWriter: command {command!r} not allowed; use one of {K.FENCED_COMMANDS}")
            if not key.startswith(self.key("")):
                raise ValueError(f"FencedWriter: key {key!r} is not owned by this task; build it with .key()")
            calls.append(
                ("fenced_call", [self.fence_key, key], [self.epoch, self.txid, self.who, cmd, *args])
            )
        return run_scripts(self.r, calls)

"""Exactly-once state of a hosted bolt: restore as of txid-1, snapshot at txid.

A bolt task for batch *N* is a pure function of (its state committed at
*N-1*, its input of *N*). The state of an unchanged streamparse bolt is its
instance attributes (a word-count bolt's ``Counter``). For batch *N* a task:

1. takes a new epoch for (component, task) -- every older attempt is fenced;
2. reuses the live instance kept in this Python worker if it holds exactly
   the state of txid *N-1* written under epoch *e-1* (no other attempt ran
   in between), else builds a fresh instance, calls ``initialize()`` (so
   connections are re-made) and restores the attributes saved at the newest
   txid below *N*;
3. processes the batch;
4. snapshots its attributes at *N* under its epoch (a fenced write).

Attributes pystorm itself owns (pipes, locks, logger, conf, context) and
values that cannot be pickled are not state: they come from ``initialize()``.
Snapshots are per task: changing a component's ``par`` cannot re-split them
(``SnapshotStore.check_par`` refuses it with a clear error).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark import cloudpickle

from stormshift.adapters.attributes import FRAMEWORK_ATTRS

__all__ = ["FRAMEWORK_ATTRS", "CachedTask", "TaskCache", "config_of", "restore", "state_of"]

_NOT_STATE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType)


def state_of(instance: Any) -> dict[str, Any]:
    """The picklable user attributes of ``instance`` (its state), by name, sorted."""
    state: dict[str, Any] = {}
    for name in sorted(vars(instance)):
        if name in FRAMEWORK_ATTRS or name.startswith("_stormshift"):
            continue
        value = vars(instance)[name]
        if isinstance(value, _NOT_STATE) or callable(value) and not hasattr(value, "__dict__"):
            continue
        if _picklable(value):  # unpicklable means "re-made by initialize()"
            state[name] = value
    return state


def _picklable(value: Any) -> bool:
    try:
        cloudpickle.dumps(value)
    except Exception:  # noqa: BLE001 - any pickling error means "not state"
        return False
    return True


def config_of(graph: Any, comp: Any) -> str:
    """What a live instance was initialized with: a run with other config builds a new one."""
    return repr((sorted(graph.config.items()), sorted(comp.config.items()), comp.class_path))


def dump_state(instance: Any) -> bytes:
    return cloudpickle.dumps(state_of(instance))


def restore(instance: Any, payload: bytes | None) -> None:
    """Set the attributes of a snapshot on a freshly initialized instance."""
    if not payload:
        return
    import pickle

    for name, value in pickle.loads(payload).items():
        setattr(instance, name, value)


@dataclass
class CachedTask:
    host: Any
    txid: int  # the txid whose state the live instance holds
    epoch: int  # the epoch it was written under


class TaskCache:
    """Live hosted instances of this Python worker, keyed by (namespace, component, task,
    config): an instance initialized with other config is never reused."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str, int, str], CachedTask] = {}

    def take(self, key: tuple[str, str, int, str], txid: int, epoch: int) -> Any | None:
        """The live host if it holds state txid-1 from epoch-1 exactly, else None."""
        cached = self._tasks.pop(key, None)
        if cached is not None and cached.txid == txid - 1 and cached.epoch == epoch - 1:
            return cached.host
        return None

    def put(self, key: tuple[str, str, int, str], host: Any, txid: int, epoch: int) -> None:
        self._tasks[key] = CachedTask(host, txid, epoch)


def open_task(
    key: tuple[str, str, int, str],
    txid: int,
    epoch: int,
    cache: TaskCache,
    make_host: Callable[[], Any],
    load: Callable[[], bytes | None],
) -> tuple[Any, bool]:
    """Step 2 of the module doc: ``(host, reused)`` holding the state of txid-1."""
    host = cache.take(key, txid, epoch)
    if host is not None:
        return host, True
    host = make_host()
    host.open()
    restore(host.instance, load())
    return host, False

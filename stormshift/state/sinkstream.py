"""A ``redis:STREAM`` sink: the topology's leaf emits as entries of a Redis stream.

Both sides of its layout live here. Each entry is ``{component, stream, txid,
task, values}`` (``values`` as JSON). A task's entries of one txid go in with
its task transaction (``sink_call``, ``state/task_txn.py`` step 6), once: a
per-(txid, component, task) marker set in the same script makes a later
attempt of that txid add nothing. ``read_entries`` gives them back by id
(the live shadow reads a port's outputs so). The script checks the fence on
the namespace's records and sets the marker beside them, so on Redis Cluster
the stream must share their slot: name it with the namespace as hash tag
(``{NAMESPACE}:out``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import Call

__all__ = ["SinkEntry", "exists", "read_entries", "sink_call"]

SinkEntry = tuple[int, str, str, Any]  # (entry time ms, component, stream, values)


def sink_call(namespace: str, epoch: int, txid: int, component: str, task: int,
              stream_key: str, leaves: Sequence[tuple[str, Any]]) -> Call:
    """The fenced call adding a task's leaf emits of ``txid`` to ``stream_key`` once (pure)."""
    keys = [K.epochs_key(namespace), K.commit_key(namespace),
            K.sink_marker_key(namespace, txid, component, task), stream_key]
    args: list[Any] = [epoch, txid, K.who(component, task), component, task]
    for stream, values in leaves:
        args += [stream, json.dumps(values, default=str)]
    return ("sink_put", keys, args)


def exists(r: Redis, stream_key: str) -> bool:
    return bool(r.exists(stream_key))


def read_entries(r: Redis, stream_key: str, batch: int = 10_000) -> Iterator[SinkEntry]:
    """Every entry of the sink stream, oldest first, ``batch`` per round trip."""
    position = "-"
    while True:
        entries = r.xrange(stream_key, min=position, max="+", count=batch)
        if not entries:
            return
        for entry_id, fields in entries:
            f = {k.decode(): v.decode() for k, v in fields.items()}
            ms = int(entry_id.decode().partition("-")[0])
            yield ms, f.get("component", ""), f.get("stream", "default"), json.loads(f["values"])
        position = f"({entries[-1][0].decode()}"

"""The executor side of a spout host's socket: find (or start) the task's host, ask it for a chunk.

Runs in a Spark Python worker (the read, ``chunk_read.chunk_entries``); the host
process it talks to is ``../spouthost/spout_host.py`` (module doc there: who does what, and
why a host exists). What both ends share is at ``source/``: the wire
(``../host_wire.py``), the live instances' registry and the instance's own code
(``../live_registry.py``, ``../live_spout.py``).

Where: a Unix socket named after the task's live key (``live_registry``) in a
directory of the host's *owner* (the executor's Python daemon, whose workers all
share it: ``runtime/hosts.owner_pid``). The first read that finds none starts one
(``connect``: ``python -m`` ``HOST_MODULE``, detached).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from stormshift.engines.spark.records.chunks import ChunkHead, ChunkLog
from stormshift.engines.spark.runtime import hosts
from stormshift.engines.spark.runtime.hosts import owner_pid
from stormshift.engines.spark.runtime.worker import redis_for
from stormshift.engines.spark.source.host_wire import Conn
from stormshift.engines.spark.source.live_registry import SpoutNotDeterministic, live_key
from stormshift.errors import SpoutReadError, StormshiftError

__all__ = ["HOST_MODULE", "acks_to_host", "chunk_from_host", "connect", "host_dir", "socket_path",
           "stop_hosts"]

HOST_MODULE = "stormshift.engines.spark.source.spouthost.spout_host"  # what ``connect`` starts
START_WAIT_SECS = 60.0  # how long a worker waits for a host it started to listen


# ------------------------------------------------------------- where --------
def host_dir(owner: int) -> Path:
    return Path(tempfile.gettempdir()) / f"stormshift-spouts-{os.getuid()}" / str(owner)


def socket_path(opts: Any, task: int, owner: int) -> Path:
    name = hashlib.blake2b(repr(live_key(opts, task)).encode(), digest_size=10).hexdigest()
    return host_dir(owner) / f"{name}.sock"


# ------------------------------------------------------------- worker side -----
def _connect(path: Path) -> Conn | None:
    sock = hosts.dial(path)
    return None if sock is None else Conn(sock)


def connect(path: Path, owner: int) -> Conn:
    """The spout host at ``path``, started if none listens (``runtime/hosts.py``)."""
    return Conn(hosts.connect(path, owner, HOST_MODULE, "spout host", START_WAIT_SECS))


def chunk_from_host(opts: Any, task: int, number: int, limit: int, log: ChunkLog) -> list[Any]:
    """Chunk ``number``'s entries: emitted by the task's spout host, logged here (module doc)."""
    conn = connect(socket_path(opts, task, owner_pid()), owner_pid())
    try:
        try:
            conn.send({"op": "chunk", "options": opts.raw, "task": task, "number": number,
                       "limit": limit, "acked": log.acked()})
            reply = conn.recv()
        except OSError:
            reply = None
        if reply is None:
            raise SpoutReadError(f"spout {opts.spout!r} task {task}: its spout host died while "
                                 f"emitting chunk {number} (the retried read starts another)")
        if "error" in reply:
            kind = SpoutNotDeterministic if reply.get("kind") == "SpoutNotDeterministic" else StormshiftError
            raise kind(reply["error"])
        if reply.get("reread"):
            entries = None
        else:
            start, tuples, ended, digest, last_id = reply["head"]
            head = ChunkHead(start, tuples, ended, bytes(digest), last_id)
            entries = reply["entries"]
            done = False
            try:
                done = log.put(number, head, entries, reply["ids"])
            finally:
                with contextlib.suppress(OSError):  # a dead host settles against the log
                    conn.send({"op": "done", "logged": done})
            if done:
                return entries
        got = log.payload(number)
        if got is None:
            raise SpoutReadError(f"spout {opts.spout!r} task {task}: chunk {number} vanished")
        return got[0]
    finally:
        conn.close()


def acks_to_host(opts: Any, task: int) -> None:
    """A read with no chunk: the task's host, if one runs, acks the committed chunks."""
    conn = _connect(socket_path(opts, task, owner_pid()))
    if conn is None:
        return
    try:
        conn.send({"op": "acks", "options": opts.raw, "task": task,
                   "acked": ChunkLog(redis_for(opts.redis_url), opts.namespace, opts.spout, task).acked()})
        conn.recv()
    finally:
        conn.close()


def stop_hosts(owner: int) -> int:
    """Ask every host of ``owner`` to exit (tests, benches); how many were asked."""
    asked = 0
    for path in sorted(host_dir(owner).glob("*.sock")):
        conn = _connect(path)
        if conn is not None:
            conn.send({"op": "stop"})
            conn.recv(5.0)
            conn.close()
            asked += 1
    return asked

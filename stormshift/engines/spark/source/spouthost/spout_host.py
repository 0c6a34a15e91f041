"""A spout host: one long-lived process per executor host keeps a spout task's live instance.

Why: Spark gives task *i*'s read of chunk *k* to whichever Python worker is idle.
An instance kept in the worker (``../read/chunk_read.py``) is behind the log's head on
every other worker, which then re-runs the spout from ``initialize()`` to catch
up: the re-emits grow with the run (quadratic). A spout host holds the one live
instance of (namespace, spout task, wiring) for every worker of the executor, so
a read that lands on any worker finds an instance at the head.

Who does what (the read, ``chunk_read.chunk_entries``, is unchanged around it):

1. the worker takes the epoch and re-reads chunk *k* if it is logged;
2. else it asks the host (``host_client.chunk_from_host``): "chunk *k*, limit *n*, acks below
   *m*"; the host brings its instance to the log's head (it is only a cache: when
   its position is not the head it catches up exactly as a worker does, resume or
   replay + verify), drains the acks, runs ``next_tuple`` and answers the chunk;
3. the worker logs it (fenced, first writer wins) and tells the host ``done``;
   the host then *settles* the chunk (``settle``): its instance is at the head
   only if the log holds exactly what it emitted, else it is dropped (rebuilt by
   the next request). A worker that dies before ``done`` leaves the chunk
   *pending*; the next request settles it against the log first.

The host serves one connection at a time, so concurrent requests for a task
(a retry, a speculative or zombie attempt) are serialized, and it hands out a
chunk's emits once: a second request for a chunk the instance already passed
is told to re-read the log. Where it is found and how it is started is the
workers' side, ``../read/host_client.py`` (the frames: ``../host_wire.py``); it exits
when its owner is gone, when idle for ``IDLE_SECS``, or on ``stop``. Its live
instances are kept in ``live_registry.LIVE``, as a worker's are.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any, NamedTuple

from stormshift.engines.spark.records.chunks import ChunkHead, ChunkLog
from stormshift.engines.spark.runtime import hosts
from stormshift.engines.spark.runtime.worker import redis_for
from stormshift.engines.spark.source.host_wire import Conn
from stormshift.engines.spark.source.live_registry import LIVE, forget_live_spouts, live_key

__all__ = ["IDLE_SECS", "Pending", "next_step", "serve", "settle"]

IDLE_SECS = 600.0  # a host no read asked for this long exits
DONE_WAIT_SECS = 60.0  # how long a host waits for a worker's ``done`` before serving others


# ------------------------------------------------------------------ pure --------
class Pending(NamedTuple):
    """A chunk the host's instance emitted and handed out, not yet known to be logged."""

    number: int
    head: ChunkHead
    msg_ids: list[Any]


def settle(pending: Pending, logged: ChunkHead | None) -> bool:
    """Whether the instance that emitted ``pending`` is at the log's head after it: the log
    holds chunk ``pending.number`` with the same start, count and msg ids (a deterministic
    twin's write counts: the instance is where that writer was)."""
    return logged is not None and (logged.start, logged.tuples, logged.digest) == \
        (pending.head.start, pending.head.tuples, pending.head.digest)


def next_step(at: int | None, want: int, logged: bool) -> str:
    """What a request for chunk ``want`` does, the instance's next chunk being ``at`` (None:
    no instance) and ``logged`` whether chunk ``want`` is in the log: ``reread`` (the
    instance passed it: its emits are not handed out twice), else ``emit`` (the instance
    is built or caught up as needed, ``live_spout._at_head``)."""
    return "reread" if at is not None and at > want and logged else "emit"


# --------------------------------------------------------------- host side ------
class _Host:
    """The serving loop's state: the parsed options and the chunk handed out last."""

    def __init__(self) -> None:
        self.opts: Any = None
        self.raw: dict | None = None
        self.pending: tuple[Any, Pending] | None = None  # (live instance, its chunk)

    def _opts(self, raw: dict) -> Any:
        if raw != self.raw:
            from stormshift.engines.spark.runtime.worker import ensure_paths
            from stormshift.engines.spark.source.options import Opts

            self.opts, self.raw = Opts.parse(raw), raw
            ensure_paths(self.opts.graph)
        return self.opts

    def forget(self) -> None:
        """Drop every instance (a request failed half-way: where they stand is unknown)."""
        self.pending = None
        forget_live_spouts()

    def _settle(self, task: int, log: ChunkLog, logged: bool | None = None) -> None:
        """The pending chunk is logged as emitted (``logged``; None: ask the log): the
        instance goes back to the cache; else it is dropped."""
        from stormshift.engines.spark.source.live_spout import keep

        if self.pending is None:
            return
        live, p = self.pending
        self.pending = None
        if logged or (logged is None and settle(p, log.head(p.number))):
            keep(self.opts, task, live, p.number, p.msg_ids)

    def serve(self, conn: Conn) -> bool:
        """One connection's requests; False on ``stop``."""
        from stormshift.engines.spark.diagnostics import faults
        from stormshift.engines.spark.source.live_spout import emit_chunk

        msg = conn.recv(DONE_WAIT_SECS)
        if msg is None:
            return True
        if msg["op"] == "stop":
            conn.send({})
            return False
        opts, task = self._opts(msg["options"]), msg["task"]
        log = ChunkLog(redis_for(opts.redis_url), opts.namespace, opts.spout, task)
        self._settle(task, log)
        live = LIVE.get(live_key(opts, task))
        if msg["op"] == "acks":
            if live is not None:
                live.drain_acks(msg["acked"])
            conn.send({})
            return True
        number = msg["number"]
        at = None if live is None else live.number
        if next_step(at, number, at is not None and at > number and log.head(number) is not None) == "reread":
            conn.send({"reread": True})
            return True
        try:
            live, entries, msg_ids, head = emit_chunk(opts, task, number, msg["limit"], msg["acked"], log)
        except Exception as exc:  # noqa: BLE001 - the instance is dropped (emit_chunk); the read fails with it
            conn.send({"error": str(exc), "kind": type(exc).__name__})
            return True
        self.pending = (live, Pending(number, head, msg_ids))
        faults.hit("source.spout_host_emitted", spout=opts.spout, task=task, chunk=number)
        conn.send({"head": list(head), "entries": entries, "ids": msg_ids})
        done = conn.recv(DONE_WAIT_SECS)
        if done is not None:
            self._settle(task, log, True if done.get("logged") else None)
        return True


def serve(path: Path, owner: int) -> None:
    """Serve chunk requests at ``path`` until stopped, idle or the owner is gone."""
    host = _Host()

    def handle(sock: socket.socket) -> bool:
        try:
            return host.serve(Conn(sock))
        except Exception:  # noqa: BLE001 - a broken request (Redis down): forget, go on
            import traceback

            traceback.print_exc()
            host.forget()
            return True

    hosts.serve(path, owner, handle, IDLE_SECS)


def main(argv: list[str]) -> None:
    """``python -m ...spout_host PATH OWNER``: detach (the starter returns at once), serve."""
    path, owner, _ = hosts.detach(argv)
    serve(path, owner)


if __name__ == "__main__":
    main(sys.argv[1:])

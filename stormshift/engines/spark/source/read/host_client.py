"""The executor side of a spout host's socket: find (or start) the task's host, ask it for a chunk.

Runs in a Spark Python worker (the read, ``live_spout.chunk_entries``); the host
process it talks to is ``../spouthost/spout_host.py`` (module doc there: who does what, and
why a host exists). Split from it so that the read imports only this side, and
the host process imports the read's catch-up (``live_spout.emit_chunk``)
without a circle.

Where: a Unix socket named after the task's live key (``live_registry``) in a
directory of the host's *owner* (the executor's Python daemon, whose workers all
share it: ``owner_pid``). The first read that finds none starts one
(``connect``: ``python -m`` ``HOST_MODULE``, detached). Messages are msgpack
frames with a 4-byte length (``encode_frame``), the same both ways.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import tempfile
from pathlib import Path
from typing import Any

import msgpack

from stormshift.engines.spark.records.chunks import ChunkHead, ChunkLog
from stormshift.engines.spark.runtime import hosts
from stormshift.engines.spark.source.live_registry import SpoutNotDeterministic, live_key
from stormshift.errors import StormshiftError

__all__ = ["HOST_MODULE", "OWNER_ENV", "Conn", "acks_to_host", "chunk_from_host", "decode_frames",
           "encode_frame", "host_dir", "owner_pid", "redis_of", "socket_path", "stop_hosts"]

OWNER_ENV = "STORMSHIFT_SPOUT_OWNER"  # set by stormshift's worker daemon: its pid
HOST_MODULE = "stormshift.engines.spark.source.spouthost.spout_host"  # what ``connect`` starts
START_WAIT_SECS = 60.0  # how long a worker waits for a host it started to listen
_HEADER = struct.Struct(">I")


# ---------------------------------------------------------------- frames --------
def encode_frame(obj: Any) -> bytes:
    """One message: its msgpack length (4 bytes, big-endian), then the msgpack."""
    body = msgpack.packb(obj, use_bin_type=True, default=repr)
    return _HEADER.pack(len(body)) + body


def decode_frames(buf: bytes) -> tuple[list[Any], bytes]:
    """The whole messages at the start of ``buf``, and the bytes after them."""
    out, at = [], 0
    while len(buf) - at >= _HEADER.size:
        (size,) = _HEADER.unpack_from(buf, at)
        if len(buf) - at - _HEADER.size < size:
            break
        out.append(msgpack.unpackb(buf[at + _HEADER.size:at + _HEADER.size + size], raw=False,
                                   strict_map_key=False))
        at += _HEADER.size + size
    return out, buf[at:]


# ------------------------------------------------------------- where --------
def owner_pid() -> int:
    """The process whose life bounds the host's: stormshift's worker daemon (``OWNER_ENV``),
    else the parent of a Spark task's worker (pyspark's daemon), else this process."""
    if os.environ.get(OWNER_ENV, "").isdigit():
        return int(os.environ[OWNER_ENV])
    try:
        from pyspark import TaskContext

        if TaskContext.get() is not None:
            return os.getppid()
    except ImportError:
        pass
    return os.getpid()


def host_dir(owner: int) -> Path:
    return Path(tempfile.gettempdir()) / f"stormshift-spouts-{os.getuid()}" / str(owner)


def socket_path(opts: Any, task: int, owner: int) -> Path:
    name = hashlib.blake2b(repr(live_key(opts, task)).encode(), digest_size=10).hexdigest()
    return host_dir(owner) / f"{name}.sock"


# ------------------------------------------------------------- worker side -----
class Conn:
    """One end of a host connection: whole frames out, whole frames in."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buf, self.queue = sock, b"", []  # type: ignore[var-annotated]

    def send(self, obj: Any) -> None:
        self.sock.sendall(encode_frame(obj))

    def recv(self, timeout: float | None = None) -> Any:
        """The next message; None at end of stream or after ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        while not self.queue:
            try:
                data = self.sock.recv(1 << 20)
            except (TimeoutError, ConnectionError, OSError):
                return None
            if not data:
                return None
            got, self.buf = decode_frames(self.buf + data)
            self.queue += got
        return self.queue.pop(0)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


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
            raise StormshiftError(f"spout {opts.spout!r} task {task}: its spout host died while "
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
            raise StormshiftError(f"spout {opts.spout!r} task {task}: chunk {number} vanished")
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
                   "acked": ChunkLog(redis_of(opts), opts.namespace, opts.spout, task).acked()})
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


def redis_of(opts: Any) -> Any:
    """The Redis client of this process for the options' URL."""
    from stormshift.engines.spark.runtime.worker import redis_for

    return redis_for(opts.redis_url)

"""A spout host: one long-lived process per executor host keeps a spout task's live instance.

Why: Spark gives task *i*'s read of chunk *k* to whichever Python worker is idle.
An instance kept in the worker (``live_spout.py``) is behind the log's head on
every other worker, which then re-runs the spout from ``initialize()`` to catch
up: the re-emits grow with the run (quadratic). A spout host holds the one live
instance of (namespace, spout task, wiring) for every worker of the executor, so
a read that lands on any worker finds an instance at the head.

Who does what (the read, ``live_spout.chunk_entries``, is unchanged around it):

1. the worker takes the epoch and re-reads chunk *k* if it is logged;
2. else it asks the host (``chunk_from_host``): "chunk *k*, limit *n*, acks below
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
is told to re-read the log. It is found at a Unix socket named after the task
in a directory of its *owner* (the executor's Python daemon, whose workers all
share it: ``owner_pid``), started by the first read that finds none
(``connect``), and exits when its owner is gone, when idle for ``IDLE_SECS``, or
on ``stop``. Messages are msgpack frames with a 4-byte length (``encode_frame``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import msgpack

from stormshift.errors import StormshiftError
from stormshift.state.chunks import ChunkHead, ChunkLog

__all__ = ["IDLE_SECS", "OWNER_ENV", "Pending", "acks_to_host", "chunk_from_host", "decode_frames",
           "encode_frame", "host_dir", "next_step", "owner_pid", "settle", "socket_path", "stop_hosts"]

OWNER_ENV = "STORMSHIFT_SPOUT_OWNER"  # set by stormshift's worker daemon: its pid
IDLE_SECS = 600.0  # a host no read asked for this long exits
DONE_WAIT_SECS = 60.0  # how long a host waits for a worker's ``done`` before serving others
START_WAIT_SECS = 60.0  # how long a worker waits for a host it started to listen
_HEADER = struct.Struct(">I")


# ------------------------------------------------------------------ pure --------
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
    from stormshift.engines.spark.source.live_spout import _cache_key

    name = hashlib.blake2b(repr(_cache_key(opts, task)).encode(), digest_size=10).hexdigest()
    return host_dir(owner) / f"{name}.sock"


# ------------------------------------------------------------- worker side -----
class _Conn:
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


def _connect(path: Path) -> _Conn | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return _Conn(sock)


def connect(path: Path, owner: int) -> _Conn:
    """The host at ``path``, started (detached, in a session of its own) if none listens."""
    conn = _connect(path)
    if conn is not None:
        return conn
    _private_dir(path.parent.parent)  # a request carries a pickled graph: only this user's
    path.parent.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    with open(path.with_suffix(".log"), "ab") as err:
        subprocess.run([sys.executable, "-m", __name__, str(path), str(owner)], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                       start_new_session=True, check=True, timeout=START_WAIT_SECS)
    deadline = time.monotonic() + START_WAIT_SECS
    while time.monotonic() < deadline:
        conn = _connect(path)
        if conn is not None:
            return conn
        time.sleep(0.02)
    raise StormshiftError(f"the spout host at {path} did not start within {START_WAIT_SECS:g}s; "
                          f"see {path.with_suffix('.log')}")


def _private_dir(top: Path) -> None:
    top.mkdir(mode=0o700, exist_ok=True)
    st = top.lstat()
    if st.st_uid != os.getuid() or not top.is_dir() or top.is_symlink():
        raise StormshiftError(f"{top} is not a directory of this user's: cannot start spout hosts there "
                              "(remove it, or set TMPDIR)")
    if st.st_mode & 0o077:
        top.chmod(0o700)


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
            from stormshift.engines.spark.source.live_spout import SpoutNotDeterministic

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
                   "acked": ChunkLog(_redis(opts), opts.namespace, opts.spout, task).acked()})
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


def _redis(opts: Any) -> Any:
    from stormshift.engines.spark.runtime.worker import redis_for

    return redis_for(opts.redis_url)


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
        from stormshift.engines.spark.source.live_spout import forget_live_spouts

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

    def serve(self, conn: _Conn) -> bool:
        """One connection's requests; False on ``stop``."""
        from stormshift.engines.spark import faults
        from stormshift.engines.spark.source.live_spout import _LIVE, _cache_key, emit_chunk

        msg = conn.recv(DONE_WAIT_SECS)
        if msg is None:
            return True
        if msg["op"] == "stop":
            conn.send({})
            return False
        opts, task = self._opts(msg["options"]), msg["task"]
        log = ChunkLog(_redis(opts), opts.namespace, opts.spout, task)
        self._settle(task, log)
        live = _LIVE.get(_cache_key(opts, task))
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


def _owner_alive(owner: int) -> bool:
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve(path: Path, owner: int) -> None:
    """Listen at ``path`` (one host per path: a lock file), serve until stopped, idle or
    the owner is gone; then remove the socket."""
    lock = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 (held for the process's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another host serves this path
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    host, last = _Host(), time.monotonic()
    try:
        while _owner_alive(owner) and time.monotonic() - last < IDLE_SECS:
            ready, _, _ = select.select([server], [], [], 0.5)
            if not ready:
                continue
            sock, _ = server.accept()
            conn = _Conn(sock)
            try:
                if not host.serve(conn):
                    break
            except Exception:  # noqa: BLE001 - a broken request (Redis down): forget, go on
                import traceback

                traceback.print_exc()
                host.forget()
            finally:
                conn.close()
            last = time.monotonic()
    finally:
        for leftover in (path, path.with_suffix(".lock")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        server.close()
        log = path.with_suffix(".log")
        with contextlib.suppress(OSError):
            if log.stat().st_size == 0:
                log.unlink()
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # the owner's last host removes its directory


def main(argv: list[str]) -> None:
    """``python -m ...spout_host PATH OWNER``: detach (the starter returns at once), serve."""
    path, owner = Path(argv[0]), int(argv[1])
    if os.fork() > 0:
        os._exit(0)
    serve(path, owner)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Task hosts: long-lived processes, one per core slot, that keep bolt tasks' live instances.

Why: Spark hands a stage's task to whichever Python worker is idle. A live
instance kept in the worker (``taskstate.TaskCache``) is then current only
when the task lands on the worker that ran it last; on the other worker it is
restored from Redis (``pickle.loads`` of whole states: a windowed bolt's cost
grew with the run's age) or caught up. A task host holds the live instances of
the tasks assigned to its slot for every worker of the executor, so the batch
finds them current wherever Spark ran its task.

Who does what (one stage task; the protocol around it is unchanged):

1. the worker sorts the partition, finds its task (beacon) and counts the
   attempt (``stage.run_partition``), then sends the host of slot
   ``slot_of(task)`` the stage's pickled jobs, the task, the attempt number
   and the partition's rows (Arrow IPC);
2. the host runs the stage's members exactly as a worker would
   (``stage.run_task``: epochs, fencing, the one task transaction per member)
   with its own ``TaskCache`` -- the live instances stay in the host;
3. the host answers the error, or OK and then the output rows (an Arrow IPC
   stream, a few MiB per batch); the worker yields the rows as they arrive, or
   raises (Spark retries the task, which takes a new epoch).

A worker that dies while its host runs leaves the host to finish (its commit is
an ordinary attempt's, fenced by any retry's newer epoch: the retry's request
waits for the host, which serves one connection at a time). A host that dies
mid-batch loses nothing committed: the worker sees the connection close and
fails the attempt; the retry starts a new host, which restores from Redis
(counted ``restored``). Hosts are found at a Unix socket per slot in a private
directory of their *owner* (the executor's Python daemon, ``runtime/hosts.owner_pid``),
started by the first request that finds none, and exit when the owner is gone,
after ``IDLE_SECS`` without a request, or on ``stop``. Messages are pickles
with an 8-byte length: the socket is this user's only, as the spout hosts'.

On a cluster the host that runs a task is its *home* executor's, whichever executor
Spark gave the task to (``homes.py``): the worker sends the request there over TCP.

Options: ``-o stormshift.task_hosts=false`` runs tasks in the workers as before;
``-o stormshift.task_hosts.slots=N`` (default: Spark's default parallelism). The
assignment ``slot_of`` is a pure function of the global task id.
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import socket
import struct
import sys
import tempfile
import traceback
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from stormshift.engines.spark.runtime import hosts
from stormshift.engines.spark.task import homes as homes_mod
from stormshift.engines.spark.task.collector import task_collections
from stormshift.errors import FencedError, StormshiftError, TaskHostError

__all__ = ["ENABLED_KEY", "IDLE_SECS", "SLOTS_KEY", "TaskHostError", "host_dir", "jobs_of", "run_on_host",
           "slot_of", "slots_for", "socket_path", "stop_hosts"]

ENABLED_KEY = "stormshift.task_hosts"
SLOTS_KEY = "stormshift.task_hosts.slots"
IDLE_SECS = 600.0  # a host no task asked for this long exits
HOST_MODULE = "stormshift.engines.spark.task.task_host"  # what ``connect`` starts
START_WAIT_SECS = 60.0  # how long a worker waits for a host it started to listen
_HEADER = struct.Struct(">Q")
_OFF = {"false", "0", "no", "off"}


# ------------------------------------------------------------------ pure --------
def slots_for(config: Mapping[str, Any], cores: int) -> int:
    """How many task hosts an executor runs (0: none, tasks run in the workers)."""
    if str(config.get(ENABLED_KEY, True)).strip().lower() in _OFF:
        return 0
    raw = config.get(SLOTS_KEY)
    try:
        slots = int(raw) if raw is not None else int(cores)
    except (TypeError, ValueError):
        raise StormshiftError(f"-o {SLOTS_KEY}={raw!r}: expected a whole number of host slots "
                              "(or -o stormshift.task_hosts=false)") from None
    if slots < 1:
        raise StormshiftError(f"-o {SLOTS_KEY}={raw!r}: at least 1 (or -o {ENABLED_KEY}=false)")
    return slots


def slot_of(dest: int, slots: int) -> int:
    """The slot whose host owns global task ``dest``: consecutive tasks (a stage's, which
    Spark runs side by side) go to different hosts."""
    return dest % slots


def host_dir(owner: int) -> Path:
    return Path(tempfile.gettempdir()) / f"stormshift-tasks-{os.getuid()}" / str(owner)


def socket_path(slot: int, owner: int) -> Path:
    return host_dir(owner) / f"slot-{slot}.sock"


def _send(sock: socket.socket, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=5)
    sock.sendall(_HEADER.pack(len(data)))
    sock.sendall(data)


def _recv(sock: socket.socket) -> Any:
    """The next message, or None when the peer closed the connection (or died)."""
    try:
        head = hosts.recv_exact(sock, _HEADER.size)
        if head is None:
            return None
        (size,) = _HEADER.unpack(head)
        body = hosts.recv_exact(sock, size)
    except OSError:
        return None
    return None if body is None else pickle.loads(body)


def _send_rows(sock: socket.socket, batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> None:
    """Rows as an Arrow IPC stream straight onto the socket, a batch at a time: no copy of
    the whole table in a message (a task's rows would otherwise be held three times)."""
    with sock.makefile("wb") as out:
        with pa.ipc.new_stream(out, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
        out.flush()


def _recv_rows(sock: socket.socket) -> Iterator[pa.RecordBatch]:
    """The batches of the Arrow IPC stream that follows on ``sock`` (read as they come;
    nothing is sent after a stream on a connection, so the reader's read-ahead loses none)."""
    with sock.makefile("rb") as src:
        yield from pa.ipc.open_stream(src)


# ------------------------------------------------------------- worker side -----
_JOBS: dict[str, Any] = {}  # digest -> the stage jobs unpickled (this process's last few)


def jobs_of(digest: str, payload: bytes) -> Any:
    """The stage jobs pickled in ``payload`` (unpickled once per process and digest)."""
    jobs = _JOBS.get(digest)
    if jobs is None:
        if len(_JOBS) >= 16:
            _JOBS.clear()
        jobs = _JOBS[digest] = pickle.loads(payload)
    return jobs


def _connect(path: Path) -> socket.socket | None:
    return hosts.dial(path)


def connect(path: Path, owner: int, homes: bool = False) -> socket.socket:
    """The task host at ``path``, started if none listens (``runtime/hosts.py``); with
    ``homes`` a host started here also listens for other executors' workers (``homes.py``)."""
    extra = ("--homes", homes_mod.advertised_ip()) if homes else ()
    return hosts.connect(path, owner, HOST_MODULE, "task host", START_WAIT_SECS, TaskHostError,
                         extra)


def _home_or_local(job: Any, dest: int, path: Path, owner: int) -> tuple[socket.socket, str | None]:
    """A connection to the host that should run ``dest`` (``homes.py``): its home on another
    executor when that answers, else this executor's slot host; with the address to record
    as its home afterwards (None: nothing to record)."""
    from stormshift.engines.spark.runtime.worker import redis_for

    home = homes_mod.read_home(redis_for(job.redis_url), job.namespace, dest)
    mine = homes_mod.local_addr(path)
    if home is not None and home != mine:
        far = homes_mod.dial_home(home, job.home_key)
        if far is not None:
            return far, None
    sock = connect(path, owner, homes=True)
    mine = homes_mod.local_addr(path)  # read again: a host started just now has a new one
    return sock, (mine if mine is not None and mine != home else None)


def run_on_host(payload: bytes, digest: str, dest: int, job: Any, task: int, table: pa.Table,
                attempt: int) -> Iterator[pa.RecordBatch]:
    """Steps 1 and 3 of the module doc: the output rows of the stage task ``dest``, run
    by its slot's host, yielded as they arrive."""
    from stormshift.engines.spark.diagnostics import faults
    from stormshift.engines.spark.runtime.hosts import owner_pid

    owner = owner_pid()
    slot = slot_of(dest, job.task_hosts)
    where = f"{job.stage.head}:{task} (txid {job.txid})"
    died = (f"stage task {where}: its task host (slot {slot}) died while running it; "
            "Spark's retry starts another, which restores from Redis")
    path = socket_path(slot, owner)
    if job.home_key:
        sock, new_home = _home_or_local(job, dest, path, owner)
    else:
        sock, new_home = connect(path, owner), None
    try:
        try:
            _send(sock, {"op": "run", "digest": digest, "jobs": payload, "dest": dest,
                         "attempt": attempt, "key": job.home_key})
            _send_rows(sock, table.to_batches(), table.schema)
        except OSError:
            pass  # the reply is None: the host died
        faults.hit("task_host.sent", txid=job.txid, component=job.stage.head, task=task,
                   attempt=attempt, slot=slot)
        reply = _recv(sock)
        if reply is None:
            raise TaskHostError(died)
        if "error" in reply:
            kind = FencedError if reply["kind"] == "FencedError" else TaskHostError
            raise kind(f"stage task {where} on task host slot {slot}: {reply['kind']}: "
                       f"{reply['error']}\n{reply['trace']}")
        try:
            yield from _recv_rows(sock)
        except (OSError, pa.ArrowException) as exc:
            raise TaskHostError(f"{died} (while sending its rows: {exc})") from None
        if new_home is not None:  # its live instance is here now: later batches come here
            from stormshift.engines.spark.runtime.worker import redis_for

            homes_mod.write_home(redis_for(job.redis_url), job.namespace, dest, new_home)
    finally:
        sock.close()


def stop_hosts(owner: int) -> int:
    """Ask every task host of ``owner`` to exit (tests, benches); how many were asked."""
    asked = 0
    for path in sorted(host_dir(owner).glob("*.sock")):
        sock = _connect(path)
        if sock is not None:
            with contextlib.suppress(OSError):
                _send(sock, {"op": "stop"})
                sock.settimeout(5.0)
                _recv(sock)
            sock.close()
            asked += 1
    return asked


# --------------------------------------------------------------- host side ------
class _Host:
    """The serving loop (its live instances are ``stage``'s ``TaskCache``, in this process)."""

    def __init__(self) -> None:
        # the run keys this host's own executor's workers sent (``homes.py``): a worker of
        # another executor is admitted only when it proves one of these (newest first)
        self.keys: collections.deque[bytes] = collections.deque(maxlen=8)

    def admit(self, sock: socket.socket) -> bool:
        return bool(self.keys) and homes_mod.admit(sock, self.keys)

    def serve(self, sock: socket.socket) -> bool:
        """One request; False on ``stop``."""
        msg = _recv(sock)
        if msg is None:
            return True
        if msg["op"] == "stop":
            _send(sock, {})
            return False
        key = msg.get("key")
        if key and key not in self.keys:
            self.keys.appendleft(key)
        with task_collections():  # the young objects after the task, not the state (collector.py)
            self._serve_task(sock, msg)
        return True

    def _serve_task(self, sock: socket.socket, msg: dict[str, Any]) -> None:
        """Steps 2-3 of the module doc for one request (its rows, the run, the answer)."""
        from stormshift.engines.spark.protocol import rows as R

        try:
            with sock.makefile("rb") as src:  # the partition's rows, as the worker sent them
                table = pa.ipc.open_stream(src).read_all()
            out = self.run(msg, table)
            del table  # held no longer than the run: the rows go back while only ``out`` is held
        except Exception as exc:  # noqa: BLE001 - the worker raises it (Spark retries the task)
            with contextlib.suppress(OSError):  # a worker that died: its retry asks again
                _send(sock, {"error": str(exc), "kind": type(exc).__name__,
                             "trace": traceback.format_exc()})
            return
        with contextlib.suppress(OSError):
            _send(sock, {"ok": True})
            _send_rows(sock, out.batches(), R.SCHEMA)

    def run(self, msg: dict[str, Any], table: pa.Table) -> Any:
        """Step 2 of the module doc: the stage's members for task ``dest``, here; the
        ``RowBuilder`` of the rows they send on (streamed back only once all succeeded)."""
        from stormshift.engines.spark.diagnostics import faults
        from stormshift.engines.spark.diagnostics.profiling import profiled
        from stormshift.engines.spark.runtime.worker import ensure_paths, redis_for
        from stormshift.engines.spark.task.stage import run_task

        jobs = jobs_of(msg["digest"], msg["jobs"])
        layout = next(iter(jobs.values())).layout
        ensure_paths(layout.graph)
        name, task = layout.task_owner[msg["dest"]]
        job = jobs[layout.stage_of[name].head]
        faults.in_task(msg["attempt"], host=True)
        done: list[Any] = []

        def run() -> Iterator[None]:
            done.append(run_task(job, task, table, redis_for(job.redis_url)))
            yield None

        try:  # profiled as a worker's stage task is (``STORMSHIFT_PROFILE``), labelled host-
            for _ in profiled(f"host-{job.txid}-{job.stage.head}", run()):
                pass
            return done[0]
        finally:
            faults.in_task(None)


def serve(path: Path, owner: int, homes_ip: str | None = None) -> None:
    """Serve task requests at ``path`` until stopped, idle or the owner is gone; with
    ``homes_ip`` also other executors' workers, over TCP at that address (``homes.py``)."""
    host = _Host()

    def remote() -> tuple[socket.socket | None, Any]:
        try:
            far = homes_mod.listen(homes_ip or "")
        except OSError as exc:  # this executor's tasks then run where Spark puts them
            print(f"task host {path.name}: cannot listen for other executors at {homes_ip!r} "
                  f"({exc}); set SPARK_LOCAL_IP to this machine's address", file=sys.stderr)
            return None, None
        ip, port = far.getsockname()[:2]
        addr = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        tmp = path.with_suffix(".addr-new")
        tmp.write_text(addr)
        tmp.replace(path.with_suffix(".addr"))  # before the Unix socket: a worker reads it after
        return far, host.admit

    hosts.serve(path, owner, host.serve, IDLE_SECS, backlog=64,
                remote=remote if homes_ip else None)


def main(argv: list[str]) -> None:
    """``python -m ...task_host PATH OWNER [--homes IP]``: detach (the starter returns at
    once), serve."""
    path, owner, extra = hosts.detach(argv)
    serve(path, owner, extra[1] if extra[:1] == ["--homes"] and len(extra) > 1 else None)


if __name__ == "__main__":
    main(sys.argv[1:])

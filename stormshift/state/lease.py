"""One live run per namespace: the run lease in Redis, beside the state.

Two drivers on one namespace each acquire task epochs that fence the other's tasks
out, so both die; a ``--reset-state`` beside a live run wipes what it is about to
commit. So a run takes its namespace's *lease* (``keys.lease_key``; scripts in
``lua_lease.py``) before its JVM starts and before it acquires any epoch, keeps it
alive while it runs (each batch and on a timer: ``LeaseKeeper``), and releases it when
it ends. Words:

- *live*: held and renewed within its TTL (by the server's clock);
- *lapsed*: held but not renewed within its TTL: its driver died (SIGKILL, a lost
  host); the next start takes it over and says so. A holder on this host whose process
  has ended (``holder_alive``) is taken over at once: a killed driver restarted at once
  (a supervisor, the fault suite) need not wait out the TTL;
- *takeover*: ``run --takeover`` takes a live lease on purpose. The lease *epoch*
  grows by one at every acquisition; the commit record is written only by the holder
  of the current epoch (``CommitLog(lease=...)``), so the replaced driver, a zombie,
  cannot commit (Kafka's producer fencing). It sees the loss at its next renewal or
  batch, stops its query, marks the lease ``yielded`` and exits with its own reason;
- *stop request*: ``stormshift stop NS`` sets ``stop_ms``; the holder sees it at its
  next renewal and stops at a batch boundary as on SIGTERM.

Pure pieces (``LeaseHolder``, ``describe``) take ``now_ms``; I/O is the Redis client.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stormshift.errors import InfraError, LeaseHeldError, LeaseLostError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import TRANSIENT, retrying, run_scripts

__all__ = ["LeaseHolder", "LeaseKeeper", "ago", "describe", "holder_alive", "holder_of",
           "live_runs", "read_lease", "refusal", "refuse_if_live", "request_stop",
           "ttl_ms_default"]

log = logging.getLogger("stormshift.state.lease")
TTL_ENV = "STORMSHIFT_LEASE_TTL_SECS"
DEFAULT_TTL_MS = 20_000


def ttl_ms_default() -> int:
    """The lease TTL: ``$STORMSHIFT_LEASE_TTL_SECS`` (tests shorten it), else 20 s."""
    raw = os.environ.get(TTL_ENV)
    if not raw:
        return DEFAULT_TTL_MS
    try:
        return max(int(float(raw) * 1000), 1000)
    except ValueError:
        raise InfraError(f"{TTL_ENV}={raw!r} is not a number of seconds (e.g. 20)") from None


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _pairs(flat: Any) -> dict[str, str]:
    items = [_text(x) for x in (flat or [])]
    return dict(zip(items[::2], items[1::2], strict=False))


def _int(fields: dict[str, str], name: str) -> int:
    try:
        return int(fields.get(name, "0") or 0)
    except ValueError:
        return 0


@dataclass(frozen=True)
class LeaseHolder:
    """What a held lease names (times: the server's epoch ms)."""

    namespace: str
    epoch: int
    token: str
    host: str
    pid: int
    topology: str
    checkpoint: str
    started_ms: int
    renewed_ms: int
    expires_ms: int
    batches: int
    stop_ms: int

    pidns: str = ""  # the holder's pid namespace (``/proc/self/ns/pid``): pids compare within one
    pstart_ms: int = 0  # when the holder's process was created (its host's clock)

    @classmethod
    def from_fields(cls, namespace: str, fields: dict[str, str]) -> LeaseHolder | None:
        """None when nobody holds the lease (never taken, or released)."""
        if not fields.get("holder"):
            return None
        return cls(namespace, _int(fields, "epoch"), fields["holder"], fields.get("host", "?"),
                   _int(fields, "pid"), fields.get("topology", "?"), fields.get("checkpoint", "?"),
                   _int(fields, "started_ms"), _int(fields, "renewed_ms"),
                   _int(fields, "expires_ms"), _int(fields, "batches"), _int(fields, "stop_ms"),
                   fields.get("pidns", ""), _int(fields, "pstart_ms"))

    def live(self, now_ms: int) -> bool:
        return now_ms < self.expires_ms

    def to_dict(self, now_ms: int) -> dict[str, Any]:
        """``stormshift ps --json``: one run (no token: it is the holder's to write with)."""
        return {"namespace": self.namespace, "topology": self.topology, "host": self.host,
                "pid": self.pid, "started": _iso(self.started_ms), "checkpoint": self.checkpoint,
                "renewed_secs_ago": round(max(now_ms - self.renewed_ms, 0) / 1000, 1),
                "batches": self.batches, "lease_epoch": self.epoch, "live": self.live(now_ms),
                "stopping": bool(self.stop_ms)}


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def ago(ms: int) -> str:
    """``12 s``, ``4 min``, ``3 h``: how long ago, for one-line messages."""
    secs = max(ms, 0) // 1000
    if secs < 120:
        return f"{secs} s"
    if secs < 7200:
        return f"{secs // 60} min"
    return f"{secs // 3600} h"


def describe(holder: LeaseHolder, now_ms: int) -> str:
    """``topology 'x' on host h pid 1, started ... (2 min ago), checkpoint /ck``."""
    return (f"topology {holder.topology!r} on host {holder.host} pid {holder.pid}, started "
            f"{_iso(holder.started_ms)} ({ago(now_ms - holder.started_ms)} ago), checkpoint "
            f"{holder.checkpoint}")


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _process_start_ms() -> str:
    import psutil

    return str(int(psutil.Process().create_time() * 1000))


def holder_alive(holder: LeaseHolder) -> bool:
    """False only when the holder provably ended: same host and pid namespace, and its pid
    is gone or names a process created at another time than the holder (a reused pid)."""
    if holder.host != socket.gethostname() or holder.pidns != _pid_namespace() or holder.pid <= 0:
        return True
    import psutil

    try:
        process = psutil.Process(holder.pid)
        created_ms = int(process.create_time() * 1000)
        if process.status() == psutil.STATUS_ZOMBIE:  # killed, not yet reaped by its parent
            return False
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True
    return abs(created_ms - holder.pstart_ms) <= 10  # else the pid was reused


def holder_of(reply: Any, namespace: str) -> tuple[int, LeaseHolder | None]:
    """``(now_ms, holder)`` from a ``lease_read`` / ``lease_stop`` style reply."""
    *head, flat = reply
    return int(_text(head[-1])), LeaseHolder.from_fields(namespace, _pairs(flat))


def read_lease(r: Redis, namespace: str) -> tuple[int, LeaseHolder | None]:
    """The server's time and the lease's holder (None: nobody holds it)."""
    reply = run_scripts(r, [("lease_read", [K.lease_key(namespace)], [])])[0]
    return holder_of(reply, namespace)


def live_runs(r: Redis) -> Iterator[tuple[int, LeaseHolder]]:
    """Every held lease on the server (live or lapsed), by namespace."""
    names = sorted({p[0] for key in r.scan_iter(match=K.lease_pattern(), count=1000)
                    if (p := K.parse_key(_text(key))) is not None and p[1] is None})
    for ns in names:
        now_ms, holder = read_lease(r, ns)
        if holder is not None:
            yield now_ms, holder


def refusal(holder: LeaseHolder, now_ms: int, what: str) -> str:
    """The one line of a refused start: who runs, how to stop it."""
    fix = f"Stop it with `stormshift stop {holder.namespace}`"
    fix += (" (or use another --namespace; `run --takeover` replaces it)" if what.startswith("run")
            else " first")
    return (f"{what} refused: namespace {holder.namespace!r} has a live run "
            f"({describe(holder, now_ms)}); nothing was written. {fix}")


def refuse_if_live(r: Redis, namespace: str, what: str) -> None:
    """``LeaseHeldError`` while a run holds ``namespace`` (``state reset`` and the like)."""
    now_ms, holder = read_lease(r, namespace)
    if holder is not None and holder.live(now_ms):
        raise LeaseHeldError(refusal(holder, now_ms, what))


def request_stop(r: Redis, namespace: str) -> tuple[int, LeaseHolder | None, bool]:
    """Ask the live run of ``namespace`` to stop: ``(now_ms, holder, asked)``; ``asked`` is
    False when no run holds the lease or it lapsed (nothing was written then)."""
    reply = run_scripts(r, [("lease_stop", [K.lease_key(namespace)], [])])[0]
    now_ms, holder = holder_of(reply, namespace)
    return now_ms, holder, _text(reply[0]) == "ok"


class LeaseKeeper:
    """This run's lease: ``acquire`` before the JVM, ``start`` the renewal timer,
    ``renew`` each batch, ``check`` before a batch, ``release`` at the end (always).

    ``lost`` / ``stop_requested`` are what the driver's wait loop polls; ``say`` gets the
    one-line messages (a lapsed lease taken over, waiting for a replaced run)."""

    def __init__(self, r: Redis, namespace: str, *, topology: str, checkpoint: str,
                 takeover: bool = False, ttl_ms: int | None = None,
                 say: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.r, self.namespace, self.takeover = r, K.check_name("namespace", namespace), takeover
        self.topology, self.checkpoint = topology, checkpoint
        self.ttl_ms = ttl_ms or ttl_ms_default()
        self.say = say or (lambda _line: None)
        self.clock = clock
        self.token = uuid.uuid4().hex
        self.epoch = 0
        self.lost: str | None = None  # why the lease is no longer this run's
        self.stop_requested = False
        self.batches: int | None = None
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def key(self) -> str:
        return K.lease_key(self.namespace)

    # -- taking it ------------------------------------------------------------------
    def acquire(self, what: str = "run") -> None:
        """Take the lease or raise ``LeaseHeldError`` (nothing written). A lapsed lease, or
        one whose holder's process on this host has ended (a driver killed and restarted at
        once), is taken over with one line; ``takeover`` replaces a live one and waits (at
        most one TTL) for the replaced driver to say it stopped its query."""
        status, now_ms, before = self._acquire("1" if self.takeover else "0")
        if status == "live" and before is not None and not holder_alive(before):
            status, now_ms, before = self._acquire(f"gone:{before.token}")
        if status == "live":
            assert before is not None
            raise LeaseHeldError(refusal(before, now_ms, what))
        if status in ("lapsed", "gone") and before is not None:
            gone = " (its process has ended)" if status == "gone" else ""
            self.say(f"the previous run of namespace {self.namespace!r} (host {before.host}, pid "
                     f"{before.pid}) stopped renewing its lease {ago(now_ms - before.renewed_ms)} "
                     f"ago{gone}; taking over")
        elif status == "takeover" and before is not None:
            self.say(f"--takeover: replacing the live run of namespace {self.namespace!r} "
                     f"({describe(before, now_ms)}); it stops at its next lease renewal")
            self._wait_yield(before)

    def _acquire(self, mode: str) -> tuple[str, int, LeaseHolder | None]:
        info = ["host", socket.gethostname(), "pid", str(os.getpid()), "pidns", _pid_namespace(),
                "pstart_ms", _process_start_ms(),
                "checkpoint", self.checkpoint, "topology", self.topology]
        reply = run_scripts(self.r, [("lease_acquire", [self.key],
                                      [self.token, mode, self.ttl_ms, *info])])[0]
        status = _text(reply[0])
        if status != "live":
            self.epoch = int(_text(reply[1]))
        before = LeaseHolder.from_fields(self.namespace, _pairs(reply[3]))
        return status, int(_text(reply[2])), before

    def _wait_yield(self, before: LeaseHolder) -> None:
        """Wait for the replaced run to mark ``yielded`` (its query stopped): two queries on
        one checkpoint would clash. After one of its TTLs, go on: its commits are refused."""
        deadline = self.clock() + max(self.ttl_ms, before.expires_ms - before.renewed_ms) / 1000
        while self.clock() < deadline:
            if _yielded(self.r, self.key) == before.token or not holder_alive(before):
                self.say(f"the replaced run (pid {before.pid}) stopped")
                return
            time.sleep(0.2)
        self.say(f"the replaced run (host {before.host}, pid {before.pid}) did not confirm its "
                 "stop; going on (its commits are refused by the lease epoch)")

    # -- keeping it -----------------------------------------------------------------
    def renew(self, batches: int | None = None) -> bool:
        """Extend the lease; False (and ``lost`` set) when it is no longer this run's.
        A transient Redis error is not a loss: the timer tries again."""
        if self.lost:
            return False
        if batches is not None:
            self.batches = batches
        try:
            reply = run_scripts(self.r, [("lease_renew", [self.key],
                                          [self.token, self.epoch, self.ttl_ms,
                                           "" if self.batches is None else self.batches])])[0]
        except TRANSIENT:
            return True
        if _text(reply[0]) == "lost":
            now_ms, holder = holder_of(reply, self.namespace)
            self.lost = self._lost_text(holder, now_ms)
            return False
        if _text(reply[2]):
            self.stop_requested = True
        return True

    def _lost_text(self, holder: LeaseHolder | None, now_ms: int) -> str:
        by = f"by another run ({describe(holder, now_ms)})" if holder else "(released by another command)"
        return (f"namespace {self.namespace!r} was taken over {by}; this run stopped "
                "and committed nothing after that")

    def check(self) -> None:
        """Before a batch: ``LeaseLostError`` if the lease is no longer this run's."""
        if not self.renew():
            raise LeaseLostError(self.lost or "lease lost")

    def start(self) -> None:
        """Renew on a timer (a quarter of the TTL) until ``release``, so a slow batch
        keeps the lease and a stop request is seen between batches."""
        every = self.ttl_ms / 4000

        def loop() -> None:
            while not self._stopped.wait(every):
                try:
                    if not self.renew():
                        return
                except Exception as exc:  # noqa: BLE001 - a timer must not die of one bad reply
                    log.warning("lease of %s not renewed: %s", self.namespace, exc)

        self._thread = threading.Thread(target=loop, name=f"lease-{self.namespace}", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Give the lease back (a taken-over run marks ``yielded`` instead); never raises:
        a lease left behind lapses within its TTL."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not self.epoch:
            return
        try:
            _release(self.r, self.key, self.token, self.epoch)
        except Exception as exc:  # noqa: BLE001 - Redis gone at exit: the lease lapses by itself
            log.info("lease of %s not released (%s); it lapses in %d ms", self.namespace, exc,
                     self.ttl_ms)

    def commit_args(self) -> tuple[str, str, int]:
        """``(lease key, token, epoch)`` for the commit record's conditional write."""
        return self.key, self.token, self.epoch


@retrying
def _yielded(r: Redis, key: str) -> str:
    return _text(r.hget(key, "yielded") or b"")


@retrying
def _release(r: Redis, key: str, token: str, epoch: int) -> None:
    run_scripts(r, [("lease_release", [key], [token, epoch])])

"""A stateful task's home on a cluster: run it where its live instance is, not where Spark put it.

Why: a task host (``task_host.py``) keeps live instances for the workers of *its*
executor. On a cluster Spark hands task ``dest`` of a stage to whichever executor
has a free core (a shuffle's reduce tasks have no lasting locality), so without
this every batch that lands it on another executor than the last restores or
catches up there (``bench/cluster_adclicks.py`` counts them), and the two
executors' hosts each keep a copy of the state.

How: the executor whose host last ran ``dest`` is its *home*, a ``host:port`` in
one Redis hash per namespace. A worker given ``dest`` by Spark sends the request
to its home's slot host over TCP when that home is another executor's host; when
the home does not answer (its executor is gone) the worker's own executor's host
runs it and becomes the home (so state moves only after the executors change).
The request and answer are exactly the Unix-socket ones; fencing and the task
transaction do not depend on where a task runs.

The TCP listener of a host admits only a peer that proves the run's key (random,
made by the driver per run, shipped inside the stage jobs) and proves it back:
the messages are pickles. Off on a local master (one executor); ``-o
stormshift.task_hosts.homes=true|false`` decides otherwise.

Runs in: Spark's Python workers (``home_or_local``) and task hosts (``admit``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stormshift.engines.spark.runtime.hosts import recv_exact
from stormshift.errors import OptionError
from stormshift.state import keys as K
from stormshift.state.client import Redis

__all__ = ["HANDSHAKE_SECS", "HOMES_KEY", "admit", "advertised_ip", "dial_home", "home_key_for",
           "homes_key", "listen", "local_addr", "prove", "read_home", "write_home"]

HOMES_KEY = "stormshift.task_hosts.homes"
HANDSHAKE_SECS = 5.0  # a peer that has not proved the key by then is dropped
_NONCE = 32
_ON = {"true", "1", "yes", "on"}
_OFF = {"false", "0", "no", "off"}


# ------------------------------------------------------------------ pure --------
def home_key_for(config: Mapping[str, Any], master: str) -> bytes:
    """The run's key for reaching homes on other executors; empty (homes off) on a local
    master unless ``-o stormshift.task_hosts.homes=true``, or when that option is false."""
    raw = str(config.get(HOMES_KEY, "auto")).strip().lower()
    if raw in _OFF:
        return b""
    if raw not in _ON and raw != "auto":
        raise OptionError(f"-o {HOMES_KEY}={config.get(HOMES_KEY)!r}: expected true, false "
                          "or auto (auto: on for a cluster master, off for local[...])")
    if raw == "auto" and master.strip().startswith("local"):
        return b""
    return secrets.token_bytes(32)


def homes_key(namespace: str) -> str:
    """Hash global task id -> ``host:port`` of the task host holding its live instance."""
    return K.ns_key(namespace, "spark:homes")


def _mac(key: bytes, side: bytes, first: bytes, second: bytes) -> bytes:
    return hmac.new(key, side + first + second, hashlib.sha256).digest()


# ------------------------------------------------------------ handshake ---------
def _read(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes of the handshake; None if the peer closed, died or timed out."""
    try:
        got = recv_exact(sock, n)
    except OSError:
        return None
    return None if got is None else bytes(got)


def admit(sock: socket.socket, keys: Iterable[bytes]) -> bool:
    """Host side: True when the peer proved one of ``keys`` (which is proved back)."""
    sock.settimeout(HANDSHAKE_SECS)
    try:
        mine = secrets.token_bytes(_NONCE)
        sock.sendall(mine)
        got = _read(sock, _NONCE + 32)
        if got is None:
            return False
        theirs, mac = got[:_NONCE], got[_NONCE:]
        for key in keys:
            if hmac.compare_digest(mac, _mac(key, b"worker", mine, theirs)):
                sock.sendall(_mac(key, b"host", theirs, mine))
                sock.settimeout(None)
                return True
        return False
    except OSError:
        return False


def prove(sock: socket.socket, key: bytes) -> bool:
    """Worker side: prove ``key`` to the host and check that it knows it too."""
    theirs = _read(sock, _NONCE)
    if theirs is None:
        return False
    mine = secrets.token_bytes(_NONCE)
    try:
        sock.sendall(mine + _mac(key, b"worker", theirs, mine))
    except OSError:
        return False
    back = _read(sock, 32)
    return back is not None and hmac.compare_digest(back, _mac(key, b"host", mine, theirs))


# ------------------------------------------------------------- sockets ----------
def advertised_ip() -> str:
    """The address other executors reach this one at: Spark's ``SPARK_LOCAL_IP`` when set
    (a standalone worker started with one passes it on), else the host name's."""
    ip = os.environ.get("SPARK_LOCAL_IP", "").strip()
    if ip:
        return ip
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def listen(ip: str) -> socket.socket:
    """A TCP listener on ``ip`` at a port the system picks."""
    server = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
    server.bind((ip, 0))
    server.listen(64)
    return server


def _keepalive(sock: socket.socket) -> None:
    """A home whose machine vanishes (no reset) fails the task within ~30 s, not never."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 4)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def dial_home(addr: str, key: bytes) -> socket.socket | None:
    """A proved connection to the host at ``addr`` (``host:port``), or None when it does not
    answer or does not know the run's key (its executor is gone, or it is another run's)."""
    host, _, port = addr.rpartition(":")
    try:
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=HANDSHAKE_SECS)
    except (OSError, ValueError):
        return None
    # Connected: the host may be busy with other tasks before it takes this one, so the
    # proof waits as long as the host lives (a dead host resets the connection; a vanished
    # machine fails the keepalive), never a timeout that would move a task off its home.
    sock.settimeout(None)
    _keepalive(sock)
    if not prove(sock, key):
        sock.close()
        return None
    return sock


def local_addr(sock_path: Path) -> str | None:
    """The TCP address of the task host at ``sock_path`` (its ``.addr`` file), if it runs."""
    with contextlib.suppress(OSError):
        return sock_path.with_suffix(".addr").read_text().strip() or None
    return None


# --------------------------------------------------------------- registry -------
def read_home(r: Redis, namespace: str, dest: int) -> str | None:
    got = r.hget(homes_key(namespace), str(dest))
    return got.decode() if isinstance(got, bytes) else got


def write_home(r: Redis, namespace: str, dest: int, addr: str) -> None:
    r.hset(homes_key(namespace), str(dest), addr)

"""The life of a long-lived host process beside Spark's Python workers.

Spout hosts (``source/spouthost/spout_host.py``) and task hosts (``task/task_host.py``) are
the same kind of process: started detached by the first worker that needs one,
reached over a unix socket in a directory only this user can enter (requests
carry pickles), one per socket path (a lock file), gone when their owner (the
worker daemon) is gone, after an idle time, or when a request says stop. What
differs is only what a request does; that is the ``handle`` each host passes in.

Runs in: the Python worker (``connect``) and the host process (``serve``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from stormshift.errors import StormshiftError

__all__ = ["OWNER_ENV", "connect", "detach", "dial", "owner_alive", "owner_pid", "private_dir",
           "recv_exact", "serve"]

OWNER_ENV = "STORMSHIFT_SPOUT_OWNER"  # set by stormshift's worker daemon: its pid


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


def private_dir(top: Path, what: str) -> None:
    """``top``, made if missing, refused unless it is a real directory of this user's."""
    top.mkdir(mode=0o700, exist_ok=True)
    st = top.lstat()
    if st.st_uid != os.getuid() or not top.is_dir() or top.is_symlink():
        raise StormshiftError(f"{top} is not a directory of this user's: cannot start {what}s there "
                              "(remove it, or set TMPDIR)")
    if st.st_mode & 0o077:
        top.chmod(0o700)


def dial(path: Path) -> socket.socket | None:
    """A connection to the host at ``path``, or None if none listens."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def recv_exact(sock: socket.socket, n: int) -> bytearray | None:
    """The next ``n`` bytes from ``sock``; None if the peer closed first (OSError: it died)."""
    buf = bytearray(n)
    view, at = memoryview(buf), 0
    while at < n:
        got = sock.recv_into(view[at:], min(n - at, 1 << 22))
        if not got:
            return None
        at += got
    return buf


def connect(path: Path, owner: int, module: str, what: str, wait_secs: float,
            error: type[Exception] = StormshiftError, extra: tuple[str, ...] = ()) -> socket.socket:
    """The host at ``path``, started as ``python -m module PATH OWNER *extra`` (detached,
    in a session of its own) if none listens; ``error`` if it does not listen within
    ``wait_secs``."""
    sock = dial(path)
    if sock is not None:
        return sock
    private_dir(path.parent.parent, what)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    log_fd = os.open(path.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with open(log_fd, "ab") as err:  # the host's own log: its owner's only, as its dir
        subprocess.run([sys.executable, "-m", module, str(path), str(owner), *extra], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                       start_new_session=True, check=True, timeout=wait_secs)
    deadline = time.monotonic() + wait_secs
    while time.monotonic() < deadline:
        sock = dial(path)
        if sock is not None:
            return sock
        time.sleep(0.02)
    raise error(f"the {what} at {path} did not start within {wait_secs:g}s; "
                f"see {path.with_suffix('.log')}")


def detach(argv: list[str]) -> tuple[Path, int, list[str]]:
    """A host's ``python -m MODULE PATH OWNER [EXTRA...]``: ``(path, owner, extra)`` in a
    forked child, so the starter (``connect``'s ``subprocess.run``) returns at once."""
    path, owner = Path(argv[0]), int(argv[1])
    if os.fork() > 0:
        os._exit(0)
    return path, owner, argv[2:]


def owner_alive(owner: int) -> bool:
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


Remote = Callable[[], tuple[socket.socket | None, Callable[[socket.socket], bool] | None]]


def serve(path: Path, owner: int, handle: Callable[[socket.socket], bool], idle_secs: float,
          backlog: int = 16, remote: Remote | None = None) -> None:
    """Listen at ``path`` (one host per path: a lock file) and ``handle`` each connection
    (it closes nothing; False stops the host) until stopped, idle for ``idle_secs`` or
    the owner is gone; then remove the socket, the lock, its ``.addr``, an empty log and,
    for the owner's last host, its directory. ``remote()``, called once this process owns
    the path, gives a second listener (TCP) whose connections are handled once its
    ``admit`` says so."""
    lock = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 (held for the process's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another host serves this path
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    far, admit = remote() if remote is not None else (None, None)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(backlog)
    listeners = [server] if far is None else [server, far]
    last = time.monotonic()
    try:
        while owner_alive(owner) and time.monotonic() - last < idle_secs:
            ready, _, _ = select.select(listeners, [], [], 0.5)
            if not ready:
                continue
            listener = ready[0]
            sock, _ = listener.accept()
            try:
                if listener is far and admit is not None and not admit(sock):
                    continue
                if not handle(sock):
                    break
            finally:
                sock.close()
            last = time.monotonic()
    finally:
        if far is not None:
            far.close()
        for leftover in (path, path.with_suffix(".lock"), path.with_suffix(".addr")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        server.close()
        log = path.with_suffix(".log")
        with contextlib.suppress(OSError):
            if log.stat().st_size == 0:
                log.unlink()
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # the owner's last host removes its directory

"""Killing a host process in a test and knowing when it is really gone."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterable
from pathlib import Path


def exited(pid: int) -> bool:
    """``pid`` is reaped or a zombie. (Its command line empties earlier.)"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
        return True


def kill_and_wait(pids: list[int], sockets: Iterable[Path] = ()) -> None:
    """SIGKILL ``pids``; wait until each has exited and none of their Unix ``sockets``
    takes a connection any more (a dying listener still does for a moment after its
    process is a zombie: a reader connecting then gets no answer)."""
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    while not all(exited(pid) for pid in pids):
        time.sleep(0.01)
    for path in sockets:
        while _accepts(path):
            time.sleep(0.01)

"""Ports for the servers a test starts, kills and restarts (redis-server, tansu, Spark)."""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def server_port() -> int:
    """A free port below the kernel's ephemeral range, for a server a test kills and restarts.

    A port from ``bind(0)`` is an ephemeral one: between the pick and the server's bind, or
    between a kill and the restart on the same port, any outgoing connection (Spark's, the
    JVM's, redis-py's) may take it as its source port and the server cannot bind (seen in CI:
    "redis-server on port 36849 did not start"). Below the range no client is given it.
    """
    low, _ = _ephemeral_range()
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(20000, max(20001, min(low, 32768)))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    return free_port()

"""What every Python process running stormshift code for Spark shares: one Redis client
per URL (a connection pool per process, not per task) and the user's source dirs on
``sys.path`` (executors unpickle user classes by module name)."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["ensure_paths", "redis_for"]

_REDIS: dict[str, Any] = {}


def redis_for(url: str) -> Any:
    """This process's client for ``url`` (made on first use)."""
    client = _REDIS.get(url)
    if client is None:
        from stormshift.state.connection import connect

        client = _REDIS[url] = connect(url)
    return client


def ensure_paths(graph: Any) -> None:
    """Put the topology's source dirs on ``sys.path`` (first), if they are not there yet."""
    for d in reversed(graph.source_dirs):
        if d not in sys.path:
            sys.path.insert(0, d)

"""What every Python process running stormshift code for Spark shares: one Redis client
per URL (a connection pool per process, not per task) and the user's source dirs on
``sys.path`` (executors unpickle user classes by module name), placed as everywhere else
(``stormshift.topology.sources``)."""

from __future__ import annotations

from typing import Any

from stormshift.topology.sources import use_sources

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
    """Make the topology's source dirs the ones imports resolve to (``use_sources``)."""
    use_sources(graph.source_dirs)

"""A shadow run's sides write their own Redis, never the production one.

A bolt that writes to a Redis of its own (``self.r = redis.Redis(...)`` in ``initialize``,
``self.r.zincrby(...)`` in ``process``) hard-codes its target more often than not, so the
shadow cannot point each side elsewhere through config. Instead, while the graph's config
holds ``stormshift.shadow.scratch_redis`` (a ``unix://`` socket of a scratch server the shadow
started for that side), every redis-py connection pool created *by the project's own code* in
this process connects to the scratch server: whatever host, port, db or password the component
asked for. The project's code is told apart by the call stack at the pool's creation (a frame
in one of the graph's source directories); stormshift's own clients (state, spouts, sinks) are
created from its own modules and keep their target.

Both engines install it where they host components (the local engine's run; a Spark task, in
the worker or task host that runs it), so the same redirect holds on either side. The shadow
then reads each scratch server whole (``dump``) and compares the two key by key. Files
written by the project go to a scratch directory per side the same way (``external_files``),
and its HTTP and Kafka writes are recorded there instead of sent (``external_calls``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from stormshift.engines.external_calls import (
    SCRATCH_CALLS_KEY,
    dump_calls,
    from_project,
    record_calls,
    record_calls_for,
)
from stormshift.engines.external_files import (
    SCRATCH_FILES_KEY,
    dump_files,
    redirect_files,
    redirect_files_for,
)
from stormshift.topology.graph import TopologyGraph

__all__ = ["SCRATCH_CALLS_KEY", "SCRATCH_FILES_KEY", "SCRATCH_KEY", "dump", "dump_calls",
           "dump_files", "redirect", "redirect_for", "release"]

SCRATCH_KEY = "stormshift.shadow.scratch_redis"
_KEPT = ("decode_responses", "encoding", "encoding_errors", "socket_timeout",
         "socket_connect_timeout", "health_check_interval", "client_name", "max_connections",
         "retry_on_timeout")
_lock = threading.Lock()
_target: dict[str, Any] = {}  # "path": scratch socket, "roots": the project's directories
_original: list[Any] = []


def _scratch_kwargs(kwargs: dict[str, Any], path: str) -> dict[str, Any]:
    import redis

    kept = {k: v for k, v in kwargs.items() if k in _KEPT}
    return {**kept, "connection_class": redis.UnixDomainSocketConnection, "path": path, "db": 0}


def redirect(url: str | None, roots: Sequence[str] = ()) -> None:
    """From now on (``url``) or no longer (None), the project's redis-py pools in this process
    connect to the scratch server at ``url`` (``unix:///path``)."""
    import redis

    with _lock:
        if url is None:
            _target.clear()
            return
        parsed = urlparse(url)
        if parsed.scheme != "unix" or not parsed.path:
            raise ValueError(f"{SCRATCH_KEY}: {url!r} is not a unix:///path URL")
        _target.update(path=parsed.path, roots=tuple(
            os.path.realpath(r).rstrip(os.sep) + os.sep for r in roots if r))
        if _original:
            return
        pool = redis.connection.ConnectionPool
        original = pool.__init__
        _original.append(original)

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            target = dict(_target)
            if target and not args and from_project(target["roots"]):
                kwargs = _scratch_kwargs(kwargs, target["path"])
            original(self, *args, **kwargs)

        pool.__init__ = __init__  # type: ignore[method-assign]


def redirect_for(graph: TopologyGraph) -> bool:
    """``redirect`` as the graph's config says (its ``SCRATCH_KEY``), and the project's files
    and HTTP / Kafka writes likewise (``external_files``, ``external_calls``); whether any
    redirects."""
    files = redirect_files_for(graph)
    files = record_calls_for(graph) or files
    url = (graph.config or {}).get(SCRATCH_KEY)
    if not url:
        if _target:
            redirect(None)
        return files
    roots = [*getattr(graph, "source_dirs", ()), getattr(graph, "project_dir", None) or ""]
    redirect(url, [r for r in roots if r])
    return True


def release() -> None:
    """No redirect any more (Redis, files, calls): the end of a shadow side's run here."""
    redirect(None)
    redirect_files(None)
    record_calls(None)


def dump(client: Any) -> dict[str, Any]:
    """Every key of a (scratch) server with its value by type, as comparable plain data, a
    hash's fields and a sorted set's members each an entry of their own (``KEY[FIELD]``, so
    a difference names the member): strings as text or numbers, lists as lists, sets as
    sorted lists."""
    out: dict[str, Any] = {}
    for raw in sorted(client.scan_iter(count=1000)):
        key = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        kind = client.type(raw)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "string":
            value: Any = _text(client.get(raw))
        elif kind == "hash":
            for k, v in sorted(client.hgetall(raw).items()):
                out[f"{key}[{_text(k)}]"] = _number(_text(v))
            continue
        elif kind == "zset":
            for m, score in client.zrange(raw, 0, -1, withscores=True):
                out[f"{key}[{_text(m)}]"] = score
            continue
        elif kind == "list":
            value = [_text(v) for v in client.lrange(raw, 0, -1)]
        elif kind == "set":
            value = sorted(_text(v) for v in client.smembers(raw))
        else:
            value = f"<{kind}>"
        out[key] = _number(value) if isinstance(value, str) else value
    return out


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _number(value: Any) -> Any:
    """A counter stored as text reads as the number it is (INCR, HINCRBY)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return value
    return value

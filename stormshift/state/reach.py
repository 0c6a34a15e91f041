"""Reaching the state server before anything runs: one line that says what is wrong.

Every command that touches Redis (``run``, ``top``, ``plan``, ``state ...``,
``deadletter ...``, ``shadow``) calls ``reach`` first, after ``url.py`` checked the URL's
shape. It asks the server one short question (``PING``, ``INFO cluster``)
with a few seconds' timeout and no retries, so an unreachable server, a wrong
password, a database index the server does not have or a Redis Cluster node
behind a ``redis://`` URL is reported at once as ``InfraError`` (exit 2) naming the
URL (password masked) and the fix -- not after 30 s of retries, a JVM start and a
Spark stack trace. ``state_here`` answers the question the reading commands ask
first: is there any state to read here (without starting an embedded Redis)?
``describe`` words a Redis error met later the same way (the CLI's last resort).
"""

from __future__ import annotations

import os
from typing import Any

from redis import exceptions as rex

from stormshift.errors import InfraError
from stormshift.private import mask_text, mask_url
from stormshift.state.url import check_url

__all__ = ["EMBEDDED_FILES", "configured_url", "describe", "embedded_dir", "mask_url", "reach",
           "state_here", "where"]

#: what an embedded server leaves in its directory once it has held state
EMBEDDED_FILES = ("state.rdb", "appendonly.aof", "appendonlydir")
PREFLIGHT_TIMEOUT_SECS = float(os.environ.get("STORMSHIFT_REDIS_PREFLIGHT_SECS", "5"))


def configured_url(url: str | None) -> str | None:
    """The URL a command will use: ``--redis``, else the environment, else None (embedded)."""
    return (url or os.environ.get("STORMSHIFT_REDIS") or os.environ.get("STORMSHIFT_REDIS_URL")
            or os.environ.get("REDIS_URL")) or None


def embedded_dir() -> str:
    """Where the embedded server keeps its files (``STORMSHIFT_STATE_DIR``, ``./.stormshift``)."""
    return os.environ.get("STORMSHIFT_STATE_DIR", os.path.join(os.getcwd(), ".stormshift"))


def where(url: str | None) -> str:
    """How messages name the server: its masked URL, or the embedded server's directory."""
    url = configured_url(url)
    return mask_url(url) if url else f"the embedded Redis in {embedded_dir()}"


def state_here(url: str | None) -> bool:
    """False when no URL is configured and the embedded directory holds no server files:
    there is no state to read here, and none should be created by looking."""
    if configured_url(url):
        return True
    directory = embedded_dir()
    return any(os.path.exists(os.path.join(directory, name)) for name in EMBEDDED_FILES)


def describe(exc: BaseException, url: str | None) -> str:
    """One line naming what ``exc`` (a Redis error) means for the server at ``url``
    (None: the configured one) and the fix; never the password."""
    url = configured_url(url)
    return _diagnose(exc, where(url), url or "")


def _diagnose(exc: BaseException, shown: str, url: str) -> str:
    """One line naming what ``exc`` means for the server at ``shown`` and the fix."""
    text = mask_text(" ".join(str(exc).split()).rstrip("."))
    if "without any password configured" in text or "no password is set" in text:
        return (f"Redis at {shown} has no password, but the URL gives one ({text}). Fix: "
                "drop the password from the URL (redis://host:port/db), or set the server's "
                "requirepass")
    if isinstance(exc, rex.AuthenticationError) or "NOAUTH" in text or "WRONGPASS" in text:
        return (f"Redis at {shown} refused the credentials ({text}). Fix: put the right user "
                "name and password in the --redis URL (or STORMSHIFT_REDIS)")
    if "DB index is out of range" in text:
        db = url.rstrip("/").rsplit("/", 1)[-1].split("?")[0]
        return (f"Redis at {shown} has no database {db} ({text}). Fix: use a database index "
                "the server has (0-15 on a default server), e.g. redis://host:6379/0")
    if "Cluster mode is not enabled" in text or "cluster support disabled" in text.lower():
        return (f"Redis at {shown} is not a Redis Cluster node ({text}). Fix: use redis://host:"
                "port/db for a single server (redis+cluster:// is for a cluster)")
    if isinstance(exc, (rex.ConnectionError, rex.TimeoutError, OSError)):
        return (f"cannot reach Redis at {shown} ({text}). Fix: start the server, or pass the "
                "right --redis URL (or STORMSHIFT_REDIS); without either an embedded Redis is used")
    return (f"Redis at {shown} cannot be used ({type(exc).__name__}: {text}). Fix: check the "
            "server and the --redis URL (or STORMSHIFT_REDIS)")


def reach(url: str | None) -> None:
    """Raise InfraError (one line, with the fix) unless the server at ``url`` answers.

    No URL means the embedded server, which the command starts itself: nothing to check.
    """
    url = configured_url(url)
    if not url:
        return
    check_url(url)
    shown = mask_url(url)
    timeouts = {"socket_connect_timeout": PREFLIGHT_TIMEOUT_SECS,
                "socket_timeout": PREFLIGHT_TIMEOUT_SECS}
    client: Any = None
    try:
        if "+cluster://" in url:
            from redis.cluster import RedisCluster

            client = RedisCluster.from_url(url.replace("+cluster", "", 1), **timeouts)
            client.ping()
            return
        import redis

        client = redis.Redis.from_url(url, retry=None, **timeouts)
        client.ping()
        info = client.info("cluster")
    except (rex.RedisError, rex.RedisClusterException, OSError, ValueError) as exc:
        raise InfraError(_diagnose(exc, shown, url)) from None
    finally:
        if client is not None:
            client.close()
    if info.get("cluster_enabled"):
        raise InfraError(
            f"Redis at {shown} is a Redis Cluster node; a redis:// URL would reach one node "
            "only. Fix: use redis+cluster://host:port (every key stormshift writes carries a "
            "hash tag, so the layout works on a cluster)")

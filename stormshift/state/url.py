"""What a Redis URL may look like, checked before anything connects.

redis-py takes some broken URLs silently and trips on others deep inside a command:
``redis://h:6379/x`` runs on database 0, ``redis://:6379/0`` on localhost,
``redis://h:0/0`` on port 6379, while ``redis://h:99999/0`` or ``redis://h:abc/0``
raise a bare ``ValueError`` from ``urllib`` at the first call -- a traceback, and
for ``stormshift run`` after the JVM started. ``check_url`` refuses every shape the
state can not be meant to live at as ``InfraError``: one line naming the URL (its
password masked), what is wrong and the fix; the CLI turns that into exit 2.
Pure (no I/O): the CLI calls it while it parses ``--redis``, before a command runs.

Accepted: ``redis://[user:password@]host[:port][/db]``, ``rediss://`` (TLS) the
same, ``unix:///path/to.sock[?db=N]``, ``redis+cluster://host[:port]`` and
``rediss+cluster://`` (a cluster has database 0 only).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from stormshift.errors import InfraError
from stormshift.private import mask_url

__all__ = ["SCHEMES", "check_url"]

SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")
_EXAMPLE = "redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0"


def _refuse(url: str, what: str, fix: str = f"write it as {_EXAMPLE}") -> InfraError:
    return InfraError(f"Redis URL {mask_url(url)!r}: {what}. Fix: {fix}")


def check_url(url: str) -> str:
    """``url`` when it is a Redis URL stormshift can use; else InfraError (module doc)."""
    scheme, sep, _rest = url.partition("://")
    if not sep:
        raise _refuse(url, "not a URL (no scheme://)")
    if scheme.lower() not in SCHEMES:
        raise _refuse(url, f"unknown scheme {scheme + '://'!r}",
                      "use redis://, rediss:// (TLS), unix:// or redis+cluster://")
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. "Invalid IPv6 URL": urllib's words, no secret in them
        raise _refuse(url, f"cannot be parsed ({exc})") from None
    query = parse_qs(parts.query)
    if scheme.lower() == "unix":
        if not parts.path:
            raise _refuse(url, "names no socket path", "unix:///path/to/redis.sock?db=0")
        _check_db(url, (query.get("db") or ["0"])[-1], cluster=False,
                  fix="give the database as ?db=N, e.g. unix:///path/to/redis.sock?db=0")
        return _redis_py_takes(url)
    if "@" in parts.path + parts.query + parts.fragment:
        raise _refuse(url, "its password holds '/', '?' or '#', which end the host part",
                      "percent-encode them in the password (%2F, %3F, %23)")
    if not parts.hostname:
        raise _refuse(url, "names no host")
    try:
        port = parts.port
    except ValueError:
        port_text = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        what = (f"port {port_text!r} is not a number" if not port_text.isdigit()
                else f"port {port_text} is out of range (1-65535)")
        raise _refuse(url, what, f"give a port from 1 to 65535 ({_EXAMPLE})") from None
    if port == 0:
        raise _refuse(url, "port 0 is out of range (1-65535)",
                      f"give a port from 1 to 65535 ({_EXAMPLE})")
    db = parts.path.strip("/") or (query.get("db") or ["0"])[-1]
    _check_db(url, db, cluster="+cluster" in scheme.lower())
    return _redis_py_takes(url)


def _redis_py_takes(url: str) -> str:
    """``url`` when redis-py's own parser takes its options (``?socket_timeout=abc``, an
    unknown ``ssl_cert_reqs``... are refused here, not at the first command)."""
    from redis.connection import parse_url

    try:
        parse_url(url.replace("+cluster", "", 1))
    except ValueError as exc:
        raise _refuse(url, f"an option cannot be used ({str(exc).rstrip('.')})",
                      "correct or drop the option after '?'") from None
    return url


def _check_db(url: str, db: str, *, cluster: bool,
              fix: str = f"end the URL with the database index, e.g. /0 ({_EXAMPLE})") -> None:
    """The database part: a whole number >= 0 (0 only on a cluster)."""
    if not db.isdigit():
        raise _refuse(url, f"database {db!r} is not a whole number >= 0", fix)
    if cluster and int(db) != 0:
        raise _refuse(url, f"database {db} on a Redis Cluster (a cluster has database 0 only)",
                      "drop the database part: redis+cluster://HOST:PORT")

"""Riding through a Redis outage: one policy for every process, two lines, one bound.

Why one policy: a run touches Redis from the driver (commit, per-batch records,
watermarks, metrics), the planner (write-ahead log, chunk plans), executors (chunk
and WAL reads), task hosts and spout hosts (state, snapshots, fencing). A phase
left out of the retry turned a Redis restart into a failed run with a page of
stack traces, while the phases next to it rode the same outage through. So the
policy lives in the client itself: ``connect`` gives every client an
``OutageRetry`` (redis-py's ``Retry`` hook, used by every command, pipeline and
reconnect), and ``connection.retrying`` (tenacity, for Lua rounds sent on a raw
connection) asks the same process-wide ``OutageReporter`` when to give up.

What an operator sees, per process that notices: ONE line when Redis stops
answering and ONE when it answers again, saying how long it was down (the driver
prints them with the run's progress; Spark workers, the planner and hosts append
them to ``STORMSHIFT_REDIS_OUTAGE_LOG``, a file the driver names beside the
checkpoint, else they log them). No stack trace for an outage ridden through.

The bound: ``-o stormshift.redis_outage_s=SECS`` (default 180; the driver passes it
to every process as ``STORMSHIFT_REDIS_OUTAGE_S``). Past it the retry raises
``RedisOutage`` (never a redis ``ConnectionError``, so no outer retry goes on), and
the driver ends the run with one line naming the last committed batch.

A fenced write is never retried here: ``FencedError`` is not a connection error.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from redis import exceptions as rex
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from stormshift.errors import OptionError, RunFailedError

__all__ = ["DEFAULT_SECS", "ENV", "LOG_ENV", "OPTION", "OutageReporter", "OutageRetry",
           "RedisOutage", "bound_from_config", "bound_secs", "is_outage", "reporter", "set_sink"]

OPTION = "stormshift.redis_outage_s"
ENV = "STORMSHIFT_REDIS_OUTAGE_S"
LOG_ENV = "STORMSHIFT_REDIS_OUTAGE_LOG"
DEFAULT_SECS = 180.0
#: what the client retries: a refused or reset connection, a timeout, a server still
#: loading its AOF after a restart (BusyLoadingError is a ConnectionError)
RETRIED: tuple[type[Exception], ...] = (rex.ConnectionError, rex.TimeoutError, TimeoutError)
#: connection errors that are no outage: a wrong password or ACL answers at once and
#: would answer the same for the whole bound; a full pool is this process's own doing
NOT_AN_OUTAGE: tuple[type[Exception], ...] = (
    rex.AuthenticationError, rex.AuthorizationError, rex.MaxConnectionsError,
    *((rex.ExternalAuthProviderError,) if hasattr(rex, "ExternalAuthProviderError") else ()))


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` means Redis is unreachable (retried), not that it refused us."""
    return isinstance(error, RETRIED) and not isinstance(error, NOT_AN_OUTAGE)
log = logging.getLogger("stormshift.redis")


class RedisOutage(RunFailedError):
    """Redis stayed unreachable past the bound. ``committed``: the last batch (txid) the
    run committed, when the driver knows it (-1: none); None in other processes."""

    def __init__(self, where: str, secs: float, committed: int | None = None):
        self.where, self.secs, self.committed = where, secs, committed
        super().__init__(self.line())

    def line(self) -> str:
        head = f"Redis at {self.where} unreachable for {int(self.secs)} s ({OPTION})"
        if self.committed is None:
            return head
        if self.committed < 0:
            stopped = "the run stopped before its first batch committed, nothing committed"
        else:
            t = self.committed
            stopped = f"the run stopped at batch {t}, nothing committed after {t}"
        return f"{head}; {stopped}; rerun the same command when Redis is back"

    def at(self, committed: int) -> RedisOutage:
        """The same outage, as the driver reports it (with the last committed batch)."""
        return RedisOutage(self.where, self.secs, committed)


def bound_secs() -> float:
    """This process's bound (``STORMSHIFT_REDIS_OUTAGE_S``, else the default)."""
    try:
        secs = float(os.environ.get(ENV, DEFAULT_SECS))
    except ValueError:
        return DEFAULT_SECS
    return secs if secs > 0 else DEFAULT_SECS


def bound_from_config(config: Any) -> float:
    """``-o stormshift.redis_outage_s`` (a positive number of seconds), else the
    environment's, else the default; a bad value is refused before anything runs."""
    raw = config.get(OPTION) if config is not None else None
    if raw is None:
        return bound_secs()
    try:
        secs = float(raw)
    except (TypeError, ValueError):
        raise OptionError(f"-o {OPTION}={raw!r}: expected seconds (e.g. 180)") from None
    if not secs > 0:
        raise OptionError(f"-o {OPTION}={raw!r}: must be more than 0 seconds")
    return secs


STALE_FAILURES = 5
"""Failures on existing connections (reset, closed) in a row that are an outage even though
no connect was refused (a proxy that drops every connection, say)."""


def _cannot_connect(error: BaseException | None) -> bool:
    """Whether ``error`` says no new connection could be made (the server is gone). A
    pooled connection that died with the old server fails on its next use (reset, closed,
    broken pipe) even after the new server is up: one such failure per pooled connection,
    which must not announce an outage that is already over."""
    if error is None:
        return True
    text = str(error)
    return "connecting to" in text or "Connection refused" in text or isinstance(
        error, (ConnectionRefusedError, rex.TimeoutError))


class OutageReporter:
    """When Redis went away, whether that was said, and when to give up (pure but for
    ``say``, ``clock`` and a lock: unit-tested with a fake clock).

    The first failure only starts the clock: a pooled connection that died with the old
    server fails once even when the new one is up, and that is no outage worth a line.
    The second failure in a row, if no new connection could be made (``_cannot_connect``),
    says the one "unreachable" line; the next success says
    the one "back" line with the duration, and only if the first was said.
    """

    def __init__(self, say: Callable[[str], None], bound: float,
                 clock: Callable[[], float] = time.monotonic, where: str = "?"):
        self.say, self.bound, self.clock, self.where = say, bound, clock, where
        self.down_since: float | None = None
        self.failures = 0
        self.announced = False
        self.outages = 0  # outages announced by this process (tests, summaries)
        self.watched = False  # a watch pings the server: only its answer ends an outage
        self._lock = threading.Lock()

    def failed(self, error: BaseException | None = None) -> None:
        """A call found Redis unreachable; raise RedisOutage once the bound is passed."""
        line = None
        with self._lock:
            now = self.clock()
            if self.down_since is None:
                self.down_since = now
            self.failures += 1
            stale_only = not _cannot_connect(error) and self.failures < STALE_FAILURES
            if not self.announced and self.failures >= 2 and not stale_only:
                self.announced = True
                self.outages += 1
                why = f" ({_short(error)})" if error is not None else ""
                line = (f"Redis at {self.where} unreachable{why}; retrying for up to "
                        f"{self.bound:.0f} s ({OPTION})")
        if line is not None:
            self._say(line)
        self.check()

    def ok(self, began: float | None = None, pinged: bool = False) -> None:
        """A call got an answer: the outage (if any) is over -- unless that call was sent
        before the outage began (``began``, this reporter's clock): an answer already on
        its way when the server died proves nothing about the server now. Where a watch
        pings the server (the driver: ``watched``), only its PING (``pinged``) ends an
        outage: a command may succeed without a round trip (an empty pipeline)."""
        if self.down_since is None:  # the hot path: one attribute read per command
            return
        if self.watched and not pinged:
            return
        line = None
        with self._lock:
            if self.down_since is None or (began is not None and began < self.down_since):
                return
            down = self.clock() - self.down_since
            if self.announced:
                line = f"Redis at {self.where} is back after {down:.1f} s down"
            self.down_since, self.failures, self.announced = None, 0, False
        if line is not None:
            self._say(line)

    def down_for(self) -> float:
        since = self.down_since
        return 0.0 if since is None else self.clock() - since

    def expired(self) -> bool:
        return self.down_since is not None and self.down_for() >= self.bound

    def check(self) -> None:
        """RedisOutage if Redis has been unreachable for the bound or longer."""
        if self.expired():
            raise RedisOutage(self.where, self.down_for())

    def _say(self, line: str) -> None:
        try:
            self.say(line)
        except Exception:  # noqa: BLE001 - a broken sink must not fail the retry
            log.warning("%s", line)


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:160]


def _default_say(line: str) -> None:
    """Workers, the planner and hosts: the run's outage log file, else the logger."""
    path = os.environ.get(LOG_ENV)
    if path:
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(f"{time.strftime('%H:%M:%S')} pid {os.getpid()}: {line}\n")
            return
        except OSError:
            pass
    log.warning("%s", line)


_REPORTER: OutageReporter | None = None
_REPORTER_LOCK = threading.Lock()


def reporter() -> OutageReporter:
    """This process's reporter (made on first use with the bound of the environment)."""
    global _REPORTER
    if _REPORTER is None:
        with _REPORTER_LOCK:
            if _REPORTER is None:
                _REPORTER = OutageReporter(_default_say, bound_secs())
    return _REPORTER


def set_sink(say: Callable[[str], None] | None, bound: float | None = None,
             where: str | None = None) -> OutageReporter:
    """The driver: say the lines with ``say`` (the run's progress; None: the default),
    bound outages at ``bound`` seconds and name the server ``where``."""
    rep = reporter()
    rep.say = say or _default_say
    if bound is not None:
        rep.bound = bound
    if where is not None:
        rep.where = where
    return rep


def name_server(where: str) -> None:
    """How the lines name the server (``connect`` sets it from the URL it was given)."""
    rep = reporter()
    if rep.where == "?":
        rep.where = where


class OutageRetry(Retry):
    """redis-py's retry hook with the outage policy: retry connection errors with
    backoff (50 ms doubling to 2 s) until the process-wide reporter's bound, then raise
    ``RedisOutage``; tell the reporter of every failure and of the first success after.

    Installed on every client ``connect`` makes, so each command, pipeline and
    reconnect of every phase is under it. Nested calls (a command's reconnect) share
    the reporter's clock, so they give up together."""

    def __init__(self) -> None:
        super().__init__(ExponentialBackoff(cap=2.0, base=0.05), -1, RETRIED)

    def call_with_retry(self, do: Callable[[], Any], fail: Callable[..., Any],
                        is_retryable: Callable[[Exception], bool] | None = None,
                        with_failure_count: bool = False) -> Any:
        rep = reporter()
        failures = 0
        while True:
            began = rep.clock()
            try:
                result = do()
            except self._supported_errors as error:
                if not is_outage(error) or (is_retryable and not is_retryable(error)):
                    raise
                failures += 1
                if with_failure_count:
                    fail(error, failures)
                else:
                    fail(error)
                try:
                    rep.failed(error)
                except RedisOutage as outage:
                    raise outage from error
                time.sleep(min(2.0, 0.05 * 2 ** min(failures, 6)))
                continue
            rep.ok(began)
            return result

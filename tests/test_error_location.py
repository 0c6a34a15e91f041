"""Errors are located at the deepest frame of the user's project, the library's beside it.

``tests/fixtures/runs/library_errors``: a parse bolt whose ``json.loads`` raises
inside the standard library on truncated payloads, and a counter bolt whose
``redis.incrby`` raises inside redis-py (a key another job set to text). The
run summary, its ``--json`` and ``deadletter ls`` show
``src/bolts/events.py:N in process (raised in json/decoder.py:M)``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from stormshift.adapters.location import Frame, locate
from stormshift.engines.local import LocalEngine, SimClock
from stormshift.topology.loader import load_topology

PROJECT = Path(__file__).resolve().parent / "fixtures" / "runs" / "library_errors"
EVENTS = "src/bolts/events.py"
PARSE_LINE = 13  # event = json.loads(tup.values[0])
INCR_LINE = 28  # self.redis.incrby(...)


def test_locate_prefers_the_project_frame_and_names_the_library_frame() -> None:
    root = "/home/you/clicks"
    site = os.path.join(sys.prefix, "lib", "python3.11", "site-packages")
    frames = [
        Frame(os.path.join(os.path.dirname(json.__file__), "..", "x.py"), "stormshift.adapters.kernel", 80, "execute"),
        Frame(f"{root}/src/bolts.py", "bolts", 36, "process"),
        Frame(f"{root}/src/helpers.py", "helpers", 9, "store"),
        Frame(f"{site}/redis/commands/core.py", "redis.commands.core", 1900, "incrby"),
        Frame(f"{site}/redis/connection.py", "redis.connection", 1437, "read_response"),
    ]
    assert locate(frames, root) == "src/helpers.py:9 in store (raised in redis/connection.py:1437)"
    # raised in the project itself: nothing beside it
    assert locate(frames[:3], root) == "src/helpers.py:9 in store"
    # a virtualenv inside the project is a library, not the user's code
    venv = Frame(f"{root}/.venv/lib/python3.11/site-packages/requests/api.py", "requests.api",
                 59, "get")
    assert locate([*frames[:2], venv], root) == "src/bolts.py:36 in process (raised in requests/api.py:59)"


def test_local_a_stdlib_error_is_located_at_the_users_line() -> None:
    graph = load_topology(PROJECT, name="payloads")
    summary = LocalEngine(graph, clock=SimClock()).run()
    (kind,) = summary.problems.kinds("parse")
    assert kind.type == "JSONDecodeError" and kind.count == 4
    assert re.fullmatch(rf"{EVENTS}:{PARSE_LINE} in process \(raised in json/decoder\.py:\d+\)",
                        kind.location), kind.location
    assert f"({EVENTS}:{PARSE_LINE} in process (raised in json/decoder.py:" in kind.headline()


def test_local_a_redis_client_error_is_located_at_the_users_line(redis_url: str,
                                                                 namespace: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    client.set(f"{namespace}:u1", "not a number")  # set by another job
    graph = load_topology(PROJECT, name="counters", overrides={
        "counts.redis_url": redis_url, "counts.prefix": namespace})
    summary = LocalEngine(graph, clock=SimClock()).run()
    (kind,) = summary.problems.kinds("count")
    assert kind.type == "ResponseError"
    assert re.fullmatch(rf"{EVENTS}:{INCR_LINE} in process \(raised in redis/[a-z_/]+\.py:\d+\)",
                        kind.location), kind.location


def test_spark_summary_and_deadletter_ls_show_the_users_line(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    from stormshift.cli import cli
    from stormshift.engines.spark import SparkEngine

    graph = load_topology(PROJECT, name="payloads")
    summary = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                          spark=spark, namespace=namespace, until_done=True,
                          batch_max_tuples=5).run()
    assert summary["parse"].dead_lettered == 4
    (kind,) = summary.problems.kinds("parse")
    where = rf"{EVENTS}:{PARSE_LINE} in process \(raised in json/decoder\.py:\d+\)"
    assert re.fullmatch(where, kind.location), kind.location
    result = CliRunner().invoke(cli, ["deadletter", "ls", "--namespace", namespace, "--redis",
                                      redis_url, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)  # one document
    assert len(rows) == 4
    assert all(re.search(rf"\(at {where}\)", row["error"]) for row in rows), rows[0]["error"]

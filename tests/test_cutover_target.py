"""The txid guard of the legacy target on a real Redis: a batch re-run, a zombie of an
older batch and a second task each do what ``state/target.py`` says."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from stormshift.state.connection import run_scripts
from stormshift.state.target import parse_targets, target_call


@pytest.fixture
def target(redis_url: str) -> Iterator[tuple[Any, str]]:
    r = redis.Redis.from_url(redis_url)
    name = f"target-{uuid.uuid4().hex[:8]}"
    yield r, name
    r.delete(name, f"{name}:stormshift:txid")


@pytest.mark.parametrize("op", ["set", "add"])
def test_a_txid_is_applied_once_per_task_and_never_backwards(target: tuple[Any, str], op: str) -> None:
    r, name = target
    [t] = parse_targets({"cutover.sink": {"b:default": {"redis_zset": name, "key": "w",
                                                         "value": "n", "op": op}}}).values()

    def apply(who: str, txid: int, n: int) -> None:
        call = target_call(t, ("w", "n"), who, txid, [("default", ["x", n])])
        assert call is not None
        run_scripts(r, [call])

    apply("b:0", 3, 10)
    apply("b:0", 3, 10)  # the batch re-run after a driver kill
    apply("b:0", 2, 99)  # a zombie of an older batch
    assert r.zscore(name, "x") == 10
    apply("b:1", 3, 5)  # another task's own emits of the same batch
    apply("b:0", 4, 12)
    assert r.zscore(name, "x") == (12 if op == "set" else 27)
    assert {k.decode(): int(v) for k, v in r.hgetall(f"{name}:stormshift:txid").items()} == {
        "b:0": 4, "b:1": 3}

"""Fixtures for the state tests: the real Redis on 127.0.0.1:6379, a fresh namespace each.

Import the fixtures into a test module with ``from tests.state_fixtures import *``-free
explicit names (``redis_client``, ``ns``) and use the helpers below.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from stormshift.state import keys as K
from stormshift.state.commit import CommitLog, reset_namespace
from stormshift.state.fencing import acquire_epoch
from stormshift.state.scope import TaskScope

REDIS_URL = os.environ.get("STORMSHIFT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="session")
def redis_client() -> redis.Redis:
    r = redis.Redis.from_url(REDIS_URL)
    try:
        r.ping()
    except redis.ConnectionError as e:  # fail loudly: these tests prove guarantees on a real server
        pytest.fail(f"state tests need a Redis server at {REDIS_URL} ({e}); start redis-server")
    return r


def drop_namespace(r: Any, namespace: str) -> None:
    reset_namespace(r, namespace, keep_fences=False)
    r.delete(K.epochs_key(namespace), K.dlq_ids_key(namespace))


@pytest.fixture
def ns(redis_client: redis.Redis) -> Iterator[str]:
    name = "t" + uuid.uuid4().hex[:12]
    yield name
    drop_namespace(redis_client, name)


def run_task(
    r: Any, namespace: str, txid: int, body: Callable[[], None], *, component: str = "bolt",
    task_index: int = 0, epoch: int | None = None,
) -> TaskScope:
    """One attempt of one task for one txid: acquire an epoch (unless given), run, flush."""
    if epoch is None:
        epoch = acquire_epoch(r, namespace, component, task_index)
    with TaskScope(r, namespace, component, task_index, txid, epoch) as scope:
        body()
    return scope


def commit(r: Any, namespace: str, txid: int) -> None:
    CommitLog(r, namespace).record_commit(txid)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisProcess:
    """A redis-server of the test's own (appendonly, fsync always) that it can kill and restart."""

    def __init__(self, binary: str = "redis-server"):
        self.binary = shutil.which("/usr/bin/redis-server") or binary
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ss-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes",
             "--appendfsync", "always", "--dir", self.dir, "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.port).ping():
                    return
            except redis.exceptions.BusyLoadingError:
                pass
            except redis.ConnectionError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {self.port} did not start")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

"""Fixtures for the state tests: the real Redis on 127.0.0.1:6379, a fresh namespace each.

Import the fixtures into a test module with ``pytest_plugins = ["support.state_fixtures"]`` and
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
from pathlib import Path
from typing import Any

import pytest
import redis

from stormshift.state import keys as K
from stormshift.state.commit import CommitLog, reset_namespace
from stormshift.state.fencing import acquire_epoch
from stormshift.state.scope import TaskScope
from support.ports import free_port, server_port

REDIS_URL = os.environ.get("STORMSHIFT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="session")
def redis_client(request: pytest.FixtureRequest) -> Any:
    """The real Redis server; with :data:`ON_CLUSTER_TOO`'s ``cluster`` parameter a local
    3-primary Redis Cluster (:func:`redis_cluster`) instead."""
    if getattr(request, "param", "server") == "cluster":
        return request.getfixturevalue("redis_cluster")
    r = redis.Redis.from_url(REDIS_URL)
    try:
        r.ping()
    except redis.ConnectionError as e:  # fail loudly: these tests prove guarantees on a real server
        pytest.fail(f"state tests need a Redis server at {REDIS_URL} ({e}); start redis-server")
    return r


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[Any]:
    """A client of a local 3-primary Redis Cluster, started once for the session."""
    from stormshift.state.connection import connect

    cluster = LocalCluster()
    cluster.start()
    yield connect(cluster.url)
    cluster.close()


#: run a state test on the Redis server and again on a local Redis Cluster (slow tier):
#: the same assertions prove that the key layout (hash tags) and the Lua scripts hold there
ON_CLUSTER_TOO = pytest.mark.parametrize(
    "redis_client", ["server", pytest.param("cluster", marks=pytest.mark.slow)], indirect=True)


def drop_namespace(r: Any, namespace: str) -> None:
    reset_namespace(r, namespace, keep_fences=False)
    r.delete(K.epochs_key(namespace), K.dlq_ids_key(namespace))


@pytest.fixture
def ns(redis_client: Any) -> Iterator[str]:
    """A fresh namespace; on a cluster, the test must have written keys under it (its
    assertions ran against the cluster, not against nothing)."""
    name = "t" + uuid.uuid4().hex[:12]
    yield name
    try:
        if isinstance(redis_client, redis.RedisCluster):
            written = list(redis_client.scan_iter(match=f"*{name}*", target_nodes=redis_client.ALL_NODES))
            assert written, "the test wrote nothing to the Redis Cluster"
    finally:
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


class RedisProcess:
    """A redis-server of the test's own (appendonly, fsync always) that it can kill and restart."""

    def __init__(self, binary: str = "redis-server"):
        self.binary = shutil.which("/usr/bin/redis-server") or binary
        self.port = server_port()
        self.dir = tempfile.mkdtemp(prefix="ss-redis-")
        self.proc: subprocess.Popen[bytes] | None = None
        self._served = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or restart, on the same port and appendonly dir) and wait for its PING.

        A first start whose server exits at once (its port taken after all) moves to another
        port; a restart cannot (the run's URL names the port), so it fails with redis's log.
        """
        for _ in range(1 if self._served else 5):
            if self._start_once():
                self._served = True
                return
            if self._served or self.proc is None or self.proc.poll() is None:
                break
            self.port = server_port()
        log = Path(self.dir, "server.log")
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        raise RuntimeError(f"redis-server on port {self.port} did not start: {' | '.join(tail)}")

    def _start_once(self) -> bool:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes",
             "--appendfsync", "always", "--dir", self.dir, "--save", "",
             "--logfile", str(Path(self.dir, "server.log"))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if redis.Redis(port=self.port, socket_connect_timeout=1).ping():
                    return True
            except (redis.exceptions.BusyLoadingError, redis.ConnectionError):
                pass
            time.sleep(0.05)
        return False

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class LocalCluster:
    """A 3-primary Redis Cluster from the installed redis-server, on free ports."""

    def __init__(self, nodes: int = 3):
        self.binary = shutil.which("/usr/bin/redis-server") or "redis-server"
        self.cli = shutil.which("/usr/bin/redis-cli") or "redis-cli"
        self.dir = tempfile.mkdtemp(prefix="ss-cluster-")
        self.ports = [cluster_port() for _ in range(nodes)]
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        for p in self.ports:
            self.procs.append(subprocess.Popen(
                [self.binary, "--port", str(p), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                 "--cluster-config-file", f"{self.dir}/nodes-{p}.conf", "--dir", self.dir,
                 "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            ))
        for p in self.ports:
            _wait_ping(p)
        subprocess.run(
            [self.cli, "--cluster", "create", *[f"127.0.0.1:{p}" for p in self.ports],
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, timeout=30,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            states = [redis.Redis(port=p).execute_command("CLUSTER INFO") for p in self.ports]
            if all("cluster_state:ok" in _text(s) for s in states):
                return
            time.sleep(0.1)
        raise RuntimeError("local Redis Cluster did not reach cluster_state:ok")

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too (so both fit below 65536)."""
    for _ in range(100):
        p = free_port()
        if p >= 55000:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p + 10000))
            except OSError:
                continue
        return p
    raise RuntimeError("no free port pair for a Redis Cluster node")


def _text(x: Any) -> str:
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, dict):
        return "\n".join(f"{k}:{v}" for k, v in x.items())
    return str(x)


def _wait_ping(port: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return
        except (redis.ConnectionError, redis.exceptions.BusyLoadingError):
            time.sleep(0.05)
    raise RuntimeError(f"redis-server on port {port} did not start")

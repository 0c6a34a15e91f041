"""A task runs at its home host, whichever executor Spark gave it to (``task/homes.py``).

Two executors are two owners here (``runtime/hosts.OWNER_ENV``), each with its own
task hosts, as on a cluster; the stage task is run as Spark's worker would run it
(``run_partition`` with ``run_on_host``), with real Redis and real host processes.
``Encoder`` keeps its running sums in memory only (stored state would hide a move), so
its output tells which live instance ran the batch.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.engines.spark.runtime.hosts import OWNER_ENV
from stormshift.engines.spark.task import homes, task_host
from stormshift.engines.spark.task.counters import read_stats
from stormshift.engines.spark.task.sink import SinkSpec
from stormshift.engines.spark.task.stage import StageJob, run_partition
from stormshift.errors import StormshiftError
from stormshift.topology.loader import load_topology

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
import outtopo
from support.processes import kill_and_wait


def test_homes_are_off_on_a_local_master_and_on_for_a_cluster_unless_the_option_says():
    assert homes.home_key_for({}, "local[2]") == b""
    assert len(homes.home_key_for({}, "spark://10.0.0.1:7077")) == 32
    assert homes.home_key_for({}, "yarn") != homes.home_key_for({}, "yarn")  # one per run
    assert len(homes.home_key_for({homes.HOMES_KEY: "true"}, "local[*]")) == 32
    assert homes.home_key_for({homes.HOMES_KEY: False}, "spark://h:7077") == b""
    with pytest.raises(StormshiftError, match="stormshift.task_hosts.homes.*true, false or auto"):
        homes.home_key_for({homes.HOMES_KEY: "sometimes"}, "spark://h:7077")


def _handshake(host_keys: list[bytes], worker_key: bytes) -> tuple[bool, bool]:
    host_end, worker_end = socket.socketpair()
    got: dict[str, bool] = {}

    def host() -> None:  # as the host's loop does: a refused peer's connection is closed
        got["host"] = homes.admit(host_end, host_keys)
        if not got["host"]:
            host_end.close()

    thread = threading.Thread(target=host)
    thread.start()
    proved = homes.prove(worker_end, worker_key)
    worker_end.close()
    thread.join()
    host_end.close()
    return got["host"], proved


def test_only_a_worker_that_proves_the_runs_key_is_admitted_and_the_host_proves_it_back():
    key, other = b"k" * 32, b"o" * 32
    assert _handshake([other, key], key) == (True, True)
    assert _handshake([other], key) == (False, False)  # another run's host: refused both ways
    assert _handshake([], key) == (False, False)


def test_a_busy_home_is_waited_for_and_a_gone_one_is_not(monkeypatch):
    """A home host busy with other tasks accepts late: the task still goes there (a timeout
    would move it off its live instance). A closed port is no home at all."""
    import time

    monkeypatch.setattr(homes, "HANDSHAKE_SECS", 0.3)
    key = b"k" * 32
    server = homes.listen("127.0.0.1")
    addr = f"127.0.0.1:{server.getsockname()[1]}"
    admitted: list[bool] = []

    def busy_host() -> None:
        time.sleep(1.0)  # serving another task first
        conn, _ = server.accept()
        admitted.append(homes.admit(conn, [key]))
        conn.close()

    thread = threading.Thread(target=busy_host)
    thread.start()
    sock = homes.dial_home(addr, key)
    thread.join()
    assert sock is not None and admitted == [True]
    sock.close()
    server.close()
    assert homes.dial_home(addr, key) is None  # nothing listens there now


@pytest.fixture
def executors(monkeypatch):
    """Two live owners (two executors' Python daemons), a short socket directory, hosts on
    loopback; every host stopped afterwards."""
    import shutil
    import tempfile

    short = tempfile.mkdtemp(prefix="th-", dir="/tmp")  # a Unix socket path has ~100 bytes
    monkeypatch.setattr(tempfile, "tempdir", short)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    owners = (os.getpid(), other.pid)
    try:
        yield owners
    finally:
        for owner in owners:
            task_host.stop_hosts(owner)
        other.kill()
        other.wait()
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.redis
def test_a_task_runs_at_its_home_until_that_host_is_gone_then_where_spark_put_it(
        redis_url, monkeypatch, executors):
    import redis
    from pyspark import cloudpickle

    r = redis.Redis.from_url(redis_url)
    layout = Layout(load_topology(outtopo.EncodeTopo))
    namespace = f"test-homes-{uuid.uuid4().hex[:10]}"
    a, b = executors
    key = os.urandom(32)

    def batch(txid: int, owner: int, numbers: list[int], run_key: bytes = key) -> list[Any]:
        monkeypatch.setenv(OWNER_ENV, str(owner))  # Spark gave the task to this executor
        jobs = {s.head: StageJob(layout, s, txid, frozenset(), redis_url, namespace, b"k",
                                 SinkSpec("drop"), task_hosts=1, home_key=run_key)
                for s in layout.stages}
        payload = cloudpickle.dumps(jobs)
        digest = hashlib.blake2b(payload, digest_size=16).hexdigest()
        out = list(run_partition(jobs, iter(outtopo.encoder_rows(layout, numbers)), None,
                                 lambda *args: task_host.run_on_host(payload, digest, *args)))
        table = pa.Table.from_batches(out) if out else R.SCHEMA.empty_table()
        return sorted(tuple(values) for _src, _sid, values in R.iter_rows(table))

    def home() -> str | None:
        return homes.read_home(r, namespace, layout.first_task("encoder"))

    def found(txid: int) -> tuple[int, int]:
        stats = dict(read_stats(r, namespace, txid))["encoder"]
        return stats.reused, stats.started

    try:
        assert batch(1, a, [1, 2]) == [("k0", 2), ("k1", 1)]
        home_a = home()
        assert home_a == homes.local_addr(task_host.socket_path(0, a))
        # Spark gives the task to executor b: it runs at a, whose live sums continue
        assert batch(2, b, [3, 4]) == [("k0", 6), ("k1", 4)]
        assert found(2) == (1, 0) and home() == home_a
        assert not task_host.socket_path(0, b).exists()  # b started no host for it
        # a's host is gone (its executor lost): b's own host runs it and becomes its home
        assert task_host.stop_hosts(a) == 1
        assert batch(3, b, [11]) == [("k1", 11)]  # a new instance: the sums start again
        assert found(3) == (0, 1)
        home_b = home()
        assert home_b not in (None, home_a) and home_b == homes.local_addr(task_host.socket_path(0, b))
        assert batch(4, a, [7]) == [("k1", 18)]  # back on a: sent to b
        assert found(4) == (1, 0) and home() == home_b
        # b's host killed: its .addr file stays behind, naming the home; the host that
        # replaces it must become the home, not the stale address
        b_path = task_host.socket_path(0, b)
        stale = homes.local_addr(b_path)
        _kill_host(b_path)
        assert homes.local_addr(b_path) == stale == home()
        assert batch(5, b, [13]) == [("k1", 13)]
        assert home() == homes.local_addr(b_path) != stale
        # another run (a new key): b's host does not know it, so the task runs where it is
        assert batch(6, a, [9], run_key=os.urandom(32)) == [("k1", 9)]
        assert home() == homes.local_addr(task_host.socket_path(0, a)) != homes.local_addr(b_path)
    finally:
        for k in r.scan_iter(f"*{namespace}*"):
            r.delete(k)


def _kill_host(path: Path) -> None:
    """SIGKILL the task host serving ``path`` (found by its command line) and wait until
    its socket refuses connections; it leaves that socket and its ``.addr`` file behind."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True,
                         check=True).stdout
    (pid,) = [int(line.split()[0]) for line in out.splitlines()
              if task_host.HOST_MODULE in line and str(path) in line]
    kill_and_wait([pid], [path])


@pytest.mark.redis
def test_a_host_that_cannot_listen_for_other_executors_still_runs_its_executors_tasks(
        redis_url, monkeypatch, executors):
    import redis
    from pyspark import cloudpickle

    monkeypatch.setenv("SPARK_LOCAL_IP", "192.0.2.1")  # not this machine's (TEST-NET-1)
    monkeypatch.setenv(OWNER_ENV, str(executors[0]))
    r = redis.Redis.from_url(redis_url)
    layout = Layout(load_topology(outtopo.EncodeTopo))
    namespace = f"test-homes-{uuid.uuid4().hex[:10]}"
    jobs = {s.head: StageJob(layout, s, 1, frozenset(), redis_url, namespace, b"k",
                             SinkSpec("drop"), task_hosts=1, home_key=os.urandom(32))
            for s in layout.stages}
    payload = cloudpickle.dumps(jobs)
    digest = hashlib.blake2b(payload, digest_size=16).hexdigest()
    try:
        out = list(run_partition(jobs, iter(outtopo.encoder_rows(layout, [1, 2])), None,
                                 lambda *args: task_host.run_on_host(payload, digest, *args)))
        assert sorted(tuple(v) for _s, _i, v in R.iter_rows(pa.Table.from_batches(out))) == \
            [("k0", 2), ("k1", 1)]
        assert homes.read_home(r, namespace, layout.first_task("encoder")) is None
        log = task_host.socket_path(0, executors[0]).with_suffix(".log").read_text()
        assert "cannot listen for other executors at '192.0.2.1'" in log and "SPARK_LOCAL_IP" in log
    finally:
        for k in r.scan_iter(f"*{namespace}*"):
            r.delete(k)

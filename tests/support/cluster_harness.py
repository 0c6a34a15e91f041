"""A real Spark standalone cluster on this host, for ``tests/test_cluster.py``.

Local mode cannot show two things a cluster does: an executor JVM that dies
and is relaunched by its worker, and speculative task copies (the task
scheduler never speculates in local mode, and never puts a speculative copy
on a host that already ran an attempt of the task). So this starts a master
and workers from pip's pyspark (``bin/spark-class``) on loopback addresses
-- 127.0.0.1 and 127.0.0.2 count as two hosts to Spark -- submits the project
with ``stormshift submit``, and finds executors by their process tree.

Every process is started in its own session and killed by process group.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import redis

from support.ports import server_port

REPO = Path(__file__).resolve().parents[2]
#: the table tests/test_cluster.py records and the session prints at its end (tests/conftest.py)
TABLE = "cluster"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
# Short-lived JVMs on a 2-core box: the C1 compiler and one GC thread spend far less CPU.
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
APP_CONFS = {"spark.driver.extraJavaOptions": JVM_OPTS, "spark.executor.extraJavaOptions": JVM_OPTS}


def spark_home() -> str:
    """SPARK_HOME of the installed pyspark (pip's package dir holds bin/spark-class)."""
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check: Any, timeout: float, every: float = 0.2) -> Any:
    """Poll ``check()`` until it returns something truthy; a clear error after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"cluster harness: gave up waiting for {what} after {timeout:.0f}s")
        time.sleep(every)


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the process group of a process this harness started (then reap it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass


class RedisServer:
    """A redis-server of the test's own on a free port (append-only file, as the engine wants)."""

    def __init__(self, root: Path):
        self.port = server_port()
        self.dir = root
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "everysec", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(f"redis-server on port {self.port}", self._ping, 15, 0.05)

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis.from_url(self.url(db))

    def _ping(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        kill_group(self.proc)


@dataclass
class Worker:
    host: str
    cores: int
    proc: subprocess.Popen[Any]
    log: Path


@dataclass
class StandaloneCluster:
    """A Spark master and its workers, all on loopback addresses of this host."""

    root: Path
    master_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    workers: list[Worker] = field(default_factory=list)
    master: subprocess.Popen[Any] | None = None

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _env(self, host: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP=host, PYSPARK_PYTHON=sys.executable,
                   SPARK_LOG_DIR=str(self.root / "logs"),
                   SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",  # no fixed port 6066
                   SPARK_DAEMON_JAVA_OPTS=JVM_OPTS)
        env.pop("PYTHONPATH", None)  # the cluster sees only what spark-submit ships
        env.pop("STORMSHIFT_FAULTS", None)
        return env

    def _spawn(self, name: str, args: list[str], host: str) -> tuple[subprocess.Popen[Any], Path]:
        log = self.root / f"{name}.log"
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = [os.path.join(spark_home(), "bin", "spark-class"), *args]
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, env=self._env(host), cwd=self.root, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        return proc, log

    def start(self) -> StandaloneCluster:
        self.master, _ = self._spawn("master", [
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self.master_port), "--webui-port", str(self.ui_port)], "127.0.0.1")
        wait_for("the master's JSON UI", self.state, 90)
        return self

    def add_worker(self, host: str = "127.0.0.1", cores: int = 2, memory: str = "2g",
                   wait: bool = True) -> Worker:
        """Start a worker bound to ``host`` (and wait until the master lists it ALIVE)."""
        work = self.root / f"work-{host}"
        proc, log = self._spawn(f"worker-{host}", [
            "org.apache.spark.deploy.worker.Worker", self.url, "--host", host,
            "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port(host)),
            "--work-dir", str(work)], host)
        worker = Worker(host, cores, proc, log)
        self.workers.append(worker)
        if wait:
            self.wait_alive(host)
        return worker

    def wait_alive(self, host: str) -> None:
        wait_for(f"worker {host} ALIVE at the master", lambda: host in self.alive_hosts(), 90)

    def state(self) -> dict[str, Any] | None:
        """The master's JSON status (None while it does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as resp:
                return json.loads(resp.read().decode())
        except (OSError, ValueError):
            return None

    def alive_hosts(self) -> list[str]:
        state = self.state() or {}
        return [w["host"] for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def executors(self, host: str | None = None) -> list[psutil.Process]:
        """Executor JVMs the workers launched (on ``host`` only, if given)."""
        found = []
        for worker in self.workers:
            if host is not None and worker.host != host:
                continue
            try:
                children = psutil.Process(worker.proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for child in children:
                try:
                    if EXECUTOR_CLASS in " ".join(child.cmdline()):
                        found.append(child)
                except psutil.NoSuchProcess:
                    continue
        return found

    def kill_executor(self, executor: psutil.Process) -> list[int]:
        """SIGKILL an executor JVM and its Python workers (daemon and forks); the pids killed."""
        try:
            victims = [executor, *executor.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []
        killed = []
        for proc in victims:
            try:
                proc.send_signal(signal.SIGKILL)
                killed.append(proc.pid)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(victims, timeout=10)
        return killed

    def stop(self) -> None:
        """Kill everything started (workers first, with what they launched), then the master."""
        for worker in self.workers:
            try:
                strays = psutil.Process(worker.proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                strays = []
            kill_group(worker.proc)
            for proc in strays:  # a Python daemon may have left the worker's process group
                try:
                    proc.send_signal(signal.SIGKILL)
                except psutil.NoSuchProcess:
                    pass
        if self.master is not None:
            kill_group(self.master)
        shutil.rmtree(self.root / "logs", ignore_errors=True)


def submit_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of ``stormshift submit``: stormshift importable by the CLI itself only."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)  # for the spark-submit client; executors get stormshift.zip
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_HOME=spark_home())
    env.pop("STORMSHIFT_FAULTS", None)
    env.update(extra or {})
    return env


def start_submit(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[Any]:
    """``stormshift submit ... --run`` in its own session, output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "stormshift", "submit", *args, "--run"],
                                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def event_log_confs(folder: Path) -> dict[str, str]:
    """Spark settings for plain JSON-lines event logs in ``folder`` (read by event_log_tasks)."""
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": folder.as_uri(),
            "spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false"}


def event_log_tasks(folder: Path) -> list[dict[str, Any]]:
    """Task-end records of every Spark event log under ``folder`` (speculative or not)."""
    tasks = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"SparkListenerTaskEnd"' not in line:
                continue
            event = json.loads(line)
            info = event.get("Task Info", {})
            tasks.append({"stage": event.get("Stage ID"), "stage_attempt": event.get("Stage Attempt ID"),
                          "index": info.get("Index"),
                          "attempt": info.get("Attempt"), "host": info.get("Host"),
                          "speculative": info.get("Speculative"),
                          "reason": event.get("Task End Reason", {}).get("Reason")})
    return tasks

"""What the Spark engine checks before it starts a JVM: each mistake found in a second.

Runs in the driver process, before ``SparkSession`` exists. Each check raises
``InfraError`` (exit 2) with one line naming what is wrong and the fix; a JVM start
costs 20-30 s, after which the same mistake would surface as a Java stack trace.

- the checkpoint directory can be created and written, and belongs to this run
  (``stormshift-topology.json`` in it records the topology and namespace that made
  it: another topology's checkpoint holds another topology's source offsets);
- Java is there (``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``), as pyspark's
  launcher looks for it;
- a ``spark://`` master answers on its port;
- a port the user fixed with ``--conf`` (``spark.ui.port``, ``spark.driver.port``, ...)
  is free.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from stormshift.errors import InfraError

__all__ = ["OWNER_FILE", "before_jvm", "check_checkpoint_dir", "check_checkpoint_owner", "check_java",
           "check_master", "check_ports", "record_checkpoint_owner"]

OWNER_FILE = "stormshift-topology.json"
MASTER_TIMEOUT_SECS = 3.0
FIXED_PORTS = ("spark.ui.port", "spark.driver.port", "spark.blockManager.port",
               "spark.driver.blockManager.port")


def check_checkpoint_dir(path: str) -> None:
    """The checkpoint directory exists (made if not) and this process can write in it."""
    probe = Path(path) / ".stormshift-write-probe"
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InfraError(
            f"checkpoint directory {path} cannot be written ({reason}). Fix: pass --checkpoint "
            "DIR (or STORMSHIFT_CHECKPOINT) in a directory you can write, or run from one "
            "(the default is ./.stormshift/checkpoints/TOPOLOGY)") from None


def _read_owner(path: str) -> dict[str, str] | None:
    try:
        data = json.loads((Path(path) / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_checkpoint_owner(path: str, namespace: str, topology: str,
                           bound_in: Callable[[], list[str]]) -> None:
    """Refuse a checkpoint made by another topology or for another namespace.

    ``bound_in()``: the namespaces on the state server that know this checkpoint's id
    (``state/owner.py``), which tells for a checkpoint made before the owner file existed;
    asked only for such a checkpoint (it scans the server's keys).
    """
    owner = _read_owner(path)
    def fix(theirs: str) -> str:
        return (f"Fix: give this run its own --checkpoint DIR (a new directory), or run {theirs} "
                "with it; a checkpoint holds the source offsets of the topology that made it")

    if owner is not None:
        theirs, their_ns = owner.get("topology", "?"), owner.get("namespace", "?")
        if theirs != topology or their_ns != namespace:
            raise InfraError(
                f"checkpoint {path} belongs to topology {theirs!r} (state namespace "
                f"{their_ns!r}); this run is topology {topology!r} on namespace {namespace!r}, "
                "so nothing was written. " + fix(repr(theirs)))
        return
    if not (Path(path) / "spark" / "offsets").exists():
        return  # a new checkpoint: nobody's yet
    known = bound_in()
    others = [ns for ns in known if ns != namespace]
    if others and namespace not in known:
        raise InfraError(
            f"checkpoint {path} is bound to state namespace {others[0]!r}, not to "
            f"{namespace!r} this run uses (Redis did not lose anything), so nothing was "
            "written. " + fix(f"the topology of namespace {others[0]!r}"))


def record_checkpoint_owner(path: str, namespace: str, topology: str) -> None:
    """Write the owner file (once: a checkpoint never changes hands)."""
    target = Path(path) / OWNER_FILE
    if not target.exists():
        target.write_text(json.dumps({"topology": topology, "namespace": namespace}),
                          encoding="utf-8")


def check_java(env: Mapping[str, str] | None = None) -> None:
    """Java is where pyspark's launcher will look for it."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if not os.access(java, os.X_OK):
            raise InfraError(
                f"JAVA_HOME is {home}, but {java} is not an executable: Spark cannot start. "
                "Fix: point JAVA_HOME at a Java 17 installation (or unset it to use `java` on PATH)")
        return
    if shutil.which("java", path=env.get("PATH")) is None:
        raise InfraError(
            "Java is not installed (no JAVA_HOME, no `java` on PATH): Spark needs it. Fix: "
            "install Java 17 (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME "
            "(`--engine local` runs without Java)")


def master_hosts(master: str) -> list[tuple[str, int]]:
    """``(host, port)`` of a ``spark://h1:p1,h2:p2`` master (HA lists every master); [] for
    any other master (local, yarn, k8s: Spark finds those itself)."""
    if not master.startswith("spark://"):
        return []
    out = []
    for part in master[len("spark://"):].split(","):
        host, _, port = part.strip().rstrip("/").partition(":")
        out.append((host, int(port) if port.isdigit() else 7077))
    return out


def check_master(master: str, timeout_secs: float = MASTER_TIMEOUT_SECS) -> None:
    """A ``spark://`` master answers on at least one of its addresses."""
    hosts = master_hosts(master)
    errors = []
    for host, port in hosts:
        try:
            socket.create_connection((host, port), timeout=timeout_secs).close()
            return
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc.strerror or exc}")
    if hosts:
        raise InfraError(
            f"Spark master {master} does not answer ({'; '.join(errors)}). Fix: start the "
            "master, or pass the right --master (local[*] runs Spark in this process)")


def check_ports(conf: Mapping[str, Any]) -> None:
    """The ports fixed with ``--conf`` are free on this host."""
    for name in FIXED_PORTS:
        if name == "spark.ui.port" and str(conf.get("spark.ui.enabled", "true")).lower() == "false":
            continue
        value = str(conf.get(name, "0")).strip()
        if not value.isdigit() or int(value) == 0:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("", int(value)))
            except OSError as exc:
                why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
                raise InfraError(
                    f"port {value} ({name}) {why} on this host. Fix: pick another with "
                    f"--conf {name}=PORT, or leave it out (Spark then picks a free one)") from None


def before_jvm(checkpoint_dir: str, master: str, conf: Mapping[str, Any], has_session: bool) -> None:
    """Every check of this module that needs no Redis; Java, master and ports only when the
    engine will start the JVM itself: not when a session was given (``has_session``), nor
    under spark-submit (``PYSPARK_GATEWAY_PORT``: its JVM already runs and holds the ports)."""
    check_checkpoint_dir(checkpoint_dir)
    if not has_session and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        check_java()
        check_master(master)
        check_ports(conf)

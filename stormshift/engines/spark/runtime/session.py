"""Building (or adapting) the SparkSession the engine runs on."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stormshift.engines.spark.runtime.classcache import plan_archive
from stormshift.engines.spark.runtime.launcher import worker_python

__all__ = [
    "LOCAL_GC_OPTIONS",
    "LOCAL_MALLOC_ENV",
    "LOG4J2_FILE",
    "QUIET_LOGGERS",
    "RUNTIME_CONF",
    "RUNTIME_SIZES",
    "build_session",
    "configure_session",
    "driver_gc_conf",
    "driver_jit_conf",
    "driver_log_conf",
    "driver_malloc_env",
    "local_bind_conf",
    "loopback_ui",
    "malloc_arenas",
    "quiet_logs",
    "runtime_sizes",
    "ui_link",
    "worker_conf",
]

LOOPBACK = "127.0.0.1"

# The driver JVM's log4j2 settings: WARN to stderr, minus Spark's start-up notices.
LOG4J2_FILE = Path(__file__).with_name("log4j2.properties")

# Runtime SQL settings the per-batch plan relies on (set on a reused session too).
RUNTIME_CONF = {
    # a partition holds the Storm tasks the plan dealt it: never merge shuffle partitions
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    # one Spark job per batch (driver/batch.py): adaptive execution runs each shuffle, and
    # each cached frame, as a job of its own
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}

# Runtime SQL sizes, set unless the user chose them (``runtime_sizes``): a stage's input goes
# to Python in Arrow batches of at most 4 MiB (its output leaves in pages of the same size:
# ``protocol/rows.py``).
RUNTIME_SIZES = {"spark.sql.execution.arrow.maxBytesPerBatch": str(4 << 20)}


# Spark loggers whose WARN lines are noise on a stormshift console (level raised to ERROR).
QUIET_LOGGERS = (
    # stopping a finished query cancels job groups that have no active job left:
    # "Failed to cancel job group ... Cannot find active jobs for it."
    "org.apache.spark.scheduler.DAGScheduler",
    # "spark.sql.adaptive.enabled is not supported in streaming DataFrames" on every start
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
)


def build_session(master: str, *, app_name: str = "stormshift", shuffle_partitions: int | None = None,
                  conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession for ``master`` with the engine's settings, then ``conf`` (``--conf``) on top."""
    # pyspark 4.x warns (FutureWarning) on every import of its pandas helpers when pandas is
    # >= 3. The engine moves rows with mapInArrow and never uses pyspark's pandas API, so the
    # warning says nothing about a stormshift run, and pandas is not pinned below 3 for it
    # (pyspark itself accepts it).
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.metricsEnabled", "false")
    )
    if shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    conf = conf or {}
    conf = {**local_bind_conf(master, conf), **conf, **driver_jit_conf(master, conf)}
    conf = {**conf, **driver_gc_conf(master, conf)}
    archive = plan_archive(master, conf)
    if archive is not None:
        conf = {**conf, **_more_driver_options(conf, archive.options())}
    for key, value in {**worker_conf(master), **conf, **driver_log_conf(conf)}.items():
        builder = builder.config(key, value)
    with worker_python(master, conf), loopback_ui(master, conf), malloc_arenas(master):
        session = builder.getOrCreate()
    if archive is not None:
        archive.finish_at_exit(session)
    session.sparkContext.setLogLevel("WARN")
    quiet_logs(session)
    configure_session(session)
    return session


def quiet_logs(session: Any) -> None:
    """Raise the level of ``QUIET_LOGGERS`` to ERROR in the driver's JVM (log4j2)."""
    jvm = session.sparkContext._jvm
    configurator = jvm.org.apache.logging.log4j.core.config.Configurator
    error = jvm.org.apache.logging.log4j.Level.ERROR
    for name in QUIET_LOGGERS:
        configurator.setLevel(name, error)


def driver_log_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """The driver JVM's log4j2 file (``LOG4J2_FILE``), added to ``--conf
    spark.driver.extraJavaOptions`` unless those options already name a log4j2 file."""
    options = conf.get("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" in options or "log4j.configurationFile" in options:
        return {}
    ours = f"-Dlog4j2.configurationFile=file:{LOG4J2_FILE}"
    return {"spark.driver.extraJavaOptions": f"{options} {ours}".strip()}


def _more_driver_options(conf: Mapping[str, str], options: str) -> dict[str, str]:
    current = conf.get("spark.driver.extraJavaOptions", "")
    return {"spark.driver.extraJavaOptions": f"{current} {options}".strip()}


def driver_jit_conf(master: str, conf: Mapping[str, str]) -> dict[str, str]:
    """On a local master, ``-XX:TieredStopAtLevel=1`` added to ``--conf
    spark.driver.extraJavaOptions`` unless those options already choose the JIT tiers.

    Why: on a local master the driver JVM is the executor and shares the cores with the
    Python workers that do most of a batch's work. Every micro-batch plans new
    DataFrames (code generated per plan), so the JVM's optimising compiler (C2) keeps
    compiling batch after batch and its threads take CPU from the workers; the client
    compiler alone compiles cheaply and the Spark code it runs here is mostly glue
    (``bench/history.md``, 2026-11-25 eighth session, jvmshare). Left alone on a cluster,
    where executors have their own JVMs and cores."""
    if not _is_local(master):
        return {}
    options = conf.get("spark.driver.extraJavaOptions", "")
    if "TieredStopAtLevel" in options or "TieredCompilation" in options:
        return {}
    return {"spark.driver.extraJavaOptions": f"{options} -XX:TieredStopAtLevel=1".strip()}


# A collector chosen in the driver's JVM options (``-XX:+UseG1GC``, ``-XX:+UseZGC``, ...), G1
# settings or heap sizes of the user's: they keep the collector and sizes they tuned for.
_GC_CHOICE = re.compile(r"-XX:[+-]Use\w*GC\b|-XX:[+-]?G1|-Xm[sn]\d|-XX:\w*(HeapSize|NewSize)=")
# The serial collector, starting from a 256 MiB heap (its default start is 1/64 of the
# machine's memory: the whole 1 GiB on a 64 GiB machine).
LOCAL_GC_OPTIONS = "-XX:+UseSerialGC -Xms256m"


def driver_gc_conf(master: str, conf: Mapping[str, str]) -> dict[str, str]:
    """On a local master with Spark's default driver heap, ``LOCAL_GC_OPTIONS`` added to
    ``--conf spark.driver.extraJavaOptions`` unless those options choose a collector, tune
    G1 or size the heap.

    Why: G1 (the JVM's default) sizes its heap for its pause goal, not for the data
    alive: a stormshift batch allocates fast, in large arrays (the cached columns of a
    frame read by a later wave), so G1 committed several times the data alive, plus its
    own remembered sets. The serial collector
    grows the heap only when the data alive after a collection needs it (the same 1 GiB
    cap: a bigger batch gets the same room before an OutOfMemoryError), and on a local
    master its single GC thread costs nothing the two cores shared with the Python
    workers had to spare (``bench/history.md``, 2026-11-27 tenth session, jvmmem). Left
    alone when the user sized the driver heap (``spark.driver.memory`` or
    ``SPARK_DRIVER_MEMORY``: a big heap would make the serial collector's full
    collections long; ``spark-defaults.conf`` is not seen here), and on a cluster."""
    if not _is_local(master) or "spark.driver.memory" in conf or os.environ.get("SPARK_DRIVER_MEMORY"):
        return {}
    options = conf.get("spark.driver.extraJavaOptions", "")
    if _GC_CHOICE.search(options):
        return {}
    return {"spark.driver.extraJavaOptions": f"{options} {LOCAL_GC_OPTIONS}".strip()}


# glibc's malloc in the driver JVM: two arenas (its default: eight per core).
LOCAL_MALLOC_ENV = {"MALLOC_ARENA_MAX": "2"}


def driver_malloc_env(master: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """On a local master, ``LOCAL_MALLOC_ENV`` for the driver JVM's environment, unless the
    user chose the arenas (``MALLOC_ARENA_MAX``, or ``arena_max`` in ``GLIBC_TUNABLES``).

    Why: a stormshift run's driver JVM makes its native allocations from a few hundred
    threads (Spark's task, Python runner and block manager pools grow batch after batch),
    and glibc gives threads arenas of their own, up to eight per core: each arena keeps
    the memory its threads freed, so the JVM's RSS grew beyond what it tracks, by what
    no JVM setting bounds (``bench/history.md``, 2026-11-28 eleventh session, jvmdisk). Two
    arenas keep the freed memory in two places to reuse. The Python workers the JVM starts
    inherit the variable (mostly one thread each: no contention). Left alone on a cluster,
    where the executors' JVMs are not started from here."""
    if not _is_local(master) or "MALLOC_ARENA_MAX" in environ \
            or "arena_max" in environ.get("GLIBC_TUNABLES", ""):
        return {}
    return dict(LOCAL_MALLOC_ENV)


@contextmanager
def malloc_arenas(master: str, environ: dict[str, str] | os._Environ[str] = os.environ) -> Iterator[None]:
    """While the driver JVM starts: ``driver_malloc_env`` in ``environ`` (pyspark copies
    ``os.environ`` into the JVM's), restored afterwards."""
    ours = driver_malloc_env(master, environ)
    environ.update(ours)
    try:
        yield
    finally:
        for key in ours:
            environ.pop(key, None)


def worker_conf(master: str) -> dict[str, str]:
    """Settings for the Python workers of ``master``: on a local master (workers run the
    driver's Python, where stormshift is installed) the daemon that imports pyspark from
    its bytecode and preloads the hosting modules before forking (``daemon.py``). On a
    cluster, add ``--conf spark.python.daemon.module=...`` yourself once stormshift is
    installed on the executors (a zip shipped with ``--py-files`` reaches workers only
    after the daemon started)."""
    from stormshift.engines.spark.runtime.daemon import DAEMON_MODULE

    if _is_local(master):
        return {"spark.python.daemon.module": DAEMON_MODULE}
    return {}


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def local_bind_conf(master: str, conf: Mapping[str, str]) -> dict[str, str]:
    """On a local master, the driver's RPC and block manager ports on 127.0.0.1 (nothing
    else needs to reach them; Spark's default is every interface), unless ``--conf`` set
    them. A cluster master keeps the user's (and Spark's) settings."""
    if not _is_local(master):
        return {}
    return {key: LOOPBACK for key in ("spark.driver.bindAddress", "spark.driver.host")
            if key not in conf}


@contextmanager
def loopback_ui(master: str, conf: Mapping[str, str]) -> Iterator[None]:
    """While the driver JVM starts on a local master: ``SPARK_LOCAL_IP=127.0.0.1`` in its
    environment, the one setting Spark's web UI binds to (else ``0.0.0.0``: an
    unauthenticated UI on every interface). Left alone when the user set it, or chose a
    ``spark.driver.bindAddress`` of their own, or on a cluster master."""
    if (not _is_local(master) or "SPARK_LOCAL_IP" in os.environ
            or conf.get("spark.driver.bindAddress", LOOPBACK) != LOOPBACK):
        yield
        return
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    try:
        yield
    finally:
        os.environ.pop("SPARK_LOCAL_IP", None)


def ui_link(session: Any) -> str | None:
    """The Spark UI's address (None when the UI is off)."""
    return session.sparkContext.uiWebUrl  # type: ignore[no-any-return]


def runtime_sizes(chosen: Callable[[str], bool]) -> dict[str, str]:
    """``RUNTIME_SIZES`` but those the user set (``chosen(key)``: the session's SQL conf has it).

    Why a byte bound: a row carries a chunk of up to 32 tuples (``protocol/rows.py``), so
    ``maxRecordsPerBatch`` alone let one Arrow batch hold a whole partition of a big
    micro-batch (tens of MiB). The driver JVM builds each batch in native memory, growing
    its buffers by doubling, and glibc kept those freed buffers: the driver JVM's RSS
    (``bench/history.md``, 2026-11-28 eleventh session, jvmdisk)."""
    return {key: value for key, value in RUNTIME_SIZES.items() if not chosen(key)}


def configure_session(session: Any) -> None:
    for key, value in RUNTIME_CONF.items():
        session.conf.set(key, value)
    sql = session._jsparkSession.sessionState().conf()
    for key, value in runtime_sizes(sql.contains).items():
        session.conf.set(key, value)

"""Building (or adapting) the SparkSession the engine runs on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormshift.engines.spark.launcher import worker_python

__all__ = ["RUNTIME_CONF", "build_session", "configure_session", "worker_conf"]

# Runtime SQL settings the per-batch plan relies on (set on a reused session too).
RUNTIME_CONF = {
    # partition i must stay task i: never merge shuffle partitions
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}


def build_session(master: str, *, app_name: str = "stormshift", shuffle_partitions: int | None = None,
                  conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession for ``master`` with the engine's settings, then ``conf`` (``--conf``) on top."""
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
    for key, value in worker_conf(master).items():
        builder = builder.config(key, value)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    with worker_python(master, conf):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    configure_session(session)
    return session


def worker_conf(master: str) -> dict[str, str]:
    """Settings for the Python workers of ``master``: on a local master (workers run the
    driver's Python, where stormshift is installed) the daemon that imports pyspark from
    its bytecode and preloads the hosting modules before forking (``daemon.py``). On a
    cluster, add ``--conf spark.python.daemon.module=...`` yourself once stormshift is
    installed on the executors (a zip shipped with ``--py-files`` reaches workers only
    after the daemon started)."""
    from stormshift.engines.spark.daemon import DAEMON_MODULE

    if master == "local" or master.startswith("local["):
        return {"spark.python.daemon.module": DAEMON_MODULE}
    return {}


def configure_session(session: Any) -> None:
    for key, value in RUNTIME_CONF.items():
        session.conf.set(key, value)

"""Building (or adapting) the SparkSession the engine runs on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RUNTIME_CONF", "build_session", "configure_session"]

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
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    configure_session(session)
    return session


def configure_session(session: Any) -> None:
    for key, value in RUNTIME_CONF.items():
        session.conf.set(key, value)

"""engines/spark: run streamparse topologies on Spark Structured Streaming micro-batches.

See ``engine.SparkEngine`` for the API and DESIGN.md "Data flow of one micro-batch".
``SparkEngine`` is imported on first use, so a submodule (the worker daemon,
``daemon.py``) can be run without importing pyspark and pyarrow first.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stormshift.engines.spark.engine import SparkEngine

__all__ = ["SparkEngine"]


def __getattr__(name: str) -> Any:
    if name == "SparkEngine":
        from stormshift.engines.spark.engine import SparkEngine

        return SparkEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

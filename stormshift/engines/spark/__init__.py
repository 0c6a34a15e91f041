"""engines/spark: run streamparse topologies on Spark Structured Streaming micro-batches.

See ``engine.SparkEngine`` for the API and DESIGN.md "Data flow of one micro-batch".
"""

from stormshift.engines.spark.engine import SparkEngine

__all__ = ["SparkEngine"]

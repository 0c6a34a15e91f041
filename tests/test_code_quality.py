"""The linters the project is kept clean with, run as part of the suite so CI keeps them clean.

ruff (style, bugs, imports) over the package, tests and bench; mypy over the
package (its settings are in ``pyproject.toml``). A finding fails the test
with the linters' own report.

And the house rules no linter has: no import circle in the package (the graph
and what counts as an import: ``tests/support/import_graph.py``), no test module
importing another (shared helpers live in ``tests/support/``), no
hand-written ``unit`` mark (``tests/tier_guard.py`` decides the tier), and no
engine, check or shadow module inspecting a component class for what it can do
(that is read once at load: ``stormshift/topology/capabilities.py``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from support.import_graph import cycles, import_edges, modules_under, parsed

REPO = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True,
                          check=False, timeout=600)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", "--output-format", "concise", "stormshift", "tests", "bench")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    done = _run("mypy", "stormshift")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_no_import_circle_in_the_package() -> None:
    circles = cycles(import_edges(modules_under(REPO / "stormshift", "stormshift", compiled=True)))
    shown = "\n\n".join(
        f"circle of {len({e.source for e in circle})} modules:\n" + "\n".join(
            f"  {e.source} -> {e.target}  ({e.path.relative_to(REPO)}:{e.line})" for e in circle)
        for circle in circles)
    assert not circles, (f"{len(circles)} import circle(s); break each with a module both sides "
                         f"import (a registry, the shared helper):\n{shown}")


def test_no_test_module_imports_another_test_module() -> None:
    tests = REPO / "tests"
    known = modules_under(tests)
    found = [e for e in import_edges(known) if e.target.rsplit(".", 1)[-1].startswith("test_")]
    assert not found, "move what they share to tests/support/:\n" + "\n".join(
        f"  {e.path.relative_to(REPO)}:{e.line} imports {e.target}" for e in found)


def _unit_marks(path: Path) -> list[int]:
    """Lines of ``pytest.mark.unit`` / ``mark.unit`` in ``path``."""
    tree = parsed(path)
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "unit"
            and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"]


def test_no_hand_written_unit_mark() -> None:
    found = [f"{path.relative_to(REPO)}:{line}" for path in sorted((REPO / "tests").rglob("*.py"))
             for line in _unit_marks(path)]
    assert not found, ("`unit` is added by tests/tier_guard.py to every test with no heavy marker; "
                       "remove these (a test that needs no broker/JVM/Redis must not carry one):\n  "
                       + "\n  ".join(found))


_COMPONENT_CLASSES = {"Component", "Bolt", "BatchingBolt", "TicklessBatchingBolt", "Spout",
                      "ReliableSpout", "WindowedBolt", "ReplayableSpout"}
_CLASS_FACTS = {"ticks_between_batches", "secs_between_batches"}


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))}


def _inspections(path: Path) -> list[str]:
    """What in ``path`` finds a capability by inspecting a component class (module doc of
    ``stormshift/topology/capabilities.py``): importing pystorm / streamparse component
    classes, ``issubclass``/``isinstance`` against them, ``hasattr``/``getattr`` of an
    engine hook or a batching fact."""
    from stormshift.topology.capabilities import HOOKS

    found = []
    for node in ast.walk(parsed(path)):
        where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] in ("pystorm", "streamparse") and \
                not node.module.startswith("streamparse.dsl"):
            found.append(f"{where} imports from {node.module}")
        elif isinstance(node, ast.Import) and any(
                a.name.split(".")[0] in ("pystorm", "streamparse") for a in node.names):
            found.append(f"{where} imports pystorm/streamparse")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            what, arg = node.func.id, node.args[1]
            if what in ("issubclass", "isinstance") and _names(arg) & _COMPONENT_CLASSES:
                found.append(f"{where} {what}(..., {ast.unparse(arg)})")
            elif what in ("hasattr", "getattr") and isinstance(arg, ast.Constant) and \
                    arg.value in {*HOOKS, *_CLASS_FACTS}:
                found.append(f"{where} {what}(..., {arg.value!r})")
    return found


def test_engines_check_and_shadow_read_capabilities_from_the_graph() -> None:
    found = [f for folder in ("engines", "check", "shadow")
             for path in sorted((REPO / "stormshift" / folder).rglob("*.py"))
             for f in _inspections(path)]
    assert not found, ("engines, check and shadow read what a component can do from its definition "
                       "(ComponentDef.capabilities, computed once at load by "
                       "stormshift/topology/capabilities.py), never from its class:\n  "
                       + "\n  ".join(found))

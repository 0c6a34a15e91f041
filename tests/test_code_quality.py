"""The linters the project is kept clean with, run as part of the suite so CI keeps them clean.

ruff (style, bugs, imports) over the package, tests and bench; mypy over the
package (its settings are in ``pyproject.toml``). A finding fails the test
with the linters' own report.

And the house rules no linter has: no import circle in the package (the graph
and what counts as an import: ``tests/support/import_graph.py``), no test module
importing another (shared helpers live in ``tests/support/``), and no
hand-written ``unit`` mark (``tests/tier_guard.py`` decides the tier).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from support.import_graph import cycles, import_edges, modules_under

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
    circles = cycles(import_edges(modules_under(REPO / "stormshift", "stormshift")))
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
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "unit"
            and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"]


def test_no_hand_written_unit_mark() -> None:
    found = [f"{path.relative_to(REPO)}:{line}" for path in sorted((REPO / "tests").rglob("*.py"))
             for line in _unit_marks(path)]
    assert not found, ("`unit` is added by tests/tier_guard.py to every test with no heavy marker; "
                       "remove these (a test that needs no broker/JVM/Redis must not carry one):\n  "
                       + "\n  ".join(found))

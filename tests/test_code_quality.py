"""The linters the project is kept clean with, run as part of the suite so CI keeps them clean.

ruff (style, bugs, imports) over the package, tests and bench; mypy over the
package (its settings are in ``pyproject.toml``). A finding fails the test
with the linters' own report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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

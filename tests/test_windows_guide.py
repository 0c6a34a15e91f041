"""``migrations_guide/windows.md`` shows real output: its commands, run again, print it.

Each ``text`` block that starts with ``$ stormshift ...`` or ``$ python ...`` and
ends with ``[exit code N]`` is run again (local engine: no JVM, no Redis) and
must exit with N and print exactly the lines shown, but for what changes from
run to run: the run's elapsed seconds and the log file's path.
(That every ``stormshift`` command line of the docs parses is
``tests/test_docs_commands.py``.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.guide_outputs import Shown, shown_outputs

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "migrations_guide" / "windows.md"
_ELAPSED = re.compile(r"(spout tuples), \d+\.\d+s")


SHOWN = shown_outputs(GUIDE, ("stormshift", "python"))


def normalized(lines: list[str] | tuple[str, ...]) -> list[str]:
    out = []
    for line in lines:
        line = _ELAPSED.sub(r"\1, N.NNs", line).strip() if _ELAPSED.search(line) else line.rstrip()
        out.append("component logs: LOG" if line.startswith("component logs: ") else line)
    return out


def test_the_guide_shows_the_adclicks_reports_and_their_oracle() -> None:
    """The parser finds the outputs (a parser that finds none would pass everything)."""
    commands = [s.argv[:2] for s in SHOWN]
    assert ("stormshift", "run") in commands
    assert ("python", "examples/adclicks/expected.py") in commands


@pytest.mark.parametrize("shown", SHOWN, ids=[s.id for s in SHOWN])
def test_command_prints_what_the_guide_shows(shown: Shown) -> None:
    argv = list(shown.argv)
    argv = [sys.executable, "-m", "stormshift", *argv[1:]] if argv[0] == "stormshift" else \
        [sys.executable, *argv[1:]]
    env = {**os.environ, "STORMSHIFT_PURE": "1", "COLUMNS": "80"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
                          check=False)
    assert done.returncode == shown.exit_code, done.stderr[-3000:]
    assert normalized(done.stdout.splitlines()) == normalized(shown.output)

"""The porting guide's worked ports show real output: its commands, run again, print it.

``migrations_guide/porting.md`` shows each command's output in a ``text`` block
that starts with ``$ stormshift ...`` and ends with ``[exit code N]``. Unit
tier: the ``stormshift check`` blocks are run again and must print exactly
that. Spark tier: the ``stormshift shadow`` blocks are run again (real Spark,
real Redis) and must exit with the code shown and print every table row and
the verdict the guide shows (a block may leave rows out, marked ``…``).
(That every command line of the guide parses is ``tests/test_docs_commands.py``.)
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "migrations_guide" / "porting.md"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


@dataclass(frozen=True)
class Shown:
    line: int
    argv: tuple[str, ...]
    output: tuple[str, ...]
    exit_code: int

    @property
    def id(self) -> str:
        return f"porting.md:{self.line} {' '.join(self.argv)}"[:110]


def shown_outputs() -> list[Shown]:
    found: list[Shown] = []
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```text" and lines[i + 1].startswith("$ stormshift "):
            end = lines.index("```", i + 1)
            body = lines[i + 2:end]
            code = re.fullmatch(r"\[exit code (\d+)\]", body[-1])
            assert code, f"porting.md:{end}: a shown output ends with [exit code N]"
            found.append(Shown(i + 2, tuple(shlex.split(lines[i + 1][2:])[1:]),
                               tuple(line.rstrip() for line in body[:-1]), int(code.group(1))))
            i = end
        i += 1
    return found


SHOWN = shown_outputs()
CHECKS = [s for s in SHOWN if s.argv[0] == "check"]
SHADOWS = [s for s in SHOWN if s.argv[0] == "shadow"]


def stormshift(argv: list[str], env: dict[str, str] | None = None,
               cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "STORMSHIFT_PURE": "1", "COLUMNS": "80", **(env or {})}
    return subprocess.run([sys.executable, "-m", "stormshift", *argv], capture_output=True,
                          text=True, timeout=900, env=full, cwd=cwd, check=False)


def test_the_guide_shows_both_worked_ports() -> None:
    """The parser finds the outputs (a parser that finds none would pass everything)."""
    projects = {(s.argv[0], s.argv[1]) for s in SHOWN}
    assert {("check", "examples/adclicks"), ("check", "examples/wordredis"),
            ("shadow", "examples/adclicks"), ("shadow", "examples/wordredis")} <= projects
    assert {s.exit_code for s in SHADOWS} == {0, 1}  # agreeing and diverging shadows


@pytest.mark.parametrize("shown", CHECKS, ids=[s.id for s in CHECKS])
def test_check_prints_what_the_guide_shows(shown: Shown) -> None:
    done = stormshift(list(shown.argv))
    assert done.returncode == shown.exit_code, done.stderr
    assert [line.rstrip() for line in done.stdout.splitlines()] == list(shown.output)


def _rows(lines: tuple[str, ...] | list[str]) -> list[str]:
    """Table rows and the verdict: what must match (progress lines and paths may not)."""
    return [line for line in lines if "│" in line or line.startswith(("AGREE", "DIVERGE"))]


@pytest.mark.spark
@pytest.mark.redis
@pytest.mark.parametrize("shown", SHADOWS, ids=[s.id for s in SHADOWS])
def test_shadow_prints_what_the_guide_shows(shown: Shown, redis_url: str) -> None:
    import redis

    argv = [str(ROOT / a) if a.startswith("examples/") else a for a in shown.argv]
    client = redis.Redis.from_url(redis_url)
    for setting in argv:
        if setting.startswith("wordredis.zset="):  # the legacy's own sorted set: start empty
            client.delete(setting.partition("=")[2])
    if redis_url != DEFAULT_REDIS and "examples/wordredis" in shown.argv:
        argv += ["-o", f"wordredis.redis_url={redis_url}"]
    with tempfile.TemporaryDirectory() as tmp:  # --report FILE lands there
        done = stormshift(argv, {"STORMSHIFT_REDIS": redis_url}, cwd=Path(tmp))
    assert done.returncode == shown.exit_code, done.stdout[-3000:] + done.stderr[-3000:]
    real = _rows([line.rstrip() for line in done.stdout.splitlines()])
    missing = [row for row in _rows(shown.output) if row not in real]
    assert not missing, "\n".join(missing)

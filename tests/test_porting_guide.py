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
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.guide_outputs import Shown, shown_outputs

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "migrations_guide" / "porting.md"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
VERDICTS = ("SAFE TO SWITCH", "PORT DIFFERS", "NOTHING COMPARED", "MOSTLY FAILED",
            "Error: shadow refused")


SHOWN = shown_outputs(GUIDE)
CHECKS = [s for s in SHOWN if s.args[0] == "check"]
SHADOWS = [s for s in SHOWN if s.args[0] == "shadow"]


def stormshift(argv: list[str], env: dict[str, str] | None = None,
               cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "STORMSHIFT_PURE": "1", "COLUMNS": "80", **(env or {})}
    return subprocess.run([sys.executable, "-m", "stormshift", *argv], capture_output=True,
                          text=True, timeout=900, env=full, cwd=cwd, check=False)


def test_the_guide_shows_both_worked_ports() -> None:
    """The parser finds the outputs (a parser that finds none would pass everything)."""
    projects = {(s.args[0], s.args[1]) for s in SHOWN}
    assert {("check", "examples/adclicks"), ("check", "examples/wordredis"),
            ("shadow", "examples/adclicks"), ("shadow", "examples/wordredis")} <= projects
    # safe to switch, the port differs (a component's own Redis writes: scratch servers, no
    # refusal; refusals are shown in check.md)
    assert {s.exit_code for s in SHADOWS} == {0, 1}


@pytest.mark.parametrize("shown", CHECKS, ids=[s.id for s in CHECKS])
def test_check_prints_what_the_guide_shows(shown: Shown) -> None:
    done = stormshift(list(shown.args))
    assert done.returncode == shown.exit_code, done.stderr
    assert [line.rstrip() for line in done.stdout.splitlines()] == list(shown.output)


def _rows(lines: tuple[str, ...] | list[str]) -> list[str]:
    """Table rows and the verdict: what must match (progress lines and paths may not)."""
    return [line for line in lines if "│" in line or line.startswith(VERDICTS)]


@pytest.mark.spark
@pytest.mark.redis
@pytest.mark.parametrize("shown", SHADOWS, ids=[s.id for s in SHADOWS])
def test_shadow_prints_what_the_guide_shows(shown: Shown, redis_url: str) -> None:
    import redis

    argv = [str(ROOT / a) if a.startswith("examples/") else a for a in shown.args]
    client = redis.Redis.from_url(redis_url)
    for setting in argv:
        if setting.startswith("wordredis.zset="):  # the legacy's own sorted set: start empty
            client.delete(setting.partition("=")[2])
    if redis_url != DEFAULT_REDIS and "examples/wordredis" in shown.args:
        argv += ["-o", f"wordredis.redis_url={redis_url}"]
    with tempfile.TemporaryDirectory() as tmp:  # --report FILE lands there
        done = stormshift(argv, {"STORMSHIFT_REDIS": redis_url}, cwd=Path(tmp))
    assert done.returncode == shown.exit_code, done.stdout[-3000:] + done.stderr[-3000:]
    real = _rows([line.rstrip() for line in (done.stdout + done.stderr).splitlines()])
    missing = [row for row in _rows(shown.output) if row not in real]
    assert not missing, "\n".join(missing)

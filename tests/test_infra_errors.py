"""Every Redis mistake is one line, exit 2, in every command that takes a Redis URL (issue 49.4).

Two kinds, each over every subcommand: a URL of a shape no server can be at
(refused while ``--redis`` is parsed: ``state/url.py``, so before any JVM and without
touching Redis: the unit tier), and a server that refuses the password or does not
answer (a password-protected ``redis-server`` of this module's own). Each case runs
in-process through ``stormshift.cli.main`` and asserts: exit 2, at most two non-empty
lines on stderr, no "Traceback", the line naming what is wrong, the password nowhere,
no JVM started (``no_jvm``) and no embedded Redis started.

``run --engine local`` keeps no state in Redis: a malformed URL is refused there too,
but a server's password is never asked (``test_bad_input.py``: the local engine on a
reachable server only warns that ``--redis`` is not used).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from support.cli_cases import ENV_CLEARED, no_jvm
from support.state_fixtures import RedisProcess

from stormshift.cli import main

ROOT = Path(__file__).resolve().parents[1]
WORDCOUNT = str(ROOT / "examples" / "wordcount")
LIVE = str(ROOT / "tests" / "fixtures" / "live")
PW = "s3cr3tPW"
LEGACY = json.dumps({"spend_bolt:default": {"redis_hash": "x:spend:*", "key": "field",
                                            "value": "json:spend"}})

# command lines; the URL is appended as --redis URL
COMMANDS: dict[str, tuple[str, ...]] = {
    "run-spark": ("run", WORDCOUNT, "--max-tuples", "50", "--checkpoint", "{tmp}/ck"),
    "run-spark-json": ("run", WORDCOUNT, "--max-tuples", "50", "--checkpoint", "{tmp}/ck",
                       "--json"),
    "run-local": ("run", WORDCOUNT, "--max-tuples", "50", "--engine", "local"),
    "top": ("top", "wordcount", "--once"),
    "top-json": ("top", "wordcount", "--json"),
    "state-ls": ("state", "ls"),
    "state-ls-json": ("state", "ls", "--json"),
    "state-get": ("state", "get", "wordcount", "count_bolt", "counts", "the"),
    "state-dump": ("state", "dump", "wordcount"),
    "state-reset": ("state", "reset", "wordcount", "--yes"),
    "deadletter-ls": ("deadletter", "ls", "--namespace", "wordcount"),
    "deadletter-replay": ("deadletter", "replay", WORDCOUNT),
    "plan": ("plan", WORDCOUNT, "--checkpoint", "{tmp}/ck"),
    "shadow": ("shadow", WORDCOUNT, "--max-tuples", "50"),
    "compare": ("compare", LIVE, "-n", "port", "--live", "--port-sink", "redis:x:out", "-o",
                f"shadow.legacy={LEGACY}"),
    "submit": ("submit", WORDCOUNT, "--master", "spark://m:7077", "--build-dir", "{tmp}/build"),
}
#: what talks to the state server (submit only ships the URL; the local engine has no state)
TALKS_TO_REDIS = [name for name in COMMANDS if name not in ("submit", "run-local")]

# URL shapes -> a part of the line that says what is wrong
SHAPES: dict[str, tuple[str, str]] = {
    "port-out-of-range": (f"redis://:{PW}@127.0.0.1:99999/0", "port 99999 is out of range"),
    "port-not-a-number": (f"redis://:{PW}@127.0.0.1:abc/0", "port 'abc' is not a number"),
    "port-zero": (f"redis://:{PW}@127.0.0.1:0/0", "port 0 is out of range"),
    "db-not-a-number": (f"redis://:{PW}@127.0.0.1:6379/x", "database 'x' is not a whole number"),
    "db-negative": (f"redis://:{PW}@127.0.0.1:6379/-1", "database '-1' is not a whole number"),
    "unknown-scheme": (f"http://:{PW}@127.0.0.1:6379/0", "unknown scheme 'http://'"),
    "no-scheme": (f"{PW}@127.0.0.1:6379", "not a URL"),
    "missing-host": (f"redis://:{PW}@:6379/0", "names no host"),
    "unparsable": (f"redis://:{PW}@[::1/0", "cannot be parsed"),
    "slash-in-password": ("redis://:s3cr/3tPW@127.0.0.1:6379/0", "percent-encode"),
    "bad-option": (f"redis://:{PW}@127.0.0.1:6379/0?socket_timeout=abc", "option cannot be used"),
    "cluster-with-db": (f"redis+cluster://:{PW}@127.0.0.1:7000/3", "database 3 on a Redis Cluster"),
}


def run_main(argv: Sequence[str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str], tmp: Path) -> tuple[int, str, str]:
    """``stormshift ARGV`` in ``tmp`` with no Redis in the environment: (code, out, err)."""
    for name in ENV_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp)
    with no_jvm():
        code = main([a.replace("{tmp}", str(tmp)) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, out: str, err: str, says: str, secrets: Sequence[str],
                    shown: str) -> None:
    from stormshift.state import connection

    assert code == 2, shown
    assert "Traceback" not in out + err, shown
    lines = [line for line in err.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2, shown
    assert says in err, shown
    for secret in secrets:
        assert secret not in out + err, shown
    assert not connection._started, f"an embedded Redis was started: {shown}"
    if '"exit_code"' in out:  # --json: the error as one object on stdout too
        reply = json.loads(out.strip().splitlines()[-1])
        assert reply["exit_code"] == 2 and says in reply["error"], shown


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_malformed_redis_url_is_one_line_exit_2(command: str, shape: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    url, says = SHAPES[shape]
    code, out, err = run_main([*COMMANDS[command], "--redis", url], monkeypatch, capsys, tmp_path)
    assert_one_line(code, out, err, says, [PW, "3tPW"],
                    f"{command} x {shape}\n--- stderr\n{err}--- stdout\n{out[-1500:]}")
    assert "Redis URL '" in err  # the URL is named (masked), so the user sees which one


@pytest.mark.parametrize("command", ["state-ls", "run-spark", "top"])
def test_a_malformed_url_from_the_environment_is_one_line_too(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ENV_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STORMSHIFT_REDIS", f"redis://:{PW}@127.0.0.1:99999/0")
    monkeypatch.chdir(tmp_path)
    with no_jvm():
        code = main([a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]])
    out, err = capsys.readouterr()
    assert_one_line(code, out, err, "port 99999 is out of range", [PW], err + out)


def test_compare_checks_the_legacy_url_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([*COMMANDS["compare"], "--legacy-redis",
                               f"redis://:{PW}@127.0.0.1:abc/0"], monkeypatch, capsys, tmp_path)
    assert_one_line(code, out, err, "port 'abc' is not a number", [PW], err)


class _Refusing:
    """A client whose every command is refused, as a server changing its password mid-way
    refuses it: what the CLI's last resort turns into one line."""

    def __getattr__(self, _name: str) -> Any:
        def refused(*_a: Any, **_kw: Any) -> Any:
            raise redis.exceptions.AuthenticationError(
                "invalid username-password pair or user is disabled.")

        return refused


def test_a_redis_error_no_command_foresaw_is_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from stormshift.cli import connect

    monkeypatch.setattr(connect, "open_state", lambda *_a, **_kw: _Refusing())
    code, out, err = run_main(["top", "wordcount", "--once", "--redis",
                               f"redis://:{PW}@127.0.0.1:6399/0"], monkeypatch, capsys, tmp_path)
    assert_one_line(code, out, err, "refused the credentials", [PW], err)
    assert "redis://:***@127.0.0.1:6399/0" in err  # the server named, from the command line


def test_a_password_given_to_a_server_without_one_says_so() -> None:
    """redis-py 8 lets such an AUTH pass; an older one, or a proxy, raises this."""
    from stormshift.state.reach import describe

    exc = redis.exceptions.AuthenticationError(
        "AUTH <password> called without any password configured for the default user. Are you "
        "sure your configuration is correct?")
    line = describe(exc, f"redis://:{PW}@127.0.0.1:6379/0")
    assert "has no password, but the URL gives one" in line and "requirepass" in line
    assert PW not in line and "\n" not in line


# -- a server that refuses: one line before the JVM ---------------------------------------------
GOOD = "g00dPassw0rd"
WRONG = "wr0ngPassw0rd"


@pytest.fixture(scope="module")
def locked_port() -> Iterator[int]:
    """A redis-server of this module's own that wants a password."""
    server = RedisProcess()
    server.start()
    redis.Redis(port=server.port).config_set("requirepass", GOOD)
    try:
        yield server.port
    finally:
        server.close()


REFUSALS = {  # name -> (URL with {port}, what the line says)
    "wrong-password": (f"redis://:{WRONG}@127.0.0.1:{{port}}/0", "refused the credentials"),
    "wrongpass-user": (f"redis://bob:{WRONG}@127.0.0.1:{{port}}/0", "refused the credentials"),
    "noauth": ("redis://127.0.0.1:{port}/0", "refused the credentials"),
    "connection-refused": (f"redis://:{WRONG}@127.0.0.1:1/0", "cannot reach Redis"),
}


@pytest.mark.redis
@pytest.mark.parametrize("command", TALKS_TO_REDIS)
@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_a_refused_password_or_dead_server_is_one_line_exit_2(
        command: str, refusal: str, locked_port: int, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url, says = REFUSALS[refusal]
    code, out, err = run_main([*COMMANDS[command], "--redis", url.format(port=locked_port)],
                              monkeypatch, capsys, tmp_path)
    assert_one_line(code, out, err, says, [WRONG, GOOD],
                    f"{command} x {refusal}\n--- stderr\n{err}--- stdout\n{out[-1500:]}")


@pytest.mark.spark  # the local case runs no JVM, but waits out the spout's 10 s metadata timeout
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_kafka_broker_that_is_not_there_is_one_line_exit_2(
        engine: str, tmp_path: Path) -> None:
    """pixelcount's Kafka spout without its broker (127.0.0.1:9092, which no test serves):
    the local engine used to restart the spout for ever (a shadow waited 10 minutes), Spark
    failed the query (exit 5): now one line naming the spout, the servers and the fix, on
    both engines."""
    import subprocess
    import sys

    port = 9092
    argv = [sys.executable, "-m", "stormshift", "run", str(ROOT / "examples" / "pixelcount"),
            "--max-tuples", "10"]
    argv += ["--engine", "local"] if engine == "local" else ["--checkpoint", str(tmp_path / "ck")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert f"spout pixel-spout: cannot reach Kafka at 127.0.0.1:{port}" in errors[0]
    assert "fix: start the broker" in errors[0]

"""The Redis outage policy's pure parts (``stormshift/state/outage.py``): when the lines are
said, the bound, the one error line, and how the driver recognises an outage in a failed
query's text. The real outages (a killed redis-server, Spark) are ``test_redis_outage.py``."""

from __future__ import annotations

from typing import Any

import pytest
from redis import exceptions as rex

from stormshift.engines.spark.driver.outage_watch import outage_in, prepare_processes
from stormshift.errors import FencedError, RunFailedError, StormshiftError
from stormshift.state import outage
from stormshift.state.outage import OutageReporter, OutageRetry, RedisOutage, bound_from_config


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def made(bound: float = 60.0) -> tuple[OutageReporter, list[str], Clock]:
    lines: list[str] = []
    clock = Clock()
    return OutageReporter(lines.append, bound, clock, "127.0.0.1:6390"), lines, clock


def test_first_failure_alone_says_nothing_then_one_line_per_outage() -> None:
    rep, lines, clock = made()
    rep.failed(rex.ConnectionError("Connection refused"))  # a stale pooled connection
    rep.ok()
    assert lines == []
    for _ in range(20):  # a real outage: many failures, in many calls
        clock.now += 0.5
        rep.failed(rex.ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused."))
    assert len(lines) == 1
    assert lines[0].startswith("Redis at 127.0.0.1:6390 unreachable (Error 111")
    assert "retrying for up to 60 s (stormshift.redis_outage_s)" in lines[0]


def test_recovery_says_once_how_long_it_was_down() -> None:
    rep, lines, clock = made()
    rep.failed()
    clock.now += 1.0
    rep.failed()
    clock.now += 14.25
    rep.ok()
    rep.ok()
    assert lines[1:] == ["Redis at 127.0.0.1:6390 is back after 15.2 s down"]
    assert rep.down_since is None and rep.outages == 1
    rep.failed()  # a second outage: its own pair of lines
    rep.failed()
    rep.ok()
    assert len(lines) == 4 and rep.outages == 2


def test_an_answer_to_a_call_sent_before_the_outage_does_not_end_it() -> None:
    """Threads share the reporter: a reply already on its way when the server died comes in
    after another thread's failures; it is no sign that Redis is back."""
    rep, lines, clock = made()
    sent = clock.now
    clock.now += 0.1
    rep.failed()
    clock.now += 0.5
    rep.failed()  # the outage is said
    clock.now += 1.0
    rep.ok(sent)  # the old call's answer
    assert rep.down_since is not None and len(lines) == 1
    rep.ok(clock.now)  # a call sent now answers: back
    assert rep.down_since is None and lines[1].endswith("is back after 1.5 s down")


def test_past_the_bound_raises_redis_outage_not_a_connection_error() -> None:
    rep, _lines, clock = made(bound=10)
    rep.failed()
    clock.now += 9.9
    rep.failed()
    clock.now += 0.2
    with pytest.raises(RedisOutage) as info:
        rep.failed()
    assert not isinstance(info.value, rex.ConnectionError)
    assert isinstance(info.value, RunFailedError)  # exit 5
    assert str(info.value) == "Redis at 127.0.0.1:6390 unreachable for 10 s (stormshift.redis_outage_s)"


def test_the_drivers_line_names_the_last_committed_batch() -> None:
    line = str(RedisOutage("127.0.0.1:6390", 181.4).at(7))
    assert line == ("Redis at 127.0.0.1:6390 unreachable for 181 s (stormshift.redis_outage_s); "
                    "the run stopped at batch 7, nothing committed after 7; rerun the same "
                    "command when Redis is back")
    assert "before its first batch committed" in str(RedisOutage("h:1", 5).at(-1))


def test_a_broken_sink_does_not_fail_the_retry() -> None:
    def broken(_line: str) -> None:
        raise OSError("closed")

    rep = OutageReporter(broken, 60, Clock())
    rep.failed()
    rep.failed()  # the line's sink raises: the outage is still counted, nothing escapes
    assert rep.announced and rep.outages == 1 and rep.down_since is not None
    rep.ok()
    assert rep.down_since is None
    rep.ok()


@pytest.mark.parametrize(("raw", "secs"), [(None, outage.DEFAULT_SECS), (5, 5.0), ("2.5", 2.5)])
def test_the_option(raw: Any, secs: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(outage.ENV, raising=False)
    config = {} if raw is None else {outage.OPTION: raw}
    assert bound_from_config(config) == secs


@pytest.mark.parametrize("raw", ["soon", 0, -3])
def test_a_bad_option_is_refused(raw: Any) -> None:
    with pytest.raises(StormshiftError, match="stormshift.redis_outage_s"):
        bound_from_config({outage.OPTION: raw})


@pytest.fixture
def fake_reporter(monkeypatch: pytest.MonkeyPatch) -> tuple[OutageReporter, list[str], Clock]:
    rep, lines, clock = made(bound=30)
    monkeypatch.setattr(outage, "_REPORTER", rep)
    monkeypatch.setattr(outage.time, "sleep", lambda secs: setattr(clock, "now", clock.now + secs))
    return rep, lines, clock


def test_the_clients_retry_rides_an_outage_through(fake_reporter: Any) -> None:
    rep, lines, _clock = fake_reporter
    calls, closed = [], []

    def do() -> str:
        calls.append(1)
        if len(calls) < 6:
            raise rex.ConnectionError("Connection refused")
        return "OK"

    assert OutageRetry().call_with_retry(do, closed.append) == "OK"
    assert len(closed) == 5  # the connection dropped after each failure
    assert len(lines) == 2 and "is back after" in lines[1]
    assert rep.down_since is None


def test_the_clients_retry_gives_up_at_the_bound(fake_reporter: Any) -> None:
    def down() -> None:
        raise rex.ConnectionError("Connection refused")

    with pytest.raises(RedisOutage, match="unreachable for 3[0-9] s"):
        OutageRetry().call_with_retry(down, lambda _e, _n: None, with_failure_count=True)


def test_the_clients_retry_never_retries_a_fenced_write_or_a_script_error(fake_reporter: Any) -> None:
    for error in (FencedError("stale epoch"), rex.ResponseError("ERR bad"),
                  rex.AuthenticationError("invalid username-password pair")):
        calls: list[int] = []

        def do(error: Exception = error, calls: list[int] = calls) -> None:
            calls.append(1)
            raise error

        with pytest.raises(type(error)):
            OutageRetry().call_with_retry(do, lambda _e: None)
        assert calls == [1]


def test_tenacity_retrying_never_retries_wrong_credentials(fake_reporter: Any) -> None:
    from stormshift.state.connection import retrying

    calls: list[int] = []

    @retrying
    def refused() -> None:
        calls.append(1)
        raise rex.AuthenticationError("WRONGPASS")

    with pytest.raises(rex.AuthenticationError):
        refused()
    assert calls == [1]


def test_tenacity_retrying_shares_the_policy(fake_reporter: Any) -> None:
    from stormshift.state.connection import retrying

    rep, lines, _clock = fake_reporter
    calls: list[int] = []

    @retrying
    def round_trip() -> int:
        calls.append(1)
        if len(calls) < 4:
            raise rex.ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")
        return 42

    assert round_trip() == 42
    assert len(lines) == 2 and rep.down_since is None


def test_stale_pooled_connections_failing_after_a_restart_announce_nothing(
        fake_reporter: Any) -> None:
    """After a restart each connection the pool kept fails once (reset, closed) while new
    ones connect: no second outage is announced for them."""
    rep, lines, _clock = fake_reporter
    for _ in range(3):
        rep.failed(rex.ConnectionError("Connection reset by peer"))
    rep.ok()
    assert lines == [] and rep.down_since is None
    for _ in range(5):  # but connections dropped again and again are an outage
        rep.failed(rex.ConnectionError("Connection closed by server."))
    assert len(lines) == 1


def test_the_driver_recognises_an_outage_in_a_failed_querys_text(fake_reporter: Any) -> None:
    text = ("org.apache.spark.SparkException: Job aborted\nTraceback (most recent call last):\n"
            "  File ...\nstormshift.state.outage.RedisOutage: Redis at 127.0.0.1:6390 unreachable "
            "for 45 s (stormshift.redis_outage_s)\n\tat org.apache...")
    gone = outage_in(text)
    assert gone is not None and gone.where == "127.0.0.1:6390" and gone.secs >= 45
    assert outage_in("pyspark.errors.PythonException: ValueError: bad") is None
    plain = "redis.exceptions.ConnectionError: Error 111 connecting"
    assert outage_in(plain) is None  # Redis answers here: not an outage of ours
    rep, _lines, _clock = fake_reporter
    rep.failed()
    assert outage_in(plain) is not None


def test_every_process_gets_the_bound_plus_the_grace(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Any) -> None:
    monkeypatch.delenv(outage.ENV, raising=False)
    monkeypatch.delenv(outage.LOG_ENV, raising=False)
    conf: dict[str, str] = {}
    prepare_processes(10, str(tmp_path), conf)
    import os

    assert os.environ[outage.ENV] == "20" and conf[f"spark.executorEnv.{outage.ENV}"] == "20"
    assert os.environ[outage.LOG_ENV].startswith(str(tmp_path))

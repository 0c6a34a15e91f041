"""Every way a user's code can fail is visible and nothing is lost silently, on both engines.

The fixture project ``tests/fixtures/failing`` reproduces the situations a new
user met with real public streamparse projects: a BatchingBolt that declares no
outputs but emits, a BatchingBolt whose ``process_batch`` / ``group_key`` raise,
a TicklessBatchingBolt that raises, a spout swallowing its own StopIteration, a
crashing bolt with tuples queued behind it, a bolt failing every tuple, emits of
the wrong arity / to an undeclared stream, ``fail()`` called by the bolt, a spout
whose ``next_tuple`` raises, and a bolt that only logs.

Oracles are independent of the engines: the inputs are ``n`` in ``[0, limit)``
with key ``k{n % 7}``, so every expected count is arithmetic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormshift.engines.local import LocalEngine, SimClock
from stormshift.topology.loader import load_topology

PROJECT = Path(__file__).parent / "fixtures" / "failing"


def graph(name: str, **overrides: Any) -> Any:
    return load_topology(str(PROJECT), name=name, overrides=overrides or None)


def local(name: str, **overrides: Any) -> Any:
    engine = LocalEngine(graph(name, **overrides), clock=SimClock())
    return engine, engine.run()


def kinds(summary: Any, component: str) -> dict[str, Any]:
    return {k.type: k for k in summary.problems.kinds(component)}


def keys_of(limit: int, skip: set[int] = frozenset()) -> dict[str, int]:  # type: ignore[assignment]
    counts: dict[str, int] = {}
    for n in range(limit):
        if n not in skip:
            counts[f"k{n % 7}"] = counts.get(f"k{n % 7}", 0) + 1
    return counts


# -- local engine (Storm semantics): bounded runs end, every failure counted ------------
def test_local_batching_bolt_without_outputs_fails_visibly_and_ends() -> None:
    _, summary = local("no_outputs", **{"numbers.limit": 300})
    spout, batcher = summary["numbers"], summary["batcher"]
    # Storm replays every failed batch; after the replay limit each tuple is given up.
    assert spout.acks == 0 and spout.gave_up == 300
    assert batcher.acks == 0 and batcher.fails == batcher.tuples_in > 0
    kind = kinds(summary, "batcher")["TupleError"]
    assert "undeclared stream" in kind.message and kind.location.startswith("src/bolts/failing.py:")
    assert "process_batch" in kind.location and "Traceback" in kind.traceback
    assert summary.accounting()["topology"]["holds"]


def test_local_batch_failures_end_with_every_spout_tuple_acked_or_given_up() -> None:
    _, summary = local("batch_raises")
    spout = summary["numbers"]
    assert spout.acks + spout.gave_up == 700 and spout.gave_up > 0
    assert set(kinds(summary, "batcher")) == {"KeyError", "RuntimeError"}
    assert summary.pending_trees == 0 and summary.accounting()["topology"]["holds"]


def test_local_tickless_flush_failure_ends_with_the_bad_key_given_up() -> None:
    _, summary = local("tickless_raises", **{"stormshift.max_replays": 2})
    spout = summary["numbers"]
    assert spout.acks + spout.gave_up == 700 and spout.gave_up >= 100  # every k3 tuple
    kind = kinds(summary, "batcher")["RuntimeError"]
    assert "process_batch" in kind.location and summary.pending_trees == 0


def test_local_spout_swallowing_stop_iteration_ends_after_idle_timeout_with_a_warning() -> None:
    _, summary = local("swallow_stop", **{"stormshift.idle_timeout_secs": 3})
    assert summary.stop_reason == "sources idle for 3s"
    assert summary["numbers"].acks == 200
    assert any("numbers" in w and "StopIteration" in w for w in summary.warnings)
    assert {k: v[1] for k, v in summary.latest("counter").items()} == keys_of(200)


def test_local_crashed_task_queued_tuples_are_counted_lost() -> None:
    _, summary = local("crash_queued")
    summer, repeater = summary["summer"], summary["repeater"]
    assert summer.restarts == summer.errors > 0 and summer.lost > 0
    assert summer.received == summer.tuples_in + summer.lost + summer.queued
    assert summer.received == repeater.tuples_out
    acc = summary.accounting()
    assert acc["topology"]["lost"] == summer.lost and acc["bolts"]["summer"]["holds"]
    assert kinds(summary, "summer")["ValueError"].count == summer.errors


def test_local_bolt_failing_every_tuple_gives_up_after_the_replay_limit() -> None:
    _, summary = local("always_raises", **{"stormshift.max_replays": 2})
    spout, raiser = summary["numbers"], summary["raiser"]
    assert spout.gave_up == 50 and spout.fails == 150 and spout.acks == 0
    assert raiser.tuples_in == raiser.fails == 150
    assert kinds(summary, "raiser")["ZeroDivisionError"].count == 150


def test_local_bad_emits_and_bolt_fail_are_counted() -> None:
    _, summary = local("bad_emits", **{"stormshift.max_replays": 1})
    errors = kinds(summary, "arity")
    assert set(errors) == {"TupleError"} and summary["arity"].errors > 0
    assert summary["failer"].fails > 0 and summary["numbers"].gave_up > 0
    assert summary.pending_trees == 0


def test_local_spout_next_tuple_raising_restarts_it_and_shows_the_error() -> None:
    from spouts.numbers import FlakySpout  # the fixture's own module (loaded by the graph)

    FlakySpout.raised = False
    _, summary = local("spout_raises")
    assert summary["numbers"].restarts == 1
    kind = kinds(summary, "numbers")["ConnectionError"]
    assert kind.count == 1 and "next_tuple" in kind.location


def test_summary_lines_show_each_distinct_error_once_with_a_traceback() -> None:
    from io import StringIO

    from rich.console import Console

    from stormshift.runner import print_summary

    engine, summary = local("always_raises", **{"stormshift.max_replays": 0})
    buffer = StringIO()
    print_summary(engine.graph, summary, Console(file=buffer, width=100))
    text = buffer.getvalue()
    assert "errors in raiser: 50 (1 distinct)" in text
    assert text.count("ZeroDivisionError: cannot handle") >= 2  # headline + traceback's last line
    assert text.count("Traceback (most recent call last)") == 1
    assert "src/bolts/failing.py" in text


# -- Spark engine: retried, then dead-lettered with the reason; accounting adds up -------
def spark_run(spark: Any, name: str, tmp_path: Path, redis_url: str, namespace: str,
              **overrides: Any) -> Any:
    from stormshift.engines.spark import SparkEngine

    engine = SparkEngine(graph(name, **overrides), checkpoint_dir=str(tmp_path / "ck"),
                         redis_url=redis_url, spark=spark, namespace=namespace,
                         until_done=True, batch_max_tuples=250)
    return engine.run()


def letters(redis_url: str, namespace: str) -> list[Any]:
    from stormshift.state.connection import connect
    from stormshift.state.deadletter import DeadLetters

    return DeadLetters(connect(redis_url), namespace).since("0-0")


@pytest.mark.spark
@pytest.mark.redis
def test_spark_batching_bolt_without_outputs_dead_letters_every_tuple(spark, redis_url, namespace,
                                                                      tmp_path):
    summary = spark_run(spark, "no_outputs", tmp_path, redis_url, namespace,
                        **{"numbers.limit": 1000})
    batcher = summary["batcher"]
    assert batcher.tuples_in == batcher.dead_lettered == 1000 and batcher.acks == 0
    assert summary.dead_letter_reasons["batcher"] == {"emit": 1000}
    assert summary.accounting()["topology"]["holds"]
    kind = kinds(summary, "batcher")["TupleError"]
    assert kind.count == 1000 and "process_batch" in kind.location and kind.traceback
    found = letters(redis_url, namespace)
    assert len(found) == 1000 and {d.reason for d in found} == {"emit"}
    assert sorted(d.values[0] for d in found) == list(range(1000))


@pytest.mark.spark
@pytest.mark.redis
def test_spark_batch_flush_and_group_key_failures_dead_letter_only_their_tuples(
        spark, redis_url, namespace, tmp_path):
    summary = spark_run(spark, "batch_raises", tmp_path, redis_url, namespace)
    batcher = summary["batcher"]
    k3 = [n for n in range(700) if n % 7 == 3]
    assert batcher.dead_lettered == len(k3) + 1 and batcher.acks == 700 - len(k3) - 1
    assert summary.dead_letter_reasons["batcher"] == {"raised": len(k3) + 1}
    assert summary.accounting()["topology"]["holds"]
    # A dead-lettered tuple leaves no trace in state: k3 never flushed, n=11 not counted.
    expected = keys_of(700, skip={11, *k3})
    assert {k: v[1] for k, v in summary.latest("batcher").items()} == expected
    assert set(kinds(summary, "batcher")) == {"KeyError", "RuntimeError"}
    assert sorted(d.values[0] for d in letters(redis_url, namespace)) == sorted([11, *k3])


@pytest.mark.spark
@pytest.mark.redis
def test_spark_tickless_batching_bolt_flush_failure_is_dead_lettered(spark, redis_url, namespace,
                                                                     tmp_path):
    summary = spark_run(spark, "tickless_raises", tmp_path, redis_url, namespace)
    batcher = summary["batcher"]
    assert batcher.dead_lettered == 100 and batcher.acks == 600
    assert summary.accounting()["topology"]["holds"]


@pytest.mark.spark
@pytest.mark.redis
def test_spark_bad_emits_and_bolt_fail_are_dead_lettered_with_reasons(spark, redis_url, namespace,
                                                                      tmp_path):
    summary = spark_run(spark, "bad_emits", tmp_path, redis_url, namespace)
    odd = [n for n in range(100) if n % 2 and n % 10 != 4]
    undeclared = [n for n in range(100) if n % 10 == 4]
    assert summary.dead_letter_reasons["arity"] == {"emit": len(odd) + len(undeclared)}
    assert summary.dead_letter_reasons["failer"] == {"fail": 10}
    assert summary["arity"].acks == 100 - len(odd) - len(undeclared)
    assert summary.accounting()["topology"]["holds"]
    found = summary.problems.kinds("arity")  # one kind per emitting line
    assert {k.type for k in found} == {"TupleError"} and len(found) == 2
    assert sum(k.count for k in found) == len(odd) + len(undeclared)


# -- components' own log lines reach a file per topology and the console (WARNING+) -------
def run_logged(engine: str, tmp_path: Path, spark: Any = None, redis_url: str | None = None,
               namespace: str | None = None) -> tuple[Any, list[str], str]:
    from stormshift.runner import RunOptions, run_topology

    console_lines: list[str] = []

    class Capture:
        def print(self, line: str, **_: Any) -> None:
            console_lines.append(line)

    g = graph("logs_only")
    log_file = str(tmp_path / "logs" / "logs_only.log")
    if engine == "local":
        summary = run_topology(g, RunOptions(engine="local", log_file=log_file),
                               progress=Capture())  # type: ignore[arg-type]
    else:
        from stormshift.engines.logs import ComponentLogs
        from stormshift.engines.spark import SparkEngine

        with ComponentLogs(log_file, console=console_lines.append):
            summary = SparkEngine(g, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                                  spark=spark, namespace=namespace, until_done=True).run()
    return summary, console_lines, Path(log_file).read_text(encoding="utf-8")


def test_local_component_logs_go_to_the_topology_log_file_and_warnings_to_the_console(tmp_path):
    summary, console, text = run_logged("local", tmp_path)
    assert summary.log_file == str(tmp_path / "logs" / "logs_only.log")
    assert f"component logs: {summary.log_file}" in console
    lines = text.splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == [
        "INFO logger_bolt[0]: seen n=0 key=k0", "WARNING logger_bolt[0]: n=50 looks odd",
        "INFO logger_bolt[0]: seen n=100 key=k2", "INFO logger_bolt[0]: seen n=200 key=k4"]
    assert [c for c in console if "looks odd" in c] == ["warning: logger_bolt[0]: n=50 looks odd"]


@pytest.mark.spark
@pytest.mark.redis
def test_spark_component_logs_reach_the_driver_log_file_once_per_line(spark, redis_url, namespace,
                                                                      tmp_path):
    _, console, text = run_logged("spark", tmp_path, spark, redis_url, namespace)
    lines = [line.split(" ", 2)[2] for line in text.splitlines()]
    assert lines == [
        "INFO logger_bolt[0] txid 0: seen n=0 key=k0", "WARNING logger_bolt[0] txid 0: n=50 looks odd",
        "INFO logger_bolt[0] txid 0: seen n=100 key=k2", "INFO logger_bolt[0] txid 0: seen n=200 key=k4"]
    assert console == ["warning: logger_bolt[0] txid 0: n=50 looks odd"]


# -- after end of input, Spark runs as many tick intervals as the ticking bolts need ------
def test_drain_ticks_are_what_the_ticking_bolts_need_to_flush() -> None:
    from stormshift.engines.spark.driver.ticks import drain_ticks, tick_intervals_ms

    def need(name: str) -> int:
        g = graph(name)
        return drain_ticks(g, tick_intervals_ms(g))

    assert need("no_outputs") == 1  # ticks_between_batches = 0: the next tick flushes
    assert need("logs_only") == 0  # nothing ticks: fin at once
    # 3 ticks for the batcher, then the counter's one tick of 2 s = 2 intervals of 1 s
    assert need("batch_chain") == 5


@pytest.mark.spark
@pytest.mark.redis
def test_spark_drain_flushes_every_held_tuple_with_no_extra_empty_batches(spark, redis_url,
                                                                          namespace, tmp_path):
    from stormshift.engines.spark import SparkEngine

    lines: list[str] = []
    engine = SparkEngine(graph("batch_chain"), checkpoint_dir=str(tmp_path / "ck"),
                         redis_url=redis_url, spark=spark, namespace=namespace, until_done=True)
    summary = engine.run(on_progress=lines.append)
    batcher, counter = summary["batcher"], summary["counter"]
    assert batcher.tuples_in == batcher.acks == 70  # all flushed before the run ended
    assert counter.tuples_in == counter.acks == batcher.tuples_out > 0
    assert summary.accounting()["topology"]["holds"]
    batches = [line for line in lines if line.startswith("batch ")]
    last_data = max(i for i, line in enumerate(batches) if " 0 spout tuples" not in line)
    assert len(batches) - 1 - last_data <= 5 + 1  # the drain's tick intervals, then fin


@pytest.mark.spark
@pytest.mark.redis
def test_spark_spout_next_tuple_raising_is_reported_with_its_location(spark, redis_url, namespace,
                                                                      tmp_path):
    summary = spark_run(spark, "spout_raises", tmp_path, redis_url, namespace)
    kind = kinds(summary, "numbers")["ConnectionError"]
    assert kind.count == 1 and "next_tuple" in kind.location and "Traceback" in kind.traceback
    assert summary["numbers"].errors == 1
    # Storm keeps calling next_tuple: nothing was lost
    assert {k: v[1] for k, v in summary.latest("counter").items()} == keys_of(100)


@pytest.mark.spark
@pytest.mark.redis
def test_spark_until_done_ends_when_a_spout_never_signals_end_of_input(spark, redis_url,
                                                                       namespace, tmp_path):
    summary = spark_run(spark, "swallow_stop", tmp_path, redis_url, namespace,
                        **{"stormshift.idle_timeout_secs": 2})
    assert summary.stop_reason == "done"
    assert any("numbers" in w and "StopIteration" in w for w in summary.warnings)
    assert {k: v[1] for k, v in summary.latest("counter").items()} == keys_of(200)

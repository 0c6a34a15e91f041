"""SparkEngine: run a topology graph on Spark Structured Streaming, exactly once.

API (also used by ``bench/spark_adclicks.py``)::

    engine = SparkEngine(graph, master="local[2]", checkpoint_dir="/tmp/ck",
                         redis_url="redis://127.0.0.1:6379/0", trigger_secs=0.0,
                         until_done=True, batch_max_tuples=500_000, sink="drop",
                         state_mode="strict", spark=None, namespace=None)
    summary = engine.run(max_tuples=None, duration_secs=None, on_progress=print)

- ``master``: any Spark master (ignored when ``spark``, an existing session, is given).
- ``checkpoint_dir``: Spark checkpoint (default ``.stormshift/checkpoints/<topology>``);
  it is bound to the state namespace (``state_mode``: ``strict`` refuses a new
  checkpoint on existing state, ``reset`` wipes the state, ``adopt`` continues it).
- ``redis_url``: state server (default: ``STORMSHIFT_REDIS_URL`` or embedded).
- ``trigger_secs``: processing-time trigger (0: next batch as soon as one ends).
- ``until_done``: stop once every spout reached end of input and its last batch committed.
- ``batch_max_tuples``: tuples per spout task per batch (default 10,000).
- ``sink``: ``jsonl:DIR`` (default ``<checkpoint>/sink``), ``redis:STREAM`` or ``drop``;
  ``sink_streams``: the leaf streams it keeps (``component:stream``; default all).
- ``spark_conf``: extra settings for the session it builds (``--conf``; unused with ``spark``).
- ``clock``: the batches' processing time, epoch ms, read once when a batch is first
  planned (default: the wall clock; tests pass a scripted one). Windowed bolts and
  ticks see the time recorded with the batch (``driver/windows.py``), never this clock.
- ``takeover``: replace a live run of the namespace (``state/lease.py``): it stops at its
  next lease renewal and can commit nothing after this run took the lease; without it a
  live run there refuses this one (``LeaseHeldError``) before the JVM starts.
- ``read_state``: fill ``RunSummary.final_state`` at the end (each bolt task's last committed
  snapshot and the bolts' keyed maps, read back from Redis: shadow runs compare them).
- ``run(max_tuples=N)`` takes exactly N spout tuples per run, in total over every spout and
  spout task (``stormshift.engines.budget``: which ones, independent of timing and batch
  sizes), cutting the last batch at N in the sources' offsets; it stops once that batch
  committed, or at end of input if that comes first (with or without ``until_done``);
  ``duration_secs`` stops it earlier. The count is kept in the offsets Spark logs, so a
  later ``run(max_tuples=M)`` on the same checkpoint takes the next M - N tuples;
  ``run(max_batches=N)`` stops the query once N batches committed (the next one may be cut
  short: it is re-run from the checkpoint by the next ``run``).

``run`` returns a ``RunSummary`` (per component tuples in/out, acks, fails,
errors, dead-lettered; leaf outputs read back from a jsonl sink).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stormshift.engines.budget import spout_budgets
from stormshift.engines.logs import dropped_warning, forward_logs, max_lines_per_task
from stormshift.engines.spark.driver.batch import (
    BatchConfig,
    BatchResult,
    BatchRunner,
    BatchStatus,
)
from stormshift.engines.spark.driver.outage_watch import (
    OutageWatch,
    outage_in,
    prepare_processes,
    quiet_for_outage_stop,
    wait_tasks_gone,
)
from stormshift.engines.spark.driver.progress import (
    first_seen_errors,
    format_progress,
    query_failure,
    stop_reason_from,
)
from stormshift.engines.spark.driver.spout_letters import run_spout_letters
from stormshift.engines.spark.driver.stopping import StopRequests, interrupted_text, stop_query
from stormshift.engines.spark.driver.ticks import TickRecorder, drain_ticks, tick_intervals_ms
from stormshift.engines.spark.driver.windows import WindowClock
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.engines.spark.records.runrecords import clear_source_lags, clear_stop
from stormshift.engines.spark.source.options import now_ms, source_options
from stormshift.engines.spark.source.source import SOURCE_NAME, SpoutSource
from stormshift.engines.spark.source.spout_report import clear_spout_reports, read_spout_reports
from stormshift.engines.spark.task.sink import keep_streams, parse_sink, read_jsonl_outputs
from stormshift.engines.summary import ComponentState, RunSummary
from stormshift.errors import LeaseLostError, StormshiftError
from stormshift.metrics.board import Board
from stormshift.metrics.feed import fold_batch, fold_spout_dead_letters
from stormshift.metrics.records import write_board
from stormshift.state.outage import RedisOutage, bound_from_config, reporter

__all__ = ["SparkEngine"]

log = logging.getLogger("stormshift.engines.spark")

DEFAULT_BATCH_MAX = 10_000
POLL_SECS = 0.1
FAILURE_FILE = "stormshift-last-failure.txt"  # a failed query's whole error (the console gets one line)


class SparkEngine:
    def __init__(self, graph: Any, *, master: str = "local[*]", checkpoint_dir: str | None = None,
                 redis_url: str | None = None, trigger_secs: float = 0.0, until_done: bool = False,
                 batch_max_tuples: int | None = None, sink: str | None = None,
                 state_mode: str = "strict", spark: Any = None, namespace: str | None = None,
                 budget_ms: int = 500, max_attempts: int = 3,
                 spark_conf: dict[str, str] | None = None, read_state: bool = False,
                 clock: Callable[[], int] | None = None, sink_streams: list[str] | None = None,
                 metrics: Any = None, takeover: bool = False):
        self.graph = graph
        self.takeover = takeover
        self.lease: Any = None  # this run's LeaseKeeper while it runs (``driver/leased.py``)
        self.metrics = metrics  # a metrics.exposition.MetricsServer (``--metrics-port``), or None
        self.layout = Layout(graph)
        self.master = master
        self.checkpoint_dir = os.path.abspath(
            checkpoint_dir or os.path.join(".stormshift", "checkpoints", _safe(graph.name)))
        self.redis_url = redis_url
        self.trigger_secs = trigger_secs
        self.until_done = until_done
        self.batch_max = batch_max_tuples or DEFAULT_BATCH_MAX
        self.sink = keep_streams(parse_sink(sink, os.path.join(self.checkpoint_dir, "sink")),
                                 sink_streams, self.layout.leaf_streams)
        self.state_mode = state_mode
        self.spark = spark
        self.namespace = namespace or _safe(graph.name)
        self.budget_ms = budget_ms
        self.max_attempts = max_attempts
        self.spark_conf = dict(spark_conf or {})
        self.read_state = read_state
        self.clock = clock
        self.log_limit = max_lines_per_task(graph.config)  # a bad -o value: refused before Spark
        self.outage_s = bound_from_config(graph.config)  # -o stormshift.redis_outage_s
        self._watch: OutageWatch | None = None
        self._commit_log: Any = None

    # -- setup ---------------------------------------------------------------
    def _session(self) -> Any:
        from stormshift.engines.spark.runtime.session import build_session, configure_session

        if self.spark is None:
            self.spark = build_session(self.master, app_name=f"stormshift-{self.graph.name}",
                                       conf=self.spark_conf)
        else:
            configure_session(self.spark)
        self.spark.dataSource.register(SpoutSource)
        return self.spark

    def _checkpoint_id(self) -> str:
        """A stable id of this checkpoint dir (a recreated dir is a new checkpoint)."""
        path = Path(self.checkpoint_dir) / "stormshift-checkpoint-id"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(uuid.uuid4().hex, encoding="utf-8")
        return path.read_text(encoding="utf-8").strip()

    def _state_key(self) -> tuple[bytes, str]:
        """HMAC key of snapshots and where it came from: env, config, else a key file
        beside the checkpoint (made on first use: ``snapshots.run_key``)."""
        from stormshift.state.snapshots import run_key

        return run_key(self.graph.config, self.checkpoint_dir)

    def _prepare_state(self, say: Callable[[str], None] | None = None,
                       ) -> tuple[Any, str, bytes, Any, int, list[str]]:
        """Every check and binding of the state, before the JVM starts (``driver/startup.py``),
        the namespace's lease first (``driver/leased.py``)."""
        from stormshift.engines.spark.driver.leased import take_lease
        from stormshift.engines.spark.driver.startup import prepare_state

        def lease(r: Any) -> Any:
            self.lease = take_lease(r, self.namespace, self.graph, self.checkpoint_dir,
                                    state_mode=self.state_mode, takeover=self.takeover, say=say)
            return self.lease

        return prepare_state(self.graph, self.namespace, self.checkpoint_dir, self.redis_url,
                             self.state_mode, self._checkpoint_id, self._state_key,
                             before_jvm=(self.master, self.spark_conf, self.spark is not None),
                             lease=lease, lease_late=self.takeover)

    # -- run -----------------------------------------------------------------
    def run(self, max_tuples: int | None = None, duration_secs: float | None = None,
            on_progress: Callable[[str], None] | None = None,
            max_batches: int | None = None) -> RunSummary:
        """Run the query (``_run``) under the Redis outage policy (``driver/outage_watch.py``):
        an outage past ``stormshift.redis_outage_s`` ends it with one line (exit 5). However
        the run ends (refused at start-up too), its lease of the namespace goes back."""
        prepare_processes(self.outage_s, self.checkpoint_dir, self.spark_conf)  # before the JVM
        with OutageWatch(on_progress, self.outage_s) as watch:
            self._watch = watch
            try:
                return self._run(max_tuples, duration_secs, on_progress, max_batches)
            except RedisOutage as exc:
                known = self._commit_log.last_seen if self._commit_log is not None else -1
                raise exc.at(known) from None
            finally:
                self._watch = None
                if self.lease is not None:
                    lease, self.lease = self.lease, None
                    with contextlib.suppress(Exception):  # Redis gone: it lapses by its TTL
                        lease.release()

    def _run(self, max_tuples: int | None, duration_secs: float | None,
             on_progress: Callable[[str], None] | None, max_batches: int | None) -> RunSummary:
        from stormshift.engines.spark.driver.leased import LeasedBatches
        from stormshift.engines.spark.runtime.session import ui_link

        started = time.perf_counter()
        said: list[str] = []  # the lease's lines (a lapsed run taken over): shown now, kept

        def say(line: str) -> None:
            said.append(line)
            if on_progress is not None:
                on_progress(line)

        r, url, state_key, commit_log, base, notes = self._prepare_state(say)  # before the JVM
        lease = self.lease
        self._commit_log = commit_log
        if self._watch is not None:
            self._watch.start(url)
        spark = self._session()
        link = ui_link(spark)  # once, when the run is about to start (127.0.0.1 on a local master)
        if link and on_progress is not None:
            on_progress(f"Spark UI: {link}")
        intervals = tick_intervals_ms(self.graph)
        tick_ms = min(intervals.values()) if intervals else 0
        summary = RunSummary.for_graph(self.graph, "spark")
        summary.warnings.extend([*said, *notes])  # the lease's, an upgrade's, a rebalance's
        from stormshift.engines.spark.task.homes import home_key_for
        from stormshift.engines.spark.task.task_host import slots_for

        hosts = slots_for(self.graph.config, spark.sparkContext.defaultParallelism)
        cfg = BatchConfig(self.layout, self.namespace, url, state_key, self.sink, base, self.max_attempts,
                          hosts, home_key_for(self.graph.config, spark.sparkContext.master) if hosts else b"")
        ticks = TickRecorder(r, self.namespace, intervals, os.path.join(self.checkpoint_dir, "spark"))

        from stormshift.state.deadletter import DeadLetters

        dead_letters = DeadLetters(r, self.namespace)
        dl_mark = dead_letters.last_id()
        batches: list[BatchResult] = []
        spouts = [s.name for s in self.graph.spouts]
        clear_spout_reports(r, self.namespace, spouts)
        clear_source_lags(r, self.namespace)
        reported: set[tuple[str, str, str, str]] = set()
        warned: list[str] = list(said)  # already shown
        board = Board.for_graph(self.graph, "spark")
        self._publish(r, board)

        def on_batch(result: BatchResult) -> None:
            batches.append(result)
            _accumulate(summary, result)
            if result.status is BatchStatus.COMMITTED:
                lease.renew(batches=(lease.batches or 0) + 1)  # one more committed
                fold_batch(board, result, int(time.time() * 1000))
                self._publish(r, board)
            for component, task, lines in result.logs:
                forward_logs(component, task, lines, result.txid)
            read_spout_reports(r, self.namespace, summary, spouts)
            if on_progress is not None:
                on_progress(format_progress(result, self.layout))
                for line in first_seen_errors(result, reported):
                    on_progress(line)
                for line in first_seen_errors(summary, reported, spouts):
                    on_progress(line)
                for text in summary.warnings[len(warned):]:
                    warned.append(text)
                    on_progress(f"warning: {text}")

        clock = WindowClock(r, self.namespace, self.graph, os.path.join(self.checkpoint_dir, "spark"))
        runner = BatchRunner(cfg, r, commit_log, ticks, on_batch, self.clock or now_ms, clock)
        stream = None
        budgets = spout_budgets(max_tuples, [s.name for s in self.graph.spouts])
        idle_ms = int(float(self.graph.config.get("stormshift.idle_timeout_secs", 10)) * 1000)
        for spout in self.graph.spouts:
            opts = source_options(self.graph, spout.name, redis_url=url, namespace=self.namespace,
                                  batch_max=self.batch_max, budget_ms=self.budget_ms,
                                  max_total=budgets[spout.name], tick_ms=tick_ms,
                                  drain_ticks=drain_ticks(self.graph, intervals),
                                  idle_ms=idle_ms if self.until_done else 0,
                                  checkpoint_id=self._checkpoint_id())
            df = spark.readStream.format(SOURCE_NAME).options(**opts).load()
            stream = df if stream is None else stream.unionAll(df)
        if stream is None:
            raise StormshiftError(f"topology {self.graph.name!r} has no spout; nothing to run")
        query = (
            stream.writeStream.foreachBatch(LeasedBatches(runner, lease))
            .option("checkpointLocation", os.path.join(self.checkpoint_dir, "spark"))
            .trigger(processingTime=f"{max(self.trigger_secs, 0.0)} seconds")
            .queryName(f"stormshift_{_safe(self.graph.name).replace('-', '_').replace('.', '_')}")
            .start()
        )
        finite = self.until_done or max_tuples is not None
        enough = (lambda: len(batches) >= max_batches) if max_batches else (lambda: False)
        clear_stop(r, self.namespace)
        summary.stop_reason = "failed"
        with StopRequests() as stops:
            try:
                summary.stop_reason = self._wait(query, finite, duration_secs, runner, enough,
                                                 stops, lease)
            except KeyboardInterrupt:  # Ctrl-C off the main thread: a clean stop too
                summary.stop_reason = "interrupted"
            finally:
                # max_batches (tests, bench) stops at once: the next batch may be cut short
                # and is re-run from the checkpoint by the next run; every other stop is clean.
                in_flight = runner.busy
                gone = reporter().down_since is not None  # Redis gone: no clean stop
                if gone:
                    quiet_for_outage_stop(spark)
                abandoned = self._stop(query, runner, r, stops,
                                       clean=(summary.stop_reason != "max_batches" and not gone
                                              and not lease.lost))
                if gone:
                    wait_tasks_gone(spark)
        if lease.lost:  # taken over (``--takeover``): no summary of a run another one replaced
            lease.release()  # marks ``yielded``: the new run's query may start
            raise LeaseLostError(f"{lease.lost} (last committed txid {commit_log.committed()})")
        if summary.stop_reason == "interrupted":
            stopped = interrupted_text(in_flight, abandoned, commit_log.committed())
            if lease.stop_requested:
                stopped = stopped.replace("interrupted", "stopped by `stormshift stop`", 1)
            summary.warn(stopped)
        if summary.stop_reason == "done" and _any_capped(query):
            summary.stop_reason = f"max_tuples={max_tuples} reached"
        if not summary.spout_tuples and not summary.total("tuples_in"):
            _nothing_new(summary, self.checkpoint_dir)
        read_spout_reports(r, self.namespace, summary, spouts)
        letters = run_spout_letters(
            dead_letters, dl_mark, set(spouts), os.path.join(self.checkpoint_dir, "spark"),
            [b.batch_id for b in batches if b.status is BatchStatus.COMMITTED])
        _count_spout_dead_letters(summary, letters)
        fold_spout_dead_letters(board, letters)
        dropped = {n: s.logs_dropped for n, s in summary.components.items() if s.logs_dropped}
        if dropped:
            summary.warn(dropped_warning(dropped, self.log_limit))
        board.stop_reason = summary.stop_reason
        self._publish(r, board)
        summary.elapsed_ms = (time.perf_counter() - started) * 1000
        if self.sink.kind != "drop":
            summary.sink = f"{self.sink.kind}:{self.sink.target}"
        if self.sink.kind == "jsonl":
            summary.outputs = read_jsonl_outputs(self.sink.target)
        if self.read_state:
            summary.final_state = self._final_state(r, state_key)
        return summary

    def _publish(self, r: Any, board: Board) -> None:
        """The board to Redis (``stormshift top``) and to the endpoint, if any."""
        write_board(r, self.namespace, board)
        if self.metrics is not None:
            self.metrics.publish(board)

    def _final_state(self, r: Any, state_key: bytes) -> dict[str, ComponentState]:
        from stormshift.state.final import committed_attributes, committed_maps

        return {b.name: ComponentState(
            [committed_attributes(r, self.namespace, state_key, b.name, t) for t in range(b.par)],
            committed_maps(r, self.namespace, b.name)) for b in self.graph.bolts}

    def _wait(self, query: Any, finite: bool, duration_secs: float | None, runner: BatchRunner,
              enough: Callable[[], bool], stops: StopRequests, lease: Any) -> str:
        """Block until end of input (``finite``), ``duration_secs`` or a failure.

        The duration counts from the first batch's start (or, when no input ever comes,
        from the query waiting for data): Spark's start-up is not part of it.
        """
        from pyspark.errors import StreamingQueryException

        ready: float | None = None
        while query.isActive:
            try:
                query.awaitTermination(POLL_SECS)
            except StreamingQueryException as exc:
                if not lease.renew():  # a batch refused by the lease: taken over, not failed
                    return "taken over"
                raise self._query_failed(exc, runner) from None
            if lease.lost:
                return "taken over"
            if stops.count or lease.stop_requested:  # Ctrl-C, SIGTERM, ``stormshift stop``
                return "interrupted"
            if finite and _all_finished(query):
                return "done"
            if ready is None:
                ready = runner.first_started or (time.perf_counter() if _waiting(query) else None)
            if duration_secs is not None and ready is not None and \
                    time.perf_counter() - ready >= duration_secs:
                return "duration"
            if enough():
                return "max_batches"
            if self._watch is not None:
                self._watch.check()  # RedisOutage past stormshift.redis_outage_s
        failure = query.exception()
        if failure is not None:
            if not lease.renew():
                return "taken over"
            raise self._query_failed(failure, runner)
        return "stopped"

    def _query_failed(self, exc: Any, runner: BatchRunner) -> StormshiftError:
        """One line for a failed query (``query_failure``); its whole text, JVM frames and
        all, goes to ``FAILURE_FILE`` in the checkpoint dir."""
        from stormshift.private import write_private

        path = os.path.join(self.checkpoint_dir, FAILURE_FILE)
        try:
            if os.path.exists(path):
                os.unlink(path)
            write_private(path, str(exc))
        except OSError:
            path = ""
        gone = outage_in(str(exc))  # a Redis outage: one line, not Spark's failure
        if gone is not None:
            return gone
        return query_failure(stop_reason_from(exc), runner.first_started is None, path)

    def _stop(self, query: Any, runner: BatchRunner, r: Any, stops: StopRequests,
              clean: bool = True, timeout_secs: float = 120.0) -> bool:
        """``stopping.stop_query`` for this run's namespace (its doc says how)."""
        return stop_query(query, runner, r, self.namespace, stops, clean=clean,
                          timeout_secs=timeout_secs, poll_secs=POLL_SECS,
                          trigger_active=_trigger_active)


def _status(query: Any) -> dict:
    try:
        status = query.status
    except Exception:  # noqa: BLE001 - a query stopping under us has no status
        return {}
    return status if isinstance(status, dict) else {}


def _trigger_active(query: Any) -> bool:
    return bool(_status(query).get("isTriggerActive", False))


def _waiting(query: Any) -> bool:
    """The query is up and found no data to plan a batch from."""
    status = _status(query)
    return not status.get("isTriggerActive", True) and "Waiting" in str(status.get("message", ""))


def _end_offsets(query: Any) -> list[dict]:
    """The end offset of every source in the query's last progress ([] before any)."""
    progress = query.lastProgress
    if not progress:
        return []
    sources = progress["sources"] if isinstance(progress, dict) else progress.sources
    ends = []
    for src in sources or []:
        end = src["endOffset"] if isinstance(src, dict) else src.endOffset
        ends.append((json.loads(end) if isinstance(end, str) else end) or {})
    return ends


def _all_finished(query: Any) -> bool:
    ends = _end_offsets(query)
    return bool(ends) and all(end.get("fin") for end in ends)


def _any_capped(query: Any) -> bool:
    """Whether a source of the last batch stopped at its ``--max-tuples`` budget."""
    return any(end.get("capped") for end in _end_offsets(query))


def _accumulate(summary: RunSummary, result: BatchResult) -> None:
    for name, counters in result.counters.items():
        stats = summary.components.get(name)
        if stats is None:
            continue
        for column in ("tuples_in", "tuples_out", "acks", "fails", "errors", "dead_lettered",
                       "redriven", "logs_dropped", "reused", "caught_up", "started"):
            setattr(stats, column, getattr(stats, column) + counters.get(column, 0))
        stats.restored += counters.get("tasks", 0) - counters.get("reused", 0) \
            - counters.get("caught_up", 0) - counters.get("started", 0)
    for name in result.idle:
        stats = summary.components.get(name)
        if stats is not None:
            stats.idle_batches += 1
    for name, counters in result.windows.items():
        stats = summary.components.get(name)
        if stats is not None:
            for column, n in counters.items():
                stats.windows[column] = stats.windows.get(column, 0) + n
    for name, reasons in result.reasons.items():
        mine = summary.dead_letter_reasons.setdefault(name, {})
        for reason, n in reasons.items():
            mine[reason] = mine.get(reason, 0) + n
    summary.spout_tuples += result.spout_tuples
    summary.problems.merge(result.problems.kinds())


def _count_spout_dead_letters(summary: RunSummary, letters: list[Any]) -> None:
    """Spout records and emits that were no tuple (txid -1: dead-lettered while planning or
    reading, outside any batch's counters) count for their spout, and are kept in the
    summary as the local engine keeps them. A built-in spout reads whole ranges: each
    record of them became a tuple (its seq) or one of these, so records read = emitted +
    dead-lettered at the spout (a re-read record is deduplicated by its position)."""
    for d in letters:
        stats = summary.components.get(d.component)
        if d.txid != -1 or stats is None or stats.kind != "spout":
            continue
        summary.add_spout_dead_letter(d.component, d.task, d.reason or "?", d.tuple_key or "",
                                      d.values, d.error)
    for stats in summary.components.values():
        if stats.kind == "spout":
            stats.records_read = stats.tuples_out + stats.dead_lettered


def _nothing_new(summary: RunSummary, checkpoint_dir: str) -> None:
    """One line when a bounded run found nothing left to read on its checkpoint."""
    if summary.stop_reason == "done":
        summary.warn(f"nothing new to read: every spout was already at end of input for "
                     f"checkpoint {checkpoint_dir}; append input to read more, or use a new "
                     "--checkpoint with --reset-state to read it all again")
    elif summary.stop_reason.startswith("max_tuples="):
        summary.warn(f"nothing new to read: checkpoint {checkpoint_dir} already took its "
                     "--max-tuples; a larger --max-tuples continues from there")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "-", name)[:100] or "topology"

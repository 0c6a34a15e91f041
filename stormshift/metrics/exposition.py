"""The Prometheus text endpoint of a run (``stormshift run --metrics-port PORT``).

Runs in the driver: ``MetricsServer`` serves the last board published to it
(``publish`` swaps one reference after each batch, so a scrape never sees a
half-updated board and never slows a batch down). Names are ``stormshift_*``
with ``topology``, ``component`` and ``task`` labels; figures of a whole
component (windows, watermark) carry ``task="all"``, figures of the run
``component="all", task="all"``. ``metric_names()`` lists every name the
endpoint can serve (the Grafana dashboard's test reads it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stormshift.errors import OptionError
from stormshift.metrics.board import Board
from stormshift.metrics.latency import BOUNDS_US

__all__ = ["MetricsServer", "collect", "metric_names"]

LABELS = ["topology", "component", "task"]
# (name without _total, help, TaskFigures attribute) of the per-task counters
_TASK_COUNTERS = (
    ("stormshift_tuples_in", "Data tuples the task executed (bolts).", "tuples_in"),
    ("stormshift_tuples_out", "Tuples the task emitted.", "tuples_out"),
    ("stormshift_tuples_acked", "Tuples acked (spouts: trees complete; bolts: inputs acked).",
     "acks"),
    ("stormshift_tuples_failed", "Tuples failed.", "fails"),
    ("stormshift_tuples_dead_lettered", "Tuples sent to the dead-letter store.", "dead_lettered"),
    ("stormshift_state_bytes_written", ("State bytes the task wrote to Redis (snapshot and "
     "keyed maps)."), "state_bytes"),
    ("stormshift_state_restores", ("Times the task's state was read back whole from Redis "
     "(not a first batch with no stored state)."), "restores"),
    ("stormshift_state_catch_ups", ("Times the task's live state was brought up to date from "
     "deltas in Redis."), "catch_ups"),
)


def collect(board: Board) -> Iterator[Any]:
    """The board as ``prometheus_client`` metric families (pure)."""
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    topo = board.topology
    tasks = list(board.sorted_tasks())
    for name, text, attr in _TASK_COUNTERS:
        family = CounterMetricFamily(name, text, labels=LABELS)
        for f in tasks:
            family.add_metric([topo, f.component, str(f.task)], getattr(f, attr))
        yield family
    busy = CounterMetricFamily("stormshift_busy_seconds", "Time the task spent executing.",
                               labels=LABELS)
    capacity = GaugeMetricFamily("stormshift_capacity", "Busy share of the last batch "
                                 "(Storm UI's capacity; near 1: the task is the bottleneck).",
                                 labels=LABELS)
    p50 = GaugeMetricFamily("stormshift_execute_latency_p50_seconds",
                            "Median execute latency (sampled tuples).", labels=LABELS)
    p99 = GaugeMetricFamily("stormshift_execute_latency_p99_seconds",
                            "99th percentile execute latency (sampled tuples).", labels=LABELS)
    hist = HistogramMetricFamily("stormshift_execute_latency_seconds",
                                 "Execute latency of sampled tuples.", labels=LABELS)
    for f in tasks:
        labels = [topo, f.component, str(f.task)]
        busy.add_metric(labels, f.busy_ms / 1000)
        capacity.add_metric(labels, f.capacity)
        p50.add_metric(labels, f.latency.quantile_ms(0.5) / 1000)
        p99.add_metric(labels, f.latency.quantile_ms(0.99) / 1000)
        cumulative, buckets = 0, []
        for bound, n in zip([*(str(b / 1e6) for b in BOUNDS_US), "+Inf"], f.latency.counts):
            cumulative += n
            buckets.append((bound, cumulative))
        hist.add_metric(labels, buckets, f.latency.sum_us / 1e6)
    yield from (busy, capacity, p50, p99, hist)
    lag = GaugeMetricFamily("stormshift_source_lag", "Records a replayable spout task's source "
                            "holds past what it planned (Kafka: high watermark minus position; "
                            "JSON lines: lines; Redis Streams: entries, up to a cap).",
                            labels=LABELS)
    capped = GaugeMetricFamily("stormshift_source_lag_lower_bound", "1 when the task's "
                               "stormshift_source_lag stopped at a cap (a lower bound).",
                               labels=LABELS)
    for f in tasks:
        if f.source_lag >= 0:
            labels = [topo, f.component, str(f.task)]
            lag.add_metric(labels, f.source_lag)
            capped.add_metric(labels, int(f.source_lag_lower_bound))
    yield from (lag, capped)
    windows = CounterMetricFamily("stormshift_window_tuples", "A windowed bolt's input tuples by "
                                  "lateness (on_time, late_updated, dropped_late, late_stream).",
                                  labels=[*LABELS, "kind"])
    for bolt, counters in sorted(board.windows.items()):
        for kind, n in sorted(counters.items()):
            windows.add_metric([topo, bolt, "all", kind], n)
    yield windows
    watermark = GaugeMetricFamily("stormshift_watermark_seconds", "A windowed bolt's watermark "
                                  "(event time, Unix seconds) in the last batch.", labels=LABELS)
    for bolt, ms in sorted(board.watermarks_ms.items()):
        watermark.add_metric([topo, bolt, "all"], ms / 1000)
    yield watermark
    run = [topo, "all", "all"]
    batches = CounterMetricFamily("stormshift_batches", "Batches the run committed.", labels=LABELS)
    batches.add_metric(run, board.batches)
    last = GaugeMetricFamily("stormshift_batch_duration_seconds", "Duration of the last batch.",
                             labels=LABELS)
    last.add_metric(run, board.batch_ms_last / 1000)
    total = CounterMetricFamily("stormshift_batch_seconds", "Time spent in batches.",
                                labels=LABELS)
    total.add_metric(run, board.batch_ms_total / 1000)
    yield from (batches, last, total)


def metric_names() -> set[str]:
    """Every sample name the endpoint serves (``_total``, ``_bucket``... included)."""
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    names = set()
    for family in collect(Board("t", "e")):
        names.add(family.name)
        if isinstance(family, CounterMetricFamily):
            names.update({f"{family.name}_total"})
        if isinstance(family, HistogramMetricFamily):
            names.update(f"{family.name}_{s}" for s in ("bucket", "sum", "count"))
    return names


class MetricsServer:
    """The HTTP endpoint; ``publish(board)`` after each batch, ``close()`` at the end."""

    def __init__(self, board: Board, host: str = "127.0.0.1", port: int = 0):
        from prometheus_client import start_http_server
        from prometheus_client.registry import CollectorRegistry

        self._board = Board.from_dict(board.to_dict())
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)  # type: ignore[arg-type]
        try:
            self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:

            raise OptionError(f"--metrics-port {port}: cannot listen on {host}:{port} "
                              f"({exc.strerror or exc}); fix: pick a free port, or 0 for "
                              "any") from None
        self.host = host
        self.port = int(self._server.server_port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def publish(self, board: Board) -> None:
        self._board = Board.from_dict(board.to_dict())  # a copy: the engine goes on

    def collect(self) -> Iterator[Any]:
        return collect(self._board)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

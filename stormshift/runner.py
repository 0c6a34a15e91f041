"""Choose an engine, run a graph, print what it computed.

Kept apart from ``cli.py`` so scripts and tests run topologies the same way
the command does, without click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from stormshift.display import cell
from stormshift.topology.graph import TopologyGraph


@dataclass(frozen=True)
class RunOptions:
    """What ``stormshift run`` was asked for (engine-independent)."""

    engine: Literal["spark", "local"] = "spark"
    max_tuples: int | None = None
    duration_secs: float | None = None
    until_done: bool = False
    master: str = "local[*]"
    checkpoint_dir: str | None = None
    trigger_secs: float = 0.0
    batch_max_tuples: int | None = None
    redis_url: str | None = None
    sink: str | None = None
    state_mode: Literal["strict", "reset", "adopt"] = "strict"
    spark_conf: tuple[tuple[str, str], ...] = ()  # extra SparkSession settings (--conf)
    log_file: str | None = None  # components' self.logger lines (default .stormshift/logs/NAME.log)
    log_level: str | None = None  # default: the topology's pystorm.log.level, else info
    namespace: str | None = None  # Spark: the state namespace in Redis (default: topology name)
    metrics_port: int | None = None  # serve Prometheus metrics on this port (0: any free one)
    metrics_host: str = "127.0.0.1"  # ... bound to this address
    takeover: bool = False  # Spark: replace a live run of the namespace (``state/lease.py``)


def default_log_file(graph: TopologyGraph) -> str:
    """``.stormshift/logs/<topology>.log`` under the working directory (beside checkpoints);
    the directory, when it exists, tightened to 0700 (``engines/logs.py`` creates it so)."""
    import os
    import re

    from stormshift.private import private_dir

    safe = re.sub(r"[^A-Za-z0-9_.\-]", "-", graph.name)[:100] or "topology"
    logs = os.path.abspath(os.path.join(".stormshift", "logs"))
    if os.path.isdir(logs):
        private_dir(logs)  # stormshift's own: 0700 even when an older run left it looser
    return os.path.join(logs, f"{safe}.log")


def run_topology(graph: TopologyGraph, options: RunOptions, progress: Console | None = None) -> Any:
    """Run ``graph`` on the chosen engine and return its RunSummary; components' log lines
    go to ``options.log_file`` (WARNING and above also to ``progress``)."""
    from stormshift.engines.logs import ComponentLogs, level_of

    path = options.log_file or default_log_file(graph)
    level = level_of(options.log_level or graph.config.get("pystorm.log.level"))
    show = _progress_printer(progress)
    if show is not None:
        show(f"component logs: {path}")
    metrics = _metrics_server(graph, options)
    if metrics is not None and show is not None:
        show(f"metrics: {metrics.url}")
    try:
        with ComponentLogs(path, level, show):
            summary = _run_engine(graph, options, show, metrics)
    finally:
        if metrics is not None:
            metrics.close()
    summary.log_file = path
    return summary


def _metrics_server(graph: TopologyGraph, options: RunOptions) -> Any:
    """The Prometheus endpoint ``--metrics-port`` asks for (``metrics/exposition.py``)."""
    if options.metrics_port is None:
        return None
    from stormshift.metrics.board import Board
    from stormshift.metrics.exposition import MetricsServer

    return MetricsServer(Board.for_graph(graph, options.engine), options.metrics_host,
                         options.metrics_port)


def _run_engine(graph: TopologyGraph, options: RunOptions, show: Any, metrics: Any = None) -> Any:
    if options.engine == "local":
        from stormshift.engines.local import LocalEngine

        on_metrics = metrics.publish if metrics is not None else None
        return LocalEngine(graph, on_metrics=on_metrics).run(
            max_tuples=options.max_tuples,
            duration_secs=options.duration_secs,
            on_progress=show,
        )
    from stormshift.engines.spark import SparkEngine

    spark_engine = SparkEngine(
        graph,
        master=options.master,
        checkpoint_dir=options.checkpoint_dir,
        redis_url=options.redis_url,
        trigger_secs=options.trigger_secs,
        until_done=options.until_done,
        batch_max_tuples=options.batch_max_tuples,
        sink=options.sink,
        state_mode=options.state_mode,
        spark_conf=dict(options.spark_conf),
        namespace=options.namespace,
        metrics=metrics,
        takeover=options.takeover,
    )
    return spark_engine.run(
        max_tuples=options.max_tuples,
        duration_secs=options.duration_secs,
        on_progress=show,
    )


def _progress_printer(console: Console | None) -> Any:
    if console is None:
        return None

    def show(line: str) -> None:
        # One line per event, wrapped by the terminal if at all (rich would break a long
        # progress line into fragments that read like separate lines).
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    return show


def print_summary(graph: TopologyGraph, summary: Any, console: Console, top: int = 10) -> None:
    """The per-component table (and the windowed bolts' lateness counts), the accounting
    line(s), then the latest value per key of each leaf stream (in the topology's order,
    the ``top`` keys with the largest last number), and where every emit went."""
    console.print(summary.table())
    windows = summary.window_table()
    if windows is not None:
        console.print(windows)
    states = summary.state_table()
    if states is not None:
        console.print(states)
    from stormshift.engines.accounting import accounting_lines

    for line in accounting_lines(summary):
        console.print(line, highlight=False, markup=False)
    for line in spout_dead_letter_lines(summary, summary.engine == "spark"):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    print_problems(summary, console)
    for component, stream in leaf_order(graph, summary.outputs):
        fields = graph.stream_fields(component, stream)
        key_len = _declared_key_len(graph, component, stream, fields)
        latest = summary.latest(component, stream, key_len)
        if latest:
            key = ", ".join(fields[:key_len]) if fields else "key"
            ranked = sorted(latest.values(), key=_rank_key, reverse=True)
            by = f"by {fields[-1]}" if fields and _ranked_by_number(ranked) else "shown"
            label = component if stream == "default" else f"{component}:{stream}"
            title = (f"{label}: latest per {key} "
                     f"({len(latest)} keys, top {min(top, len(latest))} {by})")
            table = Table(title=title, min_width=len(title) + 2)  # title on one line if it fits
            for f in fields:
                table.add_column(f, overflow="fold")
            for values in ranked[:top]:
                table.add_row(*(cell(v) for v in values))
            console.print(table)
    where = _sink_line(summary.sink)
    if where:
        console.print(where, highlight=False, markup=False, soft_wrap=True)


def spout_dead_letter_lines(summary: Any, in_redis: bool, shown: int = 5) -> list[str]:
    """The records built-in spouts dead-lettered: reason, position, detail (the first
    ``shown``). The local engine has no dead-letter store (Storm has none): these lines
    are where its operator sees them; on Spark ``stormshift deadletter ls`` lists them all."""
    letters = getattr(summary, "spout_dead_letters", [])
    if not letters:
        return []
    where = ("all in `stormshift deadletter ls`" if in_redis
             else "kept in the run summary (--json: spout_dead_letters)")
    lines = [f"records dead-lettered at the spout: {len(letters):,} ({where})"]
    for d in letters[:shown]:
        detail = d["error"].split(": ", 1)[-1]
        lines.append(f"  {d['component']} {d['reason']} at {d['position']}: {detail[:200]}")
    if len(letters) > shown:
        lines.append(f"  ... and {len(letters) - shown:,} more")
    return lines


def leaf_order(graph: TopologyGraph, outputs: Mapping[tuple[str, str], Any]) -> list[tuple[str, str]]:
    """The ``(component, stream)`` keys of ``outputs`` in the topology's order (components
    as the graph lists them, upstream first; each one's streams as it declares them), so a
    topology's first results come first; anything the graph does not name last, sorted."""
    rank = {(c.name, s): (i, j) for i, c in enumerate(graph) for j, s in enumerate(c.outputs)}
    return sorted(outputs, key=lambda k: (0, *rank[k]) if k in rank else (1, 0, 0, *k))


def _ranked_by_number(ranked: Sequence[list[Any]]) -> bool:
    last = ranked[0][-1] if ranked and ranked[0] else None
    return isinstance(last, (int, float)) and not isinstance(last, bool)


def _sink_line(sink: str | None) -> str | None:
    """Where every emit of the leaf streams is (the tables show the latest per key)."""
    if not sink:
        return None
    kind, _, target = sink.partition(":")
    if kind == "jsonl":
        return f"every emit of the leaf streams: {target}/<component>/<stream>/*.jsonl"
    if kind == "redis":
        return f"every emit of the leaf streams: Redis stream {target}"
    return None


def _declared_key_len(graph: TopologyGraph, component: str, stream: str,
                      fields: Sequence[str]) -> int:
    """How many leading fields key a leaf stream: the ``key`` its ``shadow.results`` entry
    declares when those are its first fields (e.g. ``[ad_id, minute]`` of a per-minute
    report), else 1."""
    declared = graph.config.get("shadow.results")
    entry = declared.get(f"{component}:{stream}") if isinstance(declared, Mapping) else None
    key = entry.get("key") if isinstance(entry, Mapping) else None
    if isinstance(key, (list, tuple)) and key and tuple(fields[:len(key)]) == tuple(key):
        return len(key)
    return 1


def print_problems(summary: Any, console: Console) -> None:
    """The distinct errors per component (one traceback each), warnings, the log file."""
    for line in summary.problems.lines():
        style = "red" if line.startswith("errors in ") else None
        console.print(line, style=style, highlight=False, markup=False)
    for warning in summary.warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    if summary.log_file:
        console.print(f"component logs: {summary.log_file}", highlight=False, markup=False)


def _rank_key(values: list[Any]) -> tuple[Any, ...]:
    """Rank rows by their last numeric field (e.g. spend, count), ties by key text."""
    last = values[-1] if values else 0
    return (last if isinstance(last, (int, float)) else 0, str(values[0]) if values else "")

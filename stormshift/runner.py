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


def default_log_file(graph: TopologyGraph) -> str:
    """``.stormshift/logs/<topology>.log`` under the working directory (beside checkpoints)."""
    import os
    import re

    safe = re.sub(r"[^A-Za-z0-9_.\-]", "-", graph.name)[:100] or "topology"
    return os.path.abspath(os.path.join(".stormshift", "logs", f"{safe}.log"))


def run_topology(graph: TopologyGraph, options: RunOptions, progress: Console | None = None) -> Any:
    """Run ``graph`` on the chosen engine and return its RunSummary; components' log lines
    go to ``options.log_file`` (WARNING and above also to ``progress``)."""
    from stormshift.engines.logs import ComponentLogs, level_of

    path = options.log_file or default_log_file(graph)
    level = level_of(options.log_level or graph.config.get("pystorm.log.level"))
    show = _progress_printer(progress)
    if show is not None:
        show(f"component logs: {path}")
    with ComponentLogs(path, level, show):
        summary = _run_engine(graph, options, show)
    summary.log_file = path
    return summary


def _run_engine(graph: TopologyGraph, options: RunOptions, show: Any) -> Any:
    if options.engine == "local":
        from stormshift.engines.local import LocalEngine

        return LocalEngine(graph).run(
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
    line(s), then the latest value per key of each leaf stream."""
    console.print(summary.table())
    windows = summary.window_table()
    if windows is not None:
        console.print(windows)
    from stormshift.engines.accounting import accounting_lines

    for line in accounting_lines(summary):
        console.print(line, highlight=False, markup=False)
    print_problems(summary, console)
    for component, stream in sorted(summary.outputs):
        fields = graph.stream_fields(component, stream)
        key_len = _declared_key_len(graph, component, stream, fields)
        latest = summary.latest(component, stream, key_len)
        if latest:
            key = ", ".join(fields[:key_len]) if fields else "key"
            title = (f"{component} / {stream}: latest per {key} "
                     f"({len(latest)} keys, top {min(top, len(latest))} shown)")
            table = Table(title=title, min_width=len(title) + 2)  # title on one line if it fits
            for f in fields:
                table.add_column(f, overflow="fold")
            ranked = sorted(latest.values(), key=_rank_key, reverse=True)
            for values in ranked[:top]:
                table.add_row(*(str(v) for v in values))
            console.print(table)


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

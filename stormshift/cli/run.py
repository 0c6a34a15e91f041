"""``stormshift run PATH``: run a topology on the Spark or the local engine, then report.

The exit code says how the run went (``exit_codes.py``); ``--json`` prints the
summary with it as ``"exit_code"``.
"""

from __future__ import annotations

import json
from typing import Literal

import click
from rich.console import Console

from stormshift.cli.exit_codes import EPILOG, run_exit_code
from stormshift.cli.options import (
    checkpoint_option,
    conf_option,
    json_option,
    load_graph,
    master_option,
    parse_confs,
    redis_option,
    run_control_options,
    state_mode,
    topology_options,
)

__all__ = ["run_command"]


@click.command("run", epilog=EPILOG)
@click.argument("path")
@topology_options
@click.option("--engine", type=click.Choice(["spark", "local"]), default="spark", show_default=True)
@click.option("--max-tuples", type=int, help="Stop after this many spout tuples.")
@click.option("--duration", type=float, help="Stop after this many seconds.")
@run_control_options(trigger_default=0.0)
@master_option(default="local[*]", show_default=True)
@checkpoint_option()
@redis_option()
@conf_option("Spark setting for the session (e.g. spark.speculation=true); repeatable.")
@json_option
def run_command(path: str, name: str | None, environment: str | None,
                config_options: tuple[str, ...], engine: Literal["spark", "local"],
                max_tuples: int | None, duration: float | None, trigger_secs: float,
                until_done: bool, batch_max_tuples: int | None, sink: str | None,
                reset_state: bool, adopt_state: bool, master: str, checkpoint_dir: str | None,
                redis_url: str | None, confs: tuple[str, ...], as_json: bool) -> None:
    """Run a topology (a project dir, topologies/NAME.py, or module:Class)."""
    from stormshift.runner import RunOptions, print_summary, run_topology

    mode = state_mode(reset_state, adopt_state)
    graph = load_graph(path, name, environment, config_options)
    options = RunOptions(
        engine=engine, max_tuples=max_tuples, duration_secs=duration, until_done=until_done,
        master=master, checkpoint_dir=checkpoint_dir, trigger_secs=trigger_secs,
        batch_max_tuples=batch_max_tuples, redis_url=redis_url, sink=sink,
        state_mode=mode,  # type: ignore[arg-type]
        spark_conf=tuple(parse_confs(confs).items()),
    )
    summary = run_topology(graph, options, progress=None if as_json else Console(stderr=True))
    code = run_exit_code(summary)
    out = Console()
    if as_json:
        out.print_json(json.dumps({**summary.to_dict(), "exit_code": code}, default=str))
    else:
        print_summary(graph, summary, out)
    if code:
        raise click.exceptions.Exit(code)

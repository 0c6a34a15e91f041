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
    par_option,
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
@par_option
@click.option("--engine", type=click.Choice(["spark", "local"]), default="spark", show_default=True)
@click.option("--max-tuples", type=int, metavar="N", help=(
    "Stop after exactly N spout tuples in all (every spout and spout task together, split "
    "evenly in a fixed order, so both engines take the same tuples whatever the batch size); "
    "the last batch is cut at N and committed. Spark: N counts from the checkpoint's start, so "
    "a rerun with a larger N continues where the last one stopped. Stops at end of input if "
    "that comes first (as --until-done); --duration stops it earlier."))
@click.option("--duration", type=float, metavar="SECS", help=(
    "Stop after SECS seconds, counted from the first batch (Spark's start-up excluded); the "
    "batch in flight commits first. Whichever of --max-tuples, --until-done and --duration "
    "comes first ends the run."))
@click.option("--log-level", type=click.Choice(["debug", "info", "warn", "error"],
                                               case_sensitive=False),
              help="Level of components' self.logger lines (default: the topology's "
                   "pystorm.log.level, else info).")
@click.option("--log-file", type=click.Path(dir_okay=False),
              help="Where components' log lines go (default .stormshift/logs/NAME.log).")
@run_control_options(trigger_default=0.0)
@master_option(default="local[*]", show_default=True)
@checkpoint_option()
@click.option("--namespace", metavar="NS", help=(
    "Spark: the state namespace in Redis (default: the topology's name). A shadow port runs "
    "under its own (e.g. shadow-NAME) with its own --checkpoint, so it never shares state "
    "keys with the production run."))
@redis_option()
@conf_option("Spark setting for the session (e.g. spark.speculation=true); repeatable.")
@json_option
def run_command(path: str, name: str | None, environment: str | None,
                config_options: tuple[str, ...], pars: tuple[str, ...],
                engine: Literal["spark", "local"],
                max_tuples: int | None, duration: float | None, log_level: str | None,
                log_file: str | None, trigger_secs: float,
                until_done: bool, batch_max_tuples: int | None, sink: str | None,
                reset_state: bool, adopt_state: bool, master: str, checkpoint_dir: str | None,
                namespace: str | None, redis_url: str | None, confs: tuple[str, ...], as_json: bool) -> None:
    """Run a topology (a project dir, topologies/NAME.py, or module:Class)."""
    from stormshift.runner import RunOptions, print_summary, run_topology

    mode = state_mode(reset_state, adopt_state)
    if log_level:  # captured lines are filtered at the source, as pystorm does
        config_options = (*config_options, f"pystorm.log.level={log_level.lower()}")
    graph = load_graph(path, name, environment, config_options, pars)
    options = RunOptions(
        engine=engine, max_tuples=max_tuples, duration_secs=duration, until_done=until_done,
        master=master, checkpoint_dir=checkpoint_dir, trigger_secs=trigger_secs,
        batch_max_tuples=batch_max_tuples, redis_url=redis_url, sink=sink,
        state_mode=mode,  # type: ignore[arg-type]
        spark_conf=tuple(parse_confs(confs).items()), log_file=log_file, log_level=log_level,
        namespace=namespace,
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
